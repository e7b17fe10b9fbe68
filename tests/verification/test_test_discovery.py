"""Test discovery and test settings follow the repository's own configuration (issue 22).

Real git repositories with real-format files: a setup.cfg whose change touches one tool's
section plans that tool only, against the change's base; a package.json `jest` key decides
which of the package's files are tests (a test-only change checks its package alone).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from verify_helpers import Files, git, write

from plumbing.git import Git
from verification.config import VerifyConfig
from verification.explain import render_text
from verification.plan import PlanResult, plan_change
from verification.tree import GitRevisionTree

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
