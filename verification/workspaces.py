"""Workspace membership, from the ecosystems' own declarations.

Pure (reads through `Manifests`). A folder holding a manifest is a workspace candidate; what
the ecosystems declare decides the rest:

- `pnpm-workspace.yaml` `packages`, `package.json` `workspaces` (npm, yarn), `[tool.uv.workspace]`
  `members`, Cargo's `[workspace] members` and `go.work` `use` list their members (globs, with
  `!pattern` or `exclude` removing some). A member installs from its declaring root (one lockfile,
  one install) and the root's runner may cover it.
- Crates of a Cargo workspace are folded into it: `cargo test --workspace` runs from its root.
- A manifest below a fixture, template or test-data folder (`fixtures/`, `templates/`,
  `__tests__/`, `testdata/`, `resources/`, ...) that no declaration lists is test data, not a
  workspace: its files belong to the workspace around it. So is an undeclared Node or Python
  manifest without a lockfile below a `test/` folder (a module-type `test/package.json`).
- Only declared members are members: a `package.json` inside a Node workspace root that does
  not list it (glob depth exact, `!pattern` excluded) and with no lockfile of its own is no
  workspace; no install would reach it.
- A folder `.github/ratchet.yml` names (`verify.workspaces`, or the root with `verify.checks`)
  is always a workspace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from posixpath import normpath

from verification.globs import GlobSet
from verification.gomod import parse_go_mod, parse_go_work_uses
from verification.index import FIXTURE_DIRS, RepoIndex, has_part, is_below, join, parent, relative
from verification.manifests import Manifests, mapping, strings


class Ecosystem(StrEnum):
    NODE = "node"
    PYTHON = "python"
    GO = "go"
    RUST = "rust"


# The ecosystem each manifest belongs to.
MANIFEST_ECOSYSTEM = {
    "package.json": Ecosystem.NODE,
    "pyproject.toml": Ecosystem.PYTHON,
    "setup.py": Ecosystem.PYTHON,
    "setup.cfg": Ecosystem.PYTHON,
    "go.mod": Ecosystem.GO,
    "Cargo.toml": Ecosystem.RUST,
}


# Folders of tests: a Node or Python manifest there that no workspace declares and that has no
# lockfile is how the tests load (a module-type package.json) or what they read, not a project.
_TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "e2e"})
_DATA_MANIFESTS = frozenset({"package.json", "pyproject.toml", "setup.py", "setup.cfg"})
_LOCKFILES = frozenset({
    "pnpm-lock.yaml", "yarn.lock", "package-lock.json", "npm-shrinkwrap.json", "bun.lock",
    "bun.lockb", "uv.lock", "poetry.lock",
})  # fmt: skip


@dataclass(frozen=True)
class Declaration:
    """A root's list of members: which ecosystem, where, in which file, and who they are."""

    ecosystem: Ecosystem
    root: str
    file: str
    members: tuple[str, ...]


@dataclass(frozen=True)
class Workspace:
    """A folder checked as one unit, with its manifests and the roots that declare it."""

    path: str
    manifests: frozenset[str]
    roots: tuple[tuple[Ecosystem, str], ...] = ()

    @property
    def ecosystems(self) -> frozenset[Ecosystem]:
        return frozenset(MANIFEST_ECOSYSTEM[name] for name in self.manifests)

    def root(self, ecosystem: Ecosystem) -> str | None:
        """The folder whose declaration lists this workspace for `ecosystem`, if any."""
        for eco, root in self.roots:
            if eco is ecosystem:
                return root
        return None


@dataclass
class Layout:
    """The workspaces of a tree, the declarations that shaped them, and what was left out."""

    workspaces: dict[str, Workspace]
    declarations: dict[tuple[Ecosystem, str], Declaration]
    folded: dict[str, str]  # crate folder -> the Cargo workspace that builds it
    skipped: dict[str, str]  # manifest folder -> why it is not a workspace
    _owners: dict[str, str | None] = field(default_factory=dict)
    _children: dict[str, list[str]] | None = None

    def owner(self, path: str) -> str | None:
        """The workspace a file belongs to: the nearest one containing it, or None."""
        return self.folder_owner(path.rpartition("/")[0] or ".")

    def folder_owner(self, folder: str) -> str | None:
        """The workspace a folder belongs to (itself, when it is one)."""
        seen: list[str] = []
        current: str | None = folder
        found: str | None = None
        while current is not None:
            if current in self._owners:
                found = self._owners[current]
                break
            seen.append(current)
            if current in self.workspaces:
                found = current
                break
            if current in self.folded:
                found = self.folded[current]
                break
            current = parent(current)
        for name in seen:
            self._owners[name] = found
        return found

    def children(self, folder: str) -> list[str]:
        """Workspaces directly nested in `folder` (no other workspace between them), sorted."""
        if self._children is None:
            self._children = {}
            for path in sorted(self.workspaces):
                above = parent(path)
                outer = self.folder_owner(above) if above is not None else None
                if outer is not None:
                    self._children.setdefault(outer, []).append(path)
        return self._children.get(folder, [])

    def install_root(self, workspace: str, ecosystem: Ecosystem) -> str:
        """Where `workspace` installs its `ecosystem` dependencies: its declaring root (one
        lockfile for all members) or itself."""
        return self.workspaces[workspace].root(ecosystem) or workspace

    def members(self, ecosystem: Ecosystem, root: str) -> tuple[str, ...]:
        declaration = self.declarations.get((ecosystem, root))
        return declaration.members if declaration else ()

    def below(self, folder: str, ecosystem: Ecosystem | None) -> list[str]:
        """Workspaces at or below `folder` of `ecosystem` (of any, for None), sorted."""
        return sorted(
            path for path, workspace in self.workspaces.items()
            if is_below(path, folder) and (ecosystem is None or ecosystem in workspace.ecosystems)
        )  # fmt: skip


