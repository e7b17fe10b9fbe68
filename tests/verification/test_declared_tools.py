"""The repository's declared tools are planned: its pyright config plans pyright over what it
includes, mypy's `files` narrows mypy to those files, and a tool's config plans that tool.

Configs are written as real projects write them: a `pyrightconfig.json` in the shape of
microsoft/pyright's own samples and pydantic's (`include`, `exclude`, `typeCheckingMode`),
`[tool.pyright]` as in astral-sh/uv's scripts, `[tool.mypy] files` as in pallets/flask.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import layouts
from verify_helpers import Files, write

from verification.config import VerifyConfig
from verification.explain import render_text
from verification.plan import Plan, PlanResult, plan_change
from verification.tree import GitTree

CONFIG = VerifyConfig()

PYRIGHTCONFIG = """\
{
  "include": ["src", "packages/*/src"],
  "exclude": ["**/node_modules", "**/__pycache__", "tests/fixtures"],
  "pythonVersion": "3.12",
  "typeCheckingMode": "strict",
  "reportMissingTypeStubs": false
}
"""


def planned(root: Path, *changed: str) -> PlanResult:
    return plan_change(list(changed), GitTree.discover(root), CONFIG)


def commands(plan: Plan) -> dict[str, str]:
    return {check.key: check.command for check in plan.checks}


def test_a_pyright_config_plans_pyright_over_what_it_includes(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({**layouts.uv_workspace(), "pyrightconfig.json": PYRIGHTCONFIG})
    source = planned(root, "src/acme/__init__.py").plan
    assert commands(source)["pyright"] == "uv run --frozen pyright"
    assert {c.kind for c in source.checks if c.key == "pyright"} == {"typecheck"}
    # A member with no type checker of its own is covered by the root's pyright, which
    # includes `packages/*/src`; its tests are outside what pyright checks.
    member = planned(root, "packages/core/src/acme_core/__init__.py").plan
    assert "pyright" in commands(member)
    tests = planned(root, "tests/test_app.py").plan
    assert "pyright" not in commands(tests) and "pytest" in commands(tests)
    config = planned(root, "pyrightconfig.json")
    assert set(commands(config.plan)) == {"pyright"}
    assert config.plan.unverified == ()
    assert "pyrightconfig.json configures pyright" in render_text(config.explanation)


def test_a_pyproject_pyright_table_declares_pyright(make_repo: Callable[[Files], Path]) -> None:
    files = layouts.uv_workspace()
    files["packages/cli/pyproject.toml"] += (
        '\n[tool.pyright]\ninclude = ["src"]\nvenvPath = "."\nvenv = ".venv"\n')
    root = make_repo(files)
    result = planned(root, "packages/cli/src/acme_cli/__init__.py").plan
    assert commands(result)["packages/cli:pyright"] == "uv run --frozen pyright"
    assert "pyright" not in commands(result)  # the member has its own: the root's is not run


def test_mypy_files_narrow_mypy(make_repo: Callable[[Files], Path]) -> None:
    files = layouts.uv_workspace()
    files["pyproject.toml"] += (
        '\n[tool.mypy]\nfiles = ["src/acme", "scripts/*.py"]\nstrict = true\n')
    files["scripts/release.py"] = "print('release')\n"
    files["tools/gen.py"] = "print('gen')\n"
    root = make_repo(files)
    assert commands(planned(root, "src/acme/__init__.py").plan)["mypy"] == "uv run --frozen mypy"
    assert "mypy" in commands(planned(root, "scripts/release.py").plan)
    outside = commands(planned(root, "tools/gen.py").plan)
    assert "mypy" not in outside and "ruff" in outside
    assert "mypy" in commands(planned(root, "pyproject.toml").plan)  # its own config
    write(root, {"mypy.ini": "[mypy]\nfiles = src/acme,\n    scripts\n"})
    assert "mypy" in commands(planned(root, "mypy.ini").plan)


def test_linter_configs_declare_their_linter(make_repo: Callable[[Files], Path]) -> None:
    """A Cargo workspace with `[workspace.lints.clippy]` and a `rustfmt.toml` lints with clippy
    and checks its formatting (narrowed to the changed crate like its other cargo commands);
    a Go module under a root `.golangci.yml` runs golangci-lint, and the config plans only
    that linter."""
    files = layouts.cargo_workspace()
    files["Cargo.toml"] += '\n[workspace.lints.clippy]\nall = { level = "warn", priority = -1 }\n'
    files["rustfmt.toml"] = 'edition = "2021"\nmax_width = 100\n'
    root = make_repo(files)
    plan = planned(root, "crates/acme_py/src/lib.rs").plan  # no crate depends on it
    assert {c.id: (c.kind, c.command) for c in plan.checks if c.id.startswith("cargo-")} == {
        "cargo-clippy": ("lint", "cargo clippy -p acme_py --all-targets"),
        "cargo-fmt": ("lint", "cargo fmt -p acme_py -- --check"),
        "cargo-check": ("typecheck", "cargo check -p acme_py --all-targets"),
        "cargo-test": ("test", "cargo test -p acme_py"),
    }
    assert {c.id for c in planned(root, "rustfmt.toml").plan.checks} == {"cargo-fmt"}


def test_a_golangci_config_plans_golangci_lint(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo({
        "go.mod": "module example.com/app\n\ngo 1.23\n", "main.go": "package main\n",
        "tools/go.mod": "module example.com/app/tools\n\ngo 1.23\n",
        "tools/gen.go": "package tools\n",
        ".golangci.yml": "version: \"2\"\nlinters:\n  enable: [errcheck, govet]\n",
    })  # fmt: skip
    assert {c.key for c in planned(root, "main.go").plan.checks} == {
        "golangci-lint", "go-vet", "go-test"}
    assert {c.key for c in planned(root, ".golangci.yml").plan.checks} == {
        "golangci-lint", "tools:golangci-lint"}
