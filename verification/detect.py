"""Workspace detection: which folders are workspaces, and the checks their manifests imply.

Pure: reads file contents only through the `Tree` protocol. A workspace is a folder holding a
manifest (Python, Node, Go, Rust). Rust crates listed as members of a Cargo workspace belong to
that workspace, because `cargo` builds and tests them from its root.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from posixpath import basename, dirname
from typing import Any

from verification.tree import SKIPPED_DIRS, Tree

# Manifest file names that make their folder a workspace.
PYTHON_MANIFESTS = frozenset({"pyproject.toml", "setup.cfg", "setup.py"})
MANIFESTS = PYTHON_MANIFESTS | {"package.json", "go.mod", "Cargo.toml"}

# Node lockfiles, in the order that decides the package manager when several exist.
NODE_LOCKFILES = (
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("package-lock.json", "npm"),
    ("npm-shrinkwrap.json", "npm"),
)

# package.json scripts that become checks, with their kind.
NODE_SCRIPTS = (("lint", "lint"), ("typecheck", "typecheck"), ("test", "test"), ("build", "build"))

# What `npm init` writes as the test script: a placeholder, not a test suite.
NPM_PLACEHOLDER_TEST = 'echo "Error: no test specified" && exit 1'

# The detected pytest check writes JUnit XML to the file the executor names in RATCHET_JUNIT,
# so the worktree stays clean and the evidence gets a test summary.
PYTEST_COMMAND = 'python -m pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"'

_TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$|^conftest\.py$")


@dataclass(frozen=True)
class DetectedCheck:
    """A check implied by a manifest; the plan adds the workspace and the timeout."""

    id: str
    kind: str
    command: str


def find_manifests(paths: Iterable[str]) -> dict[str, set[str]]:
    """Map each folder holding a manifest to the manifest names it holds."""
    found: dict[str, set[str]] = {}
    for path in paths:
        name = basename(path)
        if name not in MANIFESTS:
            continue
        folder = dirname(path) or "."
        if any(part in SKIPPED_DIRS for part in folder.split("/")):
            continue
        found.setdefault(folder, set()).add(name)
    return found


def find_workspaces(manifests: Mapping[str, set[str]], tree: Tree) -> set[str]:
    """Return the workspace folders, leaving out crates that belong to a Cargo workspace."""
    workspaces = set(manifests)
    for folder, names in manifests.items():
        if "Cargo.toml" not in names:
            continue
        members = _cargo_members(tree, _join(folder, "Cargo.toml"))
        for other, other_names in manifests.items():
            if other == folder or other_names != {"Cargo.toml"}:
                continue
            relative = _relative(other, folder)
            if relative is not None and any(fnmatch.fnmatch(relative, m) for m in members):
                workspaces.discard(other)
    return workspaces


def owner(path: str, workspaces: set[str]) -> str | None:
    """Return the nearest workspace folder containing `path`, or None."""
    folder = dirname(path)
    while True:
        candidate = folder or "."
        if candidate in workspaces:
            return candidate
        if not folder:
            return None
        folder = dirname(folder)


def detect_checks(
    workspace: str,
    manifest_names: set[str],
    files: Sequence[str],
    tree: Tree,
    *,
    all_paths: Set[str],
    nested: Sequence[str] = (),
) -> list[DetectedCheck]:
    """Return the checks the manifests of `workspace` imply, in a stable order.

    `files` are the repository paths that belong to this workspace (nearest-manifest rule);
    `all_paths` every path of the tree (a monorepo's lockfile sits above its workspaces);
    `nested` the workspaces inside this one, relative to it, which its Python tools must skip
    (they belong to the nested workspace, and would not even import from here).
    """
    checks: list[DetectedCheck] = []
    if manifest_names & PYTHON_MANIFESTS:
        checks += _python_checks(workspace, files, tree, nested)
    if "package.json" in manifest_names:
        checks += _node_checks(workspace, tree, all_paths)
    if "go.mod" in manifest_names:
        checks += [
            DetectedCheck("go-vet", "lint", "go vet ./..."),
            DetectedCheck("go-test", "test", "go test ./..."),
        ]
    if "Cargo.toml" in manifest_names:
        checks += [
            DetectedCheck("cargo-check", "typecheck", "cargo check --workspace --all-targets"),
            DetectedCheck("cargo-test", "test", "cargo test --workspace"),
        ]
    return checks


def _python_checks(
    workspace: str, files: Sequence[str], tree: Tree, nested: Sequence[str]
) -> list[DetectedCheck]:
    names = {_relative(f, workspace) for f in files}
    pyproject = _toml(tree, _join(workspace, "pyproject.toml"))
    tools = pyproject.get("tool", {}) if isinstance(pyproject.get("tool"), dict) else {}
    dependencies = _python_dependencies(pyproject, tree, workspace, names)
    setup_cfg = tree.read_text(_join(workspace, "setup.cfg")) or ""
    checks = []
    if "ruff" in tools or names & {"ruff.toml", ".ruff.toml"} or "ruff" in dependencies:
        excludes = "".join(f" --extend-exclude {shlex.quote(n)}" for n in nested)
        checks.append(DetectedCheck("ruff", "lint", f"ruff check .{excludes}"))
    uses_mypy = (
        "mypy" in tools
        or names & {"mypy.ini", ".mypy.ini"}
        or re.search(r"^\[mypy", setup_cfg, re.MULTILINE) is not None
        or "mypy" in dependencies
    )
    if uses_mypy:
        excludes = "".join(f" --exclude {shlex.quote('^' + re.escape(n) + '/')}" for n in nested)
        checks.append(DetectedCheck("mypy", "typecheck", f"mypy .{excludes}"))
    if any(_TEST_FILE.match(basename(f)) for f in files):
        ignores = "".join(f" --ignore={shlex.quote(n)}" for n in nested)
        checks.append(DetectedCheck("pytest", "test", PYTEST_COMMAND + ignores))
    return checks


def _python_dependencies(
    pyproject: dict[str, Any], tree: Tree, workspace: str, names: set[str | None]
) -> set[str]:
    """Collect requirement names from pyproject and requirements*.txt files of the workspace."""
    requirements: list[str] = []
    project = pyproject.get("project", {})
    if isinstance(project, dict):
        requirements += _strings(project.get("dependencies"))
        for group in _mapping(project.get("optional-dependencies")).values():
            requirements += _strings(group)
    for group in _mapping(pyproject.get("dependency-groups")).values():
        requirements += _strings(group)
    poetry = _mapping(_mapping(pyproject.get("tool")).get("poetry"))
    requirements += list(_mapping(poetry.get("dependencies")))
    requirements += list(_mapping(poetry.get("dev-dependencies")))
    for group in _mapping(poetry.get("group")).values():
        requirements += list(_mapping(_mapping(group).get("dependencies")))
    for name in sorted(n for n in names if n and re.match(r"requirements.*\.txt$", n)):
        requirements += (tree.read_text(_join(workspace, name)) or "").splitlines()
    found = set()
    for requirement in requirements:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if match:
            found.add(match.group(1).lower())
    return found


def _node_checks(workspace: str, tree: Tree, all_paths: Set[str]) -> list[DetectedCheck]:
    try:
        package = json.loads(tree.read_text(_join(workspace, "package.json")) or "{}")
    except json.JSONDecodeError:
        package = {}
    scripts = _mapping(package.get("scripts")) if isinstance(package, dict) else {}
    manager = _node_package_manager(workspace, all_paths)
    checks = []
    for script, kind in NODE_SCRIPTS:
        body = scripts.get(script)
        if not isinstance(body, str) or not body.strip() or body.strip() == NPM_PLACEHOLDER_TEST:
            continue
        checks.append(DetectedCheck(f"node-{script}", kind, f"{manager} run {script}"))
    return checks


def _node_package_manager(workspace: str, all_paths: Set[str]) -> str:
    """The lockfile nearest to the workspace decides (a monorepo keeps one at its root)."""
    folder = "" if workspace == "." else workspace
    while True:
        for lockfile, manager in NODE_LOCKFILES:
            if _join(folder or ".", lockfile) in all_paths:
                return manager
        if not folder:
            return "npm"
        folder = dirname(folder)


def _cargo_members(tree: Tree, cargo_toml: str) -> list[str]:
    workspace = _mapping(_toml(tree, cargo_toml).get("workspace"))
    return [m.rstrip("/") for m in _strings(workspace.get("members"))]


def _toml(tree: Tree, path: str) -> dict[str, Any]:
    try:
        return tomllib.loads(tree.read_text(path) or "")
    except tomllib.TOMLDecodeError:
        return {}


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def _relative(path: str, folder: str) -> str | None:
    """Return `path` relative to `folder`, or None when it is not inside it."""
    if folder == ".":
        return path
    if path.startswith(folder + "/"):
        return path[len(folder) + 1 :]
    return None
