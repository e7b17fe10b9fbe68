"""A log file with a cap on disk: an agent printing a gigabyte leaves at most the cap behind.

Output is written through to the file until it would pass the cap; from then on the file keeps
its head (at most the first quarter of the cap: what ran, the first error) and a bounded tail is
held in memory (the last bytes: a CLI's summary and usage totals come last), written after a
marker that names how many bytes were left out when the log is closed. Neither the disk nor the
memory ever holds more than the cap. Both cuts fall between lines where there is one, so a
secret on a line is kept whole, for redaction to find, or left out whole.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path
from typing import IO

# Smallest cap: room for a head, the marker and a tail worth reading.
MIN_LOG_BYTES = 4096
# Bytes of the cap kept for the marker (it names sizes; a longer one shortens the tail).
MARKER_ROOM = 256
# What one read of the output pipe takes at most.
CHUNK_BYTES = 65536


class CappedLog:
    """Write-through log file of at most ``cap`` bytes; thread-safe (a pump thread writes)."""

    def __init__(self, path: Path, cap: int, *, setting: str = "RATCHET_MAX_LOG_BYTES") -> None:
        if cap < MIN_LOG_BYTES:
            raise ValueError(f"a log cap of {cap} bytes is below the minimum {MIN_LOG_BYTES}")
        self.path = path
        self.cap = cap
        self.setting = setting  # named in the marker: where the cap comes from
        self._head_limit = cap // 4
        self._head = 0  # bytes of the head kept, once the cap is passed
        self._tail_limit = cap - self._head_limit - MARKER_ROOM
        self._fp: IO[bytes] | None = path.open("w+b", buffering=0)
        self._written = 0  # bytes in the file
        self._tail: deque[bytes] | None = None  # set once the cap is passed
        self._tail_size = 0
        self._size = 0
        self._omitted: int | None = None  # known once closed
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    @property
    def size(self) -> int:
        """Bytes written in total, kept or not."""
        with self._lock:
            return self._size

    @property
    def omitted(self) -> int:
        """Bytes left out of the file so far (0 while everything fits)."""
        with self._lock:
            if self._omitted is not None:
                return self._omitted
            if self._tail is None:
                return 0
            return self._size - self._head - self._tail_size

    def write(self, chunk: bytes) -> None:
        """Append ``chunk``; after ``close`` (an orphan still printing) it is dropped."""
        with self._lock:
            if self._fp is None or not chunk:
                return
            self._size += len(chunk)
            if self._tail is None and self._written + len(chunk) <= self.cap:
                self._fp.write(chunk)
                self._written += len(chunk)
                return
            if self._tail is None:
                self._start_tail()
            assert self._tail is not None
            self._tail.append(chunk)
            self._tail_size += len(chunk)
            while self._tail_size > self._tail_limit:
                first = self._tail.popleft()
                extra = self._tail_size - self._tail_limit
                if len(first) > extra:
                    self._tail.appendleft(first[extra:])
                    self._tail_size -= extra
                else:
                    self._tail_size -= len(first)

    def _start_tail(self) -> None:
        """The cap is passed: the file keeps its head, up to its last whole line; what
        followed it starts the tail."""
        assert self._fp is not None
        self._fp.seek(0)
        kept = self._fp.read()
        end = kept.rfind(b"\n", 0, self._head_limit)
        self._head = end + 1 if end >= 0 else self._head_limit
        after_head = kept[self._head:]
        self._fp.truncate(self._head)
        self._fp.seek(self._head)
        self._written = self._head
        self._tail = deque([after_head] if after_head else [])
        self._tail_size = len(after_head)

    def close(self) -> None:
        """Write the marker and the tail (when the cap was passed) and close the file."""
        with self._lock:
            if self._fp is None:
                return
            if self._tail is not None:
                tail = b"".join(self._tail)
                marker = self._marker(self._size - self._head - len(tail))
                while (excess := self._head + len(marker) + len(tail) - self.cap) > 0:
                    tail = tail[excess:]  # a long marker: the tail gives way
                    marker = self._marker(self._size - self._head - len(tail))
                start = tail.find(b"\n")
                if self._size - self._head > len(tail) and 0 <= start < len(tail) - 1:
                    tail = tail[start + 1:]  # it starts inside a line: from the next one
                self._omitted = self._size - self._head - len(tail)
                self._fp.write(self._marker(self._omitted) + tail)
            self._fp.close()
            self._fp = None

    def _marker(self, omitted: int) -> bytes:
        return (f"\n... ratchet: {omitted} of {self._size} bytes omitted here (the log is capped"
                f" at {self.cap} bytes by {self.setting}) ...\n").encode()

    def follow(self, stream: IO[bytes]) -> None:
        """Copy ``stream`` (an output pipe) into the log on a thread until the pipe ends."""
        self._reader = threading.Thread(target=self._pump, args=(stream,), daemon=True,
                                        name=f"log {self.path.name}")
        self._reader.start()

    def finish(self, drain: float) -> None:
        """Wait up to ``drain`` seconds for the pipe to end, then close the log. An orphan
        that still holds the pipe keeps its thread, and what it prints is dropped."""
        if self._reader is not None:
            self._reader.join(timeout=drain)
        self.close()

    def _pump(self, stream: IO[bytes]) -> None:
        try:
            while chunk := os.read(stream.fileno(), CHUNK_BYTES):
                self.write(chunk)
        except (OSError, ValueError):
            pass  # the pipe was closed
        finally:
            stream.close()
