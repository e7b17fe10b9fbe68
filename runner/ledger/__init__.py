"""The ledger: the ``Store`` protocol and its backends, chosen by URL."""

from __future__ import annotations

from pathlib import Path

from runner.ledger.store import Store


def open_store(url: str) -> Store:
    """Open the ledger at ``url``: ``sqlite:///path``, a plain path, or ``postgresql://...``."""
    if url.startswith(("postgresql://", "postgres://")):
        from runner.ledger.postgres import PostgresStore

        return PostgresStore(url)
    if url.startswith("sqlite:///"):
        url = url[len("sqlite:///") - 1 :] if url.startswith("sqlite:////") else url[10:]
    elif "://" in url:
        raise ValueError(
            f"unsupported ledger URL {url!r}: use sqlite:///PATH, a file path, or postgresql://"
        )
    from runner.ledger.sqlite import SqliteStore

    return SqliteStore(Path(url))


__all__ = ["Store", "open_store"]
