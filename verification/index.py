"""One pass over a repository's paths: the files planning reacts to, found by name.

Pure. A monorepo lists 100,000 paths; planning needs a few thousand of them (manifests,
lockfiles, tool configs, Python test files). `RepoIndex.from_paths` keeps those, grouped by
folder, in a single loop, so every later question ("is there a uv.lock here?", "which
folders hold a package.json?") is a dictionary lookup instead of another scan of all paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from verification.tree import SKIPPED_DIRS

# Where GitHub reads workflows (files directly in it), and their suffixes.
WORKFLOWS_FOLDER = ".github/workflows"
WORKFLOW_SUFFIXES = (".yml", ".yaml")

# Manifest file names that make their folder a workspace candidate.
PYTHON_MANIFESTS = frozenset({"pyproject.toml", "setup.cfg", "setup.py"})
MANIFESTS = PYTHON_MANIFESTS | {"package.json", "go.mod", "Cargo.toml"}

# Other files planning reads or looks for by exact name.
WATCHED_NAMES = MANIFESTS | {
    "pnpm-workspace.yaml", "go.work",
    "pnpm-lock.yaml", "yarn.lock", "package-lock.json", "npm-shrinkwrap.json", "bun.lock",
    "bun.lockb", "uv.lock", "poetry.lock", "Cargo.lock", "go.sum",
    ".yarnrc.yml", "ruff.toml", ".ruff.toml", "mypy.ini", ".mypy.ini", "pytest.ini", "tox.ini",
    "noxfile.py", "conftest.py", "Makefile",
    # Task runners and declared tools (`task_runners`, `task_graphs`, `hooks`).
    "GNUmakefile", "makefile", "justfile", "Justfile", ".justfile", "tox.toml", "turbo.json",
    "nx.json", "project.json", ".pre-commit-config.yaml", "pyrightconfig.json",
    # Linters declared by their configs (`runners`).
    "clippy.toml", ".clippy.toml", "rustfmt.toml", ".rustfmt.toml", ".golangci.yml",
    ".golangci.yaml", ".golangci.toml", ".golangci.json",
}  # fmt: skip
# ... and by prefix: requirement files, test runner configs.
WATCHED_PREFIXES = ("requirements", "vitest.config.", "vitest.workspace.", "jest.config.")

# Folders holding test inputs, project templates and snapshots: a manifest there is data for a
# test (no workspace unless one declares it), and Python files named like tests there are
# inputs, not tests to collect.
RESOURCE_DIRS = frozenset(
    {
        "fixtures", "fixture", "__fixtures__", "testdata", "test-data", "test_data",
        "templates", "template", "__snapshots__", "snapshots", "resources",
    }
)  # fmt: skip
# A manifest inside a Jest `__tests__` folder is a fixture too.
FIXTURE_DIRS = RESOURCE_DIRS | {"__tests__"}
# Folders whose files are read by tests: a Markdown file there is a test input, not docs.
TEST_DIRS = FIXTURE_DIRS | {"test", "tests", "e2e", "__mocks__"}
# Folders whose files only their package's own tests read: a change there checks the package,
# not what depends on it (templates and resources may ship with the package).
TEST_ONLY_DIRS = (FIXTURE_DIRS - {"templates", "template", "resources"}) | {
    "test", "tests", "e2e", "__mocks__"}

_PYTHON_TEST = re.compile(r"(?:test_.*|.*_test)\.py\Z")


@dataclass
class RepoIndex:
    """The watched files of a tree, by folder ("." is the root), its Python test files and
    its workflow files."""

    names: dict[str, set[str]] = field(default_factory=dict)
    python_tests: list[str] = field(default_factory=list)
    workflows: list[str] = field(default_factory=list)  # files in .github/workflows
    # The other Python files: tests where a pytest config names them (`python_files`).
    python_sources: list[str] = field(default_factory=list)

    @classmethod
    def from_paths(cls, paths: Iterable[str]) -> RepoIndex:
        """Index `paths` in one loop (no sort, no copy: a monorepo lists 100,000 of them).

        A path listed twice is indexed twice, harmlessly: names are sets, and a test file
        counts once per workspace wherever it is used.
        """
        index = cls()
        names, tests, sources = index.names, index.python_tests, index.python_sources
        skipped: dict[str, bool] = {}
        for path in paths:
            folder, _, name = path.rpartition("/")
            watched = name in WATCHED_NAMES or name.startswith(WATCHED_PREFIXES)
            if not watched and not name.endswith(".py"):
                if folder == WORKFLOWS_FOLDER:
                    index.workflows.append(path)
                continue
            hidden = skipped.get(folder)
            if hidden is None:
                hidden = skipped[folder] = not SKIPPED_DIRS.isdisjoint(folder.split("/"))
            if hidden:
                continue  # installed dependencies and caches are never the project's own
            if watched:
                names.setdefault(folder or ".", set()).add(name)
            elif _PYTHON_TEST.match(name):
                tests.append(path)
            else:
                sources.append(path)
        return index

    def has(self, folder: str, name: str) -> bool:
        return name in self.names.get(folder, ())

    def manifests(self) -> dict[str, frozenset[str]]:
        """Each folder holding a manifest, with the manifest names it holds."""
        found = {}
        for folder, names in self.names.items():
            held = names & MANIFESTS
            if held:
                found[folder] = frozenset(held)
        return found


def shapes_plan(path: str) -> bool:
    """True when planning reads or lists `path` (`RepoIndex` keeps it): a change to it may
    change the layout or the checks; a change to any other file plans the same either way."""
    name = path.rpartition("/")[2]
    if name in WATCHED_NAMES or name.startswith(WATCHED_PREFIXES):
        return True
    return name.endswith(".py") and _PYTHON_TEST.match(name) is not None


def is_workflow_file(path: str) -> bool:
    """True for a file GitHub reads as a workflow (directly in `.github/workflows`)."""
    folder, _, name = path.rpartition("/")
    return folder == WORKFLOWS_FOLDER and name.endswith(WORKFLOW_SUFFIXES)


def join(folder: str, name: str) -> str:
    """`name` inside `folder` ("." is the root)."""
    return name if folder == "." else f"{folder}/{name}"


def parent(folder: str) -> str | None:
    """The folder containing `folder`; None for the root."""
    if folder == ".":
        return None
    return folder.rpartition("/")[0] or "."


def relative(path: str, folder: str) -> str | None:
    """`path` relative to `folder`, or None when it is not inside it ("." for the folder)."""
    if folder == ".":
        return path
    if path == folder:
        return "."
    if path.startswith(folder + "/"):
        return path[len(folder) + 1 :]
    return None


def is_below(path: str, folder: str) -> bool:
    """True when `path` is `folder` or inside it."""
    return folder == "." or path == folder or path.startswith(folder + "/")


def has_part(path: str, parts: frozenset[str]) -> str | None:
    """The first folder name of `path` (its last component excluded) found in `parts`."""
    for part in path.split("/")[:-1]:
        if part in parts:
            return part
    return None
