"""The commands a Python workspace declares, run the way the repository runs them.

Pure (reads through `Manifests` and the `RepoIndex`). Tools run through the project's
environment manager: `uv run --frozen` where the workspace (or the uv workspace it belongs to)
has a `uv.lock`, `poetry run` where it has a `poetry.lock`; the install root gets `uv sync
--frozen` (`--all-packages` for a uv workspace) or `poetry install` as setup. Tools are planned
where the repository uses them, with the repository's own configuration:

- ruff where configured (`[tool.ruff]`, `ruff.toml`) or depended on; `ruff check .` from the
  workspace, which lints nested projects with their own nearest config (ruff's hierarchy).
- mypy where configured or depended on; bare `mypy` when `[tool.mypy] files` says what to
  check (a change outside those files does not concern it), else `mypy .` without the nested
  workspaces. pyright (or basedpyright) where `pyrightconfig.json` or `[tool.pyright]`
  declares it, over what its `include` lists.
- tests only where test files exist outside fixture folders, run by the repository's runner:
  `uv run`/`poetry run pytest`, `tox -e py`, a nox `tests` session, a Makefile `test` target,
  else `python -m pytest`. Poe tasks named as checks (`[tool.poe.tasks]` `lint`, `typecheck`,
  `test`, ...) run as `poe NAME` instead of the detected checks of their kind running the
  same tools. A pytest section's `testpaths`, `norecursedirs` and `python_files`
  decide which test files count (none collected: no pytest); without `testpaths`, nested
  workspaces (checked on their own) and fixture folders holding test-named files are ignored.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase as fnmatch
from functools import lru_cache
from posixpath import normpath

from verification.checks import DetectedCheck
from verification.index import RESOURCE_DIRS, RepoIndex, has_part, is_below, join, relative
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
# Task runners a detected test command may run pytest through: their files concern it too.
_TASK_RUNNERS = frozenset({"tox", "nox", "make"})
# pytest's own `norecursedirs` when the configuration sets none.
_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")


@dataclass
class PythonTests:
    """Python files of each workspace (relative to it): those named like pytest's default
    tests (`files`) and the others (`sources`, candidates of a configured `python_files`),
    and the folders holding test-named files that an unconfigured pytest must not collect:
    fixture folders, and crates of a Cargo workspace (a parser's inputs are its data)."""

    index: RepoIndex
    layout: Layout
    files: dict[str, list[str]] = field(default_factory=dict)
    fixture_dirs: dict[str, set[str]] = field(default_factory=dict)
    _sources: dict[str, list[str]] | None = None

    @classmethod
    def from_index(cls, index: RepoIndex, layout: Layout) -> PythonTests:
        found = cls(index, layout)
        found._group(index.python_tests, found.files, data=True)
        return found

    def sources(self, workspace: str) -> list[str]:
        """The workspace's other Python files, grouped on first use: only a configured
        `python_files` makes them candidates, and a Python monorepo lists thousands."""
        if self._sources is None:
            self._sources = {}
            self._group(self.index.python_sources, self._sources, data=False)
        return self._sources.get(workspace, [])

    def _group(self, paths: list[str], into: dict[str, list[str]], *, data: bool) -> None:
        by_folder: dict[str, list[str]] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            by_folder.setdefault(folder or ".", []).append(name)
        for folder, names in by_folder.items():  # a folder holds many files: decide once
            self._add(folder, names, into, self.layout, data=data)

    def _add(self, folder: str, names: list[str], into: dict[str, list[str]], layout: Layout,
             *, data: bool) -> None:
        workspace = layout.folder_owner(folder)
        if workspace is None:
            return
        inside = relative(folder, workspace)
        assert inside is not None
        home = layout.folder_home(folder)
        if home is not None and home != workspace and home not in layout.workspaces:
            if data:  # below a crate of the Cargo workspace: the crate's data
                self.fixture_dirs.setdefault(workspace, set()).add(
                    relative(home, workspace) or home)
            return
        part = has_part(inside + "/", RESOURCE_DIRS)
        if part is None:
            prefix = "" if inside == "." else inside + "/"
            into.setdefault(workspace, []).extend(prefix + name for name in names)
        elif data:
            parts = inside.split("/")
            self.fixture_dirs.setdefault(workspace, set()).add(
                "/".join(parts[: parts.index(part) + 1]))


def python_checks(workspace: str, layout: Layout, index: RepoIndex, manifests: Manifests,
                  tests: PythonTests) -> list[DetectedCheck]:
    pyproject = manifests.toml(join(workspace, "pyproject.toml"))
    tools = mapping(pyproject.get("tool"))
    setup_cfg = _text(index, manifests, workspace, "setup.cfg")
    runner = _runner(workspace, layout, index)
    dependencies = _dependencies(workspace, index, manifests)
    nested = [relative(child, workspace) or child for child in layout.children(workspace)]
    # Run by uv, a check uses the interpreter .python-version pins: that file concerns it.
    uv = frozenset({"uv"}) if runner.startswith("uv ") else frozenset()
    checks = []

    if "ruff" in tools or _has(index, workspace, "ruff.toml", ".ruff.toml") or (
        "ruff" in dependencies
    ):
        checks.append(DetectedCheck("ruff", "lint", f"{runner}ruff check .", _PY, _RUFF | uv))

    mypy_ini = _text(index, manifests, workspace, "mypy.ini")
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
            covers = _mypy_files(mapping(tools.get("mypy")).get("files"), mypy_ini, setup_cfg)
            checks.append(DetectedCheck("mypy", "typecheck", f"{runner}mypy", _PY, _MYPY | uv,
                                        covers=covers))
        else:
            excludes = "".join(
                f" --exclude {shlex.quote('^' + re.escape(n) + '/')}" for n in nested
            )
            checks.append(DetectedCheck("mypy", "typecheck", f"{runner}mypy .{excludes}", _PY,
                                        _MYPY | uv))

    pyright = _pyright_config(workspace, tools, manifests, index)
    if pyright is not None:
        name = "basedpyright" if "basedpyright" in tools or (
            "basedpyright" in dependencies and "pyright" not in dependencies) else "pyright"
        checks.append(DetectedCheck(name, "typecheck", f"{runner}{name}", _PY,
                                    frozenset({name, "pyright"}) | uv, covers=pyright))

    config = _pytest_config(workspace, pyproject, manifests, index)
    testpaths = config.testpaths
    candidates = tests.files.get(workspace, [])
    if config.python_files:
        candidates = [*candidates, *tests.sources(workspace)]
    if any(config.collects(f) for f in candidates):  # one test file pytest collects is enough
        command = _test_command(
            workspace, runner, index, manifests, pyproject,
            ignores=[] if testpaths else [*nested, *(
                [] if config.configured else sorted(tests.fixture_dirs.get(workspace, ())))],
        )
        runs = frozenset({command.split()[0]}) & _TASK_RUNNERS  # tox, nox, make run pytest
        checks.append(DetectedCheck("pytest", "test", command, _PY, _PYTEST | uv | runs))
    if "poe" in tools:
        checks = _with_poe_tasks(checks, workspace, runner, index, manifests, uv)
    return checks


def _with_poe_tasks(checks: list[DetectedCheck], workspace: str, runner: str, index: RepoIndex,
                    manifests: Manifests, uv: frozenset[str]) -> list[DetectedCheck]:
    """The workspace's poe tasks named as checks (`lint`, `typecheck`, `test`, a `check` of
    one kind; `scripts.SCRIPT_NAMES`), run as the repository runs them (`uv run poe test`),
    instead of the detected checks of their kind running the same tools (for tests, any)."""
    from verification.scripts import SCRIPT_NAMES
    from verification.task_runners import TaskLookup

    lookup = TaskLookup(read=manifests.text, toml=manifests.toml, has=index.has)
    found = lookup.task_file("poe", workspace)
    if found is None:
        return checks
    chosen: list[DetectedCheck] = []
    called: set[str] = set()
    for kind, names in SCRIPT_NAMES.items():
        for name in names:
            if name not in found.tasks or name in called:
                continue
            uses = lookup.line_uses(f"poe {name}", workspace)
            kinds = list(dict.fromkeys(use.kind for use in uses))
            if not uses or any(use.writes for use in uses) or (kind is None and len(kinds) != 1):
                continue
            if any(c.kind == (kind or kinds[0]) for c in chosen):
                continue  # one poe task of each kind
            called |= set(found.tasks[name].calls)
            tools = frozenset(use.tool for use in uses)
            chosen.append(DetectedCheck(f"poe-{name}", kind or kinds[0], f"{runner}poe {name}",
                                        _PY, tools | {"poe"} | uv, name))
    replaced = [c for c in checks if any(
        p.kind == c.kind and (c.kind == "test" or c.tools & p.tools - {"uv", "poe"})
        for p in chosen)]
    return [c for c in checks if c not in replaced] + chosen


def _mypy_files(files: object, *ini_texts: str) -> tuple[str, ...]:
    """mypy's `files` as folders: a TOML list or a comma-separated string (the ini form),
    globs cut at their first wildcard."""
    if not files:
        for text in ini_texts:
            found = re.search(r"^files\s*=\s*(.+(?:\n[ \t]+.+)*)", text, re.MULTILINE)
            if found is not None:
                files = found.group(1)
                break
    names = strings(files) if isinstance(files, list) else str(files or "").replace(
        "\n", ",").split(",")
    return _folders_of(names)


def _folders_of(names: list[str]) -> tuple[str, ...]:
    """Paths a tool is told to check, normalised; a glob up to its first wildcard; "." (or a
    wildcard at the start) covers everything: no narrowing."""
    found: list[str] = []
    for name in names:
        cut = re.split(r"[*?\[]", name.strip(), maxsplit=1)[0].rstrip("/")
        path = normpath(cut) if cut else "."
        if path == ".":
            return ()
        found.append(path)
    return tuple(dict.fromkeys(found))


def _pyright_config(workspace: str, tools: Mapping[str, object], manifests: Manifests,
                    index: RepoIndex) -> tuple[str, ...] | None:
    """What the workspace's pyright config includes (empty: everything), or None without one
    (`pyrightconfig.json` wins over `[tool.pyright]`, as pyright reads them)."""
    if index.has(workspace, "pyrightconfig.json"):
        config = manifests.json(join(workspace, "pyrightconfig.json"))
    elif "pyright" in tools or "basedpyright" in tools:
        config = mapping(tools.get("pyright") or tools.get("basedpyright"))
    else:
        return None
    return _folders_of(strings(config.get("include")))


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
    setup_cfg = _text(index, manifests, workspace, "setup.cfg")
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
    python_files: tuple[str, ...] = ()  # empty: pytest's default, test_*.py and *_test.py
    ignores: tuple[str, ...] = ()  # addopts' --ignore paths and --ignore-glob patterns
    configured: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> PytestConfig:
        """From a configuration's options: lists (TOML) or whitespace-separated strings."""
        def words(key: str) -> list[str]:
            value = options.get(key)
            return strings(value) if isinstance(value, list) else str(value or "").split()

        addopts = options.get("addopts")
        try:
            flags = strings(addopts) if isinstance(addopts, list) else shlex.split(
                str(addopts or ""))
        except ValueError:  # an unbalanced quote: pytest would refuse to start
            flags = []
        return cls(tuple(normpath(p) for p in words("testpaths")),
                   tuple(words("norecursedirs")) or _NORECURSE, tuple(words("python_files")),
                   tuple(_ignored(flags)), configured=True)

    def collects(self, path: str) -> bool:
        """Whether pytest run from the workspace collects the test file `path` (relative)."""
        folders, _, name = path.rpartition("/")
        if self.testpaths and not any(path.startswith(t + "/") or t == "." or t == path
                                      for t in self.testpaths):
            return False
        # Without `python_files`, only files named like pytest's default are candidates.
        if self.python_files and not any(fnmatch(name, p) for p in self.python_files):
            return False
        if self.ignores and any(is_below(path, p) or fnmatch(path, p) for p in self.ignores):
            return False
        return not _not_recursed(folders, self.norecursedirs)


@lru_cache(maxsize=4096)
def _not_recursed(folders: str, norecursedirs: tuple[str, ...]) -> bool:
    """Whether a folder of `folders` (a relative path) matches `norecursedirs`: decided once
    per folder, which holds many test files."""
    parts = folders.split("/") if folders else []
    return any(fnmatch(part, p) for part in parts for p in norecursedirs)


def _ignored(flags: list[str]) -> Iterator[str]:
    """The paths (and globs) `--ignore` / `--ignore-glob` in `addopts` keep pytest out of."""
    for at, flag in enumerate(flags):
        name, equals, rest = flag.partition("=")
        if name in ("--ignore", "--ignore-glob"):
            found = rest if equals else (flags[at + 1] if at + 1 < len(flags) else "")
            if found:
                yield normpath(found.removeprefix("./"))


def _pytest_config(workspace: str, pyproject: dict[str, object], manifests: Manifests,
                   index: RepoIndex) -> PytestConfig:
    """pytest's configuration for the workspace, from the first file pytest reads it from
    (https://docs.pytest.org/en/stable/reference/customize.html): `pytest.ini`, then
    `pyproject.toml` (`[tool.pytest.ini_options]`, or pytest 9's native `[tool.pytest]`),
    `tox.ini`, `setup.cfg`."""
    if index.has(workspace, "pytest.ini"):  # it wins even when empty
        ini = _ini_options(workspace, "pytest.ini", "pytest", manifests, index)
        return PytestConfig.from_options(ini or {})
    table = mapping(mapping(pyproject.get("tool")).get("pytest"))
    if "ini_options" in table:
        return PytestConfig.from_options(mapping(table["ini_options"]))
    if table:
        return PytestConfig.from_options(table)
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        ini = _ini_options(workspace, name, section, manifests, index)
        if ini is not None:
            return PytestConfig.from_options(ini)
    return PytestConfig(configured=_has(index, workspace, "conftest.py"))


def _ini_options(workspace: str, name: str, section: str, manifests: Manifests,
                 index: RepoIndex) -> dict[str, object] | None:
    """The options of `section` in the workspace's ini file `name`, None without one."""
    if not index.has(workspace, name):
        return None
    import configparser  # only here: most workspaces have no setup.cfg, tox.ini or pytest.ini

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(manifests.text(join(workspace, name)) or "")
    except configparser.Error:
        return None
    if not parser.has_section(section):
        return None
    return dict(parser.items(section))


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


def _text(index: RepoIndex, manifests: Manifests, folder: str, name: str) -> str:
    """The text of the file `name` in `folder`; "" for none (not read: the tree has none)."""
    return (manifests.text(join(folder, name)) or "") if index.has(folder, name) else ""
