"""Which workspaces a change concerns, and why: the selection step of planning.

Pure. Each changed file is classified, in this order:

1. `ignored`: `.github/ratchet.yml` declares it unverified on purpose (`verify.ignore`).
2. `global`: the Ratchet config and `.tool-versions` shape every build: every workspace.
   `runs`: a CI file (`.github/workflows/`, ...), the root `.pre-commit-config.yaml`,
   `Makefile` or `justfile` is verified only by the checks whose command runs it (actionlint
   or zizmor, pre-commit, make, just); with none, it is listed as unverified, saying so.
3. `documentation`: Markdown, reST, licences... outside test folders (a Markdown file under
   `tests/` or `fixtures/` is a test input, so it counts as code).
4. `lockfile`: the workspaces installing from it whose resolution changed (the lockfile diffed
   per package against the base, see `lockfiles`), or all of them when that is unknown.
5. `shared`: a tool's config (`.eslintrc.*`, `tsconfig*.json`, `ruff.toml`, `mypy.ini`, ...):
   only the checks running that tool (`Tool`), in the workspaces of its ecosystem at or below
   its folder (else the one holding it); a tool no detected check runs (flake8, pyright,
   clippy...) plans nothing, and the file is listed as unverified with that reason. A
   toolchain pin (`.python-version`, `rust-toolchain.toml`, ...) and a workspace declaration
   (`pnpm-workspace.yaml`, a root package.json with `workspaces`, `go.work`): every check of
   the workspaces of its ecosystem at or below its folder (a declaration: its root and
   members).
6. `code`: the workspace containing it; `outside` when none does.

Then every workspace depending on a selected one is selected too, transitively (`graph`).
Each selected workspace keeps, per changed file, the steps that led to it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from posixpath import basename, splitext
from typing import Literal

from verification.checks import DetectedCheck
from verification.config import CONFIG_PATH, VerifyConfig
from verification.globs import ignore_matches
from verification.graph import DependencyGraph
from verification.index import TEST_DIRS, has_part, join, parent
from verification.lockfiles import DIFFED, affected_importers
from verification.manifests import Manifests, node_dependencies
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


_WORKFLOW = Runs("a workflow file", r"\b(actionlint|zizmor)\b",
                 "a workflow file: no check verifies it (no actionlint or zizmor check)")
# Root files whose commands checks may run: only those checks verify them.
RUN_ROOT_FILES = {
    ".pre-commit-config.yaml": Runs("the pre-commit config", r"\b(pre-commit|prek)\b",
                                    "a pre-commit config: no check runs its hooks"),
    "Makefile": Runs("the root Makefile", r"(^|[;&|(]\s*)make\b",
                     "the root Makefile: no check runs make"),
    "Justfile": Runs("the root Justfile", r"(^|[;&|(]\s*)just\b",
                     "the root Justfile: no check runs just"),
    "justfile": Runs("the root justfile", r"(^|[;&|(]\s*)just\b",
                     "the root justfile: no check runs just"),
}  # fmt: skip


def runs_of(path: str) -> Runs | None:
    """What verifies `path` if it is a CI file or a root file checks run (a Makefile)."""
    if path.startswith(WORKFLOW_FOLDERS) or path in WORKFLOW_ROOT_FILES:
        return _WORKFLOW
    return RUN_ROOT_FILES.get(path)


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
    ".python-version": _PY, "pytest.ini": _PY, "tox.ini": _PY, "noxfile.py": _PY,
    "constraints.txt": _PY,
    ".nvmrc": _NODE, ".node-version": _NODE, ".npmrc": _NODE, ".yarnrc": _NODE,
    ".yarnrc.yml": _NODE, "turbo.json": _NODE, "nx.json": _NODE, "lerna.json": _NODE,
    "pnpm-workspace.yaml": _NODE,
    "rust-toolchain": _RUST, "rust-toolchain.toml": _RUST,
    ".go-version": _GO, "go.work": _GO,
}  # fmt: skip
SHARED_PREFIXES = (("babel.config.", _NODE),)


@dataclass(frozen=True)
class Tool:
    """The tool a config file configures: a change to the file concerns only the detected
    checks running that tool (`runs_in`); with none, nothing verifies it."""

    name: str
    ecosystem: Ecosystem
    # Checks of these kinds whose command names no known tool (`node scripts/lint.js`) may
    # run it: they count as running it.
    kinds: frozenset[str] = frozenset()

    def runs_in(self, check: DetectedCheck) -> bool:
        return self.name in check.tools or (not check.tools and check.kind in self.kinds)


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
                   "runs"]
Steps = tuple[str, ...]


@dataclass(frozen=True)
class FileStatus:
    """How planning read one changed file, in words for `--explain`."""

    kind: FileKind
    detail: str


@dataclass
class Selection:
    """Changed files by kind, and the selected workspaces with the steps from each file."""

    files: dict[str, FileStatus] = field(default_factory=dict)
    global_files: list[str] = field(default_factory=list)
    reasons: dict[str, dict[str, Steps]] = field(default_factory=dict)
    # A file that concerns one ecosystem (a lockfile, a tool config) selects only that
    # ecosystem's checks of a workspace holding several (a Cargo root with a pyproject).
    only: dict[str, Ecosystem] = field(default_factory=dict)
    # A tool config selects only the detected checks running that tool.
    tools: dict[str, Tool] = field(default_factory=dict)
    # A CI file or root Makefile: verified only by the checks whose command runs it.
    runs: dict[str, Runs] = field(default_factory=dict)

    def add(self, workspace: str, file: str, steps: Steps) -> bool:
        """Record that `file` selects `workspace`; False when it already did."""
        known = self.reasons.setdefault(workspace, {})
        if file in known:
            return False
        known[file] = steps
        return True


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


def select(
    changed: Iterable[str],
    layout: Layout,
    manifests: Manifests,
    config: VerifyConfig,
    *,
    base: Tree | None,
    graph: DependencyGraph | None,
) -> Selection:
    """Classify the changed files and select the workspaces they concern, dependents included.

    `base` is the tree the change starts from (for lockfile diffs); `graph` the dependency
    graph, None to leave dependents out (a global change selects everything anyway).
    """
    selection = Selection()
    declarations = {d.file: d for d in layout.declarations.values()}
    for path in changed:
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
        elif basename(path) in LOCKFILES:
            _lockfile(path, layout, manifests, base, selection)
        elif path in declarations:
            declaration = declarations[path]
            members = [declaration.root, *declaration.members]
            selection.only[path] = declaration.ecosystem
            if declaration.ecosystem is _GO and declaration.root not in declaration.members:
                members.remove(declaration.root)  # go.work's own folder is not used unless listed
            for workspace in members:
                if workspace in layout.workspaces:
                    selection.add(workspace, path, (f"{path} declares the {declaration.ecosystem} "
                                                    f"workspace {declaration.root}",))
            selection.files[path] = FileStatus(
                "shared", f"declares {len(declaration.members)} {declaration.ecosystem} members")
        elif (tool := tool_of(path)) is not None:
            _tool_config(path, tool, layout, selection)
        elif _shared(path, layout, selection) is None:
            _code(path, layout, selection)
    if graph is not None:
        _add_dependents(selection, graph)
    return selection


def _code(path: str, layout: Layout, selection: Selection) -> None:
    workspace = layout.owner(path)
    if workspace is None:
        selection.files[path] = FileStatus("outside", "in no workspace")
        return
    selection.files[path] = FileStatus("code", f"in workspace {workspace}")
    selection.add(workspace, path, (f"in {workspace}",))


def _shared(path: str, layout: Layout, selection: Selection) -> Ecosystem | None:
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
    selection.only[path] = ecosystem
    for workspace in scope:
        step = f"{name} configures every {ecosystem} workspace in {where}"
        selection.add(workspace, path, (step,))
    selection.files[path] = FileStatus("shared", f"{ecosystem} config for {len(scope)} workspaces")
    return ecosystem


def _tool_config(path: str, tool: Tool, layout: Layout, selection: Selection) -> None:
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
    selection.only[path] = tool.ecosystem
    selection.tools[path] = tool
    where = "the repository" if folder == "." else folder
    for workspace in scope:
        selection.add(workspace, path, (f"{basename(path)} configures {tool.name} for the "
                                        f"{tool.ecosystem} workspaces in {where}",))
    selection.files[path] = FileStatus(
        "shared", f"{tool.name} config: only the checks running {tool.name} in {len(scope)} "
                  "workspaces")


def _lockfile(path: str, layout: Layout, manifests: Manifests, base: Tree | None,
              selection: Selection) -> None:
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
        selection.files[path] = FileStatus("outside", f"no {ecosystem} workspace installs from it")
        return
    selection.only[path] = ecosystem
    direct = None
    if name == "yarn.lock":
        direct = {_relative_key(w, folder): node_dependencies(
            manifests.json(join(w, "package.json"))) for w in scope}
    old = base.read_text(path) if base is not None else None
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
        selection.add(workspace, path, (f"{name} {why} {workspace}",))
    count = f"{len(chosen)} of {len(scope)} workspaces"
    selection.files[path] = FileStatus("lockfile", f"{why.rstrip(':')} {count}")


def _add_dependents(selection: Selection, graph: DependencyGraph) -> None:
    """Select every workspace depending on a selected one, keeping the first path found."""
    frontier = deque((w, f, s) for w, files in sorted(selection.reasons.items())
                     for f, s in files.items())
    while frontier:
        workspace, file, steps = frontier.popleft()
        for edge in graph.dependents(workspace):
            longer = (*steps, f"{edge.dependent} depends on {workspace} ({edge.reason})")
            if selection.add(edge.dependent, file, longer):
                frontier.append((edge.dependent, file, longer))


def parent_folder(path: str) -> str:
    return path.rpartition("/")[0] or "."


def _relative_key(workspace: str, folder: str) -> str:
    if folder == ".":
        return workspace
    return workspace[len(folder) + 1:] if workspace != folder else "."
