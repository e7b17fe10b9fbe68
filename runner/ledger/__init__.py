"""The ledger: the ``Store`` protocol and its backends, chosen by URL."""

from __future__ import annotations

from pathlib import Path

from runner.ledger.store import Store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def sqlite_path(url: str) -> Path | None:
    """The database file an SQLite ledger URL names; None for PostgreSQL.

    Raises ``ValueError`` naming the URL when its scheme is neither.
    """
    if url.startswith(POSTGRES_SCHEMES):
        return None
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") - 1 :] if url.startswith("sqlite:////") else url[10:])
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise ValueError(
            f"unsupported ledger URL scheme {scheme!r}: use sqlite:///PATH, a file path, or "
            "postgresql://USER@HOST/DB"
        )
    return Path(url)


def open_store(url: str) -> Store:
    """Open the ledger at ``url``: ``sqlite:///path``, a plain path, or ``postgresql://...``."""
    path = sqlite_path(url)
    if path is None:
        from runner.ledger.postgres import PostgresStore

        return PostgresStore(url)
    from runner.ledger.sqlite import SqliteStore

    return SqliteStore(path)


__all__ = ["Store", "open_store", "sqlite_path"]
