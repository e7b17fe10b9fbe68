"""Plan building on repositories the tests create: selection, detection, canonical hashing."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

from verify_helpers import Files, write

from runner.config import parse_repository_config
from verification.config import VerifyConfig, WorkspaceConfig
from verification.plan import Plan, PlannedCheck, build_plan
from verification.tree import DirectoryTree, GitTree

CONFIG = VerifyConfig(concurrency=4)


def git_tree(root: Path) -> GitTree:
    return GitTree.discover(root)


def planned(plan: Plan) -> set[str]:
    return {check.key for check in plan.checks}


def test_change_inside_one_workspace_plans_only_it(monorepo: Path) -> None:
    plan = build_plan(["services/api/app_api.py"], git_tree(monorepo), CONFIG)
    assert planned(plan) == {"services/api:pytest"}
    assert [w.path for w in plan.workspaces] == ["services/api"]


def test_node_workspace_plans_its_scripts(monorepo: Path) -> None:
    plan = build_plan(["web/sum.js"], git_tree(monorepo), CONFIG)
    assert [(c.key, c.command) for c in plan.checks] == [("web:node-test", "npm run test")]


def test_toolchain_pins_change_plans_every_workspace(monorepo: Path) -> None:
    plan = build_plan([".tool-versions"], git_tree(monorepo), CONFIG)
    assert planned(plan) == {
        "services/api:pytest",
        "services/worker:pytest",
        "services/worker/plugins/extra:pytest",
        "web:node-test",
    }


def test_planning_leaves_the_garbage_collector_as_it_found_it(monorepo: Path) -> None:
    assert gc.isenabled()
    build_plan([".tool-versions"], git_tree(monorepo), CONFIG)
    assert gc.isenabled()  # paused while planning only
    gc.disable()
    try:
        build_plan([".tool-versions"], git_tree(monorepo), CONFIG)
        assert not gc.isenabled()  # a caller's choice stands
    finally:
        gc.enable()


def test_ratchet_config_plans_every_workspace_and_shared_files_their_ecosystem(
    monorepo: Path,
) -> None:
    everything = build_plan([".tool-versions"], git_tree(monorepo), CONFIG)
    assert build_plan([".github/ratchet.yml"], git_tree(monorepo), CONFIG) == everything
    python = build_plan(["constraints.txt"], git_tree(monorepo), CONFIG)
    assert planned(python) == planned(everything) - {"web:node-test"}
    # The interpreter pin concerns the checks uv runs (it honours .python-version): here
    # pytest runs on the sandbox's python, and the pin is listed as nothing verifying it.
    pin = build_plan([".python-version"], git_tree(monorepo), CONFIG)
    assert (pin.checks, pin.unverified) == ((), (".python-version",))
    # No workspace installs from a root package-lock.json (web has its own): nothing
    # verifies it, and the plan says so instead of passing silently.
    stray = build_plan(["package-lock.json"], git_tree(monorepo), CONFIG)
    assert (stray.checks, stray.unverified) == ((), ("package-lock.json",))


def test_documentation_change_plans_nothing(monorepo: Path) -> None:
    docs = ["README.md", "services/api/README.md", "LICENSE"]
    plan = build_plan(docs, git_tree(monorepo), CONFIG)
    assert plan.is_empty
    assert plan.workspaces == ()


def test_same_inputs_give_the_same_hash(monorepo: Path) -> None:
    changed = ["services/worker/app_worker.py", "web/sum.js"]
    first = build_plan(changed, git_tree(monorepo), CONFIG)
    second = build_plan(list(reversed(changed)), DirectoryTree(monorepo), CONFIG)
    assert first.to_json() == second.to_json()
    assert first.sha256 == second.sha256
    assert Plan.from_json(first.to_json()) == first
    other = build_plan(["web/sum.js"], git_tree(monorepo), CONFIG)
    assert other.sha256 != first.sha256


def test_nested_workspace_resolves_to_the_nearest_manifest(monorepo: Path) -> None:
    nested = build_plan(["services/worker/plugins/extra/app_extra.py"], git_tree(monorepo), CONFIG)
    assert planned(nested) == {"services/worker/plugins/extra:pytest"}
    outer = build_plan(["services/worker/app_worker.py"], git_tree(monorepo), CONFIG)
    assert planned(outer) == {"services/worker:pytest"}
    # The outer workspace's pytest must not collect the nested workspace's tests.
    assert outer.checks[0].command.endswith(" --ignore=plugins/extra")


def test_untracked_new_file_counts_in_git_tree(monorepo: Path) -> None:
    write(monorepo, {"tools/pyproject.toml": '[project]\nname = "tools"\n'})
    write(monorepo, {"tools/test_tools.py": "def test_x():\n    pass\n"})
    write(monorepo, {".gitignore": "ignored/\n", "ignored/pyproject.toml": "[project]\n"})
    plan = build_plan([".tool-versions"], git_tree(monorepo), CONFIG)
    assert "tools:pytest" in planned(plan)
    assert not any(check.workspace == "ignored" for check in plan.checks)


def test_configured_workspace_uses_its_checks_and_others_keep_detection(monorepo: Path) -> None:
    config = VerifyConfig(
        timeout=60,
        workspaces=[
            WorkspaceConfig.from_dict(
                {
                    "path": "./services/api/",
                    "setup": ["echo setup"],
                    "checks": [{"id": "unit", "kind": "test", "run": "pytest -x", "timeout": 5}],
                }
            )
        ],
    )
    plan = build_plan([".tool-versions"], git_tree(monorepo), config)
    api = [c for c in plan.checks if c.workspace == "services/api"]
    assert api == [PlannedCheck("unit", "services/api", "test", "pytest -x", 5.0, None,
                                setups=("services/api",))]  # its setup runs before it
    assert api[0].key == "services/api:unit"
    assert api[0].log_name == "services%2Fapi%3Aunit"
    assert [w.setup for w in plan.workspaces if w.path == "services/api"] == [("echo setup",)]
    worker = next(c for c in plan.checks if c.workspace == "services/worker")
    assert worker.timeout == 60.0


def test_root_checks_from_config_make_the_root_a_workspace(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({"src/main.c": "int main(void) { return 0; }\n"})
    text = "verify:\n  checks:\n    - {id: build, kind: build, run: make}\n"
    config = parse_repository_config(text)
    plan = build_plan(["src/main.c"], git_tree(root), config.verify)
    assert [(c.key, c.workspace, c.command, c.timeout) for c in plan.checks] == [
        ("build", ".", "make", 900.0)
    ]


def test_python_tools_detected_only_where_configured_or_depended_on(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(
        {
            "a/pyproject.toml": '[project]\nname = "a"\n[tool.ruff]\nline-length = 100\n',
            "a/a.py": "",
            "b/pyproject.toml": '[project]\nname = "b"\ndependencies = ["mypy>=1"]\n',
            "b/b.py": "",
            "c/setup.py": "",
            "c/c.py": "",
        }
    )
    plan = build_plan(["a/a.py", "b/b.py", "c/c.py"], git_tree(root), CONFIG)
    assert planned(plan) == {"a:ruff", "b:mypy"}


def test_go_rust_and_node_package_managers(make_repo: Callable[[Files], Path]) -> None:
    scripts = '{"scripts": {"lint": "eslint .", "build": "tsc", "test": "vitest"}}'
    root = make_repo(
        {
            "svc/go.mod": "module svc\n",
            "svc/main.go": "package main\n",
            "rs/Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
            "rs/crates/core/Cargo.toml": '[package]\nname = "core"\n',
            "rs/crates/core/src/lib.rs": "",
            "ui/package.json": scripts,
            "ui/pnpm-lock.yaml": "",
            "ui/index.ts": "",
        }
    )
    plan = build_plan(
        ["svc/main.go", "rs/crates/core/src/lib.rs", "ui/index.ts"], git_tree(root), CONFIG
    )
    assert [(c.key, c.command) for c in plan.checks] == [
        ("rs:cargo-check", "cargo check --workspace --all-targets"),
        ("rs:cargo-test", "cargo test --workspace"),
        ("svc:go-vet", "go vet ./..."),
        ("svc:go-test", "go test ./..."),
        ("ui:node-lint", "pnpm run lint"),
        ("ui:node-test", "pnpm run test"),
        ("ui:node-build", "pnpm run build"),
    ]


def test_plan_hash_does_not_depend_on_the_machine(monkeypatch):
    """Unset concurrency stays unset in the plan: two hosts with other core counts agree."""
    from verification.config import VerifyConfig
    from verification.plan import build_plan

    class OneFile:
        def paths(self):
            return ["pyproject.toml", "pkg/mod.py"]

        def read_text(self, path):
            return "[project]\nname='x'\n" if path == "pyproject.toml" else ""

    hashes = set()
    for cores in (2, 64):
        monkeypatch.setattr("os.cpu_count", lambda cores=cores: cores)
        plan = build_plan(["pkg/mod.py"], OneFile(), VerifyConfig())
        assert plan.concurrency is None
        hashes.add(plan.sha256)
    assert len(hashes) == 1
