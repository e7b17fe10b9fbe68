"""Outages of the ledger and of the broker mid-run, on throwaway servers (never the machine's).

Workers back off without a crash loop and finish the run once the service is back: nothing
lost, nothing done twice.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter

import pytest

from tests.distributed.cluster import cluster
from tests.distributed.test_workers import AGENT_STEPS, assert_finished_once
from tests.services import throwaway_postgres, throwaway_redis

pytestmark = pytest.mark.slow
OUTAGE_SECONDS = 5
# Longer than the PostgreSQL pool's wait for a connection (5 s), so calls fail, not just block.
LONG_OUTAGE_SECONDS = 9


def wait_until_state_leaves(group, run_id: str, states: set[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while group.ratchet.status(run_id)["state"] in states:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_ledger_outage_mid_run(tmp_path, redis_url):
    with throwaway_postgres(tmp_path) as pg, cluster(
        tmp_path, pg.url, redis_url, env={"AGENT_SLEEP": "1"}
    ) as group:
        workers = [group.start_worker(), group.start_worker()]
        run_id = group.create_detached()
        wait_until_state_leaves(group, run_id, {"queued"})  # research is running
        pg.stop()
        time.sleep(OUTAGE_SECONDS)
        assert all(w.poll() is None for w in workers), "a worker died during the outage"
        pg.start()
        group.wait_for_state(run_id, {"awaiting_approval"})
        assert group.ratchet.approve(run_id, "--detach").returncode == 0
        group.wait_for_state(run_id, {"done"})
        assert all(w.poll() is None for w in workers)
        assert_finished_once(group, run_id)
        acquired = Counter(e["type"] for e in group.ratchet.events(run_id))["LEASE_ACQUIRED"]
        assert acquired < 12, f"{acquired} lease acquisitions: a crash loop"


def test_broker_outage_mid_run(tmp_path, postgres_url):
    with throwaway_redis(tmp_path) as broker, cluster(
        tmp_path, postgres_url, broker.url, env={"AGENT_SLEEP": "1"}
    ) as group:
        workers = [group.start_worker(), group.start_worker()]
        run_id = group.create_detached()
        wait_until_state_leaves(group, run_id, {"queued"})
        broker.stop()  # mid-research: every queued message is lost with it
        time.sleep(OUTAGE_SECONDS)
        assert all(w.poll() is None for w in workers), "a worker died during the outage"
        broker.start()
        group.wait_for_state(run_id, {"awaiting_approval"})

        broker.stop()  # the approval's wake-up message cannot even be sent
        approved = group.ratchet.approve(run_id, "--detach")
        assert approved.returncode == 0
        assert "broker is unreachable" in approved.stdout + approved.stderr
        time.sleep(OUTAGE_SECONDS)
        status = group.ratchet.status(run_id)  # recorded in the inbox, answered once woken
        assert status["state"] == "awaiting_approval"
        assert [s["kind"] for s in status["pending_signals"]] == ["approve"]
        broker.start()
        group.wait_for_state(run_id, {"done"})
        assert all(w.poll() is None for w in workers)
        assert_finished_once(group, run_id)
        assert Counter(group.ratchet.agent_runs()) == Counter(AGENT_STEPS)


def test_foreground_run_rides_out_a_ledger_outage(tmp_path):
    from tests.e2e.harness import Ratchet, make_target_repo

    with throwaway_postgres(tmp_path) as pg:
        # A long lease: waiting out our own lease after the outage would take 600 s, far past
        # the 120 s this test waits for the run (no wall time measured: a loaded machine
        # stretches the real work, never to 600 s).
        ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"),
                          lease_seconds=600)
        ratchet.env.update({"RATCHET_STORE_URL": pg.url, "AGENT_SLEEP": "3"})
        foreground = ratchet.start("run", "--repo", str(ratchet.repo), "--title", "Add calc")
        time.sleep(2)  # research's agent is running; its commit falls into the outage
        pg.stop()
        time.sleep(LONG_OUTAGE_SECONDS)
        pg.start()
        try:
            out, err = foreground.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            foreground.kill()
            raise AssertionError("waited out its own lease instead of releasing it") from None
        assert foreground.returncode == 0, err
        assert "ledger unavailable, retrying" in err  # the outage hit a step's commit
        assert "awaiting_approval" in out
        assert Counter(ratchet.agent_runs()) == Counter({"research.1": 1, "specify.1": 1})
