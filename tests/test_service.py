"""The HTTP edge through Starlette's TestClient, on a real SQLite ledger."""

from __future__ import annotations

from starlette.testclient import TestClient

from app.service import create_app
from runner.ledger.records import NewRun
from runner.ledger.sqlite import SqliteStore


def test_healthz_and_runs(tmp_path):
    store = SqliteStore(tmp_path / "ledger.db")
    store.create_run(NewRun(id="r-old", repo="/r", title="older"), now=1.0)
    store.create_run(NewRun(id="r-new", repo="/r", title="newer"), now=2.0)
    client = TestClient(create_app(store))
    assert client.get("/healthz").text == "ok"
    runs = client.get("/api/runs").json()
    assert [r["run_id"] for r in runs] == ["r-new", "r-old"]
    assert runs[0]["state"] == "queued" and runs[0]["title"] == "newer"
    assert [r["run_id"] for r in client.get("/api/runs?limit=1").json()] == ["r-new"]
    assert client.get("/api/runs?limit=x").status_code == 400
