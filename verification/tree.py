"""Repository trees that plan building reads: a directory, a git working tree, a git revision.

These are the I/O adapters behind `verification.plan.Tree`; plan building itself never touches
the filesystem or git.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

# Folders that hold tools' caches or installed dependencies, never a workspace of the project.
SKIPPED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)


class TreeError(Exception):
    """A tree could not be listed or read (for example, git refused a revision)."""


class DirectoryTree:
    """Every file under `root`, except `.git` and dependency or cache folders."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def paths(self) -> Iterable[str]:
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            relative = Path(folder).relative_to(self.root)
            for name in sorted(files):
                yield (relative / name).as_posix()

    def read_text(self, path: str) -> str | None:
        return _read(self.root / path)


class GitTree:
    """The files of a git working tree: tracked ones plus untracked files git does not ignore.

    Untracked files count because a change under review is often not committed yet.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: list[str] | None = None

    def paths(self) -> Iterable[str]:
        if self._paths is None:
            output = _git(self.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
            self._paths = sorted({p for p in output.split("\0") if p})
        return self._paths

    def read_text(self, path: str) -> str | None:
        return _read(self.root / path)


class GitRevisionTree:
    """The files of one committed revision, read with `git ls-tree` and `git show`."""

    def __init__(self, root: Path, revision: str) -> None:
        self.root = root
        self.revision = revision
        self._paths: list[str] | None = None

    def paths(self) -> Iterable[str]:
        if self._paths is None:
            output = _git(self.root, "ls-tree", "-r", "-z", "--name-only", self.revision)
            self._paths = sorted(p for p in output.split("\0") if p)
        return self._paths

    def read_text(self, path: str) -> str | None:
        result = subprocess.run(
            ["git", "-C", str(self.root), "show", f"{self.revision}:{path}"],
            capture_output=True,
            check=False,
        )
        if result.returncode != 0:
            return None
        try:
            return result.stdout.decode("utf-8")
        except UnicodeDecodeError:
            return None


def _read(file: Path) -> str | None:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _git(root: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise TreeError(
            f"git {' '.join(args[:2])} failed in {root}: {result.stderr.strip()}; "
            "check that the path is a git repository and the revision exists"
        )
    return result.stdout
