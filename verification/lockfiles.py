"""Which workspaces a lockfile change affects: the lockfile diffed per package.

Pure. A lockfile is shared by every package of its install root, but an update usually
changes the resolution of a few. `affected_importers` compares the old and new text and
returns the folders (relative to the repository) of the importers whose resolved
dependencies changed, directly or through a changed package they depend on transitively;
None when the format is not understood or there is no earlier version (the caller then takes
every importer of that lockfile).

Formats: `pnpm-lock.yaml` (v6 and v9: `importers`, `packages`, `snapshots`), npm's
`package-lock.json` (v2 and v3: `packages` by path), `yarn.lock` (classic and berry) and
`uv.lock`; `Cargo.lock` by crate (`affected_crates`: it records no folders, only names). The
YAML-like files are read line by line, never with a YAML library: the text
comes from the change under review, and pnpm and yarn write them in a fixed layout.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from posixpath import normpath
from typing import Any

from verification.index import join
from verification.manifests import mapping, normalize_python_name

# Lockfiles understood per package, with the ecosystem they belong to.
DIFFED = frozenset({"pnpm-lock.yaml", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock",
                    "uv.lock"})

# A package's key in a lockfile and the names of what it depends on.
Entries = dict[str, tuple[str, frozenset[str]]]  # key -> (block text, dependency names)


def affected_importers(
    name: str,
    folder: str,
    old: str | None,
    new: str | None,
    *,
    direct: Mapping[str, Iterable[str]] | None = None,
) -> set[str] | None:
    """Folders of the importers of lockfile `name` (in `folder`) whose resolution changed.

    `direct` maps importer folders to the names of their direct dependencies, for formats
    that do not record importers (yarn classic reads them from each package.json).
    """
    if old is None or new is None or name not in DIFFED:
        return None
    try:
        before, after = _parse(name, old), _parse(name, new)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    if before is None or after is None:
        return None
    old_importers, old_packages = before
    new_importers, new_packages = after
    changed_names = {
        _package_name(name, key)
        for key in set(old_packages) | set(new_packages)
        if old_packages.get(key) != new_packages.get(key)
    }
    # Every package that depends, transitively, on a changed one changed too.
    dependents: dict[str, set[str]] = {}
    for key, (_, deps) in new_packages.items():
        for dep in deps:
            dependents.setdefault(dep, set()).add(_package_name(name, key))
    affected = set(changed_names)
    frontier = list(changed_names)
    while frontier:
        for user in dependents.get(frontier.pop(), ()):
            if user not in affected:
                affected.add(user)
                frontier.append(user)
    importers = set(old_importers) | set(new_importers)
    if direct:
        importers |= {normpath(k) for k in direct}
    found = set()
    for importer in importers:
        old_entry, new_entry = old_importers.get(importer), new_importers.get(importer)
        deps = set(new_entry[1] if new_entry else ())
        if direct and importer in direct:
            deps |= set(direct[importer])
        if old_entry != new_entry or deps & affected:
            found.add(normpath(join(folder, importer)))
    return found


def affected_crates(old: str | None, new: str | None) -> set[str] | None:
    """The local crates of a `Cargo.lock` (its packages with no `source`: the workspace's
    members and path dependencies) whose resolution changed: their own entry, or a package
    they depend on, transitively. None when there is no earlier version or a text is not a
    lockfile planning reads (the caller then takes the whole Cargo workspace)."""
    if old is None or new is None:
        return None
    try:
        before, after = _cargo(old), _cargo(new)
    except (tomllib.TOMLDecodeError, ValueError, TypeError, AttributeError, RecursionError):
        return None
    changed = {key.split(" ", 1)[0] for key in set(before) | set(after)
               if before.get(key) != after.get(key)}
    dependents: dict[str, set[str]] = {}
    for key, (_, deps, _) in [*before.items(), *after.items()]:
        for dep in deps:
            dependents.setdefault(dep, set()).add(key.split(" ", 1)[0])
    affected, frontier = set(changed), list(changed)
    while frontier:
        for user in dependents.get(frontier.pop(), ()):
            if user not in affected:
                affected.add(user)
                frontier.append(user)
    local = {key.split(" ", 1)[0] for packages in (before, after)
             for key, (_, _, sourced) in packages.items() if not sourced}
    return affected & local


def _cargo(text: str) -> dict[str, tuple[str, frozenset[str], bool]]:
    """A Cargo.lock's packages by `name version`: (entry, names depended on, has a source).
    A dependency is written `name`, `name version` or `name version (source)`."""
    packages = {}
    for entry in tomllib.loads(text).get("package", []):
        entry = mapping(entry)
        deps = frozenset(str(dep).split(" ", 1)[0] for dep in entry.get("dependencies", []))
        key = f"{entry.get('name', '')} {entry.get('version', '')}"
        packages[key] = (json.dumps(entry, sort_keys=True), deps, "source" in entry)
    return packages


def _parse(name: str, text: str) -> tuple[Entries, Entries] | None:
    """(importers by folder relative to the lockfile, packages by key), or None."""
    if name == "pnpm-lock.yaml":
        return _pnpm(text)
    if name in ("package-lock.json", "npm-shrinkwrap.json"):
        return _npm(text)
    if name == "yarn.lock":
        return _yarn(text)
    return _uv(text)


def _package_name(lockfile: str, key: str) -> str:
    """The package name inside a lockfile key (`/@a/b@1.0.0(peer)`, `node_modules/x`)."""
    if lockfile in ("package-lock.json", "npm-shrinkwrap.json"):
        return key.rpartition("node_modules/")[2]
    if lockfile == "uv.lock":
        return key.split(" ", 1)[0]
    key = key.split("(", 1)[0].lstrip("/")
    if lockfile == "pnpm-lock.yaml" and "@" not in key[1:]:  # v5: /name/1.0.0
        return key.rpartition("/")[0]
    at = key.find("@", 1)
    return key if at == -1 else key[:at]


def _blocks(text: str, indent: int, *, unquote: bool = True) -> dict[str, list[str]]:
    """Keys at `indent` (a line ending in ':'), each with the lines below it."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    pad = " " * indent
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        at_indent = line.startswith(pad) and not line[indent:indent + 1].isspace()
        if at_indent and line.endswith(":"):
            key = line[indent:-1]
            current = blocks.setdefault(_unquote(key) if unquote else key, [])
        elif at_indent and ": " in line:  # `  packages/docs: {}`: an entry with inline value
            key, _, value = line[indent:].partition(": ")
            blocks[_unquote(key) if unquote else key] = [value]
            current = None
        elif line.startswith(pad + " ") and current is not None:
            current.append(line)
        else:
            current = None
    return blocks


