"""Workspace membership, from the ecosystems' own declarations.

Pure (reads through `Manifests`). A folder holding a manifest is a workspace candidate; what
the ecosystems declare decides the rest:

- `pnpm-workspace.yaml` `packages`, `package.json` `workspaces` (npm, yarn), `[tool.uv.workspace]`
  `members`, Cargo's `[workspace] members` and `go.work` `use` list their members (globs, with
  `!pattern` or `exclude` removing some). A member installs from its declaring root (one lockfile,
  one install) and the root's runner may cover it.
- Crates of a Cargo workspace (what Cargo builds, `cargo.cargo_members`) are folded into it:
  its cargo commands run from its root, for the crates a change concerns.
- A manifest below a fixture, template or test-data folder (`fixtures/`, `templates/`,
  `__tests__/`, `testdata/`, `resources/`, ...) that no declaration lists is test data, not a
  workspace: its files belong to the workspace around it. So is an undeclared Node, Python or
  Cargo manifest below a `test/` folder (a module-type `test/package.json`, a mock package),
  unless it is that folder's own project with a lockfile (`e2e/`), and a workspace root there
  that nothing above declares, with its members.
- Only declared members are members: inside a root, a manifest of its ecosystem that it does
  not list (glob depth exact, excludes honoured) is no workspace when its tool would not check
  it on its own: a Node or uv project without a lockfile of its own, a crate Cargo does not
  build as a member, a module a go.work does not use. An excluded crate or uv project, or a
  crate with its own `[workspace]`, is a project of its own.
- A folder `.github/ratchet.yml` names (`verify.workspaces`, or the root with `verify.checks`)
  is always a workspace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from posixpath import basename, normpath

from verification.globs import GlobSet, compile_glob
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
_DATA_MANIFESTS = frozenset({"package.json", "pyproject.toml", "setup.py", "setup.cfg",
                             "Cargo.toml"})
_LOCKFILES = {
    "package.json": ("pnpm-lock.yaml", "yarn.lock", "package-lock.json", "npm-shrinkwrap.json",
                     "bun.lock", "bun.lockb"),
    "pyproject.toml": ("uv.lock", "poetry.lock"),
}  # fmt: skip


@dataclass(frozen=True)
class Declaration:
    """A root's list of members: which ecosystem, where, in which file, and who they are;
    `exclude`: the patterns removing folders from it (uv's globs, Cargo's path prefixes)."""

    ecosystem: Ecosystem
    root: str
    file: str
    members: tuple[str, ...]
    exclude: tuple[str, ...] = ()

    def excludes(self, folder: str) -> bool:
        """True when `exclude` names `folder` (below the root): a project of its own."""
        inside = relative(folder, self.root)
        if inside is None:
            return False
        if self.ecosystem is Ecosystem.RUST:
            return any(is_below(inside, normpath(prefix)) for prefix in self.exclude)
        return any(compile_glob(pattern).matches(inside) for pattern in self.exclude)


@dataclass(frozen=True)
class Workspace:
    """A folder checked as one unit, with its manifests and the roots that declare it."""

    path: str
    manifests: frozenset[str]
    roots: tuple[tuple[Ecosystem, str], ...] = ()

    @property
    def ecosystems(self) -> frozenset[Ecosystem]:
        return _ecosystems(self.manifests)

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
    # Folders of Cargo packages: the members of Cargo workspaces, root packages, lone crates.
    crates: frozenset[str] = frozenset()
    # cargo-fuzz harnesses: no check builds their files.
    harnesses: frozenset[str] = frozenset()
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

    def home(self, path: str) -> str | None:
        """The nearest folder holding `path` that is a workspace or a crate of a Cargo
        workspace: what a change to the file concerns first."""
        return self.folder_home(path.rpartition("/")[0] or ".")

    def folder_home(self, folder: str) -> str | None:
        """`home` of the files in `folder`."""
        current: str | None = folder
        while current is not None:
            if current in self.workspaces or current in self.folded:
                return current
            current = parent(current)
        return None

    def cargo_crates(self, root: str) -> list[str]:
        """The crates of the Cargo workspace at `root`: its root package and its members."""
        return [*([root] if root in self.crates else []), *self.members(Ecosystem.RUST, root)]

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

    def harness(self, path: str) -> str | None:
        """The cargo-fuzz harness holding `path`, if any: nothing checks it."""
        return next((h for h in self.harnesses if is_below(path, h) and path != h), None)

    def cargo_root(self, crate: str) -> str:
        """The folder of the Cargo workspace building `crate` (the crate's own for a root
        package or a crate on its own)."""
        return self.folded.get(crate, crate)

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


@lru_cache(maxsize=64)
def _ecosystems(manifests: frozenset[str]) -> frozenset[Ecosystem]:
    """The ecosystems of a set of manifest names, made once per set: planning asks for a
    workspace's many times, and a monorepo's workspaces hold the same few sets."""
    return frozenset(MANIFEST_ECOSYSTEM[name] for name in manifests)


def find_layout(
    index: RepoIndex, manifests: Manifests, *, configured: Iterable[str] = ()
) -> Layout:
    """Find the workspaces of a tree (see the module docstring for the rules)."""
    candidates = index.manifests()
    manifests.prefetch(join(folder, name) for folder, names in candidates.items() for name in names)
    configured_set = set(configured)
    declarations, skipped = _declarations(index, candidates, manifests, configured_set)
    member_roots: dict[str, list[tuple[Ecosystem, str]]] = {}
    folded: dict[str, str] = {}
    declared: dict[str, set[Ecosystem]] = {}  # folder -> the ecosystems declaring it
    for (ecosystem, root), declaration in declarations.items():
        declared.setdefault(root, set()).add(ecosystem)
        for member in declaration.members:
            declared.setdefault(member, set()).add(ecosystem)
            if ecosystem is Ecosystem.RUST:
                folded[member] = root
            else:
                member_roots.setdefault(member, []).append((ecosystem, root))

    workspaces: dict[str, Workspace] = {}
    for folder, names in sorted(candidates.items()):
        if folder in skipped:
            continue
        held = set(names)
        if folder in folded:
            held.discard("Cargo.toml")  # built by its Cargo workspace
        if not held and folder not in configured_set:
            skipped[folder] = f"a crate of the Cargo workspace at {folded[folder]}"
            continue
        if folder not in configured_set and folder != ".":
            reason = None if folder in declared else _test_data(folder, held, index)
            if reason is None and "Cargo.toml" in held and folder not in folded and (
                    _fuzz_harness(manifests.toml(join(folder, "Cargo.toml")))):
                reason = FUZZ_HARNESS
            if reason is None:
                reason = _undeclared(folder, held, declared.get(folder, set()), declarations,
                                     index)
            if reason is not None:
                skipped[folder] = reason
                continue
        roots_of = tuple(sorted(member_roots.get(folder, ())))
        workspaces[folder] = Workspace(folder, frozenset(held), roots_of)
    for folder in configured_set - set(workspaces):
        workspaces[folder] = Workspace(folder, frozenset())
        skipped.pop(folder, None)
    crates = frozenset(folded) | {
        path for path, workspace in workspaces.items()
        if "Cargo.toml" in workspace.manifests
        and "package" in manifests.toml(join(path, "Cargo.toml"))
    }  # fmt: skip
    harnesses = frozenset(f for f, why in skipped.items() if why == FUZZ_HARNESS)
    return Layout(workspaces, declarations, folded, skipped, crates, harnesses)


def _test_data(folder: str, held: set[str], index: RepoIndex) -> str | None:
    """Why an undeclared manifest folder is test data, or None when it may be a workspace."""
    part = has_part(folder + "/", FIXTURE_DIRS)
    if part is not None:
        return f"below a {part}/ folder and no workspace declares it: test data"
    part = has_part(folder + "/", _TEST_FOLDERS)
    if part is None or not held <= _DATA_MANIFESTS:
        return None
    if basename(folder) in _TEST_FOLDERS and _locked(index, folder, held):
        return None  # a test suite installing on its own (`e2e/` with its lockfile)
    # e.g. test/package.json with only {"type": "module"}: it sets how the tests load; a
    # project inside a test folder (tests/mock_packages/x/) is what the tests build or read.
    return f"below a {part}/ folder and no workspace declares it: test data"


def _undeclared(folder: str, held: set[str], declaring: set[Ecosystem],
                declarations: Mapping[tuple[Ecosystem, str], Declaration],
                index: RepoIndex) -> str | None:
    """Why `folder` is no workspace though it holds manifests: for each of its ecosystems, it
    lies in a workspace root of that ecosystem that does not list it, and its tool would
    not check it on its own (no lockfile of its own; for Cargo and Go, not at all). The
    manifests so left out are removed from `held`; None while some remain."""
    why = []
    for ecosystem, names in _ECOSYSTEM_MANIFESTS:
        if ecosystem in declaring or held.isdisjoint(names):
            continue
        outer = _declaring_root(folder, ecosystem, declarations)
        if outer is None or outer.excludes(folder):
            continue  # an excluded crate or uv project is a project of its own
        if ecosystem in (Ecosystem.NODE, Ecosystem.PYTHON) and _locked(index, folder, names):
            continue
        held -= names
        why.append(_NOT_LISTED[ecosystem].format(root=outer.root, file=outer.file))
    if held or not why:
        return None
    return "; ".join(why) + ": part of the workspace around it"


# The manifests of each ecosystem, and why one not listed by its root is not checked alone.
_ECOSYSTEM_MANIFESTS = (
    (Ecosystem.NODE, frozenset({"package.json"})),
    (Ecosystem.PYTHON, frozenset({"pyproject.toml", "setup.py", "setup.cfg"})),
    (Ecosystem.RUST, frozenset({"Cargo.toml"})),
    (Ecosystem.GO, frozenset({"go.mod"})),
)
_NOT_LISTED = {
    Ecosystem.NODE: "not a member of the Node workspace at {root} and no lockfile of its own",
    Ecosystem.PYTHON: "not a member of the uv workspace at {root} and no lockfile of its own",
    Ecosystem.RUST: ("not a member of the Cargo workspace at {root} (not listed, not a path "
                     "dependency of a member, not excluded): cargo builds it only as a member"),
    Ecosystem.GO: "a module {file} does not use: go commands there run outside the workspace",
}


def _locked(index: RepoIndex, folder: str, names: Iterable[str]) -> bool:
    """True when `folder` installs on its own: it holds a lockfile of its manifests' kind."""
    wanted = {lock for name in names for lock in _LOCKFILES.get(name, ())}
    return not wanted.isdisjoint(index.names.get(folder, ()))


