"""Forward migrations keep what an older schema stored."""

from __future__ import annotations

import sqlite3

from runner.ledger import schema
from runner.ledger.records import NewRun
from runner.ledger.sqlite import SqliteStore


def test_a_version_1_ledger_is_migrated_in_place(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE ledger_schema (version INTEGER NOT NULL)")
    version, ddl = schema.MIGRATIONS[0]
    for statement in schema.statements(ddl, SqliteStore.column_types):
        db.execute(statement)
    db.execute("INSERT INTO ledger_schema (version) VALUES (?)", (version,))
    db.execute(
        "INSERT INTO runs (id, repo, title, body, workflow, state, step, attempt, version,"
        " lease_epoch, params, last_seq, created_at, updated_at) VALUES"
        " ('r-old', '/repo', 'kept', '', 'issue', 'queued', 'queued.1', 1, 1, 0, '{}', 0, 1, 1)"
    )
    db.commit()
    db.close()

    store = SqliteStore(path)
    assert store.schema_version() == schema.LATEST
    assert store.get_run("r-old").title == "kept"
    assert [r.id for r in store.wake_due(now=10)] == ["r-old"]  # the new column works
    store.create_run(NewRun(id="r-new", repo="/repo", title="new"))
    assert {r.id for r in store.list_runs()} == {"r-old", "r-new"}
