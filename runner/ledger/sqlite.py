"""The embedded ledger: SQLite in WAL mode, ``synchronous=FULL``, ``BEGIN IMMEDIATE`` writes.

One connection per thread (the engine's heartbeat runs in its own thread). Threads of one
process take turns on a mutex per database file before they write: SQLite's busy handler
sleeps in growing steps (up to 100 ms) and wakes long after the lock is free, which made the
webhook's p99 wait tens of milliseconds behind writes that hold the lock for a few. Another
process that finds the database locked waits up to ``busy_timeout`` and then reports
``LedgerUnavailable``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from runner.errors import LedgerError, LedgerUnavailable
from runner.ledger.sql import SqlStore

BUSY_TIMEOUT_MS = 30_000  # a writer waits this long for another writer before giving up

_WRITERS: dict[Path, threading.RLock] = {}  # one per database file in this process
_WRITERS_LOCK = threading.Lock()


def _writer_for(path: Path) -> threading.RLock:
    with _WRITERS_LOCK:
        return _WRITERS.setdefault(path.resolve(), threading.RLock())


class SqliteStore(SqlStore):
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._writer_lock = _writer_for(self.path)
        self.migrate()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # One connection per thread; check_same_thread is off only so close() may run anywhere.
            conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                check_same_thread=False,
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        yield conn

    def _writer(self) -> threading.RLock:
        return self._writer_lock

    def _begin_write(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")

    def _translate_error(self, exc: Exception) -> Exception | None:
        if isinstance(exc, sqlite3.OperationalError):
            text = str(exc)
            if "locked" in text or "busy" in text or "unable to open" in text:
                return LedgerUnavailable(f"SQLite ledger {self.path}: {text}; retry shortly")
            return LedgerError(f"SQLite ledger {self.path}: {text}")
        if isinstance(exc, sqlite3.DatabaseError):
            return LedgerError(f"SQLite ledger {self.path}: {exc}")
        return None

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
