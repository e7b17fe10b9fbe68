"""Selection as narrow as the package graph allows (issue 22, item 5), on real git repositories
in the ecosystems' real manifest formats: a crate's change checks that crate and its
dependents (`cargo -p`), a test-only change its own package, a file of one language another
language's checks only through a declared dependency (maturin).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import layouts
import pytest
from verify_helpers import Files, git, write

from app.verify_cli import configure_parser, run_verify
from plumbing.git import discover
from runner.network import NetworkSettings
from runner.sandbox import Sandbox
from verification.config import VerifyConfig
from verification.plan import Plan, build_plan, plan_change
from verification.tree import GitRevisionTree, GitTree

CONFIG = VerifyConfig()


def planned(root: Path, *changed: str) -> Plan:
    return build_plan(list(changed), GitTree.discover(root), CONFIG)


def commands(plan: Plan) -> dict[str, str]:
    return {check.key: check.command for check in plan.checks}


def cargo(packages: str, folder: str = "") -> dict[str, str]:
    """The cargo checks of a Cargo workspace run for `packages` ("--workspace" for all)."""
    prefix = f"{folder}:" if folder else ""
    return {f"{prefix}cargo-check": f"cargo check {packages} --all-targets",
            f"{prefix}cargo-test": f"cargo test {packages}"}


# Cargo: crate to crate through [workspace.dependencies], `-p` for the crates selected.


def test_a_crate_change_checks_the_crate_and_its_dependents_only(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.cargo_monorepo())
    # syntax inherits parser (parser.workspace = true), ide syntax, cli ide; the bench crate
    # is a Cargo workspace of its own depending on syntax by path.
    assert commands(planned(root, "crates/parser/src/lib.rs")) == {
        **cargo("-p cli -p ide -p parser -p syntax"),
        **cargo("--workspace", "crates/syntax/bench"),
    }
    assert commands(planned(root, "crates/cli/src/main.rs")) == cargo("-p cli")
    # ext/os is a member only as cli's path dependency (Cargo's rule), no glob lists it.
    assert commands(planned(root, "ext/os/lib.rs")) == cargo("-p cli -p acme_os")
    # test-utils is ide's dev-dependency: ide's tests build it, cli does not.
    assert commands(planned(root, "crates/test-utils/src/lib.rs")) == cargo(
        "-p ide -p test-utils")
    # Changes every crate may see: the whole workspace, and what depends on any of its crates.
    whole = {**cargo("--workspace"), **cargo("--workspace", "crates/syntax/bench")}
    for changed in ("Cargo.lock", "Cargo.toml", "ext/broadcast/lib.rs"):
        assert commands(planned(root, changed)) == whole, changed
    # A toolchain pin concerns every Cargo workspace below it, the excluded crate's too.
    for changed in ("rust-toolchain.toml", ".cargo/config.toml"):
        assert commands(planned(root, changed)) == {
            **whole, **cargo("--workspace", "crates/imp")}, changed
    # The excluded crate is a project of its own.
    assert commands(planned(root, "crates/imp/src/lib.rs")) == cargo("--workspace", "crates/imp")


def test_a_test_only_change_checks_its_own_crate(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.cargo_monorepo())
    assert commands(planned(root, "crates/ide/tests/hover.rs")) == cargo("-p ide")
    assert commands(planned(root, "crates/parser/test_data/ok/0001_fn.rs")) == cargo("-p parser")


def test_crates_nobody_builds_are_not_workspaces(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.cargo_monorepo())
    explanation = plan_change(["crates/cli/src/main.rs"], GitTree.discover(root),
                              CONFIG).explanation
    assert explanation.skipped["ext/broadcast"] == (
        "not a member of the Cargo workspace at . (not listed, not a path dependency of a "
        "member, not excluded): cargo builds it only as a member: part of the workspace "
        "around it")
    assert explanation.skipped["tests/specs/pipe"] == (
        "below a tests/ folder and no workspace declares it: test data")
    assert "crates/syntax/bench" not in explanation.skipped  # its own [workspace]
    target = "crates/syntax/fuzz/fuzz_targets/parser.rs"
    fuzzed = planned(root, target)
    assert (fuzzed.checks, fuzzed.unverified) == ((), (target,))
    assert explanation.skipped["crates/syntax/fuzz"] == (
        "a cargo-fuzz harness (`[package.metadata] cargo-fuzz = true`): cargo fuzz builds it "
        "on nightly, no check does")
    assert explanation.skipped["ext/os"] == "a crate of the Cargo workspace at ."


def test_explain_names_the_edges_and_the_narrowing(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.cargo_monorepo())
    result = plan_change(["crates/syntax/src/lib.rs"], GitTree.discover(root), CONFIG)
    because = {c["key"]: c["because"] for c in result.explanation.to_dict()["checks"]}
    [reason] = because["cargo-test"]
    assert reason["file"] == "crates/syntax/src/lib.rs"
    assert reason["steps"] == [
        "in crates/syntax",
        "cargo runs the 3 of 7 crates of the Cargo workspace that changed or depend on a "
        "change: cli (crates/cli depends on crates/ide (crates/cli/Cargo.toml: "
        "ide.workspace = true, [workspace.dependencies] in Cargo.toml: ide = { path = "
        '"./crates/ide" })); ide (crates/ide depends on crates/syntax (crates/ide/Cargo.toml: '
        "syntax.workspace = true, [workspace.dependencies] in Cargo.toml: syntax = { path = "
        '"./crates/syntax" })); syntax (in crates/syntax)',
    ]
    assert because["crates/syntax/bench:cargo-test"][0]["steps"] == [
        "in crates/syntax",
        'crates/syntax/bench depends on crates/syntax (crates/syntax/bench/Cargo.toml: syntax = '
        '{ path = ".." })',
    ]


# Across languages only through a declared dependency: maturin builds a Python package from a
# crate.

PYTEST = 'uv run --frozen pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"'


def test_a_crate_built_by_maturin_checks_its_python_package_and_dependents(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.maturin_workspace())
    core_python = {"pydantic-core:pytest": PYTEST, "pytest": PYTEST,
                   "ruff": "uv run --frozen ruff check ."}
    # The crate, its Python package (maturin), and pydantic, which depends on that package.
    assert commands(planned(root, "pydantic-core/src/lib.rs")) == {
        **cargo("--workspace", "pydantic-core"), **core_python}
    # Python files of the same folder: Python checks only, no cargo.
    assert commands(planned(root, "pydantic-core/python/pydantic_core/__init__.py")) == (
        core_python)
    # A test file: its package only (the root's ruff lints the member, which has no linter).
    assert commands(planned(root, "pydantic-core/tests/test_validators.py")) == {
        "pydantic-core:pytest": PYTEST, "ruff": "uv run --frozen ruff check ."}
    assert commands(planned(root, "pydantic/main.py")) == {
        "pytest": PYTEST, "ruff": "uv run --frozen ruff check ."}


def test_a_rust_file_plans_no_python_checks_without_a_declared_dependency(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({  # a crate whose pyproject only configures ruff for its scripts
        "Cargo.toml": '[package]\nname = "engine"\nversion = "0.1.0"\nedition = "2021"\n',
        "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
        "src/lib.rs": "pub fn run() {}\n",
        "scripts/bump.py": "print('bump')\n",
    })
    ruff = {"ruff": "ruff check ."}
    assert commands(planned(root, "src/lib.rs")) == cargo("--workspace")
    assert commands(planned(root, "scripts/bump.py")) == ruff
    # A file of no language (data, a config) concerns every ecosystem of its folder.
    assert commands(planned(root, "data.json")) == {**cargo("--workspace"), **ruff}


# Node: a plain range links the member its version satisfies; root fan-out scripts.


def keys(plan: Plan) -> set[str]:
    return {check.key for check in plan.checks}


def test_a_plain_range_links_the_member_its_version_satisfies(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.npm_workspace())
    # app ("^1.0.0") and demo ("*") get the member utils@1.2.0; legacy-app ("^0.9.0") gets
    # utils 0.9.4 from the registry. The root's `test` runs every member's (`--workspaces`):
    # not for a member's change reaching the root as a dependent (it devDepends on utils).
    # The root's eslint lints the members, which have no linter.
    plan = plan_change(["packages/utils/index.js"], GitTree.discover(root), CONFIG)
    assert keys(plan.plan) == {
        "packages/utils:node-test", "packages/app:node-test", "packages/demo:node-test",
        "node-lint",
    }  # fmt: skip
    because = {c["key"]: c["because"][0]["steps"] for c in plan.explanation.to_dict()["checks"]}
    assert because["packages/app:node-test"] == [
        "in packages/utils",
        'packages/app depends on packages/utils (packages/app/package.json: "@acme/utils": '
        '"^1.0.0", satisfied by @acme/utils@1.2.0)',
    ]
    assert keys(planned(root, "packages/legacy-app/index.js")) == {
        "packages/legacy-app:node-test", "node-lint"}


def test_a_root_fan_out_script_runs_for_the_roots_own_and_global_changes(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(layouts.npm_workspace())
    assert keys(planned(root, "scripts/release.js")) == {"node-lint", "node-test"}
    assert commands(planned(root, "scripts/release.js"))["node-test"] == "npm run test"
    everything = keys(planned(root, ".github/ratchet.yml"))
    assert {"node-test", "node-lint", "packages/utils:node-test"} <= everything


def test_pnpm_links_a_plain_range_only_when_configured_to(
    make_repo: Callable[[Files], Path],
) -> None:
    files = layouts.pnpm_workspace()
    cli = json.loads(files["packages/cli/package.json"])
    cli["dependencies"] = {"@acme/parser": "^1.0.0"}  # parser is 1.0.0
    files["packages/cli/package.json"] = layouts.package_json(cli)
    root = make_repo(files)
    # pnpm 9 installs ^1.0.0 from the registry unless link-workspace-packages is set.
    assert "packages/cli:node-test" not in keys(planned(root, "packages/parser/src/index.ts"))
    (root / ".npmrc").write_text("link-workspace-packages=true\n")
    assert "packages/cli:node-test" in keys(planned(root, "packages/parser/src/index.ts"))


def test_crates_the_base_and_the_change_narrow_differently_run_as_a_whole(
    make_repo: Callable[[Files], Path],
) -> None:
    """The base's plan runs `-p cli -p ide` for an ide change; the change also deletes cli:
    `cargo -p cli` would fail, the change's `-p ide` alone drops a check the base plans. Both
    are right only with `--workspace`."""
    root = make_repo(layouts.cargo_monorepo())
    for name in ("Cargo.toml", "src/main.rs"):
        (root / "crates/cli" / name).unlink()
    write(root, {"crates/ide/src/lib.rs": "pub fn hover() -> u8 { 1 }\n"})
    base = GitRevisionTree(discover(root), "HEAD")
    changed = ["crates/cli/Cargo.toml", "crates/cli/src/main.rs", "crates/ide/src/lib.rs"]
    assert commands(build_plan(changed, GitTree.discover(root), CONFIG, base=base)) == cargo(
        "--workspace")


def test_a_pinned_python_package_built_from_a_crate_is_tested_when_the_crate_changes(
    make_repo: Callable[[Files], Path],
) -> None:
    """polars' Python tests run on the runtime maturin builds from the Cargo workspace: a
    change in a crate the runtime's crate depends on plans them; the docs project, which does
    not pin the repository's version, and an unrelated crate's change do not."""
    root = make_repo(layouts.polars_layout())
    pytest = 'python -m pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"'
    result = plan_change(["crates/polars-core/src/lib.rs"], GitTree.discover(root), CONFIG)
    assert commands(result.plan) == {
        **cargo("-p polars-core -p polars-python -p polars-runtime-32"),
        "py-polars:pytest": pytest,
    }
    because = {c["key"]: c["because"][0]["steps"]
               for c in result.explanation.to_dict()["checks"]}
    assert because["py-polars:pytest"][-2:] == [
        "py-polars/runtime/polars-runtime-32 (python) depends on "
        "py-polars/runtime/polars-runtime-32 (rust) "
        "(py-polars/runtime/polars-runtime-32/pyproject.toml: built by maturin from "
        "py-polars/runtime/polars-runtime-32/Cargo.toml)",
        'py-polars depends on py-polars/runtime/polars-runtime-32 (py-polars/pyproject.toml: '
        '"polars-runtime-32 == 1.43.2" (the project in py-polars/runtime/polars-runtime-32))',
    ]
    assert commands(planned(root, "crates/polars-tools/src/main.rs")) == cargo("-p polars-tools")


def test_ratchet_verify_plan_only_json_runs_the_changed_crates(
    make_repo: Callable[[Files], Path], capsys: pytest.CaptureFixture[str],
) -> None:
    """`ratchet verify --plan-only --json` on a branch of the Cargo monorepo: its plan runs
    the changed crate and its dependents with `-p`, and says nothing is left unverified."""
    root = make_repo(layouts.cargo_monorepo())
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"crates/ide/src/lib.rs": "pub fn hover() -> u8 { 1 }\n"})
    git(root, "commit", "-q", "-am", "ide: hover returns a value")
    parser = argparse.ArgumentParser(prog="ratchet verify")
    configure_parser(parser)
    code = run_verify(parser.parse_args(["--repo", str(root), "--head", "HEAD", "--plan-only",
                                         "--json"]), Sandbox(), NetworkSettings())
    out, err = capsys.readouterr()
    assert code == 0, err
    plan = json.loads(out)["plan"]
    assert [(c["id"], c["workspace"], c["command"], c["needs"]) for c in plan["checks"]] == [
        ("cargo-check", ".", "cargo check -p cli -p ide --all-targets",
         {"setup": [], "checks": []}),
        ("cargo-test", ".", "cargo test -p cli -p ide", {"setup": [], "checks": []}),
    ]
    assert (plan["order"], plan["setup"], plan["unverified"]) == (
        [["cargo-check", "cargo-test"]], [], [])
