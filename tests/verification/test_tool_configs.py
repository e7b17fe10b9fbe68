"""A config file plans the checks of the tool it configures, over the workspaces it covers:
never the build and tests of every workspace of its language."""

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


def planned(root: Path, *changed: str) -> PlanResult:
    return plan_change(list(changed), GitTree.discover(root), CONFIG)


def keys(plan: Plan) -> set[str]:
    return {check.key for check in plan.checks}


def test_a_lint_config_plans_only_the_lint_checks(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.pnpm_workspace())
    for config in ("eslint.config.js", ".prettierrc.json"):
        write(root, {config: "{}\n"})
        assert keys(planned(root, config).plan) == {"node-lint", "packages/cli:node-lint"}, config
    write(root, {"packages/cli/.eslintrc.json": "{}\n"})
    assert keys(planned(root, "packages/cli/.eslintrc.json").plan) == {"packages/cli:node-lint"}


def test_a_typecheck_config_plans_the_type_checker(make_repo: Callable[[Files], Path]) -> None:
    files = layouts.pnpm_workspace()
    files["packages/cli/package.json"] = layouts.package_json({
        "name": "@acme/cli", "version": "1.0.0",
        "scripts": {"lint": "eslint src", "typecheck": "tsc --noEmit", "test": "vitest run"},
        "dependencies": {"@acme/parser": "workspace:*"},
    })  # fmt: skip
    root = make_repo(files)
    write(root, {"tsconfig.base.json": "{}\n", "packages/cli/tsconfig.json": "{}\n"})
    # Not the builds (parser's `tsc -p .`, docs' vitepress), the tests or the linters.
    assert keys(planned(root, "tsconfig.base.json").plan) == {"packages/cli:node-typecheck"}
    assert keys(planned(root, "packages/cli/tsconfig.json").plan) == {
        "packages/cli:node-typecheck"}


def test_a_python_tool_config_plans_that_tool_or_says_none_runs_it(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({
        **layouts.uv_workspace(), "ruff.toml": "line-length = 100\n", "mypy.ini": "[mypy]\n",
    })  # fmt: skip
    ruff = planned(root, "ruff.toml").plan
    assert ruff.checks and {c.id for c in ruff.checks} == {"ruff"}
    mypy = planned(root, "mypy.ini").plan
    assert mypy.checks and {c.id for c in mypy.checks} == {"mypy"}
    write(root, {".flake8": "[flake8]\n"})
    flake8 = planned(root, ".flake8")
    assert (flake8.plan.checks, flake8.plan.unverified) == ((), (".flake8",))
    assert "no planned check runs flake8" in render_text(flake8.explanation)


def test_a_workflow_file_is_neutral_unless_a_check_lints_workflows(monorepo: Path) -> None:
    workflow = ".github/workflows/ci.yml"
    write(monorepo, {workflow: "on: [push, pull_request]\njobs: {}\n"})
    result = planned(monorepo, workflow)
    assert (result.plan.checks, result.plan.unverified) == ((), (workflow,))
    assert "a workflow file: no check verifies it" in render_text(result.explanation)
    config = VerifyConfig.model_validate({"checks": [
        {"id": "actionlint", "kind": "lint", "run": "actionlint -color"},
        {"id": "unit", "kind": "test", "run": "pytest"},
    ]})  # fmt: skip
    linted = plan_change([workflow], GitTree.discover(monorepo), config)
    assert (keys(linted.plan), linted.plan.unverified) == ({"actionlint"}, ())


def test_a_root_makefile_plans_the_checks_running_make(monorepo: Path) -> None:
    write(monorepo, {"Makefile": "test:\n\tpytest\n", ".pre-commit-config.yaml": "repos: []\n"})
    assert planned(monorepo, "Makefile").plan.unverified == ("Makefile",)
    assert planned(monorepo, ".pre-commit-config.yaml").plan.unverified == (
        ".pre-commit-config.yaml",)
    config = VerifyConfig.model_validate({"checks": [
        {"id": "unit", "kind": "test", "run": "make test"},
        {"id": "hooks", "kind": "lint", "run": "pre-commit run --all-files"},
        {"id": "types", "kind": "typecheck", "run": "mypy ."},
    ]})  # fmt: skip
    tree = GitTree.discover(monorepo)
    assert keys(plan_change(["Makefile"], tree, config).plan) == {"unit"}
    assert keys(plan_change([".pre-commit-config.yaml"], tree, config).plan) == {"hooks"}