def _declaring_root(folder: str, ecosystem: Ecosystem,
                    declarations: Mapping[tuple[Ecosystem, str], Declaration]
                    ) -> Declaration | None:
    """The nearest root of `ecosystem` strictly above `folder`, if any."""
    above = [d for (eco, root), d in declarations.items()
             if eco is ecosystem and root != folder and is_below(folder, root)]
    return max(above, key=lambda d: len(d.root)) if above else None


def _declarations(
    index: RepoIndex, candidates: Mapping[str, frozenset[str]], manifests: Manifests,
    configured: set[str],
) -> tuple[dict[tuple[Ecosystem, str], Declaration], dict[str, str]]:
    """Every root's declaration, except those of roots that are test data themselves (a
    workspace root inside a test folder that nothing declares), and those roots, with why."""
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
                    Ecosystem.PYTHON, folder, pyproject, members, globs.exclude)
        if "Cargo.toml" in names:
            cargo = join(folder, "Cargo.toml")
            table = manifests.toml(cargo).get("workspace")
            if isinstance(table, dict):
                from verification.cargo import cargo_members  # only for a Cargo workspace

                members = cargo_members(folder, by_ecosystem.get(Ecosystem.RUST, []), manifests)
                found[(Ecosystem.RUST, folder)] = Declaration(
                    Ecosystem.RUST, folder, cargo, members, tuple(strings(table.get("exclude"))))
    for folder, names in index.names.items():
        if "go.work" in names:
            from verification.gomod import parse_go_work_uses  # only for a Go workspace

            go_work = join(folder, "go.work")
            uses = {normpath(join(folder, use)) for use in parse_go_work_uses(
                manifests.text(go_work) or "")}
            members = tuple(sorted(
                m for m in uses if m in candidates and "go.mod" in candidates[m]
            ))
            found[(Ecosystem.GO, folder)] = Declaration(Ecosystem.GO, folder, go_work, members)
    return _without_test_data_roots(found, candidates, index, manifests, configured)


