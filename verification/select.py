"""Which workspaces a change concerns, and why: the selection step of planning.

Pure. Each changed file is classified, in this order:

1. `ignored`: `.github/ratchet.yml` declares it unverified on purpose (`verify.ignore`).
2. `global`: the Ratchet config and `.tool-versions` shape every build: every workspace.
   `runs`: a CI file (`.github/workflows/`, ...), the root `.pre-commit-config.yaml`,
   `Makefile` (`GNUmakefile`) or `justfile`, a `turbo.json` or `nx.json` is verified only by
   the checks whose command runs it (actionlint or zizmor, pre-commit and the hooks it
   declares, a make reading that very Makefile where it runs or through an include, just,
   turbo, nx); with none, it is listed as unverified, saying so.
3. `documentation`: Markdown, reST, licences... outside test folders (a Markdown file under
   `tests/` or `fixtures/` is a test input, so it counts as code). `unowned`: a file no tool
   reads when a check runs (`.gitattributes`, `.gitignore`, `.vscode/`, `dependabot.yml`,
   `renovate.json`, ...) plans nothing and is listed as unverified, saying so.
4. `lockfile`: the workspaces installing from it whose resolution changed (the lockfile diffed
   per package against the base, see `lockfiles`), or all of them when that is unknown.
5. `shared`: a tool's config (`.eslintrc.*`, `tsconfig*.json`, `ruff.toml`, `mypy.ini`,
   `pytest.ini`, `tox.ini`, `noxfile.py`, `pyrightconfig.json`, a pyproject.toml change that
   touches only `[tool.ruff]`-like tables against the base, a setup.cfg or tox.ini change that
   touches only tools' sections, `[tool:pytest]`, `[flake8]`, `[mypy]`, ...):
   only the checks running that tool (`Tool`), in the workspaces of its ecosystem at or below
   its folder (else the one holding it); a tool no detected check runs (flake8, pyright,
   clippy...) plans nothing, and the file is listed as unverified with that reason. A
   toolchain pin (`.python-version`, `rust-toolchain.toml`, ...) and a workspace declaration
   (`pnpm-workspace.yaml`, a root package.json with `workspaces`, `go.work`): every check of
   the workspaces of its ecosystem at or below its folder (a declaration: its root and
   members).
6. `code`: the workspace or crate containing it (`outside` when none does): a source file
   selects only its language's checks of a workspace holding several, and a file inside a
   crate of a Cargo workspace is that crate's.

Then everything depending on a selected part (a workspace's checks of one ecosystem, or a
crate) is selected too, transitively (`graph`), except for a test-only change (`is_test_file`,
or for a Node file the package's JSON jest config: `node_tests`): its package's dependents
never load it. A Cargo workspace records the crates selected, so its
commands run for those (`-p`) unless it is selected as a whole. Each selected workspace keeps,
per changed file, the steps that led to it.
"""

from __future__ import annotations

import re
import tomllib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from posixpath import basename, splitext
from typing import Literal

from verification.checks import DetectedCheck
from verification.config import CONFIG_PATH, VerifyConfig
from verification.globs import ignore_matches
from verification.graph import DependencyGraph, Edge
from verification.index import (
    TEST_DIRS,
    TEST_ONLY_DIRS,
    RepoIndex,
    has_part,
    join,
    parent,
    relative,
)
from verification.ini_sections import ini_tools_changed
from verification.lockfiles import DIFFED, affected_crates, affected_importers
from verification.manifests import Manifests, node_dependencies
from verification.node_tests import Discovery, discover
from verification.tree import Tree
from verification.workspaces import Ecosystem, Layout

# Files at the repository root that shape every build, whatever the ecosystem.
GLOBAL_ROOT_FILES = frozenset({".tool-versions"})
# CI configuration: folders, and files at the root.
WORKFLOW_FOLDERS = (".github/workflows/", ".github/actions/", ".circleci/", ".ci/", ".buildkite/")
WORKFLOW_ROOT_FILES = frozenset({".gitlab-ci.yml"})


@dataclass(frozen=True)
class Runs:
    """A file that only the checks running it verify (a workflow by its linter, a Makefile by
    `make`): `pattern` finds such a check's command; `what` names the file for `--explain`."""

    what: str
    pattern: str
    nothing: str  # why nothing verifies it, when no check's command matches
    # A root Makefile: only the checks whose `make` reads this very file (where they run, or
    # through an include) verify it (`TaskLookup.makefiles`), not every check running make.
    read_by_make: bool = False


