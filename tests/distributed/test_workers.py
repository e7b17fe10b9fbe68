"""Workers on real Redis and PostgreSQL: takeover after SIGKILL, duplicates, lost messages."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from tests.distributed.cluster import cluster
from tests.e2e.harness import ancestor_among, processes_with_env
from tests.gitrepo import git

pytestmark = pytest.mark.slow
AGENT_STEPS = ["research.1", "specify.1", "implement.1", "repair.1"]
TAKEOVER = 30.0  # seconds: a reaper takes over in about 2.5, a broker redelivers after 60


def wait_for_takeover(group, run_id: str, *, timeout: float) -> dict:
    """The LEASE_ACQUIRED that followed the run's LEASE_EXPIRED, once there is one."""
    deadline = time.monotonic() + timeout
    while True:
        events = group.ratchet.events(run_id)
        expired = [e["seq"] for e in events if e["type"] == "LEASE_EXPIRED"]
        taken = [e for e in events if e["type"] == "LEASE_ACQUIRED" and expired
                 and e["seq"] > expired[0]]
        if taken:
            return taken[0]
        assert time.monotonic() < deadline, f"nobody took {run_id} over: {events[-5:]}"
        time.sleep(0.2)


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def assert_finished_once(group, run_id: str) -> None:
    ratchet = group.ratchet
    assert Counter(ratchet.agent_runs()) == Counter(AGENT_STEPS)
    ratchet.assert_published_once(run_id)
    events = ratchet.events(run_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    confirmations = Counter(e["key"] for e in events
                            if e["type"] in {"EFFECT_CONFIRMED", "EFFECT_RECONCILED"})
    assert set(confirmations.values()) == {1}


def test_sigkilled_worker_is_taken_over_within_the_bound(tmp_path, postgres_url, redis_url):
    block = tmp_path / "shared" / "block"
    with cluster(tmp_path, postgres_url, redis_url,
                 env={"AGENT_BLOCK_FILE": str(block)}) as group:
        workers = [group.start_worker(), group.start_worker()]
        run_id = group.create_detached()
        group.wait_for_state(run_id, {"awaiting_approval"})
        assert group.ratchet.approve(run_id, "--detach").returncode == 0
        wait_for(Path(f"{block}.seen"))
        kill_worker_and_agent(workers, block)

        # The other worker's reaper takes the run over once the lease expires (lease TTL +
        # reap interval: 2.5 s); the broker would redeliver the dead worker's message only
        # after its 60 s heartbeat timeout. TAKEOVER tells the two apart with room for a
        # loaded machine, as a deadline, not a measured gap.
        takeover = wait_for_takeover(group, run_id, timeout=TAKEOVER)
        group.wait_for_state(run_id, {"done"})
        events = group.ratchet.events(run_id)
        expired = next(e for e in events if e["type"] == "LEASE_EXPIRED")
        resumed = next(e for e in events if e["type"] == "LEASE_ACQUIRED"
                       and e["seq"] > expired["seq"])
        assert resumed["seq"] == takeover["seq"]
        assert resumed["data"]["owner"] != expired["data"]["owner"]
        assert_finished_once(group, run_id)


def test_duplicate_deliveries_execute_each_step_once(tmp_path, postgres_url, redis_url):
    with cluster(tmp_path, postgres_url, redis_url) as group:
        run_id = group.create_detached()
        group.enqueue(run_id, times=9)  # ten messages for one run
        group.start_worker(threads=3)
        group.start_worker(threads=3)
        group.wait_for_state(run_id, {"awaiting_approval"})
        assert group.ratchet.approve(run_id, "--detach").returncode == 0
        group.enqueue(run_id, times=9)
        group.wait_for_state(run_id, {"done"})
        assert_finished_once(group, run_id)
        types = Counter(e["type"] for e in group.ratchet.events(run_id))
        assert types["RESEARCH_STARTED"] == 1 and types["IMPLEMENTATION_STARTED"] == 1


def test_runs_finish_after_the_broker_loses_every_message(tmp_path, postgres_url, redis_url):
    with cluster(tmp_path, postgres_url, redis_url) as group:
        runs = [group.create_detached(title=f"task {i}") for i in range(4)]
        client = redis.Redis.from_url(redis_url)
        flushed = [k for k in client.scan_iter(f"{group.queue}:*")]
        assert flushed, "the detached runs should have left messages in Redis"
        client.delete(*flushed)  # the broker's data for this cluster is gone
        group.start_worker(threads=1)
        group.start_worker(threads=1)
        for run_id in runs:
            group.wait_for_state(run_id, {"awaiting_approval"})
            assert group.ratchet.approve(run_id, "--detach").returncode == 0
        for key in client.scan_iter(f"{group.queue}:*"):
            if key.endswith((b".msgs", group.queue.encode())):
                client.delete(key)
        for run_id in runs:
            group.wait_for_state(run_id, {"done"})
        agent_runs = Counter(group.ratchet.agent_runs())
        assert agent_runs == Counter({step: 4 for step in AGENT_STEPS})


def kill_worker_and_agent(workers: list[subprocess.Popen[str]], block: Path
                          ) -> subprocess.Popen[str]:
    """SIGKILL the worker running the blocked agent (its whole group) and the agent's
    processes, as on a lost host; return the worker killed."""
    agents = processes_with_env("AGENT_BLOCK_FILE", str(block))
    assert agents, "the blocked agent is not running"
    worker_pid = ancestor_among(agents[0], {w.pid for w in workers})
    [victim] = [w for w in workers if w.pid == worker_pid]
    os.killpg(victim.pid, signal.SIGKILL)
    for pid in agents:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return victim


def test_takeover_by_a_worker_on_another_host(tmp_path, postgres_url, redis_url):
    """Each worker has its own RATCHET_HOME (mirrors, worktrees, scratch), as on two hosts:
    the survivor rebuilds the worktree from the checkpoint on a fresh mirror, proves it by
    hash, and reruns the interrupted step."""
    block = tmp_path / "shared" / "block"
    with cluster(tmp_path, postgres_url, redis_url,
                 env={"AGENT_BLOCK_FILE": str(block)}) as group:
        homes = [tmp_path / "host-a", tmp_path / "host-b"]
        workers = [group.start_worker(extra={"RATCHET_HOME": str(h)}) for h in homes]
        run_id = group.create_detached()
        group.wait_for_state(run_id, {"awaiting_approval"})
        assert group.ratchet.approve(run_id, "--detach").returncode == 0
        wait_for(Path(f"{block}.seen"))
        victim = kill_worker_and_agent(workers, block)
        group.wait_for_state(run_id, {"done"})
        assert_finished_once(group, run_id)
        survivor = homes[1 - workers.index(victim)]
        assert (survivor / "work" / "mirrors").is_dir()
        assert "SALVAGE_SAVED" not in {e["type"] for e in group.ratchet.events(run_id)}
        assert "return a + b" in git(group.ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
