"""Reading manifests once: a cache over a `Tree`, and the fields planning takes from them.

Pure (reads only through the `Tree` protocol). Every module of planning asks the same
`Manifests` for a file, so a file is read and parsed once per plan, and all manifests are read
in one batch up front (`prefetch`): one `git cat-file --batch` instead of a process per file.
A file that cannot be parsed reads as empty, like a missing one: planning never fails on a
broken manifest, the ecosystem's own tool reports it when the check runs.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from verification.tree import Tree, read_texts

# package.json fields whose entries are dependencies.
NODE_DEPENDENCY_FIELDS = (
    "dependencies", "devDependencies", "peerDependencies", "optionalDependencies",
)  # fmt: skip


class Manifests:
    """Text, JSON and TOML of repository files, read through a tree and cached."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._text: dict[str, str | None] = {}
        self._parsed: dict[str, Any] = {}

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read every path not read yet, in one batch where the tree can."""
        missing = [path for path in paths if path not in self._text]
        if missing:
            self._text.update(read_texts(self.tree, missing))

    def text(self, path: str) -> str | None:
        if path not in self._text:
            self._text[path] = self.tree.read_text(path)
        return self._text[path]

    def json(self, path: str) -> dict[str, Any]:
        """The JSON object in `path`; {} when missing, invalid or not an object."""
        if path not in self._parsed:
            try:
                value = json.loads(self.text(path) or "{}")
            except (json.JSONDecodeError, RecursionError):
                value = {}
            self._parsed[path] = value if isinstance(value, dict) else {}
        return self._parsed[path]  # type: ignore[no-any-return]

    def toml(self, path: str) -> dict[str, Any]:
        """The TOML table in `path`; {} when missing or invalid."""
        if path not in self._parsed:
            try:
                self._parsed[path] = tomllib.loads(self.text(path) or "")
            except (tomllib.TOMLDecodeError, RecursionError):
                self._parsed[path] = {}
        return self._parsed[path]  # type: ignore[no-any-return]


def mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def node_dependencies(package: dict[str, Any]) -> dict[str, str]:
    """Every dependency a package.json declares, name to specifier, across the four fields."""
    found: dict[str, str] = {}
    for field in NODE_DEPENDENCY_FIELDS:
        for name, spec in mapping(package.get(field)).items():
            if isinstance(spec, str):
                found.setdefault(name, spec)
    return found


def declares(package: dict[str, Any], name: str) -> bool:
    """True when `name` is among `node_dependencies(package)`, without gathering them all."""
    for field in NODE_DEPENDENCY_FIELDS:
        table = package.get(field)
        if isinstance(table, dict) and isinstance(table.get(name), str):
            return True
    return False


@lru_cache(maxsize=4096)
def normalize_python_name(name: str) -> str:
    """PEP 503 normalization: `Foo_Bar.baz` and `foo-bar-baz` name the same project (made
    once per name: a monorepo's manifests name each other's projects)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def python_requirements(pyproject: dict[str, Any]) -> list[str]:
    """The requirement strings of a pyproject: dependencies, extras and dependency groups."""
    requirements: list[str] = []
    project = mapping(pyproject.get("project"))
    requirements += strings(project.get("dependencies"))
    for group in mapping(project.get("optional-dependencies")).values():
        requirements += strings(group)
    for group in mapping(pyproject.get("dependency-groups")).values():
        requirements += strings(group)  # `{include-group = ...}` entries are tables: skipped
    uv = mapping(mapping(pyproject.get("tool")).get("uv"))
    requirements += strings(uv.get("dev-dependencies"))
    return requirements


def requirement_name(requirement: str) -> str | None:
    """The normalized project name a requirement line starts with (PEP 508)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return normalize_python_name(match.group(1)) if match else None


def poetry_dependencies(pyproject: dict[str, Any]) -> dict[str, Any]:
    """Poetry's dependency tables (main, dev and groups), name to specification."""
    poetry = mapping(mapping(pyproject.get("tool")).get("poetry"))
    found: dict[str, Any] = {}
    found.update(mapping(poetry.get("dependencies")))
    found.update(mapping(poetry.get("dev-dependencies")))
    for group in mapping(poetry.get("group")).values():
        found.update(mapping(mapping(group).get("dependencies")))
    return found
