"""Dependencies between the workspaces of one repository, and who depends on a change.

Pure (reads through `Manifests`). Like Turborepo's and Nx's `--affected`, pnpm's
`--filter ...[ref]`, Pants' `--changed-dependents=transitive` and bazel's `rdeps`, a change
plans the workspaces it touches and every workspace that depends on them, transitively. Edges
come from what the ecosystems resolve locally:

- Node: `workspace:` specifiers, `file:`/`link:`/`portal:` paths, and a plain range on a member
  of the same workspace root that the member's version satisfies (npm, yarn and bun link it;
  pnpm only with `link-workspace-packages`): an older published version is not the member.
- Python: uv workspace sources and members by name, `path` sources (uv, Poetry).
- Go: a `require` of a module that a `replace` points at a local folder, or that the same
  go.work uses (a replacement of a module not required does nothing).
- Rust: crate to crate, `path` dependencies (every dependency table), directly or inherited
  with `workspace = true` from `[workspace.dependencies]`: one crate's change selects that
  crate and its dependents, not its whole Cargo workspace.
- Across languages only where declared: a Python package built by maturin from a crate.

Each edge keeps a reason naming the file and the entry, for `ratchet verify --explain`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from posixpath import normpath
from typing import Any

from verification.index import join
from verification.manifests import (
    Manifests,
    mapping,
    node_dependencies,
    normalize_python_name,
    poetry_dependencies,
    python_requirements,
    requirement_name,
    strings,
)
from verification.workspaces import Ecosystem, Layout

# Node specifiers that point at a folder of the repository.
_NODE_PATH_PREFIXES = ("file:", "link:", "portal:")
_NODE, _PY, _GO, _RUST = Ecosystem.NODE, Ecosystem.PYTHON, Ecosystem.GO, Ecosystem.RUST


@dataclass(frozen=True)
class Edge:
    """`dependent` uses `dependency`; `reason` says where that is declared. The ecosystems say
    which part of each the edge links: a Python package built from a crate by maturin
    (`ecosystem` python, `dependency_ecosystem` rust) is checked again when the crate changes,
    while a Python change is no concern of the crate's checks."""

    dependent: str
    dependency: str
    reason: str
    ecosystem: Ecosystem
    dependency_ecosystem: Ecosystem
    # False for a dependency only the dependent's tests build (a Cargo dev-dependency): the
    # dependent is checked, what depends on it is not.
    spreads: bool = True


@dataclass
class DependencyGraph:
    """Edges between workspaces and crates, indexed by dependency for reverse lookups."""

    edges: list[Edge] = field(default_factory=list)
    _dependents: dict[tuple[str, Ecosystem], list[Edge]] = field(default_factory=dict)
    _dependencies: dict[str, dict[str, None]] = field(default_factory=dict)

    def add(self, dependent: str | None, dependency: str | None, reason: str,
            ecosystem: Ecosystem, dependency_ecosystem: Ecosystem | None = None, *,
            spreads: bool = True) -> None:
        on = dependency_ecosystem or ecosystem
        if dependent is None or dependency is None or (dependent, ecosystem) == (dependency, on):
            return
        edge = Edge(dependent, dependency, reason, ecosystem, on, spreads)
        self.edges.append(edge)
        self._dependents.setdefault((dependency, on), []).append(edge)
        self._dependencies.setdefault(dependent, {})[dependency] = None

    def dependencies(self, workspace: str) -> list[str]:
        """The folders `workspace` depends on directly, in declaration order, once each."""
        return list(self._dependencies.get(workspace, ()))

    def dependents(self, folder: str, ecosystem: Ecosystem) -> list[Edge]:
        """The edges of what depends directly on the `ecosystem` part of `folder` (a
        workspace, or a crate of a Cargo workspace)."""
        return self._dependents.get((folder, ecosystem), [])


def build_graph(layout: Layout, manifests: Manifests) -> DependencyGraph:
    """The dependency edges between the workspaces of `layout`."""
    graph = DependencyGraph()
    _node_edges(layout, manifests, graph)
    _python_edges(layout, manifests, graph)
    _go_edges(layout, manifests, graph)
    _rust_edges(layout, manifests, graph)
    _maturin_edges(layout, manifests, graph)
    return graph


def _having(layout: Layout, manifest: str) -> Iterator[str]:
    for path, workspace in sorted(layout.workspaces.items()):
        if manifest in workspace.manifests:
            yield path


