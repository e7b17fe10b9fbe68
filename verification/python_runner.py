"""The commands a Python workspace declares, run the way the repository runs them.

Pure (reads through `Manifests` and the `RepoIndex`). Tools run through the project's
environment manager: `uv run --frozen` where the workspace (or the uv workspace it belongs to)
has a `uv.lock`, `poetry run` where it has a `poetry.lock`; the install root gets `uv sync
--frozen` (`--all-packages` for a uv workspace) or `poetry install` as setup. Tools are planned
where the repository uses them, with the repository's own configuration:

- ruff where configured (`[tool.ruff]`, `ruff.toml`) or depended on; `ruff check .` from the
  workspace, which lints nested projects with their own nearest config (ruff's hierarchy).
- mypy where configured or depended on; bare `mypy` when `[tool.mypy] files` says what to
  check, else `mypy .` without the nested workspaces.
- tests only where test files exist outside fixture folders, run by the repository's runner:
  `uv run`/`poetry run pytest`, `tox -e py`, a nox `tests` session, a Makefile `test` target,
  else `python -m pytest`. A pytest section's `testpaths`, `norecursedirs` and `python_files`
  decide which test files count (none collected: no pytest); without `testpaths`, nested
  workspaces (checked on their own) and fixture folders holding test-named files are ignored.
"""

from __future__ import annotations

import configparser
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase as fnmatch
from posixpath import normpath

from verification.checks import DetectedCheck
from verification.index import RESOURCE_DIRS, RepoIndex, has_part, join, relative
from verification.manifests import (
    Manifests,
    mapping,
    poetry_dependencies,
    python_requirements,
    requirement_name,
    strings,
)
from verification.workspaces import Ecosystem, Layout

# The detected pytest check writes JUnit XML to the file the executor names in RATCHET_JUNIT,
# so the worktree stays clean and the evidence gets a test summary.
PYTEST_ARGS = '-q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"'
PYTEST_COMMAND = f"python -m pytest {PYTEST_ARGS}"

_PY = Ecosystem.PYTHON
# The tools each detected check runs (tox, nox and make run pytest too).
_RUFF, _MYPY, _PYTEST = frozenset({"ruff"}), frozenset({"mypy"}), frozenset({"pytest"})
# The pytest options that decide which test files a run collects.
_KEYS = ("testpaths", "norecursedirs", "python_files")
# pytest's own `norecursedirs` when the configuration sets none.
_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")


@dataclass
class PythonTests:
    """Test files of each workspace (relative to it), and fixture folders holding test-named
    files that an unconfigured pytest must not collect."""

    files: dict[str, list[str]] = field(default_factory=dict)
    fixture_dirs: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def from_index(cls, index: RepoIndex, layout: Layout) -> PythonTests:
        found = cls()
        by_folder: dict[str, list[str]] = {}
        for path in index.python_tests:
            folder, _, name = path.rpartition("/")
            by_folder.setdefault(folder or ".", []).append(name)
        for folder, names in by_folder.items():  # a folder holds many tests: decide once
            workspace = layout.folder_owner(folder)
            if workspace is None:
                continue
            inside = relative(folder, workspace)
            assert inside is not None
            part = has_part(inside + "/", RESOURCE_DIRS)
            if part is None:
                prefix = "" if inside == "." else inside + "/"
                found.files.setdefault(workspace, []).extend(prefix + name for name in names)
                continue
            parts = inside.split("/")
            found.fixture_dirs.setdefault(workspace, set()).add(
                "/".join(parts[: parts.index(part) + 1]))
        return found


def python_checks(workspace: str, layout: Layout, index: RepoIndex, manifests: Manifests,
                  tests: PythonTests) -> list[DetectedCheck]:
    pyproject = manifests.toml(join(workspace, "pyproject.toml"))
    tools = mapping(pyproject.get("tool"))
    setup_cfg = manifests.text(join(workspace, "setup.cfg")) or ""
    runner = _runner(workspace, layout, index)
    dependencies = _dependencies(workspace, index, manifests)
    nested = [relative(child, workspace) or child for child in layout.children(workspace)]
    checks = []

    if "ruff" in tools or _has(index, workspace, "ruff.toml", ".ruff.toml") or (
        "ruff" in dependencies
    ):
        checks.append(DetectedCheck("ruff", "lint", f"{runner}ruff check .", _PY, _RUFF))

    mypy_ini = manifests.text(join(workspace, "mypy.ini")) or ""
    uses_mypy = (
        "mypy" in tools
        or _has(index, workspace, "mypy.ini", ".mypy.ini")
        or re.search(r"^\[mypy", setup_cfg, re.MULTILINE) is not None
        or "mypy" in dependencies
    )
    if uses_mypy:
        # `files` in [tool.mypy] (a list or a string) or an ini file says what mypy checks.
        files_set = bool(mapping(tools.get("mypy")).get("files")) or any(
            re.search(r"^files\s*=", text, re.MULTILINE) for text in (mypy_ini, setup_cfg)
        )
        if files_set:
            checks.append(DetectedCheck("mypy", "typecheck", f"{runner}mypy", _PY, _MYPY))
        else:
            excludes = "".join(
                f" --exclude {shlex.quote('^' + re.escape(n) + '/')}" for n in nested
            )
            checks.append(DetectedCheck("mypy", "typecheck", f"{runner}mypy .{excludes}", _PY,
                                        _MYPY))

    config = _pytest_config(workspace, pyproject, manifests, index)
    testpaths = config.testpaths
    files = [f for f in tests.files.get(workspace, []) if config.collects(f)]
    if files:
        checks.append(DetectedCheck("pytest", "test", _test_command(
            workspace, runner, index, manifests, pyproject,
            ignores=[] if testpaths else [*nested, *(
                [] if config.configured else sorted(tests.fixture_dirs.get(workspace, ())))],
        ), _PY, _PYTEST))
    return checks