_WORKFLOW = Runs("a workflow file", r"\b(actionlint|zizmor)\b",
                 "a workflow file: no check verifies it (no actionlint or zizmor check)")
# Root files whose commands checks may run: only those checks verify them.
RUN_ROOT_FILES = {
    ".pre-commit-config.yaml": Runs("the pre-commit config", r"\b(pre-commit|prek)\b",
                                    "a pre-commit config: no check runs its hooks"),
    **{name: Runs(f"the root {name}", r"(^|[;&|(]\s*)make\b",
                  f"the root {name}: no check runs make with it", read_by_make=True)
       for name in ("GNUmakefile", "makefile", "Makefile")},
    "Justfile": Runs("the root Justfile", r"(^|[;&|(]\s*)just\b",
                     "the root Justfile: no check runs just"),
    "justfile": Runs("the root justfile", r"(^|[;&|(]\s*)just\b",
                     "the root justfile: no check runs just"),
}  # fmt: skip


# A monorepo task runner's configuration, in any folder: what runs that task runner.
RUN_FILES = {
    "turbo.json": Runs("the turbo configuration", r"\bturbo\b",
                       "turbo.json: no check runs turbo"),
    "nx.json": Runs("the Nx configuration", r"\bnx\b", "nx.json: no check runs nx"),
}  # fmt: skip


def runs_of(path: str) -> Runs | None:
    """What verifies `path` if it is a CI file, a root file checks run (a Makefile) or a task
    runner's configuration (`turbo.json`)."""
    if path.startswith(WORKFLOW_FOLDERS) or path in WORKFLOW_ROOT_FILES:
        return _WORKFLOW
    return RUN_ROOT_FILES.get(path) or RUN_FILES.get(basename(path))


# Files no tool reads when a check runs: repository metadata, editor and bot settings. A
# change to them alone plans nothing, and says so (neutral, not every check of the root).
UNOWNED_NAMES = frozenset({
    ".gitattributes", ".gitignore", ".mailmap", ".git-blame-ignore-revs", "renovate.json",
    "renovate.json5", ".renovaterc", ".renovaterc.json", "codecov.yml", ".codecov.yml",
    ".coderabbit.yaml", ".gitpod.yml", ".all-contributorsrc", ".readthedocs.yaml",
    ".readthedocs.yml", "CITATION.cff",
})  # fmt: skip
UNOWNED_FOLDERS = (".vscode/", ".idea/", ".devcontainer/", ".github/ISSUE_TEMPLATE/",
                   ".github/DISCUSSION_TEMPLATE/", ".github/PULL_REQUEST_TEMPLATE/")
_UNOWNED_GITHUB = re.compile(r"^\.github/(?:dependabot|FUNDING|labeler|release|release-drafter|"
                             r"stale|settings|renovate|codecov|PULL_REQUEST_TEMPLATE)"
                             r"\.(?:ya?ml|json5?|md)$")


def is_unowned(path: str) -> bool:
    """True for a file no tool reads when a check runs (see `UNOWNED_NAMES`)."""
    if basename(path) in UNOWNED_NAMES:
        return has_part(path, TEST_DIRS) is None  # a fixture's .gitignore is test data
    return path.startswith(UNOWNED_FOLDERS) or _UNOWNED_GITHUB.match(path) is not None


# Documentation: a change to these alone plans nothing.
DOC_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".adoc"})
DOC_NAMES = frozenset({"LICENSE", "LICENSE.txt", "COPYING", "NOTICE", "AUTHORS", "CODEOWNERS"})

_PY, _NODE, _GO, _RUST = Ecosystem.PYTHON, Ecosystem.NODE, Ecosystem.GO, Ecosystem.RUST

# Lockfiles, with their ecosystem.
LOCKFILES = {
    "pnpm-lock.yaml": _NODE, "yarn.lock": _NODE, "package-lock.json": _NODE,
    "npm-shrinkwrap.json": _NODE, "bun.lock": _NODE, "bun.lockb": _NODE,
    "uv.lock": _PY, "poetry.lock": _PY, "Cargo.lock": _RUST, "go.sum": _GO, "go.work.sum": _GO,
}  # fmt: skip

# Toolchain pins and configs shared by the workspaces of one ecosystem below them.
SHARED_FILES = {
    "constraints.txt": _PY,
    ".npmrc": _NODE, ".yarnrc": _NODE,
    ".yarnrc.yml": _NODE, "lerna.json": _NODE,
    "pnpm-workspace.yaml": _NODE,
    "rust-toolchain": _RUST, "rust-toolchain.toml": _RUST,
    "go.work": _GO,
}  # fmt: skip
SHARED_PREFIXES = (("babel.config.", _NODE),)

