"""Planning on monorepos laid out like real ones: membership from each ecosystem's own
declarations, dependents, the repository's own runners, lockfiles diffed per package.

Each test reproduces a defect seen on real repositories and asserts the exact planned set.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import layouts
from verify_helpers import Files, git, write

from plumbing.git import Git, discover
from runner.config import parse_repository_config
from verification.config import VerifyConfig
from verification.plan import Plan, build_plan, plan_change
from verification.tree import GitRevisionTree, GitTree

CONFIG = VerifyConfig()


def planned(root: Path, *changed: str, base: bool = False, config: VerifyConfig = CONFIG
            ) -> Plan:
    """The plan for `changed` in the working tree, diffing lockfiles against HEAD if `base`."""
    start = GitRevisionTree(discover(root), "HEAD") if base else None
    return build_plan(list(changed), GitTree.discover(root), config, base=start)


def keys(plan: Plan) -> set[str]:
    return {check.key for check in plan.checks}


def commands(plan: Plan) -> dict[str, str]:
    return {check.key: check.command for check in plan.checks}


# pnpm: a fixture package.json under __tests__, tests run by the root vitest config.


def test_pnpm_test_change_is_tested_by_the_root_runner_not_the_fixture(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.pnpm_workspace())
    own = {
        "node-lint", "node-test",  # parser has no lint or test script: the root runs them
        "packages/parser:node-build",
    }  # fmt: skip
    # A test file, or a fixture of the tests, is read by parser's own tests only: cli, which
    # depends on parser, is not checked for it.
    for changed in ("packages/parser/__tests__/parse.test.ts",
                    "packages/parser/__tests__/fixtures/basic/index.js"):
        assert keys(planned(root, changed)) == own, changed
    plan = planned(root, "packages/parser/src/index.ts")
    assert keys(plan) == own | {
        "packages/cli:node-lint", "packages/cli:node-test",  # "@acme/parser": "workspace:*"
    }  # fmt: skip
    assert commands(plan)["node-test"] == "pnpm run test"
    # One frozen install at the workspace root, used by every member that runs a check.
    setups = {w.path: (w.setup, w.uses) for w in plan.workspaces}
    assert setups == {
        ".": (("pnpm install --frozen-lockfile",), ()),
        "packages/cli": ((), (".",)),
        "packages/parser": ((), (".",)),
    }


def test_pnpm_member_with_its_own_scripts_does_not_pull_in_the_root(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.pnpm_workspace())
    assert keys(planned(root, "packages/cli/src/main.ts")) == {
        "packages/cli:node-lint", "packages/cli:node-test",
    }  # fmt: skip
    # docs has a build script only: the root's lint and test cover it.
    assert keys(planned(root, "packages/docs/theme.ts")) == {
        "packages/docs:node-build", "node-lint", "node-test",
    }  # fmt: skip


def test_pnpm_lockfile_is_diffed_per_importer(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.pnpm_workspace())
    # acorn is resolved for packages/parser only: parser and its dependents.
    write(root, {"pnpm-lock.yaml": layouts.PNPM_LOCK.replace("8.12.1", "8.14.0")})
    assert keys(planned(root, "pnpm-lock.yaml", base=True)) == {
        "node-lint", "node-test", "packages/parser:node-build",
        "packages/cli:node-lint", "packages/cli:node-test",
    }  # fmt: skip
    # tinyspy is vitest's dependency, and only the root depends on vitest.
    write(root, {"pnpm-lock.yaml": layouts.PNPM_LOCK.replace("tinyspy: 3.0.2", "tinyspy: 3.0.3")
                 .replace("tinyspy@3.0.2", "tinyspy@3.0.3")})
    assert keys(planned(root, "pnpm-lock.yaml", base=True)) == {"node-lint", "node-test"}
    # Without the earlier version, every workspace installing from the lockfile.
    assert keys(planned(root, "pnpm-lock.yaml")) == {
        "node-lint", "node-test", "packages/parser:node-build", "packages/cli:node-lint",
        "packages/cli:node-test", "packages/docs:node-build",
    }  # fmt: skip


# uv: members of [tool.uv.workspace], a root tests/ run with uv run pytest.


def test_uv_member_change_plans_its_dependents_and_the_root_runner(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.uv_workspace())
    plan = planned(root, "packages/core/src/acme_core/__init__.py")
    # The root depends on acme-core ({ workspace = true }); plugins too, but it has no
    # checks of its own: the root's ruff and pytest cover it. cli does not depend on core.
    assert keys(plan) == {"ruff", "pytest", "packages/core:pytest"}
    assert commands(plan) == {
        "ruff": "uv run --frozen ruff check .",  # no --extend-exclude: members are linted
        "pytest": 'uv run --frozen pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"',
        "packages/core:pytest":
            'uv run --frozen pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"',
    }
    assert [(w.path, w.setup, w.uses) for w in plan.workspaces] == [
        (".", ("uv sync --frozen --all-packages",), ()),
        ("packages/core", (), (".",)),
    ]
    assert keys(planned(root, "packages/cli/src/acme_cli/__init__.py")) == {
        "ruff", "packages/cli:pytest",
    }  # fmt: skip
    assert keys(planned(root, "packages/plugins/src/acme_plugins/__init__.py")) == {
        "ruff", "pytest",
    }  # fmt: skip


def test_uv_lock_is_diffed_per_package(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.uv_workspace())
    write(root, {"uv.lock": layouts.UV_LOCK.replace('version = "8.1.7"', 'version = "8.1.8"')})
    assert keys(planned(root, "uv.lock", base=True)) == {"ruff", "packages/cli:pytest"}
    # A Python toolchain pin concerns every Python workspace below it.
    assert keys(planned(root, ".python-version")) == {
        "ruff", "pytest", "packages/core:pytest", "packages/cli:pytest",
    }  # fmt: skip


# Go: modules pointing at each other with replace; a go.work.

GO = ("go-vet", "go-test")


def go_keys(*modules: str) -> set[str]:
    return {f"{m}:{c}" if m != "." else c for m in modules for c in GO}


def test_go_change_plans_modules_that_require_and_replace_it(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.go_modules())
    # lib and tools/gen require the root module and replace it by ../ and ../..; services/api
    # requires and replaces lib. worker requires the published lib; stats replaces both
    # without requiring them (a replacement of a module outside the build list does nothing).
    assert keys(planned(root, "acme.go")) == go_keys(".", "lib", "tools/gen", "services/api")
    assert keys(planned(root, "lib/lib.go")) == go_keys("lib", "services/api")
    assert keys(planned(root, "services/api/main.go")) == go_keys("services/api")
    assert keys(planned(root, "billing/go.sum")) == go_keys("billing")
    # The module under testdata/ is what the root's tests build.
    assert keys(planned(root, "testdata/plugin/plugin.go")) == go_keys(".")
    explained = plan_change(["acme.go"], GitTree.discover(root), CONFIG).explanation.to_dict()
    because = {c["key"]: c["because"][0]["steps"] for c in explained["checks"]}
    assert because["services/api:go-test"] == [
        "in .",
        "lib depends on . (lib/go.mod: require example.com/acme, replace example.com/acme => ../)",
        "services/api depends on lib (services/api/go.mod: require example.com/acme/lib, "
        "replace example.com/acme/lib => ../../lib)",
    ]
    assert explained["not_workspaces"]["testdata/plugin"] == (
        "below a testdata/ folder and no workspace declares it: test data")


def test_go_work_uses_its_modules_only(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.go_workspace())
    # worker requires lib and both are used by go.work: the repository's lib, not the
    # published one. tools/gen, services/api, stats and billing are not used: go refuses to
    # run in them while go.work is in force, so they are no modules of their own.
    assert keys(planned(root, "lib/lib.go")) == go_keys("lib", "services/worker")
    assert keys(planned(root, "acme.go")) == go_keys(".", "lib", "services/worker")
    assert keys(planned(root, "go.work")) == go_keys(".", "lib", "services/worker")
    assert keys(planned(root, "tools/gen/main.go")) == go_keys(".", "lib", "services/worker")
    explained = plan_change(["lib/lib.go"], GitTree.discover(root), CONFIG).explanation
    assert explained.skipped["tools/gen"] == (
        "a module go.work does not use: go commands there run outside the workspace: part of "
        "the workspace around it")


# yarn: a project template folder with a package.json inside a member.


def test_yarn_template_folder_is_data_of_its_package(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.yarn_workspace())
    plan = planned(root, "packages/create-acme/template/src/App.jsx")
    assert keys(plan) == {
        "packages/create-acme:node-test", "packages/create-acme:node-build", "node-lint",
    }  # fmt: skip
    assert commands(plan)["packages/create-acme:node-build"] == "yarn run build"
    assert [w.setup for w in plan.workspaces if w.path == "."] == [("yarn install --immutable",)]
    assert keys(planned(root, "packages/utils/index.js")) == {
        "packages/utils:node-test", "packages/create-acme:node-test",
        "packages/create-acme:node-build", "node-lint",
    }  # fmt: skip


def test_yarn_berry_lockfile_is_diffed_per_package(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.yarn_workspace())
    write(root, {"yarn.lock": layouts.YARN_LOCK.replace("version: 7.6.3", "version: 7.6.4")})
    assert keys(planned(root, "yarn.lock", base=True)) == {
        "packages/utils:node-test", "packages/create-acme:node-test",
        "packages/create-acme:node-build", "node-lint",
    }  # fmt: skip


# Cargo: a workspace whose test fixtures hold a Python project and broken Python.


def test_cargo_fixtures_are_code_of_the_crate_and_plan_no_python(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.cargo_workspace())
    fixtures = "crates/acme_linter/resources/test/fixtures"
    for changed in (f"{fixtures}/test_broken.py", f"{fixtures}/pyproject.toml",
                    f"{fixtures}/E501.md", "crates/acme_py/src/lib.rs", "Cargo.lock"):
        assert keys(planned(root, changed)) == {"cargo-check", "cargo-test"}, changed
    assert keys(planned(root, "scripts/release.py")) == {"scripts:ruff"}
    assert keys(planned(root, "rust-toolchain.toml")) == {"cargo-check", "cargo-test"}
    assert keys(planned(root, "ruff.toml")) == {"scripts:ruff"}


# No silent success.


def test_a_change_nothing_verifies_is_listed_not_passed(monorepo: Path) -> None:
    write(monorepo, {"tools/deploy.sh": "#!/bin/sh\n"})
    root = monorepo
    plan = planned(root, "tools/deploy.sh", "README.md")
    assert (plan.checks, plan.unverified, plan.nothing_verifies) == ((), ("tools/deploy.sh",), True)
    config = parse_repository_config("verify:\n  ignore: ['tools/', '*.sh']\n").verify
    ignored = planned(root, "tools/deploy.sh", "README.md", config=config)
    assert (ignored.checks, ignored.unverified, ignored.nothing_verifies) == ((), (), False)
    # The hash of a plan that needs none of the new fields is what it always was.
    assert "unverified" not in ignored.to_json() and "uses" not in ignored.to_json()


def test_explanation_names_files_edges_and_uncovered_files(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({**layouts.pnpm_workspace(), "scripts/bump.sh": "#!/bin/sh\n"})
    result = plan_change(["packages/parser/src/index.ts", "scripts/bump.sh", "README.md"],
                         GitTree.discover(root), CONFIG)
    explained = result.explanation.to_dict()
    because = {c["key"]: c["because"] for c in explained["checks"]}
    assert because["packages/cli:node-test"] == [{
        "file": "packages/parser/src/index.ts",
        "steps": ["in packages/parser",
                  'packages/cli depends on packages/parser (packages/cli/package.json: '
                  '"@acme/parser": "workspace:*")'],
    }]
    assert because["node-test"][0]["steps"][-1] == (
        "packages/parser has no test command of its own; the node workspace root . runs it"
    )
    files = {f["path"]: (f["kind"], f["checks"]) for f in explained["files"]}
    assert files["scripts/bump.sh"] == ("code", ["node-lint", "node-test"])  # the root's
    assert files["README.md"] == ("documentation", [])
    assert set(files["packages/parser/src/index.ts"][1]) == keys(result.plan)
    assert explained["unverified"] == []
    assert explained["not_workspaces"] == {
        "packages/parser/__tests__/fixtures/basic":
            "below a __tests__/ folder and no workspace declares it: test data",
    }


def test_revision_tree_reads_manifests_in_one_batch(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.pnpm_workspace())
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"packages/cli/src/extra.ts": "export {}\n"})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "extra")
    repo = discover(root)
    revision = GitRevisionTree(repo, "feature")
    texts = revision.read_many(["package.json", "missing.json", "packages", "pnpm-lock.yaml"])
    assert texts["missing.json"] is None and texts["packages"] is None
    assert texts["pnpm-lock.yaml"] == layouts.PNPM_LOCK
    assert build_plan(["packages/cli/src/extra.ts"], revision, CONFIG) == planned(
        root, "packages/cli/src/extra.ts")


def test_a_revision_plan_starts_no_git_process_per_file(
        make_repo: Callable[[Files], Path]) -> None:
    """Planning asks for files a package may have (setup.cfg, mypy.ini, ...); at a revision
    those not in its listing are absent without asking git, and the rest come in one batch:
    on a monorepo a process per file cost seconds."""
    root = make_repo(layouts.uv_workspace())
    repo = discover(root)
    commands: list[str] = []

    class CountingGit(Git):
        def run(self, *args: str, **options: Any) -> subprocess.CompletedProcess[bytes]:
            commands.append(" ".join(a for a in args if not a.startswith("--format")))
            return super().run(*args, **options)

    counted = CountingGit(git_dir=repo.git_dir, work_tree=repo.work_tree, cwd=repo.cwd,
                          config=repo.config)
    revision = GitRevisionTree(counted, "HEAD")
    assert revision.read_text("packages/core/setup.cfg") is None
    plan = build_plan(["pyproject.toml"], revision, CONFIG)
    assert plan.checks  # a real plan: every member planned
    assert keys(plan) == keys(planned(root, "pyproject.toml"))
    assert [c.split()[0] for c in commands] == ["ls-tree", "cat-file"], commands
    assert commands[1] == "cat-file --batch"
