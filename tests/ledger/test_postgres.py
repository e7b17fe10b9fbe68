"""PostgreSQL backend specifics: outages, recovery, URLs; the rules are in test_conformance."""

from __future__ import annotations

import secrets
import socket
import time
from contextlib import ExitStack

import psycopg
import pytest

from runner.errors import LedgerUnavailable
from runner.ledger import open_store
from runner.ledger import schema as schema_module
from runner.ledger.postgres import PostgresStore, redact
from runner.ledger.records import NewEvent, NewRun


def with_query(url: str, **params: str) -> str:
    extra = "&".join(f"{key}={value}" for key, value in params.items())
    return f"{url}{'&' if '?' in url else '?'}{extra}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _backends(admin: psycopg.Connection, app: str) -> int:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app,)
    ).fetchone()
    return row[0]


def test_store_recovers_after_its_connections_are_killed(postgres_url, postgres_schema):
    app = f"ratchet-test-{secrets.token_hex(4)}"
    store = PostgresStore(with_query(postgres_url, schema=postgres_schema, application_name=app))
    try:
        store.create_run(NewRun(id="r1", repo="x", title="t"))
        lease = store.acquire_lease("r1", "A", ttl=60)
        # Grow the pool to several idle connections, all of which will be dead.
        with ExitStack() as held:
            for _ in range(3):
                held.enter_context(store._connection())
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            assert _backends(admin, app) >= 3
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s",
                (app,),
            )
            deadline = time.monotonic() + 10
            while _backends(admin, app) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _backends(admin, app) == 0

        failures = 0
        try:
            store.get_run("r1")
        except LedgerUnavailable as exc:
            failures += 1
            print("first call after the kill:", exc)
            assert "127.0.0.1" in str(exc) or "localhost" in str(exc)
        # At most that one call fails: every later call, reads and writes, succeeds.
        for i in range(5):
            store.append(lease, events=[NewEvent("AFTER_KILL", data={"i": i})])
            assert store.get_run("r1").lease_owner == "A"
        assert failures <= 1
        assert [e.type for e in store.events("r1")][-5:] == ["AFTER_KILL"] * 5
    finally:
        store.close()


def test_unreachable_server_names_the_host_but_not_the_password():
    port = _free_port()
    url = f"postgresql://ratchet:hunter2@127.0.0.1:{port}/ledger?schema=x"
    with pytest.raises(LedgerUnavailable) as info:
        PostgresStore(url)
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "hunter2" not in message
    assert "fix the ledger URL" in message  # the command line names the setting


def test_redact_hides_passwords_in_urls_and_conninfo():
    assert redact("postgresql://u:s3cr%40t@h:5432/db?schema=a") == (
        "postgresql://u:***@h:5432/db?schema=a"
    )
    assert redact("postgresql://h/db?user=u&password=s3cret&sslmode=require") == (
        "postgresql://h/db?user=u&password=***&sslmode=require"
    )
    assert redact("host=h password='a b' dbname=d") == "host=h password=*** dbname=d"
    assert redact("postgresql://u@h/db") == "postgresql://u@h/db"


def test_open_store_selects_postgres_and_creates_a_missing_schema(postgres_url):
    schema = f"ledger_test_{secrets.token_hex(6)}"
    store = open_store(with_query(postgres_url, schema=schema))
    try:
        assert isinstance(store, PostgresStore) and store.schema_version() == schema_module.LATEST
        store.create_run(NewRun(id="r1", repo="x", title="t"))
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            row = admin.execute(
                "SELECT count(*) FROM information_schema.tables"
                " WHERE table_schema = %s AND table_name = 'runs'",
                (schema,),
            ).fetchone()
            assert row[0] == 1
    finally:
        store.close()
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_schema_name_must_be_a_plain_identifier(postgres_url):
    with pytest.raises(ValueError, match="plain identifier"):
        PostgresStore(with_query(postgres_url, schema='x";DROP'))
