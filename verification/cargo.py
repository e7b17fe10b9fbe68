"""Cargo manifests: a workspace's members and the local dependencies between crates.

Pure (reads through `Manifests`). Cargo decides membership itself
(https://doc.rust-lang.org/cargo/reference/workspaces.html): the crates matching `members`
(globs), the root package, and every `path` dependency of a member that lies inside the
workspace folder, transitively; `exclude` (path prefixes, not globs) removes a crate that is
not listed literally. A dependency is local when it has a `path`, directly or inherited with
`name.workspace = true` from `[workspace.dependencies]` (whose paths are relative to the root).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from posixpath import normpath
from typing import Any

from verification.globs import GlobSet
from verification.index import is_below, join, relative
from verification.manifests import Manifests, mapping, strings

# Tables that list a crate's dependencies (each also under `[target.'cfg(..)'.*]`).
CARGO_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class LocalDependency:
    """A dependency of a crate on a folder of the repository; `declared` says where. A
    `dev` dependency is built for the crate's own tests only, never for its dependents."""

    name: str
    folder: str
    declared: str
    dev: bool


def local_dependencies(crate: str, cargo: Mapping[str, Any], root: str | None,
                       root_cargo: Mapping[str, Any]) -> Iterator[LocalDependency]:
    """The `path` dependencies of the crate at `crate` (folder), those inherited from the
    workspace at `root` (`root_cargo`: its manifest) resolved there."""
    inherited = mapping(mapping(root_cargo.get("workspace")).get("dependencies"))
    file = join(crate, "Cargo.toml")
    tables = [(name, cargo.get(name)) for name in CARGO_TABLES]
    for target in mapping(cargo.get("target")).values():
        tables += [(name, mapping(target).get(name)) for name in CARGO_TABLES]
    for kind, table in tables:
        dev = kind == "dev-dependencies"
        for name, spec in mapping(table).items():
            spec = mapping(spec)
            path = spec.get("path")
            if isinstance(path, str):
                yield LocalDependency(name, normpath(join(crate, path)),
                                      f'{file}: {name} = {{ path = "{path}" }}', dev)
            elif spec.get("workspace") is True and root is not None:
                path = mapping(inherited.get(name)).get("path")
                if isinstance(path, str):
                    yield LocalDependency(
                        name, normpath(join(root, path)),
                        f"{file}: {name}.workspace = true, [workspace.dependencies] in "
                        f'{join(root, "Cargo.toml")}: {name} = {{ path = "{path}" }}', dev)


def crate_name(cargo: Mapping[str, Any]) -> str | None:
    """The package name a Cargo.toml declares (what `cargo -p` takes)."""
    name = mapping(cargo.get("package")).get("name")
    return name if isinstance(name, str) and name else None


def cargo_members(root: str, crates: list[str], manifests: Manifests) -> tuple[str, ...]:
    """The crates (folders holding a Cargo.toml, `crates`) of the Cargo workspace at `root`,
    the root excluded, as Cargo finds them: `members` globs, then local dependencies of
    members inside the workspace folder, transitively; `exclude` honoured."""
    cargo = manifests.toml(join(root, "Cargo.toml"))
    table = mapping(cargo.get("workspace"))
    listed = strings(table.get("members"))
    globs = GlobSet.from_patterns(listed)
    literal = [normpath(p) for p in listed if _GLOB_CHARS.isdisjoint(p)]
    excluded = [normpath(p) for p in strings(table.get("exclude"))]

    def excludes(inside: str) -> bool:
        if any(is_below(inside, member) for member in literal):
            return False  # a member listed literally stays one, whatever `exclude` says
        return any(is_below(inside, prefix) for prefix in excluded)

    known = set(crates)
    members: dict[str, None] = {}
    for crate in sorted(crates):
        inside = relative(crate, root)
        if inside not in (None, ".") and globs.matches(inside) and not excludes(inside):
            members[crate] = None
    pending = [root, *members] if "package" in cargo else list(members)
    while pending:
        crate = pending.pop()
        for dependency in local_dependencies(crate, manifests.toml(join(crate, "Cargo.toml")),
                                             root, cargo):
            folder = dependency.folder
            inside = relative(folder, root)
            if (inside in (None, ".") or folder.startswith("../") or folder in members
                    or folder not in known
                    or excludes(inside)
                    or "workspace" in manifests.toml(join(folder, "Cargo.toml"))):
                continue
            members[folder] = None
            pending.append(folder)
    return tuple(sorted(members))