def find_layout(
    index: RepoIndex, manifests: Manifests, *, configured: Iterable[str] = ()
) -> Layout:
    """Find the workspaces of a tree (see the module docstring for the rules)."""
    candidates = index.manifests()
    manifests.prefetch(join(folder, name) for folder, names in candidates.items() for name in names)
    declarations = _declarations(index, candidates, manifests)
    member_roots: dict[str, list[tuple[Ecosystem, str]]] = {}
    folded: dict[str, str] = {}
    for declaration in declarations.values():
        for member in declaration.members:
            if declaration.ecosystem is Ecosystem.RUST:
                folded[member] = declaration.root
            else:
                entry = (declaration.ecosystem, declaration.root)
                member_roots.setdefault(member, []).append(entry)
    roots = {root for _, root in declarations}
    node_roots = sorted(root for eco, root in declarations if eco is Ecosystem.NODE)
    configured_set = set(configured)

    workspaces: dict[str, Workspace] = {}
    skipped: dict[str, str] = {}
    for folder, names in sorted(candidates.items()):
        held = set(names)
        if folder in folded:
            held.discard("Cargo.toml")  # built by its Cargo workspace
        if not held and folder not in configured_set:
            skipped[folder] = f"a crate of the Cargo workspace at {folded[folder]}"
            continue
        declared = folder in member_roots or folder in roots or folder in folded
        if not declared and folder not in configured_set and folder != ".":
            reason = _test_data(folder, held, index)
            if reason is None and "package.json" in held and not _locked(index, folder):
                outer = _declaring_root(folder, node_roots)
                if outer is not None:  # no install would reach it: its scripts cannot run
                    held.discard("package.json")
                    if not held:
                        reason = (f"not a member of the Node workspace at {outer} and no "
                                  "lockfile of its own: part of the workspace around it")
            if reason is not None:
                skipped[folder] = reason
                continue
        roots_of = tuple(sorted(member_roots.get(folder, ())))
        workspaces[folder] = Workspace(folder, frozenset(held), roots_of)
    for folder in configured_set - set(workspaces):
        workspaces[folder] = Workspace(folder, frozenset())
        skipped.pop(folder, None)
    return Layout(workspaces, declarations, folded, skipped)


def _test_data(folder: str, held: set[str], index: RepoIndex) -> str | None:
    """Why an undeclared manifest folder is test data, or None when it may be a workspace."""
    part = has_part(folder + "/", FIXTURE_DIRS)
    if part is not None:
        return f"below a {part}/ folder and no workspace declares it: test data"
    part = has_part(folder + "/", _TEST_FOLDERS)
    if part is not None and held <= _DATA_MANIFESTS and not _locked(index, folder):
        # e.g. test/package.json with only {"type": "module"}: it sets how the tests load.
        return f"below a {part}/ folder with no lockfile and no workspace declares it: test data"
    return None


def _locked(index: RepoIndex, folder: str) -> bool:
    """True when `folder` installs on its own (it holds a lockfile)."""
    return not _LOCKFILES.isdisjoint(index.names.get(folder, ()))


def _declaring_root(folder: str, roots: Iterable[str]) -> str | None:
    """The nearest declaring root strictly above `folder`, if any."""
    above = [root for root in roots if root != folder and is_below(folder, root)]
    return max(above, key=len) if above else None