# Test files by name, in any language (the folders are `TEST_ONLY_DIRS`).
# `tests.rs` is a crate's `#[cfg(test)] mod tests`, `tests.py` a Django app's test module.
_TEST_NAME = re.compile(r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.(?:py|go|rs)|[^/]*_tests\.rs"
                        r"|conftest\.py|tests\.(?:rs|py)|[^/]*\.(?:test|spec)\.[cm]?[jt]sx?)$")


@dataclass(frozen=True)
class Tool:
    """The tool a config file configures: a change to the file concerns only the detected
    checks running that tool (`runs_in`); with none, nothing verifies it."""

    name: str
    ecosystem: Ecosystem
    # Checks of these kinds whose command names no known tool (`node scripts/lint.js`) may
    # run it: they count as running it.
    kinds: frozenset[str] = frozenset()
    # Other tools reading the file (pytest reads tox.ini's `[pytest]` section).
    readers: frozenset[str] = frozenset()

    @property
    def names(self) -> frozenset[str]:
        return self.readers | {self.name}

    def runs_in(self, check: DetectedCheck) -> bool:
        return bool(self.names & check.tools) or (not check.tools and check.kind in self.kinds)


_LINT, _TYPECHECK = frozenset({"lint"}), frozenset({"typecheck"})
_ESLINT = Tool("eslint", _NODE, _LINT)
_PRETTIER = Tool("prettier", _NODE, _LINT)
_BIOME = Tool("biome", _NODE, _LINT)
_TSC = Tool("tsc", _NODE, _TYPECHECK)
_RUFF = Tool("ruff", _PY)
_MYPY = Tool("mypy", _PY)
# Configs of tools that only the checks naming them run (a pre-commit hook, a Makefile
# target): with none, their change plans nothing and says so.
TOOL_FILES = {
    ".eslintignore": _ESLINT, ".prettierignore": _PRETTIER, "biome.json": _BIOME,
    "biome.jsonc": _BIOME,
    "ruff.toml": _RUFF, ".ruff.toml": _RUFF, "mypy.ini": _MYPY, ".mypy.ini": _MYPY,
    ".flake8": Tool("flake8", _PY), ".pylintrc": Tool("pylint", _PY),
    "pyrightconfig.json": Tool("pyright", _PY),
    "clippy.toml": Tool("cargo clippy", _RUST), ".clippy.toml": Tool("cargo clippy", _RUST),
    "rustfmt.toml": Tool("rustfmt", _RUST), ".rustfmt.toml": Tool("rustfmt", _RUST),
    ".golangci.yml": Tool("golangci-lint", _GO), ".golangci.yaml": Tool("golangci-lint", _GO),
    # Interpreter pins: uv honours .python-version when it runs a check; the Node and Go pins
    # are read by version managers CI runs (nvm, setup-node, goenv), no check in the sandbox.
    ".python-version": Tool("uv", _PY), ".nvmrc": Tool("nvm", _NODE),
    ".node-version": Tool("nodenv", _NODE), ".go-version": Tool("goenv", _GO),
    # Test runners' and task runners' own files: the checks running them.
    "pytest.ini": Tool("pytest", _PY), "tox.ini": Tool("tox", _PY, readers=frozenset({"pytest"})),
    "tox.toml": Tool("tox", _PY), "noxfile.py": Tool("nox", _PY),
    ".editorconfig": Tool("editorconfig", _NODE,
                          readers=frozenset({"prettier", "editorconfig-checker"})),
}  # fmt: skip
TOOL_PREFIXES = (
    (".eslintrc", _ESLINT), ("eslint.config.", _ESLINT), (".prettierrc", _PRETTIER),
    ("prettier.config.", _PRETTIER), ("tsconfig", _TSC),
)  # fmt: skip


def tool_of(path: str) -> Tool | None:
    """The tool `path` configures, if it is a known tool config (`tsconfig*.json`, ...)."""
    name = basename(path)
    tool = TOOL_FILES.get(name)
    if tool is None:
        tool = next((t for prefix, t in TOOL_PREFIXES if name.startswith(prefix)), None)
    if tool is _TSC and not name.endswith(".json"):
        return None
    return tool


FileKind = Literal["ignored", "global", "documentation", "lockfile", "shared", "code", "outside",
                   "runs", "unowned"]
Steps = tuple[str, ...]


@dataclass(frozen=True)
class FileStatus:
    """How planning read one changed file, in words for `--explain`."""

    kind: FileKind
    detail: str


# A part of the dependency graph: a workspace's (or a crate's) checks of one ecosystem.
Part = tuple[str, Ecosystem]