def python_install(root: str, layout: Layout, index: RepoIndex) -> str | None:
    """The install a fresh worktree needs at `root` (a uv or Poetry project), or None."""
    if index.has(root, "uv.lock"):
        every = " --all-packages" if layout.members(_PY, root) else ""
        return f"uv sync --frozen{every}"
    if index.has(root, "poetry.lock"):
        return "poetry install --no-interaction"
    return None


def _runner(workspace: str, layout: Layout, index: RepoIndex) -> str:
    root = layout.install_root(workspace, _PY) if workspace in layout.workspaces else workspace
    if index.has(root, "uv.lock"):
        return "uv run --frozen "
    if index.has(root, "poetry.lock"):
        return "poetry run "
    return ""


def _test_command(workspace: str, runner: str, index: RepoIndex, manifests: Manifests,
                  pyproject: dict[str, object], *, ignores: list[str]) -> str:
    suffix = "".join(f" --ignore={shlex.quote(name)}" for name in ignores)
    if runner:
        return f"{runner}pytest {PYTEST_ARGS}{suffix}"
    setup_cfg = manifests.text(join(workspace, "setup.cfg")) or ""
    if index.has(workspace, "tox.ini") or "tox" in mapping(pyproject.get("tool")) or (
        "[tox:tox]" in setup_cfg
    ):
        return "tox -e py"
    noxfile = manifests.text(join(workspace, "noxfile.py")) or ""
    session = re.search(r"@nox\.session[^\n]*\n\s*def (tests?)\(", noxfile)
    if session:
        return f"nox -s {session.group(1)}"
    makefile = manifests.text(join(workspace, "Makefile")) or ""
    if re.search(r"^test\s*:(?!=)", makefile, re.MULTILINE):
        return "make test"
    return f"{PYTEST_COMMAND}{suffix}"


@dataclass(frozen=True)
class PytestConfig:
    """What the workspace's pytest configuration collects: the planned command runs with that
    configuration, so a test file it would not collect must not make the plan run pytest."""

    testpaths: tuple[str, ...] = ()
    norecursedirs: tuple[str, ...] = _NORECURSE
    python_files: tuple[str, ...] = ()
    configured: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, list[str]]) -> PytestConfig:
        return cls(tuple(normpath(p) for p in options["testpaths"]),
                   tuple(options["norecursedirs"]) or _NORECURSE, tuple(options["python_files"]),
                   configured=True)

    def collects(self, path: str) -> bool:
        """Whether pytest run from the workspace collects the test file `path` (relative)."""
        folders, _, name = path.rpartition("/")
        if self.testpaths and not any(path.startswith(t + "/") or t == "." or t == path
                                      for t in self.testpaths):
            return False
        if self.python_files and not any(fnmatch(name, p) for p in self.python_files):
            return False
        parts = folders.split("/") if folders else []
        return not any(fnmatch(part, p) for part in parts for p in self.norecursedirs)


def _pytest_config(workspace: str, pyproject: dict[str, object], manifests: Manifests,
                   index: RepoIndex) -> PytestConfig:
    """pytest's configuration for the workspace (`testpaths`, `norecursedirs`, `python_files`)."""
    options = mapping(mapping(mapping(pyproject.get("tool")).get("pytest")).get("ini_options"))
    if options or "ini_options" in mapping(mapping(pyproject.get("tool")).get("pytest")):
        return PytestConfig.from_options({key: strings(value) if isinstance(
            value := options.get(key), list) else str(value or "").split() for key in _KEYS})
    for name, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest"),
                          ("setup.cfg", "tool:pytest")):
        if not index.has(workspace, name):
            continue
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(manifests.text(join(workspace, name)) or "")
        except configparser.Error:
            continue
        if parser.has_section(section):
            return PytestConfig.from_options(
                {key: parser.get(section, key, fallback="").split() for key in _KEYS})
    return PytestConfig(configured=_has(index, workspace, "conftest.py"))


def _dependencies(workspace: str, index: RepoIndex, manifests: Manifests) -> set[str]:
    """Requirement names the workspace declares (pyproject, Poetry, requirements*.txt).

    A uv member's tools come from its own declarations only: the root's dev tools are run
    by the root, whose checks cover members that declare none (ruff's nearest config decides
    how each file is linted).
    """
    pyproject = manifests.toml(join(workspace, "pyproject.toml"))
    requirements = python_requirements(pyproject) + list(poetry_dependencies(pyproject))
    for name in sorted(index.names.get(workspace, ())):
        if name.startswith("requirements") and name.endswith(".txt"):
            requirements += (manifests.text(join(workspace, name)) or "").splitlines()
    return {n for n in map(requirement_name, requirements) if n}


def _has(index: RepoIndex, folder: str, *names: str) -> bool:
    return any(index.has(folder, name) for name in names)