def _declarations(
    index: RepoIndex, candidates: Mapping[str, frozenset[str]], manifests: Manifests
) -> dict[tuple[Ecosystem, str], Declaration]:
    found: dict[tuple[Ecosystem, str], Declaration] = {}
    by_ecosystem: dict[Ecosystem, list[str]] = {}
    for folder, names in candidates.items():
        for name in names:
            by_ecosystem.setdefault(MANIFEST_ECOSYSTEM[name], []).append(folder)
    for folder, names in candidates.items():
        if "package.json" in names or index.has(folder, "pnpm-workspace.yaml"):
            patterns, file = _node_patterns(index, folder, manifests)
            if file is not None:
                members = _match(folder, patterns, by_ecosystem.get(Ecosystem.NODE, ()))
                found[(Ecosystem.NODE, folder)] = Declaration(Ecosystem.NODE, folder, file, members)
        if "pyproject.toml" in names:
            pyproject = join(folder, "pyproject.toml")
            uv = mapping(mapping(mapping(manifests.toml(pyproject).get("tool")).get("uv")))
            table = uv.get("workspace")
            if isinstance(table, dict):
                globs = GlobSet.from_patterns(strings(table.get("members")),
                                              strings(table.get("exclude")))
                members = _match(folder, globs, by_ecosystem.get(Ecosystem.PYTHON, ()))
                found[(Ecosystem.PYTHON, folder)] = Declaration(
                    Ecosystem.PYTHON, folder, pyproject, members
                )
        if "Cargo.toml" in names:
            cargo = join(folder, "Cargo.toml")
            table = manifests.toml(cargo).get("workspace")
            if isinstance(table, dict):
                globs = GlobSet.from_patterns(strings(table.get("members")),
                                              strings(table.get("exclude")))
                members = _match(folder, globs, by_ecosystem.get(Ecosystem.RUST, ()))
                found[(Ecosystem.RUST, folder)] = Declaration(
                    Ecosystem.RUST, folder, cargo, members
                )
    for folder, names in index.names.items():
        if "go.work" in names:
            go_work = join(folder, "go.work")
            uses = {normpath(join(folder, use)) for use in parse_go_work_uses(
                manifests.text(go_work) or "")}
            members = tuple(sorted(
                m for m in uses if m in candidates and "go.mod" in candidates[m]
            ))
            found[(Ecosystem.GO, folder)] = Declaration(Ecosystem.GO, folder, go_work, members)
    return found


def _node_patterns(
    index: RepoIndex, folder: str, manifests: Manifests
) -> tuple[GlobSet, str | None]:
    """The member globs of a Node root, and the file declaring them (None: not a root)."""
    if index.has(folder, "pnpm-workspace.yaml"):
        path = join(folder, "pnpm-workspace.yaml")
        return GlobSet.from_patterns(pnpm_packages(manifests.text(path) or "")), path
    path = join(folder, "package.json")
    workspaces = manifests.json(path).get("workspaces")
    if isinstance(workspaces, dict):  # yarn classic: {"packages": [...], "nohoist": [...]}
        workspaces = workspaces.get("packages")
    if isinstance(workspaces, list):
        return GlobSet.from_patterns(strings(workspaces)), path
    return GlobSet(()), None


def _match(root: str, globs: GlobSet, folders: Iterable[str]) -> tuple[str, ...]:
    members = []
    for folder in folders:
        inside = relative(folder, root)
        if inside is not None and inside != "." and globs.matches(inside):
            members.append(folder)
    return tuple(sorted(members))


def pnpm_packages(text: str) -> list[str]:
    """The `packages` list of a pnpm-workspace.yaml.

    Read line by line rather than with a YAML library: the file comes from the repository
    under review, and the list is all planning needs (https://pnpm.io/pnpm-workspace_yaml).
    """
    found: list[str] = []
    inside = False
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = line.strip()
        if item.startswith("- ") and (inside or raw[:1].isspace()):
            if inside:
                found.append(_unquote(item[2:]))
            continue
        if raw[:1].isspace():
            continue
        key, _, rest = line.partition(":")
        inside = key.strip().strip("'\"") == "packages"
        rest = rest.strip()
        if inside and rest.startswith("["):
            found += [_unquote(p) for p in rest.strip("[]").split(",") if p.strip()]
            inside = False
    return found


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def declared_names(layout: Layout, manifests: Manifests) -> dict[str, str]:
    """Each workspace's name as its manifests declare it (a package's, a crate's, a Go
    module's), for explanations: a package is named, not shown as a folder such as ``.``.
    A workspace whose manifests name nothing is left out."""
    names: dict[str, str] = {}
    for path, workspace in layout.workspaces.items():
        name = _declared_name(path, workspace.manifests, manifests)
        if name:
            names[path] = name
    return names


def _declared_name(path: str, found: frozenset[str], manifests: Manifests) -> str | None:
    if "package.json" in found:
        name = manifests.json(join(path, "package.json")).get("name")
        if isinstance(name, str) and name:
            return name
    if "pyproject.toml" in found:
        pyproject = manifests.toml(join(path, "pyproject.toml"))
        tool = mapping(pyproject.get("tool"))
        name = (mapping(pyproject.get("project")).get("name")
                or mapping(tool.get("poetry")).get("name"))
        if isinstance(name, str) and name:
            return name
    if "Cargo.toml" in found:
        cargo = manifests.toml(join(path, "Cargo.toml"))
        name = mapping(cargo.get("package")).get("name")
        if isinstance(name, str) and name:
            return name
        if "workspace" in cargo:
            return "Cargo workspace"
    if "go.mod" in found:
        text = manifests.text(join(path, "go.mod"))
        module = parse_go_mod(text).module if text else None
        if module:
            return module
    return None