# Why a cargo-fuzz harness is no workspace.
FUZZ_HARNESS = ("a cargo-fuzz harness (`[package.metadata] cargo-fuzz = true`): cargo fuzz "
                "builds it on nightly, no check does")


def _fuzz_harness(cargo: Mapping[str, object]) -> bool:
    """True for the crate `cargo fuzz init` writes (its metadata marks it)."""
    return mapping(mapping(cargo.get("package")).get("metadata")).get("cargo-fuzz") is True


def _without_test_data_roots(
    found: dict[tuple[Ecosystem, str], Declaration], candidates: Mapping[str, frozenset[str]],
    index: RepoIndex, manifests: Manifests, configured: set[str],
) -> tuple[dict[tuple[Ecosystem, str], Declaration], dict[str, str]]:
    """`found` without the declarations of roots that are test data (a pnpm or uv workspace
    under `tests/specs/`, a Cargo workspace of one fixture crate) or a cargo-fuzz harness, and
    those roots with why. Their members are then judged like any undeclared folder."""
    skipped: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        listed = {member for d in found.values() for member in d.members}
        for key, declaration in sorted(found.items()):
            root = declaration.root
            if root == "." or root in configured or root in listed:
                continue
            reason = _test_data(root, set(candidates.get(root, ())), index)
            if reason is None and declaration.ecosystem is Ecosystem.RUST and _fuzz_harness(
                    manifests.toml(declaration.file)):
                reason = FUZZ_HARNESS
            if reason is not None:
                del found[key]
                skipped[root] = reason
                changed = True
    return found, skipped


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
    module's), and each crate's of a Cargo workspace, for explanations: a package is named,
    not shown as a folder such as ``.``. A workspace whose manifests name nothing is left
    out."""
    names: dict[str, str] = {}
    for path, workspace in layout.workspaces.items():
        name = _declared_name(path, workspace.manifests, manifests)
        if name:
            names[path] = name
    if not layout.folded:
        return names
    from verification.cargo import crate_name  # Cargo's reader: only for crates

    for crate in layout.folded:
        name = crate_name(manifests.toml(join(crate, "Cargo.toml")))
        if name and crate not in names:
            names[crate] = name
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
        from verification.gomod import parse_go_mod  # only for a Go module

        text = manifests.text(join(path, "go.mod"))
        module = parse_go_mod(text).module if text else None
        if module:
            return module
    return None