@dataclass
class Selection:
    """Changed files by kind, and the selected workspaces with the steps from each file."""

    files: dict[str, FileStatus] = field(default_factory=dict)
    global_files: list[str] = field(default_factory=list)
    reasons: dict[str, dict[str, Steps]] = field(default_factory=dict)
    # Per workspace and file, the ecosystems whose checks the file concerns (None: all): a
    # lockfile, a tool config or a Rust file selects only its ecosystem's checks of a
    # workspace holding several (a Cargo root with a pyproject).
    ecosystems: dict[str, dict[str, frozenset[Ecosystem] | None]] = field(default_factory=dict)
    # A tool config selects only the detected checks running that tool.
    tools: dict[str, Tool] = field(default_factory=dict)
    # A CI file or root Makefile: verified only by the checks whose command runs it.
    runs: dict[str, Runs] = field(default_factory=dict)
    # Per Cargo workspace, the crates selected, with the steps to each: its cargo commands
    # run for those (`-p`), unless it is selected as a whole (`whole`: a lockfile, a
    # toolchain pin, a file outside its crates).
    crates: dict[str, dict[str, Steps]] = field(default_factory=dict)
    whole: set[str] = field(default_factory=set)
    # (workspace, file) pairs a file selects itself, not through a dependency edge.
    direct: set[tuple[str, str]] = field(default_factory=set)

    def add(self, workspace: str, file: str, steps: Steps, ecosystem: Ecosystem | None = None,
            *, crate: str | None = None, direct: bool = True) -> None:
        """Record that `file` selects the `ecosystem` checks (None: all) of `workspace`; the
        steps of the first path found are kept."""
        self.reasons.setdefault(workspace, {}).setdefault(file, steps)
        scopes = self.ecosystems.setdefault(workspace, {})
        known = scopes.get(file, frozenset())
        added = None if ecosystem is None else frozenset({ecosystem})
        scopes[file] = None if known is None or added is None else known | added
        if crate is not None:
            self.crates.setdefault(workspace, {}).setdefault(crate, steps)
        if direct:
            self.direct.add((workspace, file))

    def concerns(self, workspace: str, file: str, ecosystem: Ecosystem) -> bool:
        """True when `file` selects `ecosystem`'s checks of `workspace`."""
        scope = self.ecosystems.get(workspace, {}).get(file)
        return scope is None or ecosystem in scope

    def narrowed(self, workspace: str) -> dict[str, Steps] | None:
        """The crates a Cargo workspace's commands run for, with why; None for all of them."""
        if workspace in self.whole or self.global_files:
            return None
        return self.crates.get(workspace)


def is_documentation(path: str) -> bool:
    """True for documentation files, which never call for a check on their own.

    A documentation-like file under a test or fixture folder is a test input: code.
    """
    name = basename(path)
    if not (splitext(name)[1].lower() in DOC_SUFFIXES or name in DOC_NAMES):
        return False
    return has_part(path, TEST_DIRS) is None


def is_global_file(path: str) -> bool:
    """True for files whose change may affect how every workspace builds or is verified."""
    return path == CONFIG_PATH or path in GLOBAL_ROOT_FILES


def is_test_file(path: str) -> bool:
    """True for a file only its own package's tests read: below a test or fixture folder, or
    named like a test (`test_x.py`, `x_test.go`, `x.test.ts`, `conftest.py`, `tests.rs`). Its
    dependents never load it, so they are not checked for it."""
    return has_part(path, TEST_ONLY_DIRS) is not None or _TEST_NAME.search(path) is not None


class _TestFiles:
    """Tells whether a changed file is a test of its package: for a Node file, by the
    package's JSON jest config where it has one (`node_tests`), else by folder and name
    (`is_test_file`); with why, for `--explain`. Each package's config is read once."""

    def __init__(self, layout: Layout, manifests: Manifests, index: RepoIndex | None) -> None:
        self.layout = layout
        self.manifests = manifests
        self.index = index
        self._discovered: dict[str, Discovery] = {}

    def of(self, path: str, home: str) -> tuple[bool, str]:
        inside = relative(path, home) or path
        test = is_test_file(inside)
        workspace = self.layout.workspaces.get(home)
        if self.index is None or workspace is None or _NODE not in workspace.ecosystems or (
                LANGUAGES.get(splitext(path)[1]) is not _NODE):
            return test, "a test file" if test else ""
        discovery = self._discovered.get(home)
        if discovery is None:
            discovery = self._discovered[home] = discover(
                home, self.index.names.get(home, set()), self.manifests)
        jest = discovery.jest
        if jest is None:
            if not test:
                return False, ""
            return True, f"a test file ({discovery.note})" if discovery.note else "a test file"
        if jest.runs(path):
            return True, f"a test file jest runs ({jest.source})"
        if has_part(inside, TEST_ONLY_DIRS) is not None:
            return True, f"read by its package's tests, not a test jest runs ({jest.source})"
        if test:
            return False, (f"named like a test, but not one jest runs ({jest.source}): its "
                           "package's dependents are checked too")
        return False, ""