def _pnpm(text: str) -> tuple[Entries, Entries]:
    sections = _blocks(text, 0)
    importers: Entries = {}
    for key, lines in _blocks("\n".join(sections.get("importers", [])), 2).items():
        # Dependency names sit at 6 spaces under `dependencies:` (4 spaces).
        deps = frozenset(_unquote(line.strip()[:-1]) for line in lines
                         if line.startswith("      ") and not line.startswith("       ")
                         and line.endswith(":"))
        importers[normpath(key)] = ("\n".join(lines), deps)
    packages: Entries = {}
    for section in ("packages", "snapshots"):
        for key, lines in _blocks("\n".join(sections.get(section, [])), 2).items():
            deps = frozenset(
                _unquote(line.strip().split(":", 1)[0]) for line in lines
                if line.startswith("      ") and not line.startswith("       ") and ":" in line
            )
            old = packages.get(key, ("", frozenset()))
            packages[key] = (old[0] + "\n".join(lines), old[1] | deps)
    return importers, packages


def _npm(text: str) -> tuple[Entries, Entries] | None:
    data = json.loads(text)
    packages = mapping(data).get("packages")
    if not isinstance(packages, dict):
        return None  # lockfileVersion 1 has no `packages`: not diffed per package
    importers: Entries = {}
    resolved: Entries = {}
    for key, entry in packages.items():
        entry = mapping(entry)
        deps = frozenset(
            dep for field in ("dependencies", "devDependencies", "optionalDependencies",
                              "peerDependencies")
            for dep in mapping(entry.get(field))
        )
        value = (json.dumps(entry, sort_keys=True), deps)
        if "node_modules/" not in key:  # "" is the root, "packages/a" a workspace
            importers[normpath(key or ".")] = value
        else:
            resolved[key] = value
    return importers, resolved


def _yarn(text: str) -> tuple[Entries, Entries]:
    importers: Entries = {}
    packages: Entries = {}
    for key, lines in _blocks(text, 0, unquote=False).items():
        if key == "__metadata":
            continue
        # `"a@^1.0.0", "a@^1.2.0":` (classic) or `"a@npm:^1.0.0, a@npm:^1.2.0":` (berry);
        # berry names what a key resolved to, which also locates a workspace.
        descriptor = key.split(",", 1)[0].strip().strip("\"'")
        resolution = next((line.strip()[len("resolution:"):].strip().strip('"')
                           for line in lines if line.startswith("  resolution:")), None)
        descriptor = resolution or descriptor
        deps = frozenset(
            _unquote(line.strip().split(" ", 1)[0].rstrip(":"))
            for line in lines
            if line.startswith("    ") and not line.startswith("     ")
        )
        value = ("\n".join(lines), deps)
        if "@workspace:" in descriptor:  # berry records each workspace as a package
            importers[normpath(descriptor.split("@workspace:", 1)[1])] = value
        else:
            packages[descriptor] = value
    return importers, packages


def _uv(text: str) -> tuple[Entries, Entries]:
    data = tomllib.loads(text)
    importers: Entries = {}
    packages: Entries = {}
    for entry in data.get("package", []):
        entry = mapping(entry)
        deps = {normalize_python_name(str(mapping(d).get("name", "")))
                for d in entry.get("dependencies", [])}
        for table in ("optional-dependencies", "dev-dependencies"):
            for group in mapping(entry.get(table)).values():
                deps |= {normalize_python_name(str(mapping(d).get("name", ""))) for d in group}
        name = normalize_python_name(str(entry.get("name", "")))
        value = (json.dumps(_without_metadata(entry), sort_keys=True), frozenset(deps))
        source = mapping(entry.get("source"))
        local = source.get("editable") or source.get("virtual")
        if isinstance(local, str):
            importers[normpath(local)] = value
        packages[f"{name} {entry.get('version', '')}"] = value
    return importers, packages


def _without_metadata(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "metadata"}


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
