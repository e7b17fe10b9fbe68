"""Only declared members are workspaces; test data never is (issue 22, item 4).

Real git repositories shaped like the monorepos the issue measured: folders nested deeper than
the member glob, excluded members, a module-type `test/package.json`, `test/resources`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import layouts
from layouts import package_json
from verify_helpers import Files

from verification.config import VerifyConfig
from verification.plan import build_plan
from verification.tree import GitTree


def workspaces(root: Path, *changed: str) -> set[str]:
    plan = build_plan(list(changed), GitTree.discover(root), VerifyConfig())
    return {check.key.rpartition(":")[0] or "." for check in plan.checks}


def test_only_declared_node_members_are_workspaces(make_repo: Callable[[Files], Path]) -> None:
    files = layouts.pnpm_workspace()
    files["pnpm-workspace.yaml"] = "packages:\n  - 'packages/*'\n  - '!packages/legacy'\n"
    scripts = {"build": "exit 1", "lint": "exit 1", "test": "exit 1"}
    files.update({
        # Deeper than `packages/*`: an example app the parser ships, not installed by pnpm.
        "packages/parser/examples/app/package.json": package_json(
            {"name": "example-app", "scripts": scripts}),
        "packages/parser/examples/app/main.js": "console.log(1);\n",
        # Excluded with `!packages/legacy`.
        "packages/legacy/package.json": package_json({"name": "legacy", "scripts": scripts}),
        "packages/legacy/index.js": "module.exports = 1;\n",
        # Tests loaded as ES modules; project templates and test resources.
        "packages/cli/test/package.json": package_json({"type": "module"}),
        "packages/cli/test/main.test.js": "export {};\n",
        "packages/cli/test/resources/project/package.json": package_json(
            {"name": "resource", "scripts": scripts}),
        "packages/cli/templates/starter/package.json": package_json(
            {"name": "starter", "scripts": scripts}),
    })  # fmt: skip
    root = make_repo(files)
    # The example is code of the parser: the parser, its dependent and the root runners.
    assert workspaces(root, "packages/parser/examples/app/main.js") == {
        ".", "packages/parser", "packages/cli"}
    assert workspaces(root, "packages/legacy/index.js") == {"."}  # the root's lint and test
    for changed in ("packages/cli/test/main.test.js",
                    "packages/cli/test/resources/project/package.json",
                    "packages/cli/templates/starter/package.json"):
        assert workspaces(root, changed) == {"packages/cli"}, changed


def test_a_test_suite_with_its_own_lockfile_is_a_workspace_a_mock_package_is_not(
    make_repo: Callable[[Files], Path],
) -> None:
    """An end-to-end suite with its own lockfile installs and runs on its own; a mock package
    inside a test folder, lockfile or not, is what the tests build (jupyterlab's
    `jupyterlab/tests/mock_packages/*/yarn.lock`, uv's `test/packages/built-by-uv/uv.lock`)."""
    files = layouts.pnpm_workspace()
    files.update({
        "e2e/package.json": package_json(
            {"name": "e2e", "scripts": {"test": "playwright test"}}),
        "e2e/package-lock.json": '{"lockfileVersion": 3, "packages": {}}\n',
        "e2e/spec.js": "export {};\n",
        "packages/cli/tests/mock_packages/ext/package.json": package_json(
            {"name": "mock-ext", "scripts": {"build": "exit 1"}}),
        "packages/cli/tests/mock_packages/ext/yarn.lock": "# yarn lockfile v1\n",
        "packages/cli/tests/mock_packages/ext/index.js": "module.exports = 1;\n",
    })  # fmt: skip
    root = make_repo(files)
    assert workspaces(root, "e2e/spec.js") == {"e2e"}
    assert workspaces(root, "packages/cli/tests/mock_packages/ext/index.js") == {"packages/cli"}
    # Its lockfile, which no workspace installs from, is test data of packages/cli too.
    assert workspaces(root, "packages/cli/tests/mock_packages/ext/yarn.lock") == {"packages/cli"}


def test_a_mock_extensions_lockfile_in_a_python_packages_tests_runs_its_pytest(
    make_repo: Callable[[Files], Path],
) -> None:
    """jupyterlab's `jupyterlab/tests/mock_packages/*/yarn.lock`: the Python tests build the
    mock extension, so a bump of its lockfile is checked by the package's pytest."""
    root = make_repo({
        "pyproject.toml": '[project]\nname = "lab"\nversion = "1.0"\n',
        "lab/__init__.py": "",
        "lab/tests/test_build.py": "def test_build():\n    assert True\n",
        "lab/tests/mock_packages/ext/package.json": package_json({"name": "mock-ext"}),
        "lab/tests/mock_packages/ext/yarn.lock": "# yarn lockfile v1\n",
    })  # fmt: skip
    commands = pytest_commands(root, "lab/tests/mock_packages/ext/yarn.lock")
    assert [c.split(" -q ")[0] for c in commands] == ["python -m pytest"]


def test_a_module_type_test_package_of_a_single_package_is_not_a_workspace(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({
        "package.json": package_json({"name": "lib", "scripts": {"test": "node --test"}}),
        "package-lock.json": '{"lockfileVersion": 3, "packages": {}}\n',
        "index.js": "module.exports = 1;\n",
        "test/package.json": package_json({"type": "module"}),
        "test/index.test.js": "export {};\n",
    })  # fmt: skip
    assert workspaces(root, "test/index.test.js") == {"."}
    assert workspaces(root, "test/package.json") == {"."}


# pytest: discovery follows the repository's configuration.

BROKEN = "def test_(:\n"  # a parser's deliberately invalid input


def pytest_commands(root: Path, *changed: str) -> list[str]:
    plan = build_plan(list(changed), GitTree.discover(root), VerifyConfig())
    return [check.command for check in plan.checks if check.key.endswith("pytest")]


def test_a_parsers_invalid_test_files_are_not_collected(
    make_repo: Callable[[Files], Path],
) -> None:
    files: Files = {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
        "crates/parser/Cargo.toml": '[package]\nname = "parser"\nversion = "0.1.0"\n',
        "crates/parser/src/lib.rs": "pub fn parse() {}\n",
        "crates/parser/resources/invalid/lambda_test.py": BROKEN,
        "crates/parser/inline/err/async_test.py": BROKEN,
        # The Python package built from the crates; its config keeps pytest out of crates/.
        "pyproject.toml": (
            '[project]\nname = "acme"\nversion = "0.1.0"\n\n'
            '[tool.pytest.ini_options]\nnorecursedirs = ["crates", ".*"]\n'
        ),
    }
    root = make_repo(files)
    for changed in ("crates/parser/inline/err/async_test.py",
                    "crates/parser/resources/invalid/lambda_test.py", "pyproject.toml"):
        assert pytest_commands(root, changed) == [], changed


def test_python_files_decides_which_files_are_tests(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo({
        "pyproject.toml": '[project]\nname = "acme"\nversion = "0.1.0"\n',
        "pytest.ini": "[pytest]\npython_files = check_*.py\n",
        "acme/__init__.py": "",
        "acme/grammar/case_test.py": BROKEN,  # read by the checks, not collected
    })  # fmt: skip
    assert pytest_commands(root, "acme/grammar/case_test.py") == []


def test_resources_are_ignored_by_an_unconfigured_pytest(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({
        "pyproject.toml": '[project]\nname = "acme"\nversion = "0.1.0"\n',
        "acme/__init__.py": "",
        "tests/test_api.py": "def test_api():\n    assert True\n",
        "acme/parser/resources/invalid/lambda_test.py": BROKEN,
    })  # fmt: skip
    [command] = pytest_commands(root, "acme/__init__.py")
    assert command.endswith(" --ignore=acme/parser/resources")


def test_test_files_in_folders_pytest_skips_by_default_plan_no_pytest(
    make_repo: Callable[[Files], Path],
) -> None:
    """pytest never enters `build/` or `dist/`: run there it would collect nothing and fail."""
    root = make_repo({
        "pyproject.toml": '[project]\nname = "acme"\nversion = "0.1.0"\n',
        "acme/__init__.py": "",
        "build/lib/acme/tests/test_copy.py": "def test_copy():\n    assert True\n",
        "dist/acme/test_copy.py": "def test_copy():\n    assert True\n",
    })  # fmt: skip
    assert pytest_commands(root, "acme/__init__.py") == []


def test_a_configured_python_files_pattern_finds_tests_by_that_name(
    make_repo: Callable[[Files], Path],
) -> None:
    """`python_files = check_*.py` (a name pytest's default misses) is a test suite."""
    root = make_repo({
        "pyproject.toml": (
            '[project]\nname = "acme"\nversion = "0.1.0"\n\n'
            '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n'),
        "acme/__init__.py": "",
        "checks/check_api.py": "def test_api():\n    assert True\n",
    })  # fmt: skip
    assert pytest_commands(root, "acme/__init__.py") == [
        'python -m pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"']


def test_addopts_ignore_keeps_pytest_out_of_a_folder(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({
        "pyproject.toml": (
            '[project]\nname = "acme"\nversion = "0.1.0"\n\n'
            "[tool.pytest.ini_options]\naddopts = \"-ra --ignore=acme/grammar "
            "--ignore-glob='*/inline/*'\"\n"),
        "acme/__init__.py": "",
        "acme/grammar/case_test.py": BROKEN,
        "acme/parser/inline/err/async_test.py": BROKEN,
    })  # fmt: skip
    assert pytest_commands(root, "acme/__init__.py") == []


def test_pytest_9_reads_its_own_pyproject_table(make_repo: Callable[[Files], Path]) -> None:
    """`[tool.pytest]` (pytest 9, as pydantic configures it): `testpaths` keeps pytest in
    tests/, so nested projects need no --ignore."""
    root = make_repo({
        "pyproject.toml": (
            '[project]\nname = "acme"\nversion = "0.1.0"\n\n'
            "[tool.pytest]\ntestpaths = ['tests']\nstrict = true\n"),
        "acme/__init__.py": "",
        "tests/test_api.py": "def test_api():\n    assert True\n",
        "plugins/extra/pyproject.toml": '[project]\nname = "extra"\nversion = "0.1.0"\n',
        "plugins/extra/test_extra.py": "def test_extra():\n    assert True\n",
    })  # fmt: skip
    assert pytest_commands(root, "acme/__init__.py") == [
        'python -m pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"']


def test_python_test_names_inside_a_crate_are_the_crates_data(
    make_repo: Callable[[Files], Path],
) -> None:
    """A root pytest with no configuration would collect a parser crate's invalid inputs:
    the crate folder is left out of it."""
    root = make_repo({
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
        "crates/parser/Cargo.toml": '[package]\nname = "parser"\nversion = "0.1.0"\n',
        "crates/parser/src/lib.rs": "pub fn parse() {}\n",
        "crates/parser/inline/err/async_test.py": BROKEN,
        "pyproject.toml": '[project]\nname = "acme"\nversion = "0.1.0"\n',
        "python/acme/__init__.py": "",
        "tests/test_bindings.py": "def test_bindings():\n    assert True\n",
    })  # fmt: skip
    assert pytest_commands(root, "python/acme/__init__.py") == [
        'python -m pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT" '
        "--ignore=crates/parser"]