# A source file's language: a file of one selects only that ecosystem's checks of a workspace
# holding several; a file of none (data, C, docs) selects them all.
LANGUAGES = {
    ".rs": _RUST, ".go": _GO, ".py": _PY, ".pyi": _PY, ".pyx": _PY, ".pxd": _PY,
    ".js": _NODE, ".jsx": _NODE, ".mjs": _NODE, ".cjs": _NODE, ".ts": _NODE, ".tsx": _NODE,
    ".mts": _NODE, ".cts": _NODE, ".vue": _NODE, ".svelte": _NODE, ".astro": _NODE,
}  # fmt: skip


def select(
    changed: Iterable[str],
    layout: Layout,
    manifests: Manifests,
    config: VerifyConfig,
    *,
    base: Tree | None,
    graph: DependencyGraph | None,
    index: RepoIndex | None = None,
) -> Selection:
    """Classify the changed files and select the workspaces they concern, dependents included.

    `base` is the tree the change starts from (for lockfile diffs and tools' sections); `graph`
    the dependency graph, None to leave dependents out (a global change selects everything
    anyway); `index` the tree's watched files, to read a package's jest config (without it,
    test files are told by name).
    """
    selection = Selection()
    tests = _TestFiles(layout, manifests, index)
    declarations = {d.file: d for d in layout.declarations.values()}
    seeds: list[tuple[Part, str, Steps]] = []
    for path in changed:
        pick = _Picker(layout, selection, path, seeds)
        pattern = next((p for p in config.ignore if ignore_matches(p, path)), None)
        if pattern is not None:
            selection.files[path] = FileStatus("ignored", f"verify.ignore: {pattern!r}")
        elif is_global_file(path):
            selection.files[path] = FileStatus("global", "shapes every build: all workspaces")
            selection.global_files.append(path)
        elif (runs := runs_of(path)) is not None:
            selection.files[path] = FileStatus("runs", runs.nothing)
            selection.runs[path] = runs
        elif is_documentation(path):
            selection.files[path] = FileStatus("documentation", "nothing to check")
        elif is_unowned(path):
            selection.files[path] = FileStatus(
                "unowned", "no tool reads it when a check runs: nothing verifies it")
        elif basename(path) in LOCKFILES:
            _lockfile(path, layout, manifests, base, selection, pick, tests)
        elif (names := tools_changed(path, manifests, base)) is not None:
            _tool_tables(path, names, layout, selection, pick)
        elif path in declarations:
            declaration = declarations[path]
            members = [declaration.root, *declaration.members]
            if declaration.ecosystem is _GO and declaration.root not in declaration.members:
                members.remove(declaration.root)  # go.work's own folder is not used unless listed
            for workspace in members:
                if workspace in layout.workspaces:
                    pick(workspace, (f"{path} declares the {declaration.ecosystem} workspace "
                                     f"{declaration.root}",), declaration.ecosystem)
            selection.files[path] = FileStatus(
                "shared", f"declares {len(declaration.members)} {declaration.ecosystem} members")
        elif (tool := tool_of(path)) is not None:
            _tool_config(path, tool, layout, selection, pick)
        elif _shared(path, layout, selection, pick) is None:
            _code(path, layout, selection, pick, tests)
    if graph is not None:
        _add_dependents(selection, layout, graph, seeds)
    return selection


class _Picker:
    """Selects for one changed file: a workspace's checks of an ecosystem (all of them for
    None), or a crate's (`as_crate`: the crate's own change, not its whole Cargo workspace's),
    and keeps the parts reached as the seeds of the dependents' search (`spread`)."""

    def __init__(self, layout: Layout, selection: Selection, file: str,
                 seeds: list[tuple[Part, str, Steps]]) -> None:
        self.layout = layout
        self.selection = selection
        self.file = file
        self.seeds = seeds

    def __call__(self, folder: str, steps: Steps, ecosystem: Ecosystem | None = None, *,
                 as_crate: bool = False, spread: bool = True) -> None:
        parts = select_part(self.layout, self.selection, folder, self.file, steps, ecosystem,
                            as_crate=as_crate, direct=True)
        if spread:
            self.seeds += [(part, self.file, steps) for part in parts]


