"""``ratchet doctor`` against the real PostgreSQL and Redis (and closed ports for when they are
down), and ``ratchet worker`` refusing to start when a check at start fails fatally."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from tests.services import free_port
from tests.test_doctor import ROOT, doctor, environ


def test_a_reachable_postgresql_and_redis_hold(tmp_path: Path, postgres_url: str,
                                               redis_url: str) -> None:
    done = doctor(tmp_path, {"RATCHET_SANDBOX": "none", "RATCHET_STORE_URL": postgres_url,
                             "RATCHET_BROKER_URL": redis_url})
    assert done.returncode == 0, done.stdout + done.stderr
    redis = urlsplit(redis_url)
    assert done.lines["ledger"].startswith(f"ok PostgreSQL {postgres_url} is writable (schema"
                                           " version ")
    assert done.lines["broker"] == f"ok redis://{redis.hostname}:{redis.port} answers"


def test_an_unreachable_postgresql_fails(tmp_path: Path, postgres_url: str) -> None:
    closed = free_port()
    url = f"postgresql://postgres:s3cret-pw@127.0.0.1:{closed}/test"
    done = doctor(tmp_path, {"RATCHET_SANDBOX": "none", "RATCHET_STORE_URL": url})
    assert done.returncode == 1
    ledger = done.lines["ledger"]
    assert ledger.startswith(f"FAIL PostgreSQL cannot be used: PostgreSQL ledger"
                             f" postgresql://postgres:***@127.0.0.1:{closed}/test is"
                             " unreachable: ")
    assert ledger.endswith("; start the server or fix the ledger URL")
    assert "s3cret-pw" not in done.stdout + done.stderr


def test_a_worker_whose_agent_cannot_start_does_not_start(tmp_path: Path,
                                                          redis_url: str) -> None:
    env = environ(tmp_path, {"RATCHET_AGENT": "gemini", "RATCHET_BROKER_URL": redis_url,
                             "RATCHET_QUEUE": f"doctor-{os.getpid()}"})
    done = subprocess.run([sys.executable, "-m", "app.cli", "worker"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert ("ERROR app.doctor.startup: check FAIL  agent: 'gemini' is not on the agents' PATH"
            in done.stderr)
    assert ("ERROR app.doctor.startup: check FAIL  credentials: set GEMINI_API_KEY"
            in done.stderr)
    assert "ratchet worker is not starting: a check above failed" in done.stderr
    assert "webhook-secret" not in done.stderr and "public-url" not in done.stderr


def test_a_reachable_rabbitmq_holds_and_a_closed_port_fails(tmp_path: Path,
                                                            rabbitmq_url: str) -> None:
    done = doctor(tmp_path, {"RATCHET_SANDBOX": "none", "RATCHET_BROKER_URL": rabbitmq_url})
    assert done.returncode == 0, done.stdout + done.stderr
    rabbit = urlsplit(rabbitmq_url)
    assert done.lines["broker"] == f"ok amqp://{rabbit.hostname}:{rabbit.port} answers"
    closed = free_port()
    down = doctor(tmp_path, {"RATCHET_SANDBOX": "none",
                             "RATCHET_BROKER_URL": f"amqp://guest:s3cret-mq@127.0.0.1:{closed}/"})
    assert down.returncode == 1
    assert down.lines["broker"].startswith(f"FAIL amqp://127.0.0.1:{closed} does not answer (")
    assert "s3cret-mq" not in down.stdout + down.stderr
