"""Looking at a tree untrusted code wrote before git does, and removing what git must not see.

Git is not a safe reader of a worktree an agent or a check wrote: a nested ``.git`` (a folder,
or a file pointing elsewhere) makes git read another repository's configuration, which can name
a filter git runs as Ratchet, and its ``HEAD``, which can be a FIFO that blocks git forever;
files under a gitlink (submodule) path are never recorded, so they can be tested but never
published; a FIFO, socket or device is no content at all. ``scan`` finds them with ``lstat``
only (``os.scandir``, never following a symlink, opening no file), walking iteratively so a tree
1,100 folders deep is refused by a depth cap instead of raising ``RecursionError``.

``remove`` deletes a path the same way: iteratively, never following a symlink or reading a
file, whatever its depth (``shutil.rmtree`` recurses once per level).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

# Deeper than any real repository (git itself refuses trees past core.maxTreeDepth, 2048) and
# shallow enough that a walk, a path and git's own recursion stay small.
MAX_DEPTH = 256
# Git reads every ``.gitignore`` and ``.gitattributes`` it walks past into memory whole, ignored
# or not: one of gigabytes would cost that much before any limit on changes applies.
MAX_RULES_FILE_BYTES = 1024 * 1024
_RULES_FILES = frozenset({".gitignore", ".gitattributes"})
# Enough to say what is wrong; a tree of a million FIFOs is not listed in full.
MAX_FINDINGS = 100


@dataclass(frozen=True)
class Finding:
    """A worktree entry git must not see or a step may not leave. ``kind``: ``nested_git``,
    ``under_gitlink``, ``special_file``, ``too_deep``, ``unreadable`` (from ``scan``);
    ``too_large``, ``symlink_out``, ``too_many_changes`` (the worktree's own checks). ``path``
    is relative to the tree (names decoded losslessly, as ``os.fsdecode`` does)."""

    kind: str
    path: str
    detail: str


def scan(root: Path, *, gitlinks: Collection[str] = (), skip: Collection[str] = (".git",),
         max_depth: int = MAX_DEPTH, max_findings: int | None = MAX_FINDINGS) -> list[Finding]:
    """What under ``root`` git must never be shown: a nested ``.git`` anywhere, anything inside
    a ``gitlinks`` folder, a FIFO, socket or device, a folder deeper than ``max_depth`` or one
    that cannot be listed, a ``.gitignore`` or ``.gitattributes`` over ``MAX_RULES_FILE_BYTES``.

    ``skip``: top-level names not looked at (the agent's own ``.git``, which Ratchet never
    reads). At most ``max_findings`` are returned (None: all), sorted by path.
    """
    findings: list[Finding] = []
    links = frozenset(gitlinks)
    pending: list[tuple[str, int]] = [("", 0)]
    while pending and (max_findings is None or len(findings) < max_findings):
        folder, depth = pending.pop()
        try:
            with os.scandir(root / folder if folder else root) as listing:
                entries = list(listing)
        except OSError as exc:
            findings.append(Finding("unreadable", folder or ".", _unreadable(exc)))
            continue
        for entry in entries:
            if not folder and entry.name in skip:
                continue
            path = f"{folder}/{entry.name}" if folder else entry.name
            finding = _look(entry, path, folder in links, depth + 1, max_depth)
            if finding is not None:
                findings.append(finding)
            elif entry.is_dir(follow_symlinks=False):
                pending.append((path, depth + 1))
    return sorted(findings[:max_findings], key=lambda finding: finding.path)


def _look(entry: os.DirEntry[str], path: str, in_gitlink: bool, depth: int,
          max_depth: int) -> Finding | None:
    """The finding for one entry, from its name and ``lstat`` alone; None when it is fine."""
    if entry.name.lower() == ".git":
        return Finding("nested_git", path,
                       "a nested repository (.git), which git would read; no setting allows one")
    if in_gitlink:
        return Finding("under_gitlink", path, "inside a submodule's folder, where git never"
                       " records a file; no setting allows it")
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError as exc:
        return Finding("unreadable", path, _unreadable(exc))
    if stat.S_ISDIR(info.st_mode):
        if depth > max_depth:
            return Finding("too_deep", path, f"folders nested deeper than {max_depth}"
                           " levels; no setting allows that")
        return None
    if stat.S_ISREG(info.st_mode):
        if entry.name in _RULES_FILES and info.st_size > MAX_RULES_FILE_BYTES:
            return Finding("too_large", path, f"{info.st_size} bytes, over the"
                           f" {MAX_RULES_FILE_BYTES}-byte limit of a file git reads whole")
        return None
    if stat.S_ISLNK(info.st_mode):
        return None
    return Finding("special_file", path, "a FIFO, socket or device file; no setting allows one")


def _unreadable(exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return "a path too long to list (folders nested too deep)"
    return f"cannot be listed ({exc.strerror or exc})"


def remove(path: Path) -> None:
    """Delete ``path`` (a file, symlink or folder) without following a symlink or reading a
    file, at any depth; a path already gone is fine.

    Folders are emptied one at a time; each subfolder of a folder below ``path`` is first
    renamed up to ``path`` itself, so every path used stays two names below ``path``.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        return
    pending, moved = [path], 0
    while pending:
        folder = pending.pop()
        with contextlib.suppress(OSError):  # an agent's chmod 000 must not keep it
            os.chmod(folder, 0o700)
        with os.scandir(folder) as listing:
            entries = list(listing)
        children = []
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
            elif folder == path:
                children.append(Path(entry.path))
            else:
                moved += 1
                while os.path.lexists(flat := path / f".ratchet-removed-{moved}"):
                    moved += 1
                os.rename(entry.path, flat)
                children.append(flat)
        if folder == path and children:
            pending.append(folder)  # emptied once its children are gone
        else:
            os.rmdir(folder)
        pending.extend(children)