def select_part(layout: Layout, selection: Selection, folder: str, file: str, steps: Steps,
                ecosystem: Ecosystem | None, *, as_crate: bool, direct: bool) -> list[Part]:
    """Record that `file` selects the `ecosystem` checks (None: all) of `folder`; return the
    parts of the dependency graph so selected. A crate of a Cargo workspace selected `as_crate`
    selects its workspace's cargo commands for that crate only; a Cargo workspace selected as
    a whole, every crate of it."""
    workspace = layout.workspaces.get(folder)
    if ecosystem is not None:
        ecosystems = [ecosystem]
    elif workspace is not None and (workspace.ecosystems or folder in layout.folded):
        ecosystems = sorted(workspace.ecosystems | ({_RUST} if folder in layout.folded else set()))
    else:
        selection.add(folder, file, steps, None, direct=direct)  # a configured workspace
        return []
    parts: list[Part] = []
    for eco in ecosystems:
        root = layout.cargo_root(folder) if eco is _RUST else folder
        declared = eco is _RUST and (_RUST, root) in layout.declarations
        if declared and folder in layout.crates and (as_crate or root != folder):
            selection.add(root, file, steps, _RUST, crate=folder, direct=direct)
            parts.append((folder, _RUST))
            continue
        selection.add(folder, file, steps, eco, direct=direct)
        if declared:  # the whole Cargo workspace: every crate of it
            selection.whole.add(folder)
            parts += [(crate, _RUST) for crate in layout.cargo_crates(folder)]
        else:
            parts.append((folder, eco))
    return parts


def _code(path: str, layout: Layout, selection: Selection, pick: _Picker,
          tests: _TestFiles) -> None:
    """The workspace or crate holding `path`: a file inside a crate of a Cargo workspace is the
    crate's; elsewhere a source file's language picks its ecosystem's checks of a workspace
    holding several. A test file selects its own package only."""
    home = layout.home(path)
    harness = layout.harness(path) if layout.harnesses else None
    if home is None or harness is not None:
        why = f"in the cargo-fuzz harness {harness}: no check builds it" if harness else (
            "in no workspace")
        selection.files[path] = FileStatus("outside", why)
        return
    test, why = tests.of(path, home)
    where = f"{why} in {home}" if test else f"in {home}" + (f", {why}" if why else "")
    if home not in layout.workspaces:  # a crate folded into its Cargo workspace
        root = layout.cargo_root(home)
        detail = f"in crate {home} of the Cargo workspace {root}"
        pick(home, (where,), _RUST, as_crate=True, spread=not test)
    else:
        ecosystems = layout.workspaces[home].ecosystems | (
            {_RUST} if home in layout.folded else set())
        language = LANGUAGES.get(splitext(path)[1])
        ecosystem = language if language in ecosystems else None
        detail = f"in workspace {home}" + (f" ({ecosystem} checks)" if ecosystem and len(
            ecosystems) > 1 else "")
        pick(home, (where,), ecosystem, as_crate=True, spread=not test)
    if test:
        detail += f": {why}, its package's dependents are not checked for it"
    elif why:
        detail += f": {why}"
    selection.files[path] = FileStatus("code", detail)


def _shared(path: str, layout: Layout, selection: Selection, pick: _Picker) -> Ecosystem | None:
    """Select what a shared config or toolchain file concerns; None when `path` is none."""
    name = basename(path)
    folder = parent_folder(path)
    ecosystem = SHARED_FILES.get(name) or next(
        (eco for prefix, eco in SHARED_PREFIXES if name.startswith(prefix)), None)
    if ecosystem is None and name == "config.toml" and basename(folder) == ".cargo":
        ecosystem, folder = _RUST, parent(folder) or "."
    if ecosystem is None:
        return None
    scope = layout.below(folder, ecosystem)
    if not scope:
        return None  # no workspace of its kind below: an ordinary file of its workspace
    where = "the repository" if folder == "." else folder
    for workspace in scope:
        pick(workspace, (f"{name} configures every {ecosystem} workspace in {where}",), ecosystem)
    selection.files[path] = FileStatus("shared", f"{ecosystem} config for {len(scope)} workspaces")
    return ecosystem


# Ini files holding several tools' sections (`ini_sections`): setup.cfg also the package's
# metadata, tox.ini pytest's and flake8's settings besides tox's.
INI_CONFIGS = frozenset({"setup.cfg", "tox.ini", "pytest.ini"})

