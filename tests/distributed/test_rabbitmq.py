"""The same delivery over RabbitMQ (`amqp://`), with the embedded SQLite ledger."""

from __future__ import annotations

import secrets
import time
from collections import Counter

import pika
import pytest

from tests.e2e.harness import Ratchet, make_target_repo

pytestmark = pytest.mark.slow


def test_a_detached_run_finishes_through_rabbitmq(tmp_path, rabbitmq_url):
    queue = f"q{secrets.token_hex(6)}"
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    ratchet.env.update({"RATCHET_BROKER_URL": rabbitmq_url, "RATCHET_QUEUE": queue,
                        "RATCHET_REAP_SECONDS": "0.5"})
    worker = ratchet.start("worker", "--threads", "2")
    try:
        created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--detach")
        assert created.returncode == 0, created.stderr
        run_id = ratchet.run_id()
        for target in ("awaiting_approval", "done"):
            deadline = time.monotonic() + 60
            while ratchet.status(run_id)["state"] != target:
                assert time.monotonic() < deadline, ratchet.status(run_id)
                time.sleep(0.2)
            if target == "awaiting_approval":
                assert ratchet.approve(run_id, "--detach").returncode == 0
        assert Counter(ratchet.agent_runs()) == Counter(
            ["research.1", "specify.1", "implement.1", "repair.1"])
    finally:
        worker.terminate()
        worker.communicate(timeout=60)
        with pika.BlockingConnection(pika.URLParameters(rabbitmq_url)) as connection:
            channel = connection.channel()
            for name in (queue, f"{queue}.DQ", f"{queue}.XQ"):
                channel.queue_delete(name)
