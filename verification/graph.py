"""Dependencies between the workspaces of one repository, and who depends on a change.

Pure (reads through `Manifests`). Like Turborepo's and Nx's `--affected`, pnpm's
`--filter ...[ref]`, Pants' `--changed-dependents=transitive` and bazel's `rdeps`, a change
plans the workspaces it touches and every workspace that depends on them, transitively. Edges
come from what the ecosystems resolve locally:

- Node: `workspace:` specifiers, `file:`/`link:`/`portal:` paths, and a dependency named like a
  member of the same workspace root (npm and yarn link those by name).
- Python: uv workspace sources and members by name, `path` sources (uv, Poetry).
- Go: a `replace` by a local folder, and a `require` of a module the same go.work uses.
- Rust: `path` dependencies (every dependency table, `[workspace.dependencies]` too).

Each edge keeps a reason naming the file and the entry, for `ratchet verify --explain`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from posixpath import normpath
from typing import Any

from verification.gomod import parse_go_mod
from verification.index import join
from verification.manifests import (
    Manifests,
    mapping,
    node_dependencies,
    normalize_python_name,
    poetry_dependencies,
    python_requirements,
    requirement_name,
)
from verification.workspaces import Ecosystem, Layout

# Node specifiers that point at a folder of the repository.
_NODE_PATH_PREFIXES = ("file:", "link:", "portal:")
# Cargo tables that list dependencies.
_CARGO_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")


@dataclass(frozen=True)
class Edge:
    """`dependent` uses `dependency`; `reason` says where that is declared."""

    dependent: str
    dependency: str
    reason: str


@dataclass
class DependencyGraph:
    """Edges between workspaces, indexed by dependency for reverse lookups."""

    edges: list[Edge] = field(default_factory=list)
    _dependents: dict[str, list[Edge]] = field(default_factory=dict)
    _dependencies: dict[str, dict[str, None]] = field(default_factory=dict)

    def add(self, dependent: str | None, dependency: str | None, reason: str) -> None:
        if dependent is None or dependency is None or dependent == dependency:
            return
        edge = Edge(dependent, dependency, reason)
        self.edges.append(edge)
        self._dependents.setdefault(dependency, []).append(edge)
        self._dependencies.setdefault(dependent, {})[dependency] = None

    def dependencies(self, workspace: str) -> list[str]:
        """The workspaces `workspace` depends on directly, in declaration order, once each."""
        return list(self._dependencies.get(workspace, ()))

    def dependents(self, workspace: str) -> list[Edge]:
        """The edges of the workspaces that depend on `workspace` directly."""
        return self._dependents.get(workspace, [])


def build_graph(layout: Layout, manifests: Manifests) -> DependencyGraph:
    """The dependency edges between the workspaces of `layout`."""
    graph = DependencyGraph()
    _node_edges(layout, manifests, graph)
    _python_edges(layout, manifests, graph)
    _go_edges(layout, manifests, graph)
    _rust_edges(layout, manifests, graph)
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
    for path, package in packages.items():
        root = layout.install_root(path, Ecosystem.NODE)
        file = join(path, "package.json")
        for name, spec in sorted(node_dependencies(package).items()):
            reason = f'{file}: "{name}": "{spec}"'
            if spec.startswith(_NODE_PATH_PREFIXES):
                target = normpath(join(path, spec.split(":", 1)[1]))
                graph.add(path, _workspace_at(layout, target), reason)
                continue
            alias = spec[len("workspace:"):] if spec.startswith("workspace:") else ""
            if "@" in alias.lstrip("@"):  # workspace:other-name@^1 (an alias)
                name = alias.rsplit("@", 1)[0]
            for target in names.get(name, ()):
                same_root = layout.install_root(target, Ecosystem.NODE) == root
                if spec.startswith("workspace:") or same_root:
                    graph.add(path, target, reason)


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
                          reason)
                continue
            for target in names.get(name, ()):
                if source.get("workspace") is True:
                    graph.add(path, target, reason + " (a uv workspace source)")
                elif uv_root is not None and _uv_root(layout, target) == uv_root:
                    graph.add(path, target, reason + " (a member of the same uv workspace)")
        for name, spec in sorted(poetry_dependencies(pyproject).items()):
            if isinstance(spec, dict) and isinstance(spec.get("path"), str):
                target = normpath(join(path, spec["path"]))
                reason = f"{file}: [tool.poetry] {name} = {{ path = {spec['path']!r} }}"
                graph.add(path, _workspace_at(layout, target), reason)


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
    modules: dict[str, str] = {}
    parsed = {}
    for path in _having(layout, "go.mod"):
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
        replaced = set()
        for module, folder in go_mod.local_replaces:
            target = normpath(join(path, folder))
            replaced.add(module)
            graph.add(path, _workspace_at(layout, target),
                      f"{file}: replace {module} => {folder}")
        for module in go_mod.requires:
            target = modules.get(module)
            if module in replaced or target is None:
                continue
            work = used_together.get(path)
            if work is not None and used_together.get(target) == work:
                used = join(work, "go.work")
                graph.add(path, target, f"{file}: require {module} (both used by {used})")


def _rust_edges(layout: Layout, manifests: Manifests, graph: DependencyGraph) -> None:
    crates = sorted(
        {path for path in _having(layout, "Cargo.toml")} | set(layout.folded)
    )
    for crate in crates:
        file = join(crate, "Cargo.toml")
        owner = layout.folder_owner(crate)
        for name, target in _cargo_paths(manifests.toml(file)):
            graph.add(owner, layout.folder_owner(normpath(join(crate, target))),
                      f'{file}: {name} = {{ path = "{target}" }}')


def _cargo_paths(cargo: dict[str, Any]) -> Iterable[tuple[str, str]]:
    tables = [cargo.get(name) for name in _CARGO_TABLES]
    tables.append(mapping(cargo.get("workspace")).get("dependencies"))
    for target in mapping(cargo.get("target")).values():
        tables += [mapping(target).get(name) for name in _CARGO_TABLES]
    for table in tables:
        for name, spec in mapping(table).items():
            path = mapping(spec).get("path")
            if isinstance(path, str):
                yield name, path


def _workspace_at(layout: Layout, folder: str) -> str | None:
    """The workspace a local dependency's folder belongs to, when it is in the repository."""
    if folder == ".." or folder.startswith("../"):
        return None
    return layout.folder_owner(folder)