# `[tool.X]` tables of a pyproject.toml that only the checks running a tool read, and that
# tool (coverage's settings are read by pytest-cov, under pytest).
PYPROJECT_TOOLS = {
    "ruff": "ruff", "mypy": "mypy", "pyright": "pyright", "basedpyright": "basedpyright",
    "pytest": "pytest", "coverage": "pytest", "black": "black", "isort": "isort",
    "pylint": "pylint", "codespell": "codespell", "poe": "poe", "tox": "tox",
    "pydocstyle": "pydocstyle", "bandit": "bandit", "docformatter": "docformatter",
}  # fmt: skip


def tools_changed(path: str, manifests: Manifests, base: Tree | None) -> frozenset[str] | None:
    """The tools whose settings are all a change to a pyproject.toml or an ini file (setup.cfg,
    tox.ini, pytest.ini) touched against the base; None for any other file or change."""
    name = basename(path)
    if name == "pyproject.toml":
        return tool_tables_changed(path, manifests, base)
    if name in INI_CONFIGS and base is not None:
        return ini_tools_changed(name, base.read_text(path), manifests.text(path))
    return None


def tool_tables_changed(path: str, manifests: Manifests, base: Tree | None
                        ) -> frozenset[str] | None:
    """The tools whose `[tool.X]` tables are all a pyproject.toml change touched (empty: it
    changed no value, only comments or layout); None when anything else changed (the
    project, its dependencies, a build backend's table) or there is no base to compare."""
    old_text = base.read_text(path) if base is not None else None
    new = manifests.toml(path)
    if old_text is None or not new:
        return None
    try:
        old = tomllib.loads(old_text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None
    if {k: v for k, v in old.items() if k != "tool"} != {k: v for k, v in new.items()
                                                          if k != "tool"}:
        return None
    before, after = old.get("tool"), new.get("tool")
    before, after = (before if isinstance(before, dict) else {},
                     after if isinstance(after, dict) else {})
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    if not changed <= PYPROJECT_TOOLS.keys():
        return None
    return frozenset(PYPROJECT_TOOLS[name] for name in changed)


def _tool_tables(path: str, names: frozenset[str], layout: Layout, selection: Selection,
                 pick: _Picker) -> None:
    """A pyproject.toml change touching only tools' tables (an ini file's, only tools'
    sections): the checks running those tools, as their own config files would
    (`_tool_config`)."""
    if not names:
        selection.files[path] = FileStatus(
            "unowned", "changed nothing a tool reads (comments, layout): nothing to check")
        return
    shown = " and ".join(sorted(names))
    _tool_config(path, Tool(shown, _PY, readers=names), layout, selection, pick)


def _tool_config(path: str, tool: Tool, layout: Layout, selection: Selection,
                 pick: _Picker) -> None:
    """Select the workspaces of the tool's ecosystem at or below the config's folder (else the
    workspace holding it), for the checks running that tool only."""
    folder = parent_folder(path)
    scope = layout.below(folder, tool.ecosystem)
    owner = layout.owner(path)
    if not scope and owner is not None and tool.ecosystem in layout.workspaces[owner].ecosystems:
        scope = [owner]
    if not scope:
        selection.files[path] = FileStatus("outside", f"{tool.name} config for no "
                                                      f"{tool.ecosystem} workspace")
        return
    selection.tools[path] = tool
    where = "the repository" if folder == "." else folder
    for workspace in scope:
        pick(workspace, (f"{basename(path)} configures {tool.name} for the {tool.ecosystem} "
                         f"workspaces in {where}",), tool.ecosystem)
    selection.files[path] = FileStatus(
        "shared", f"{tool.name} config: only the checks running {tool.name} in {len(scope)} "
                  "workspaces")


def _lockfile(path: str, layout: Layout, manifests: Manifests, base: Tree | None,
              selection: Selection, pick: _Picker, tests: _TestFiles) -> None:
    name = basename(path)
    ecosystem = LOCKFILES[name]
    folder = parent_folder(path)
    if name in ("go.sum", "Cargo.lock"):
        scope = [folder] if folder in layout.workspaces else []
    elif name == "go.work.sum":
        scope = list(layout.members(_GO, folder))
    else:
        scope = sorted(
            w for w, ws in layout.workspaces.items()
            if ecosystem in ws.ecosystems and layout.install_root(w, ecosystem) == folder
        )
    if not scope:
        home = layout.home(path)
        if home is not None and is_test_file(relative(path, home) or path):
            # A mock package's lockfile under a test folder is test data its package's
            # tests read (jupyterlab/tests/mock_packages/*/yarn.lock): code, not an install.
            _code(path, layout, selection, pick, tests)
            return
        selection.files[path] = FileStatus("outside", f"no {ecosystem} workspace installs from it")
        return
    old = base.read_text(path) if base is not None else None
    if name == "Cargo.lock" and _by_crate(path, folder, old, layout, manifests, selection, pick):
        return
    direct = None
    if name == "yarn.lock":
        direct = {_relative_key(w, folder): node_dependencies(
            manifests.json(join(w, "package.json"))) for w in scope}
    affected = affected_importers(name, folder, old, manifests.text(path), direct=direct)
    if affected is None:
        chosen = scope
        why = ("changed, for" if name not in DIFFED else
               "changed (no earlier version to compare per package), for")
    else:
        chosen = [w for w in scope if w in affected]
        why = "changed the resolved dependencies of"
        if not chosen:
            chosen = [folder] if folder in scope else scope
            why = "changed no package's resolution; checked at its install root"
    for workspace in chosen:
        pick(workspace, (f"{name} {why} {workspace}",), ecosystem)
    count = f"{len(chosen)} of {len(scope)} workspaces"
    selection.files[path] = FileStatus("lockfile", f"{why.rstrip(':')} {count}")


def _by_crate(path: str, folder: str, old: str | None, layout: Layout, manifests: Manifests,
              selection: Selection, pick: _Picker) -> bool:
    """Select for a Cargo workspace's lockfile the crates whose resolution it changed (those
    depending on them are among them: the lockfile lists every crate's dependencies). False
    when it cannot say which (no earlier version, no Cargo workspace here, no crate changed):
    the whole workspace is checked then."""
    if (_RUST, folder) not in layout.declarations:
        return False
    names = affected_crates(old, manifests.text(path))
    if not names:
        return False
    from verification.cargo import crate_name  # Cargo's reader loads for a Cargo tree only

    crates = {crate_name(manifests.toml(join(crate, "Cargo.toml"))): crate
              for crate in layout.cargo_crates(folder)}
    chosen = sorted(crates[name] for name in names if name in crates)
    if not chosen:
        return False
    for crate in chosen:
        pick(crate, (f"Cargo.lock changed the resolved dependencies of crate {crate}",), _RUST,
             as_crate=True, spread=False)
    selection.files[path] = FileStatus(
        "lockfile", f"changed the resolved dependencies of {len(chosen)} of {len(crates)} crates")
    return True


def _add_dependents(selection: Selection, layout: Layout, graph: DependencyGraph,
                    seeds: list[tuple[Part, str, Steps]]) -> None:
    """Select everything depending on a seed's part, transitively, keeping the first path
    found. Files selecting the same part share one search of the graph."""
    reached: dict[Part, list[tuple[Part, Steps]]] = {}
    for part, file, steps in seeds:
        if part not in reached:
            reached[part] = _dependents(part, graph)
        for (folder, ecosystem), path in reached[part]:
            select_part(layout, selection, folder, file, (*steps, *path), ecosystem,
                        as_crate=True, direct=False)


def _dependents(start: Part, graph: DependencyGraph) -> list[tuple[Part, Steps]]:
    """Every part depending on `start`, transitively (breadth first), with the edges to it.
    A part reached only through an edge that does not spread (a crate's dev-dependency) is
    selected, and what depends on it is not."""
    found: dict[Part, Steps] = {}
    spread = {start}
    frontier: deque[tuple[Part, Steps]] = deque([(start, ())])
    while frontier:
        (folder, ecosystem), path = frontier.popleft()
        for edge in graph.dependents(folder, ecosystem):
            part = (edge.dependent, edge.ecosystem)
            if part in spread:
                continue
            longer = (*path, _step(edge))
            found.setdefault(part, longer)
            if edge.spreads:
                spread.add(part)
                frontier.append((part, longer))
    found.pop(start, None)
    return list(found.items())


def _step(edge: Edge) -> str:
    """An edge as a step of `--explain`; across ecosystems, each side's named."""
    if edge.ecosystem is edge.dependency_ecosystem:
        return f"{edge.dependent} depends on {edge.dependency} ({edge.reason})"
    return (f"{edge.dependent} ({edge.ecosystem}) depends on {edge.dependency} "
            f"({edge.dependency_ecosystem}) ({edge.reason})")


def parent_folder(path: str) -> str:
    return path.rpartition("/")[0] or "."


def _relative_key(workspace: str, folder: str) -> str:
    if folder == ".":
        return workspace
    return workspace[len(folder) + 1:] if workspace != folder else "."
