"""Repository trees that plan building reads: the `Tree` protocol and its adapters (a directory,
a git working tree, a git revision).

Plan building reads the repository only through `Tree`; it never touches the filesystem or
git. A working tree may have been written by untrusted code, so its files are read without
following symlinks and with a size cap (`verification.files.read_beneath`), and git is run
through `verification.git` with the repository named explicitly.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from verification.files import UnsafePath, read_beneath
from verification.git import Git, GitError, discover

# Folders that hold tools' caches or installed dependencies, never a workspace of the project.
SKIPPED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
# Largest file plan building reads (manifests and config); a larger one reads as absent.
MAX_READ_BYTES = 4 << 20


class Tree(Protocol):
    """A read-only view of repository files, with posix paths relative to the repo root."""

    def paths(self) -> Iterable[str]: ...

    def read_text(self, path: str) -> str | None: ...


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
        return _read(self.root, path)


class GitTree:
    """The files of a git working tree: tracked ones plus untracked files git does not ignore.

    Untracked files count because a change under review is often not committed yet.
    """

    def __init__(self, git: Git) -> None:
        if git.work_tree is None:
            raise ValueError("GitTree needs a repository with a work tree")
        self.git = git
        self.root = git.work_tree
        self._paths: list[str] | None = None

    @classmethod
    def discover(cls, path: Path) -> GitTree:
        """The working tree of the repository containing `path` (a user's own checkout)."""
        try:
            return cls(discover(path))
        except GitError as exc:
            raise TreeError(f"{exc}; check that the path is a git repository") from exc

    def paths(self) -> Iterable[str]:
        if self._paths is None:
            self._paths = sorted(set(_list(
                self.git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"
            )))
        return self._paths

    def read_text(self, path: str) -> str | None:
        return _read(self.root, path)


class GitRevisionTree:
    """The files of one committed revision, read from git's object store."""

    def __init__(self, git: Git, revision: str) -> None:
        self.git = git
        self.revision = revision
        self._paths: list[str] | None = None

    def paths(self) -> Iterable[str]:
        if self._paths is None:
            self._paths = sorted(_list(self.git, "ls-tree", "-r", "-z", "--name-only",
                                       self.revision))
        return self._paths

    def read_bytes(self, path: str) -> bytes | None:
        """The raw bytes of `path` at the revision, or None when it is not a file there."""
        # A str argument with surrogate escapes reaches git as the original bytes.
        result = self.git.run("cat-file", "blob", f"{self.revision}:{path}", check=False)
        return result.stdout if result.returncode == 0 else None

    def read_text(self, path: str) -> str | None:
        data = self.read_bytes(path)
        if data is None or len(data) > MAX_READ_BYTES:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None


def _read(root: Path, path: str) -> str | None:
    try:
        return read_beneath(root, path, limit=MAX_READ_BYTES).decode("utf-8")
    except (UnsafePath, OSError, UnicodeDecodeError):
        return None


def _list(git: Git, *args: str) -> list[str]:
    try:
        return git.paths(*args)
    except GitError as exc:
        raise TreeError(
            f"{exc}; check that the path is a git repository and the revision exists"
        ) from exc
