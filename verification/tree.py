"""Repository trees that plan building reads: the `Tree` protocol and its adapters (a directory,
a git working tree, a git revision).

Plan building reads the repository only through `Tree`; it never touches the filesystem or
git. A working tree may have been written by untrusted code, so its files are read without
following symlinks and with a size cap (`plumbing.files.read_beneath`), and git is run
through `plumbing.git` with the repository named explicitly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from itertools import islice
from operator import eq
from pathlib import Path
from typing import Protocol

from plumbing.files import UnsafePath, read_beneath, read_many_beneath
from plumbing.git import Git, GitError, discover

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

    def read_many(self, paths: Iterable[str]) -> dict[str, str | None]:
        return _read_many(self.root, paths)


class GitTree:
    """The files of a git working tree: tracked ones plus untracked files git does not ignore.

    Untracked files count because a change under review is often not committed yet.
    """

    def __init__(self, git: Git, *, listing: list[str] | None = None) -> None:
        """``listing``: the paths, when the caller listed them already (each once, in git's
        order)."""
        if git.work_tree is None:
            raise ValueError("GitTree needs a repository with a work tree")
        self.git = git
        self.root = git.work_tree
        self._paths: list[str] | None = listing

    @classmethod
    def discover(cls, path: Path) -> GitTree:
        """The working tree of the repository containing `path` (a user's own checkout)."""
        try:
            return cls(discover(path))
        except GitError as exc:
            raise TreeError(f"{exc}; check that the path is a git repository") from exc

    def paths(self) -> Iterable[str]:
        if self._paths is None:
            listed = _list(self.git, "ls-files", "-z", "--cached", "--others",
                           "--exclude-standard")
            # In git's order, each path once. Only an unmerged path is listed twice (once per
            # stage), its stages next to each other (the index is sorted by path, then stage):
            # comparing neighbours finds one without hashing 100,000 paths.
            if any(map(eq, listed, islice(listed, 1, None))):
                listed = list(dict.fromkeys(listed))
            self._paths = listed
        return self._paths

    def read_text(self, path: str) -> str | None:
        return _read(self.root, path)

    def read_many(self, paths: Iterable[str]) -> dict[str, str | None]:
        """`read_text` for many paths, each folder opened once (`read_many_beneath`)."""
        return _read_many(self.root, paths)


class GitRevisionTree:
    """The files of one committed revision, read from git's object store."""

    def __init__(self, git: Git, revision: str) -> None:
        self.git = git
        self.revision = revision
        self._paths: list[str] | None = None
        self._blobs: dict[str, str] = {}  # path -> blob id, from the same listing
        self._listed_paths: frozenset[str] | None = None

    def paths(self) -> Iterable[str]:
        if self._paths is None:
            # With object ids, so `read_many` asks for blobs by id: by `REV:path`, git would
            # walk (and inflate) every tree on the way again for each file. Path and id are
            # NUL-separated like the entries, so one split parses 100,000 entries.
            try:
                out = self.git("ls-tree", "-r", "-z", "--full-tree",
                               "--format=%(path)%x00%(objectname)", self.revision)
            except GitError:  # git before 2.36 has no --format: names only
                self._paths = _list(self.git, "ls-tree", "-r", "-z", "--name-only",
                                    "--full-tree", self.revision)
                return self._paths
            fields = out.decode(sys.getfilesystemencoding(),
                                sys.getfilesystemencodeerrors()).split("\0")[:-1]
            self._paths = fields[0::2]
            self._blobs = dict(zip(fields[0::2], fields[1::2], strict=True))
        return self._paths

    def read_bytes(self, path: str) -> bytes | None:
        """The raw bytes of `path` at the revision, or None when it is not a file there."""
        if path not in self._listed():
            return None  # planning asks for many files a package may have: no process each
        # A str argument with surrogate escapes reaches git as the original bytes.
        result = self.git.run("cat-file", "blob", f"{self.revision}:{path}", check=False)
        return result.stdout if result.returncode == 0 else None

    def read_text(self, path: str) -> str | None:
        return _text(self.read_bytes(path))

    def _listed(self) -> frozenset[str]:
        if self._listed_paths is None:
            self._listed_paths = frozenset(self.paths())
        return self._listed_paths

    def read_many(self, paths: Iterable[str]) -> dict[str, str | None]:
        """Read many files with one `git cat-file --batch` process (a plan reads every manifest
        of a monorepo: one process per file would cost seconds). A blob over `MAX_READ_BYTES`
        reads as None, like `read_text`, and so does a path that is not a file there."""
        self.paths()
        found: dict[str, str | None] = {path: None for path in paths}
        # By id where the listing gave one; else by name (a name git can take on one line).
        wanted = [(path, self._blobs.get(path) or f"{self.revision}:{path}") for path in found
                  if "\n" not in path and "\r" not in path]
        if not wanted:
            return found
        request = "".join(f"{name}\n" for _, name in wanted).encode("utf-8", "surrogateescape")
        try:
            out = self.git("cat-file", "--batch", input=request)
        except GitError as exc:
            raise TreeError(f"{exc}; check that the repository is intact") from exc
        offset = 0
        for path, _ in wanted:
            end = out.find(b"\n", offset)
            header = out[offset:end].split(b" ")
            offset = end + 1
            missing = header[-1] in (b"missing", b"ambiguous")  # no content follows
            if end == -1 or (not missing and len(header) != 3):
                raise TreeError(f"git cat-file --batch answered {out[:200]!r} in "
                                f"{self.git.git_dir}; check that git works there")
            if missing:
                continue
            kind, size = header[1], int(header[2])
            if kind == b"blob" and size <= MAX_READ_BYTES:
                found[path] = _text(out[offset : offset + size])
            offset += size + 1  # the content and its newline
        return found


def read_texts(tree: Tree, paths: Iterable[str]) -> dict[str, str | None]:
    """The text of each path, read in one batch where the tree can (see `read_many`)."""
    read_many = getattr(tree, "read_many", None)
    if callable(read_many):
        return dict(read_many(paths))
    return {path: tree.read_text(path) for path in paths}


def _text(data: bytes | None) -> str | None:
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


def _read_many(root: Path, paths: Iterable[str]) -> dict[str, str | None]:
    wanted = list(paths)
    try:
        found = read_many_beneath(root, wanted, limit=MAX_READ_BYTES)
    except OSError:  # the folder itself, or a read failing midway: one file at a time
        return {path: _read(root, path) for path in wanted}
    texts: dict[str, str | None] = {}
    for path, data in found.items():
        try:
            texts[path] = None if isinstance(data, UnsafePath) else data.decode("utf-8")
        except UnicodeDecodeError:
            texts[path] = None
    return texts


def _list(git: Git, *args: str) -> list[str]:
    try:
        return git.paths(*args)
    except GitError as exc:
        raise TreeError(
            f"{exc}; check that the path is a git repository and the revision exists"
        ) from exc
