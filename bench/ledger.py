"""Durable step completions per second on the SQLite ledger against raw WAL commits.

Baseline, measured in the same run: a single-row ``BEGIN IMMEDIATE`` / ``INSERT`` / ``COMMIT``
loop on a WAL database with ``synchronous=FULL`` (one fsync per commit). A Ratchet step
completion commits the run's state change, a checkpoint, its events and an artifact in one
transaction, so it should cost about one fsync too. Target ratio: at least 0.5.

    .venv/bin/python bench/ledger.py [--steps N] [--rounds R]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from runner.ledger.records import Change, Checkpoint, NewEvent, NewRun
from runner.ledger.sqlite import SqliteStore
from runner.workflow import State

TARGET = 0.5


def raw_commits(path: Path, n: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    start = time.perf_counter()
    for i in range(n):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t (v) VALUES (?)", (f"row {i}",))
        db.execute("COMMIT")
    elapsed = time.perf_counter() - start
    db.close()
    return n / elapsed


def step_completions(path: Path, n: int) -> float:
    store = SqliteStore(path)
    store.create_run(NewRun(id="bench", repo="/bench", title="bench"))
    lease = store.acquire_lease("bench", "bench-worker", ttl=3600)
    assert lease is not None
    run = store.get_run("bench")
    run = store.apply(lease, Change(run.version, State.RESEARCH, "step.0"))
    start = time.perf_counter()
    for i in range(1, n + 1):
        step = f"step.{i}"
        run = store.apply(lease, Change(
            version=run.version, state=State.RESEARCH, step=f"step.{i + 1}",
            events=(NewEvent("STEP_COMPLETED", step=step, attempt=1, data={"i": i}),
                    NewEvent("STEP_STARTED", step=f"step.{i + 1}", attempt=1)),
            checkpoint=Checkpoint("bench", step, 1, {"revision": "0" * 40},
                                  {"tree": "1" * 40, "output": {"sha256": "2" * 64}}),
            artifacts={f"out/{step}.md": f"output of {step}\n".encode()},
        ))
    elapsed = time.perf_counter() - start
    store.close()
    return n / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    raw, ours = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):  # interleaved, so machine noise hits both alike
            raw.append(raw_commits(Path(tmp) / f"raw{r}.db", args.steps))
            ours.append(step_completions(Path(tmp) / f"ledger{r}.db", args.steps))
    raw_rate, our_rate = statistics.median(raw), statistics.median(ours)
    ratio = our_rate / raw_rate
    print(f"raw WAL single-row commits (synchronous=FULL): {raw_rate:8.0f}/s")
    print(f"ratchet durable step completions (SQLite):     {our_rate:8.0f}/s")
    print(f"ratio: {ratio:.2f} (target >= {TARGET}) {'OK' if ratio >= TARGET else 'BELOW TARGET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