def _node_edges(layout: Layout, manifests: Manifests, graph: DependencyGraph) -> None:
    names: dict[str, list[str]] = {}
    packages: dict[str, dict[str, Any]] = {}
    for path in _having(layout, "package.json"):
        package = packages[path] = manifests.json(join(path, "package.json"))
        name = package.get("name")
        if isinstance(name, str):
            names.setdefault(name, []).append(path)
    links: dict[str, bool] = {}  # install root -> `_links_by_version`, read once per root
    for path, package in packages.items():
        root = layout.install_root(path, Ecosystem.NODE)
        by_version = links.get(root)
        if by_version is None:
            by_version = links[root] = _links_by_version(layout, root, manifests)
        file = join(path, "package.json")
        for name, spec in sorted(node_dependencies(package).items()):
            reason = f'{file}: "{name}": "{spec}"'
            if spec.startswith(_NODE_PATH_PREFIXES):
                target = normpath(join(path, spec.split(":", 1)[1]))
                graph.add(path, _workspace_at(layout, target), reason, _NODE)
                continue
            alias = spec[len("workspace:"):] if spec.startswith("workspace:") else ""
            if "@" in alias.lstrip("@"):  # workspace:other-name@^1 (an alias)
                name = alias.rsplit("@", 1)[0]
            for target in names.get(name, ()):
                if spec.startswith("workspace:"):
                    graph.add(path, target, reason, _NODE)
                elif by_version and layout.install_root(target, Ecosystem.NODE) == root:
                    version = packages[target].get("version")
                    # Only here: most monorepos link their members by the workspace protocol.
                    from verification.semver import satisfies

                    if isinstance(version, str) and satisfies(version, spec):
                        graph.add(path, target, f"{reason}, satisfied by {name}@{version}",
                                  _NODE)


def _links_by_version(layout: Layout, root: str, manifests: Manifests) -> bool:
    """Whether the Node workspace at `root` links a member into a package depending on it by
    a plain range the member's version satisfies: npm, yarn and bun do; pnpm (9 and later)
    only with `link-workspace-packages` (https://pnpm.io/workspaces), else only `workspace:`."""
    declaration = layout.declarations.get((_NODE, root))
    if declaration is None:
        return False
    if not declaration.file.endswith("pnpm-workspace.yaml"):
        return True
    npmrc = manifests.text(join(root, ".npmrc")) or ""
    settings = manifests.text(declaration.file) or ""
    return bool(re.search(r"^\s*link-workspace-packages\s*=\s*(true|deep)\s*$", npmrc, re.M)
                or re.search(r"^linkWorkspacePackages:\s*(true|deep)\s*$", settings, re.M))


def _python_edges(layout: Layout, manifests: Manifests, graph: DependencyGraph) -> None:
    names: dict[str, list[str]] = {}
    pyprojects: dict[str, dict[str, Any]] = {}
    for path in _having(layout, "pyproject.toml"):
        pyproject = pyprojects[path] = manifests.toml(join(path, "pyproject.toml"))
        name = mapping(pyproject.get("project")).get("name")
        if isinstance(name, str):
            names.setdefault(normalize_python_name(name), []).append(path)
    for path, pyproject in pyprojects.items():
        file = join(path, "pyproject.toml")
        uv_root = _uv_root(layout, path)
        sources = dict(_uv_sources(pyprojects.get(uv_root, {}))) if uv_root else {}
        sources.update(_uv_sources(pyproject))  # a member's own sources win over the root's
        for requirement in python_requirements(pyproject):
            name = requirement_name(requirement)
            if name is None:
                continue
            reason = f'{file}: "{requirement.strip()}"'
            source = mapping(sources.get(name))
            if isinstance(source.get("path"), str):
                graph.add(path, _workspace_at(layout, normpath(join(path, source["path"]))),
                          reason, _PY)
                continue
            for target in names.get(name, ()):
                if source.get("workspace") is True:
                    graph.add(path, target, reason + " (a uv workspace source)", _PY)
                elif uv_root is not None and _uv_root(layout, target) == uv_root:
                    graph.add(path, target, reason + " (a member of the same uv workspace)", _PY)
                elif uv_root is None and _pins(requirement, _python_version(
                        target, pyprojects[target], manifests)):
                    graph.add(path, target, reason + f" (the project in {target})", _PY)
        for name, spec in sorted(poetry_dependencies(pyproject).items()):
            if isinstance(spec, dict) and isinstance(spec.get("path"), str):
                target = normpath(join(path, spec["path"]))
                reason = f"{file}: [tool.poetry] {name} = {{ path = {spec['path']!r} }}"
                graph.add(path, _workspace_at(layout, target), reason, _PY)


