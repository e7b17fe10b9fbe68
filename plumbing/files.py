"""Reading files that untrusted code could have planted, and writing files atomically.

An agent or a check controls its worktree and its output folder: any component of a path there
may be a symlink to a host file, a FIFO that blocks a reader forever, or a file of gigabytes.
``read_beneath`` opens a path one component at a time relative to a trusted folder, never
following a symlink (``O_NOFOLLOW`` on every component), accepts only a regular file, and reads
at most a cap. ``write_atomic`` is the one write-then-rename used for every durable file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

# Flags for each component: no symlink, no controlling tty, no blocking on a FIFO.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafePath(Exception):
    """A path could not be read safely: it leaves its folder, is a symlink or not a regular
    file, is missing, or is larger than the cap. ``reason`` is a short word for evidence."""

    def __init__(self, path: str, reason: str, detail: str, *, size: int | None = None) -> None:
        self.path = path
        self.reason = reason
        self.size = size  # bytes, when the file was refused for its size
        super().__init__(detail)


def read_beneath(root: Path, relative: str | PurePosixPath, *, limit: int) -> bytes:
    """The bytes of ``root/relative``, read without following any symlink below ``root``.

    ``root`` itself is trusted (the caller made it). Raises ``UnsafePath`` when a component
    is a symlink, the path leaves ``root`` (absolute, ``..``), the final file is not a regular
    file, it does not exist (reason ``missing``), or it holds more than ``limit`` bytes.
    """
    name = str(relative)
    parts = _parts(root, name)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        shown = "/".join(parts[: index + 1])
        fd = _step(fd, part, shown, last=last)  # closes the parent, even when it raises
    return _read_open(fd, name, limit)


def read_many_beneath(
    root: Path, paths: Iterable[str], *, limit: int
) -> dict[str, bytes | UnsafePath]:
    """``read_beneath`` for many paths, each folder opened once.

    Planning reads every manifest of a monorepo (1,500 package.json files under one
    `packages/`): the paths are read in sorted order, keeping the chain of open folders shared
    with the previous path, so opening costs a syscall per folder and per file instead of one
    per component of every path. Each path maps to its bytes or to the ``UnsafePath`` that
    ``read_beneath`` would raise. At most one folder chain is open at a time.
    """
    found: dict[str, bytes | UnsafePath] = {}
    chain: list[tuple[str, int]] = []  # the open folders below root, outermost first
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in sorted(set(paths), key=lambda path: path.split("/")):  # siblings together
            try:
                parts = _parts(root, name)
                folders = parts[:-1]
                shared = 0
                most = min(len(chain), len(folders))
                while shared < most and chain[shared][0] == folders[shared]:
                    shared += 1
                while len(chain) > shared:
                    os.close(chain.pop()[1])
                for index in range(shared, len(folders)):
                    parent = chain[-1][1] if chain else root_fd
                    shown = "/".join(parts[: index + 1])
                    chain.append((folders[index], _open_at(parent, folders[index], shown,
                                                           last=False)))
                parent = chain[-1][1] if chain else root_fd
                found[name] = _read_open(_open_at(parent, parts[-1], name, last=True), name, limit)
            except UnsafePath as exc:
                found[name] = exc
    finally:
        for _, fd in chain:
            os.close(fd)
        os.close(root_fd)
    return found


def _parts(root: Path, name: str) -> tuple[str, ...]:
    """The components of a relative path, as ``PurePosixPath(name).parts`` (empty and ``.``
    components dropped), split by hand: planning reads thousands of paths."""
    parts = tuple(part for part in name.split("/") if part and part != ".")
    if not parts or name.startswith("/") or ".." in parts:
        raise UnsafePath(name, "outside", f"{name} must be a relative path inside {root}")
    return parts


def _read_open(fd: int, name: str, limit: int) -> bytes:
    """Read the regular file open at ``fd`` (closed here), at most ``limit`` bytes."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(name, "not_regular", f"{name} is not a regular file")
        if info.st_size > limit:
            raise UnsafePath(name, "too_large",
                             f"{name} holds {info.st_size} bytes; the limit is {limit}",
                             size=info.st_size)
        chunks = []
        remaining = limit + 1
        while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew while we read
            raise UnsafePath(name, "too_large", f"{name} holds more than {limit} bytes")
        return data
    finally:
        os.close(fd)


def _step(parent: int, part: str, shown: str, *, last: bool) -> int:
    """Open ``part`` relative to the directory ``parent`` (closed here) without following it."""
    try:
        return _open_at(parent, part, shown, last=last)
    finally:
        os.close(parent)


def _open_at(parent: int, part: str, shown: str, *, last: bool) -> int:
    """Open ``part`` relative to the directory ``parent`` without following it."""
    try:
        return os.open(part, _OPEN_FLAGS | (0 if last else os.O_DIRECTORY), dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise UnsafePath(shown, "missing", f"{shown} does not exist") from exc
        if exc.errno in {errno.ELOOP, errno.ENOTDIR}:
            what = "a symlink" if last else "a symlink or not a folder"
            raise UnsafePath(shown, "symlink", f"{shown} is {what}") from exc
        raise UnsafePath(shown, "unreadable", f"{shown}: {exc.strerror or exc}") from exc


def write_atomic(path: Path, data: bytes, *, durable: bool = True, mode: int = 0o666,
                 overwrite: bool = True) -> None:
    """Write-then-rename: a reader sees the old file or the whole new one. ``durable`` syncs
    the data first, so a power loss cannot leave an empty file under the new name either
    (projections that are rewritten from the ledger anyway skip it). The file is created with
    ``mode`` (less the umask) from its first byte; without ``overwrite`` it is linked into
    place, and an existing ``path`` is ``FileExistsError`` with nothing changed."""
    import secrets  # here: reading files, which planning does, never needs it

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def printable_path(path: str) -> str:
    """A path as text that can be stored and shown: bytes that are not UTF-8 (carried as
    surrogate escapes by ``os.fsdecode``) become ``\\xNN`` escapes."""
    if path.isascii():  # most paths: nothing to escape, and no copy made (plans name thousands)
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
