"""Test discovery and test settings follow the repository's own configuration (issue 22).

Real git repositories with real-format files: a setup.cfg whose change touches one tool's
section plans that tool only, against the change's base; a package.json `jest` key decides
which of the package's files are tests (a test-only change checks its package alone).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import layouts
import pytest
from layouts import package_json
from verify_helpers import Files, git, write

from plumbing.git import Git
from verification.config import VerifyConfig
from verification.explain import render_text
from verification.node_tests import DEFAULT_TEST_MATCH, Unreadable, _expand
from verification.plan import PlanResult, plan_change
from verification.tree import GitRevisionTree, GitTree

SETUP_CFG = """\
[metadata]
name = acme
version = 1.0

[options]
packages = find:
install_requires =
    requests

[tool:pytest]
testpaths = tests
addopts = -ra

[flake8]
max-line-length = 100

[mypy]
strict = True
"""


def changed(root: Path, edits: Files, *paths: str) -> PlanResult:
    """The plan of a commit on a branch off main writing `edits`, against main as its base."""
    git(root, "checkout", "-q", "-B", "change", "main")
    write(root, edits)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    repo = Git(git_dir=root / ".git")
    return plan_change(list(paths or edits), GitRevisionTree(repo, "change"), VerifyConfig(),
                       base=GitRevisionTree(repo, "main"))


def keys(result: PlanResult) -> set[str]:
    return {check.key for check in result.plan.checks}


def test_a_setup_cfg_change_plans_the_tools_whose_sections_it_touched(
    make_repo: Callable[[Files], Path],
) -> None:
    """`[tool:pytest]` plans pytest, `[mypy]` mypy, `[flake8]` nothing here (no check runs
    flake8: listed unverified, saying so); `[options]` is packaging: the whole workspace, as
    is a section no tool owns and a file that no longer parses; a comment plans nothing."""
    root = make_repo({
        "setup.cfg": SETUP_CFG,
        "setup.py": "from setuptools import setup\n\nsetup()\n",
        "ruff.toml": "line-length = 100\n",
        "acme/__init__.py": "VERSION = 1\n",
        "tests/test_acme.py": "def test_version():\n    assert True\n",
    })  # fmt: skip
    every = {"ruff", "mypy", "pytest"}
    assert keys(changed(root, {"acme/__init__.py": "VERSION = 2\n"})) == every

    def edit(old: str, new: str) -> PlanResult:
        assert old in SETUP_CFG
        return changed(root, {"setup.cfg": SETUP_CFG.replace(old, new)})

    assert keys(edit("addopts = -ra", "addopts = -ra -q")) == {"pytest"}
    assert keys(edit("strict = True", "strict = False")) == {"mypy"}
    assert keys(edit("addopts = -ra", "addopts = -q\n\n[coverage:run]\nbranch = true")) == {
        "pytest"}
    flake8 = edit("max-line-length = 100", "max-line-length = 88")
    assert (keys(flake8), flake8.plan.unverified) == (set(), ("setup.cfg",))
    assert "no planned check runs flake8" in render_text(flake8.explanation)
    assert keys(edit("    requests", "    requests\n    rich")) == every
    assert keys(edit("[flake8]", "[bdist_wheel]\nuniversal = 1\n\n[flake8]")) == every
    assert keys(edit("[mypy]", "[mypy\n")) == every  # unparseable: the whole workspace
    comment = edit("[flake8]", "# style\n[flake8]")
    assert (keys(comment), comment.plan.unverified) == (set(), ("setup.cfg",))


def test_tox_and_pytest_ini_sections_plan_their_readers(
    make_repo: Callable[[Files], Path],
) -> None:
    """tox.ini's `[pytest]` plans the pytest checks, its `[testenv]` the checks running tox;
    pytest.ini's other sections are read by no one."""
    tox_ini = "[tox]\nenvlist = py\n\n[testenv]\ncommands = pytest\n\n[pytest]\naddopts = -ra\n"
    root = make_repo({
        "pyproject.toml": '[project]\nname = "acme"\nversion = "1.0"\n\n[tool.ruff]\n',
        "tox.ini": tox_ini,
        "acme/__init__.py": "VERSION = 1\n",
        "tests/test_acme.py": "def test_version():\n    assert True\n",
        "tools/pytest.ini": "[pytest]\naddopts = -ra\n",
        "tools/pyproject.toml": '[project]\nname = "tools"\nversion = "1.0"\n',
        "tools/tests/test_tools.py": "def test_tools():\n    assert True\n",
    })  # fmt: skip
    # The workspaces at or below tox.ini, as for any tool's config.
    assert keys(changed(root, {"tox.ini": tox_ini.replace("-ra", "-q")})) == {
        "pytest", "tools:pytest"}
    assert keys(changed(root, {"tox.ini": tox_ini.replace("= pytest", "= pytest -x")})) == {
        "pytest"}  # only the root's runs tox
    result = changed(root, {"tools/pytest.ini": "[pytest]\naddopts = -ra\n\n[flake8]\n"})
    assert (keys(result), result.plan.unverified) == (set(), ("tools/pytest.ini",))
    assert keys(changed(root, {"tools/pytest.ini": "[pytest]\naddopts = -q\n"})) == {
        "tools:pytest"}