def _pins(requirement: str, version: str | None) -> bool:
    """Whether `requirement` takes the repository's own project of `version`: it names no
    version, or exactly that one (`polars-runtime-32 == 1.43.2`, as polars pins its runtime
    package built beside it). Other ranges may mean a published release: no edge."""
    match = re.match(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*([^;]*)", requirement)
    spec = match.group(1).strip().strip("()").strip() if match else ""
    if not spec:
        return True
    pinned = re.fullmatch(r"===?\s*(\S+)", spec)
    return pinned is not None and version is not None and (
        _loose(pinned.group(1)) == _loose(version))


def _loose(version: str) -> str:
    """A version for comparing a PEP 440 pin with a Cargo version (`1.35.0b1`, `1.35.0-beta.1`)."""
    text = version.lower().removeprefix("v")
    for long, short in (("alpha", "a"), ("beta", "b"), ("preview", "rc"), ("c", "rc")):
        text = re.sub(rf"[-_.]?{long}[-_.]?", short, text)
    return text


def _python_version(path: str, pyproject: dict[str, Any], manifests: Manifests) -> str | None:
    """A project's version: `[project] version`, or, when maturin provides it (`dynamic`),
    the version of the crate maturin builds."""
    project = mapping(pyproject.get("project"))
    version = project.get("version")
    if isinstance(version, str):
        return version
    if "version" not in strings(project.get("dynamic")):
        return None
    crate = _maturin_crate(path, pyproject)
    version = mapping(manifests.toml(join(crate, "Cargo.toml")).get("package")).get("version") \
        if crate is not None else None
    return version if isinstance(version, str) else None


def _uv_root(layout: Layout, path: str) -> str | None:
    """The uv workspace `path` belongs to (as its root or a member), if any."""
    if (Ecosystem.PYTHON, path) in layout.declarations:
        return path
    return layout.workspaces[path].root(Ecosystem.PYTHON)


def _uv_sources(pyproject: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    sources = mapping(mapping(mapping(pyproject.get("tool")).get("uv")).get("sources"))
    for name, source in sources.items():
        yield normalize_python_name(name), source


def _go_edges(layout: Layout, manifests: Manifests, graph: DependencyGraph) -> None:
    go_modules = list(_having(layout, "go.mod"))
    if not go_modules:
        return
    from verification.gomod import parse_go_mod  # Go's reader loads only for Go modules

    modules: dict[str, str] = {}
    parsed = {}
    for path in go_modules:
        parsed[path] = go_mod = parse_go_mod(manifests.text(join(path, "go.mod")) or "")
        if go_mod.module:
            modules[go_mod.module] = path
    used_together: dict[str, str] = {}  # module folder -> the go.work using it
    for (ecosystem, root), declaration in layout.declarations.items():
        if ecosystem is Ecosystem.GO:
            for member in declaration.members:
                used_together[member] = root
    for path, go_mod in parsed.items():
        file = join(path, "go.mod")
        replaced = dict(go_mod.local_replaces)
        work = used_together.get(path)
        for module in go_mod.requires:  # a replacement of a module not required does nothing
            if module in replaced:
                graph.add(path, _workspace_at(layout, normpath(join(path, replaced[module]))),
                          f"{file}: require {module}, replace {module} => {replaced[module]}",
                          _GO)
                continue
            target = modules.get(module)
            if target is not None and work is not None and used_together.get(target) == work:
                used = join(work, "go.work")
                graph.add(path, target, f"{file}: require {module} (both used by {used})", _GO)


def _rust_edges(layout: Layout, manifests: Manifests, graph: DependencyGraph) -> None:
    """Crate to crate: each `path` dependency, inherited ones (`workspace = true`) resolved
    through the Cargo workspace's `[workspace.dependencies]`."""
    if not layout.crates:
        return
    from verification.cargo import local_dependencies  # Cargo's reader: only for crates

    for crate in sorted(layout.crates):
        root = layout.cargo_root(crate)
        root_cargo = manifests.toml(join(root, "Cargo.toml"))
        cargo = manifests.toml(join(crate, "Cargo.toml"))
        for dependency in local_dependencies(crate, cargo, root, root_cargo):
            if dependency.folder in layout.crates:
                graph.add(crate, dependency.folder, dependency.declared, _RUST,
                          spreads=not dependency.dev)


def _maturin_edges(layout: Layout, manifests: Manifests, graph: DependencyGraph) -> None:
    """A Python package maturin builds from a crate (`build-backend = "maturin"`, the crate
    named by `[tool.maturin] manifest-path`, else the Cargo.toml beside the pyproject) is
    built again, and its Python checks run again, when the crate changes."""
    for path in _having(layout, "pyproject.toml"):
        file = join(path, "pyproject.toml")
        crate = _maturin_crate(path, manifests.toml(file))
        if crate in layout.crates:
            graph.add(path, crate, f"{file}: built by maturin from {join(crate, 'Cargo.toml')}",
                      _PY, _RUST)


def _maturin_crate(path: str, pyproject: dict[str, Any]) -> str | None:
    """The folder of the crate maturin builds the project at `path` from (`build-backend =
    "maturin"`, `[tool.maturin] manifest-path`, else the Cargo.toml beside it), or None."""
    maturin = mapping(mapping(pyproject.get("tool")).get("maturin"))
    backend = mapping(pyproject.get("build-system")).get("build-backend")
    if backend != "maturin" and not maturin:
        return None
    manifest = maturin.get("manifest-path")
    manifest = normpath(join(path, manifest if isinstance(manifest, str) else "Cargo.toml"))
    return manifest.rpartition("/")[0] or "."


def _workspace_at(layout: Layout, folder: str) -> str | None:
    """The workspace a local dependency's folder belongs to, when it is in the repository."""
    if folder == ".." or folder.startswith("../"):
        return None
    return layout.folder_owner(folder)
