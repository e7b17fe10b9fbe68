"""Bounded capture of a check's output: the head and the tail kept, the whole hashed.

A check can print gigabytes; evidence needs the first lines (what ran, the first error) and the
last lines (the summary), plus the size and sha256 of everything, so a reader knows what was
left out and can match a full log kept elsewhere.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque

# Default bytes kept from the start and from the end of a check's output.
HEAD_LIMIT = 64 * 1024
TAIL_LIMIT = 192 * 1024
# Bytes of a cap kept for the marker between head and tail.
MARKER_ROOM = 64


class LogCapture:
    """Accumulate output chunks; keep a bounded head and tail; hash and count everything.

    Thread-safe: a reader thread writes while the owner may read the size.
    """

    @classmethod
    def within(cls, cap: int | None) -> LogCapture:
        """A capture whose head, marker and tail fit in ``cap`` bytes (None: the defaults),
        never more than the defaults: the log is evidence, stored in the ledger."""
        if cap is None:
            return cls()
        head = min(HEAD_LIMIT, cap // 4)
        return cls(head_limit=head, tail_limit=min(TAIL_LIMIT, cap - head - MARKER_ROOM))

    def __init__(self, *, head_limit: int = HEAD_LIMIT, tail_limit: int = TAIL_LIMIT) -> None:
        self._head_limit = head_limit
        self._tail_limit = tail_limit
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self._size = 0
        self._digest = hashlib.sha256()
        self._lock = threading.Lock()

    def write(self, chunk: bytes) -> None:
        with self._lock:
            self._digest.update(chunk)
            self._size += len(chunk)
            room = self._head_limit - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            if not chunk:
                return
            self._tail.append(chunk)
            self._tail_size += len(chunk)
            while self._tail_size - len(self._tail[0]) >= self._tail_limit:
                self._tail_size -= len(self._tail.popleft())

    @property
    def size(self) -> int:
        """Bytes written in total."""
        with self._lock:
            return self._size

    @property
    def sha256(self) -> str:
        """Hex sha256 of every byte written."""
        with self._lock:
            return self._digest.hexdigest()

    @property
    def omitted(self) -> int:
        """Bytes left out between the head and the tail."""
        head, tail, size = self._kept()
        return size - len(head) - len(tail)

    def text(self) -> str:
        """The kept head and tail as text, with a marker naming how many bytes were left out."""
        head, tail, size = self._kept()
        omitted = size - len(head) - len(tail)
        if omitted <= 0:
            return (head + tail).decode("utf-8", errors="replace")
        marker = f"\n... {omitted} bytes omitted ...\n"
        return (
            head.decode("utf-8", errors="replace") + marker + tail.decode("utf-8", errors="replace")
        )

    def _kept(self) -> tuple[bytes, bytes, int]:
        """The head, the tail and the size of everything. Where bytes are left out between
        head and tail, both cuts fall between lines (where there is one), so a secret on a line
        is kept whole, for redaction to find, or left out whole."""
        with self._lock:
            tail = b"".join(self._tail)
            if len(tail) > self._tail_limit:
                tail = tail[len(tail) - self._tail_limit :]
            head = bytes(self._head)
            size = self._size
        if size - len(head) - len(tail) <= 0:
            return head, tail, size
        end = head.rfind(b"\n")
        head = head[: end + 1] if end >= 0 else head
        start = tail.find(b"\n")
        tail = tail[start + 1 :] if 0 <= start < len(tail) - 1 else tail
        return head, tail, size
