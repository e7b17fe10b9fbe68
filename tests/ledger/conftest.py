"""Backends under the conformance suite; each test gets an empty ledger of its own."""

from __future__ import annotations

import pytest

from runner.ledger.sqlite import SqliteStore

BACKENDS = ["sqlite"]


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    if request.param == "sqlite":
        backend = SqliteStore(tmp_path / "ledger.db")
    else:  # pragma: no cover - filled in as backends land
        raise AssertionError(request.param)
    yield backend
    backend.close()
