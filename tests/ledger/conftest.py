"""Backends under the conformance suite; each test gets an empty ledger of its own."""

from __future__ import annotations

import secrets

import psycopg
import pytest
from psycopg import sql

from runner.ledger.postgres import PostgresStore
from runner.ledger.sqlite import SqliteStore

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.services)]


def with_query(url: str, **params: str) -> str:
    """``url`` with ``params`` appended to its query string."""
    extra = "&".join(f"{key}={value}" for key, value in params.items())
    return f"{url}{'&' if '?' in url else '?'}{extra}"


@pytest.fixture
def postgres_schema(postgres_url):
    """A fresh, empty schema (random name) in the test database, dropped afterwards."""
    schema = f"ledger_test_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    yield schema
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    if request.param == "sqlite":
        backend = SqliteStore(tmp_path / "ledger.db")
    elif request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        schema = request.getfixturevalue("postgres_schema")
        backend = PostgresStore(with_query(url, schema=schema))
    else:  # pragma: no cover - filled in as backends land
        raise AssertionError(request.param)
    yield backend
    backend.close()
