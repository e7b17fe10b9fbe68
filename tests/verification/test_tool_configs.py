"""A config file plans the checks of the tool it configures, over the workspaces it covers:
never the build and tests of every workspace of its language."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import layouts
from verify_helpers import Files, git, write

from plumbing.git import Git
from verification.config import VerifyConfig
from verification.explain import render_text
from verification.plan import Plan, PlanResult, plan_change
from verification.tree import GitRevisionTree, GitTree

CONFIG = VerifyConfig()


def planned(root: Path, *changed: str) -> PlanResult:
    return plan_change(list(changed), GitTree.discover(root), CONFIG)


def keys(plan: Plan) -> set[str]:
    return {check.key for check in plan.checks}


def test_a_lint_config_plans_only_the_lint_checks(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(layouts.pnpm_workspace())
    write(root, {"eslint.config.js": "{}\n"})
    assert keys(planned(root, "eslint.config.js").plan) == {"node-lint", "packages/cli:node-lint"}
    write(root, {"packages/cli/.eslintrc.json": "{}\n"})
    assert keys(planned(root, "packages/cli/.eslintrc.json").plan) == {"packages/cli:node-lint"}


def test_a_formatter_config_plans_the_checks_running_that_formatter(
    make_repo: Callable[[Files], Path],
) -> None:
    """The lint scripts run eslint only: a prettier config concerns the script running
    `prettier --check` (vuejs/core's `format-check`), and eslint's scripts only when eslint
    runs prettier through eslint-plugin-prettier."""
    files = layouts.pnpm_workspace()
    root = make_repo(files)
    write(root, {".prettierrc.json": "{}\n"})
    alone = planned(root, ".prettierrc.json")
    assert (alone.plan.checks, alone.plan.unverified) == ((), (".prettierrc.json",))
    assert "configures prettier, and no planned check runs prettier" in render_text(
        alone.explanation)
    package = json.loads(files["package.json"])
    package["scripts"]["format-check"] = "prettier --check --cache ."
    write(root, {"package.json": layouts.package_json(package)})
    assert {c.key: c.command for c in planned(root, ".prettierrc.json").plan.checks} == {
        "node-format-check": "pnpm run format-check"}
    package["devDependencies"]["eslint-plugin-prettier"] = "^5.2.1"
    write(root, {"package.json": layouts.package_json(package)})
    assert keys(planned(root, ".prettierrc.json").plan) == {
        "node-format-check", "node-lint", "packages/cli:node-lint"}


def test_a_typecheck_config_plans_the_type_checker(make_repo: Callable[[Files], Path]) -> None:
    files = layouts.pnpm_workspace()
    files["packages/cli/package.json"] = layouts.package_json({
        "name": "@acme/cli", "version": "1.0.0",
        "scripts": {"lint": "eslint src", "typecheck": "tsc --noEmit", "test": "vitest run"},
        "dependencies": {"@acme/parser": "workspace:*"},
    })  # fmt: skip
    root = make_repo(files)
    write(root, {"tsconfig.base.json": "{}\n", "packages/cli/tsconfig.json": "{}\n"})
    # The checks running tsc: cli's type check and parser's build (`tsc -p .`); not docs'
    # vitepress build, the tests or the linters.
    assert keys(planned(root, "tsconfig.base.json").plan) == {
        "packages/cli:node-typecheck", "packages/parser:node-build"}
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
    config = VerifyConfig.from_dict({"checks": [
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
    config = VerifyConfig.from_dict({"checks": [
        {"id": "unit", "kind": "test", "run": "make test"},
        {"id": "hooks", "kind": "lint", "run": "pre-commit run --all-files"},
        {"id": "types", "kind": "typecheck", "run": "mypy ."},
    ]})  # fmt: skip
    tree = GitTree.discover(monorepo)
    assert keys(plan_change(["Makefile"], tree, config).plan) == {"unit"}
    assert keys(plan_change([".pre-commit-config.yaml"], tree, config).plan) == {"hooks"}


def test_an_interpreter_pin_plans_the_checks_that_honour_it(
    make_repo: Callable[[Files], Path],
) -> None:
    """uv runs a check on the interpreter `.python-version` pins; `.nvmrc` and `.node-version`
    pin what nvm or setup-node install in CI, which no check in the sandbox runs."""
    root = make_repo({**layouts.uv_workspace(), **layouts.pnpm_workspace(),
                      ".nvmrc": "22\n", ".node-version": "22.11.0\n"})
    pin = planned(root, ".python-version").plan
    assert {c.key for c in pin.checks} == {
        "ruff", "pytest", "packages/core:pytest", "packages/cli:pytest"}
    assert all(c.command.startswith("uv run --frozen ") for c in pin.checks)
    for name, manager in ((".nvmrc", "nvm"), (".node-version", "nodenv")):
        result = planned(root, name)
        assert (result.plan.checks, result.plan.unverified) == ((), (name,)), name
        assert f"configures {manager}, and no planned check runs {manager}" in render_text(
            result.explanation)


PYTEST_INI = """\
[pytest]
minversion = 8.0
addopts = -ra --strict-markers
testpaths = tests
filterwarnings =
    error
"""
TOX_INI = """\
[tox]
envlist = py312, lint

[testenv]
deps = pytest
commands = pytest {posargs}

[testenv:lint]
deps = ruff
commands = ruff check .

[pytest]
addopts = -ra
"""


def test_test_runner_and_task_runner_files_plan_their_own_tool(
    make_repo: Callable[[Files], Path],
) -> None:
    """pytest.ini concerns pytest (the members' too: pytest finds the root's file walking up
    from a member without a pytest section), not ruff or mypy; tox.ini the tox command (and
    pytest, which reads its [pytest] section); noxfile.py the nox command."""
    root = make_repo({**layouts.uv_workspace(), "pytest.ini": PYTEST_INI, "mypy.ini": "[mypy]\n"})
    assert keys(planned(root, "pytest.ini").plan) == {
        "pytest", "packages/cli:pytest", "packages/core:pytest"}


def test_tox_and_nox_files_plan_the_tests_they_run(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo({  # a project without a lockfile: its tests run through tox
        "pyproject.toml": '[project]\nname = "lone"\nversion = "1.0"\n\n[tool.ruff]\n',
        "tox.ini": TOX_INI, "src/lone/__init__.py": "", "tests/test_lone.py": "def test_x(): ...\n",
    })  # fmt: skip
    assert {c.key: c.command for c in planned(root, "tox.ini").plan.checks} == {
        "pytest": "tox -e py"}
    git(root, "rm", "-q", "tox.ini")
    write(root, {"noxfile.py": "import nox\n\n@nox.session\ndef tests(session):\n"
                               "    session.run('pytest')\n"})
    assert {c.key: c.command for c in planned(root, "noxfile.py").plan.checks} == {
        "pytest": "nox -s tests"}


def test_turbo_json_plans_the_checks_running_turbo(make_repo: Callable[[Files], Path]) -> None:
    files = layouts.pnpm_workspace()
    files["turbo.json"] = '{"tasks": {"build": {"dependsOn": ["^build"]}}}\n'
    root = make_repo(files)
    alone = planned(root, "turbo.json")
    assert (alone.plan.checks, alone.plan.unverified) == ((), ("turbo.json",))
    assert "turbo.json: no check runs turbo" in render_text(alone.explanation)
    package = json.loads(files["package.json"])
    package["scripts"]["build"] = "turbo run build"
    write(root, {"package.json": layouts.package_json(package)})
    assert keys(planned(root, "turbo.json").plan) == {"node-build"}


def test_a_file_no_tool_reads_plans_nothing_and_says_so(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({**layouts.pnpm_workspace(), "biome.json": "{}\n"})
    for path in (".gitattributes", ".gitignore", ".vscode/settings.json",
                 ".github/dependabot.yml", "renovate.json", ".github/ISSUE_TEMPLATE/bug.yml",
                 "packages/cli/.gitignore"):
        write(root, {path: "x\n"})
        result = planned(root, path)
        assert (result.plan.checks, result.plan.unverified) == ((), (path,)), path
        assert "no tool reads it when a check runs" in render_text(result.explanation), path
    # A fixture's .gitignore is test data: its package's checks run.
    write(root, {"packages/parser/__tests__/fixtures/basic/.gitignore": "dist\n"})
    assert planned(root, "packages/parser/__tests__/fixtures/basic/.gitignore").plan.checks


def test_a_pyproject_change_to_a_tools_table_plans_that_tool(
    make_repo: Callable[[Files], Path],
) -> None:
    """Against its base, a uv workspace root's pyproject.toml whose change touches only
    `[tool.ruff]` plans the ruff checks (the root's, which covers the members), not every
    member's tests; `[tool.mypy]` and `[tool.coverage]` together plan mypy and pytest; a
    dependency change is the whole workspace's again; a comment plans nothing."""
    files = layouts.uv_workspace()
    files["pyproject.toml"] += (
        "\n[tool.mypy]\nstrict = true\n\n[tool.coverage.run]\nbranch = true\n")
    root = make_repo(files)
    repo = Git(git_dir=root / ".git")

    def after(edit: str) -> PlanResult:
        git(root, "checkout", "-q", "-B", "change", "main")
        write(root, {"pyproject.toml": files["pyproject.toml"].replace(*edit.split(" -> "))})
        git(root, "commit", "-q", "-am", "change")
        return plan_change(["pyproject.toml"], GitRevisionTree(repo, "change"), CONFIG,
                           base=GitRevisionTree(repo, "main"))

    ruff = after("line-length = 100 -> line-length = 88")
    assert keys(ruff.plan) == {"ruff"}
    assert "configures ruff for the python workspaces" in render_text(ruff.explanation)
    both = after("strict = true\n\n[tool.coverage.run]\nbranch = true -> "
                 "strict = false\n\n[tool.coverage.run]\nbranch = false")
    assert keys(both.plan) == {"mypy", "pytest", "packages/core:pytest", "packages/cli:pytest"}
    dependency = after('dependencies = ["acme-core"] -> dependencies = ["acme-core", "rich"]')
    assert {"ruff", "mypy", "pytest", "packages/core:pytest"} <= keys(dependency.plan)
    comment = after("[tool.ruff] -> # lint settings\n[tool.ruff]")
    assert (comment.plan.checks, comment.plan.unverified) == ((), ("pyproject.toml",))
