"""A Ratchet cluster for tests: workers as real processes on Redis and PostgreSQL.

Each cluster has its own PostgreSQL schema, its own Dramatiq namespace and queue on Redis, and
its own RATCHET_HOME, so clusters of parallel tests never see each other's runs or messages.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

import psycopg
import redis

from app.settings import Settings
from app.worker import enqueue_run
from tests.e2e.harness import Ratchet, make_target_repo


def with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"schema": schema})) if q)
    return urlunsplit(parts._replace(query=query))


@dataclass
class Cluster:
    ratchet: Ratchet
    store_url: str
    broker_url: str
    queue: str
    workers: list[subprocess.Popen[str]] = field(default_factory=list)

    def start_worker(self, *, threads: int = 2, extra: dict[str, str] | None = None
                     ) -> subprocess.Popen[str]:
        worker = self.ratchet.start("worker", "--threads", str(threads), extra=extra)
        self.workers.append(worker)
        return worker

    def settings(self) -> Settings:
        return Settings(home=self.ratchet.home, store_url=self.store_url,
                        broker_url=self.broker_url, queue=self.queue)

    def enqueue(self, run_id: str, times: int = 1) -> None:
        for _ in range(times):
            enqueue_run(self.settings(), run_id)

    def create_detached(self, title: str = "Add calc") -> str:
        result = self.ratchet("run", "--repo", str(self.ratchet.repo), "--title", title,
                              "--detach", "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.splitlines()[-1])["run_id"]

    def wait_for_state(self, run_id: str, states: set[str], timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            status = self.ratchet.status(run_id)
            if status["state"] in states:
                return status
            assert status["state"] not in {"failed", "needs_human"}, status
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id} stuck: {status}\n{self.worker_logs()}")
            time.sleep(0.2)

    def worker_logs(self) -> str:
        return "\n".join(f"worker {w.pid} exit={w.poll()}" for w in self.workers)

    def stop(self) -> None:
        for worker in self.workers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.communicate()


@contextlib.contextmanager
def cluster(tmp_path: Path, postgres_url: str, redis_url: str, *, lease_seconds: float = 2.0,
            reap_seconds: float = 0.5, env: dict[str, str] | None = None) -> Iterator[Cluster]:
    schema = f"cluster_{secrets.token_hex(6)}"
    queue = f"q{secrets.token_hex(6)}"
    store_url = with_schema(postgres_url, schema)
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"),
                      lease_seconds=lease_seconds)
    ratchet.env.update({
        "RATCHET_STORE_URL": store_url, "RATCHET_BROKER_URL": redis_url,
        "RATCHET_QUEUE": queue, "RATCHET_REAP_SECONDS": str(reap_seconds),
        "RATCHET_SHUTDOWN_SECONDS": "30", **(env or {}),
    })
    group = Cluster(ratchet, store_url, redis_url, queue)
    try:
        yield group
    finally:
        group.stop()
        with contextlib.suppress(redis.ConnectionError):  # a broker-outage test's server is gone
            client = redis.Redis.from_url(redis_url)
            keys = list(client.scan_iter(f"{queue}:*"))
            if keys:
                client.delete(*keys)
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