def jest_workspace(parser: dict[str, object], extra: Files | None = None) -> Files:
    """The pnpm workspace of `layouts`, its parser package (which the cli depends on) tested
    by jest with `parser`'s settings."""
    files = layouts.pnpm_workspace()
    files["packages/parser/package.json"] = package_json({
        "name": "@acme/parser", "version": "1.0.0", "main": "src/index.ts",
        "scripts": {"build": "tsc -p .", "test": "jest"}, **parser})
    files.update({
        "packages/parser/src/lexer.unit.ts": "test('lex', () => {})\n",
        "packages/parser/src/util.test.ts": "test('util', () => {})\n",
        "packages/parser/src/legacy/old.test.ts": "test('old', () => {})\n",
        "packages/parser/__tests__/helpers.ts": "export const sample = 'ab'\n",
        **(extra or {}),
    })  # fmt: skip
    return files


def selected(root: Path, path: str) -> tuple[set[str], str]:
    """The workspaces a working-tree change to `path` plans checks in, and the explanation."""
    result = plan_change([path], GitTree.discover(root), VerifyConfig())
    folders = {check.key.rpartition(":")[0] or "." for check in result.plan.checks}
    return folders, render_text(result.explanation)


def test_a_package_json_jest_key_decides_which_files_are_tests(
    make_repo: Callable[[Files], Path],
) -> None:
    """With `testMatch` and `testPathIgnorePatterns` in package.json's `jest` key, a file jest
    runs is a test (its package alone is checked), even named `*.unit.ts`; one named like a
    test that jest does not run (outside testMatch, or ignored) is code, so the package's
    dependents are checked too; a helper below `__tests__/` is read by the tests only."""
    root = make_repo(jest_workspace({"jest": {
        "testMatch": ["<rootDir>/src/**/*.unit.ts", "<rootDir>/__tests__/**/*.test.ts"],
        "testPathIgnorePatterns": ["/node_modules/", "<rootDir>/src/legacy/"],
    }}))
    for test in ("packages/parser/src/lexer.unit.ts", "packages/parser/__tests__/parse.test.ts",
                 "packages/parser/__tests__/helpers.ts"):
        folders = selected(root, test)[0]
        assert "packages/parser" in folders and "packages/cli" not in folders, test
    assert "a test file jest runs (package.json's jest key)" in selected(
        root, "packages/parser/src/lexer.unit.ts")[1]
    assert "not a test jest runs" in selected(root, "packages/parser/__tests__/helpers.ts")[1]
    for code in ("packages/parser/src/util.test.ts", "packages/parser/src/legacy/old.test.ts",
                 "packages/parser/src/index.ts"):
        assert {"packages/parser", "packages/cli"} <= selected(root, code)[0], code
    assert "named like a test, but not one jest runs" in selected(
        root, "packages/parser/src/util.test.ts")[1]


def test_jest_roots_and_test_regex_from_jest_config_json(
    make_repo: Callable[[Files], Path],
) -> None:
    """jest.config.json is read like the `jest` key: `roots` keep tests to `src/`, where
    `testRegex` finds them."""
    config = {"roots": ["<rootDir>/src"],
              "testRegex": "(/__tests__/.*|(\\.|/)(test|spec))\\.[jt]sx?$"}
    root = make_repo(jest_workspace({}, {
        "packages/parser/jest.config.json": json.dumps(config),
        "packages/parser/__tests__/parse.test.ts": "test('parse', () => {})\n",
        "packages/parser/e2e.test.ts": "test('e2e', () => {})\n",
    }))
    assert "packages/cli" not in selected(root, "packages/parser/src/util.test.ts")[0]
    assert "packages/cli" in selected(root, "packages/parser/src/lexer.unit.ts")[0]
    folders, explanation = selected(root, "packages/parser/e2e.test.ts")
    assert "packages/cli" in folders  # outside its roots: not a test jest runs
    assert "(jest.config.json)" in explanation


def test_a_code_config_keeps_the_naming_convention_and_says_so(
    make_repo: Callable[[Files], Path],
) -> None:
    """jest.config.ts is code: never run, so `*.test.ts` is a test by name and `*.unit.ts` is
    not, whatever it would say; --explain names the file. A pattern that could backtrack for
    long is not used either."""
    root = make_repo(jest_workspace({}, {
        "packages/parser/jest.config.ts": "export default { testMatch: ['**/*.unit.ts'] }\n"}))
    folders, explanation = selected(root, "packages/parser/src/util.test.ts")
    assert "packages/cli" not in folders
    assert "jest.config.ts is code, not run: test files told by name" in explanation
    assert "packages/cli" in selected(root, "packages/parser/src/lexer.unit.ts")[0]
    hostile = make_repo_at(root.parent / "hostile", jest_workspace({"jest": {
        "testRegex": "(a+)+$", "testPathIgnorePatterns": ["(x|xx)*y"]}}))
    folders, explanation = selected(hostile, "packages/parser/src/util.test.ts")
    assert "packages/cli" not in folders and "may backtrack for long" in explanation


def make_repo_at(root: Path, files: Files) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, files)
    git(root, "add", "-A")
    git(root, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "initial")
    return root


def test_jest_globs_are_expanded_without_backtracking() -> None:
    """jest's default testMatch expands to plain globs naming what its extglobs name; `!(x)`
    and a glob of too many expansions are not read."""
    expanded = set(_expand(DEFAULT_TEST_MATCH[1], negated=False))
    assert {"**/*.test.[jt]s", "**/spec.[mc][jt]sx", "**/*.spec.[jt]sx"} <= expanded
    assert len(expanded) == 16
    for pattern in ("**/!(x).js", "**/" + "?(a|b)" * 8 + ".js"):
        with pytest.raises(Unreadable):
            list(_expand(pattern, negated=False))
    with pytest.raises(Unreadable):
        list(_expand("**/+(a).js", negated=True))  # an exclusion must not shrink
    with pytest.raises(Unreadable, match="nests too deep"):  # no recursion as deep as it asks
        list(_expand("**/" + "?(" * 3000 + "a" + ")" * 3000, negated=False))
