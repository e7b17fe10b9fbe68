"""The long-running processes: `ratchet serve` on embedded defaults, and a worker's SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import urllib.request
from pathlib import Path

import pytest

from tests.distributed.cluster import cluster
from tests.distributed.test_workers import assert_finished_once, wait_for
from tests.e2e.harness import Ratchet, make_target_repo

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}),
                                    timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            get(url)
            return
        except OSError:
            assert time.monotonic() < deadline, f"{url} never answered"
            time.sleep(0.1)


def wait_state(ratchet: Ratchet, run_id: str, state: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while ratchet.status(run_id)["state"] != state:
        assert time.monotonic() < deadline, ratchet.status(run_id)
        time.sleep(0.2)


def test_serve_alone_runs_detached_runs(tmp_path):
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    ratchet.env["RATCHET_REAP_SECONDS"] = "0.5"
    ratchet.env["RATCHET_API_TOKEN"] = "api-t0ken"
    port = free_port()
    server = ratchet.start("serve", "--port", str(port))
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/healthz")
        status, ready = get(f"{base}/readyz")
        assert status == 200, ready
        ready = json.loads(ready)
        assert (ready["ledger"], ready["broker"], ready["failing"]) == ("ok", "in-process", [])
        assert (ready["checks"]["agent"], ready["checks"]["credentials"]) == ("ok", "skip")
        created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc",
                          "--detach", "--json")
        assert created.returncode == 0, created.stderr
        run_id = json.loads(created.stdout.splitlines()[-1])["run_id"]
        assert "ratchet serve" in created.stderr  # says who will pick it up
        wait_state(ratchet, run_id, "awaiting_approval")
        assert ratchet.approve(run_id, "--detach").returncode == 0
        wait_state(ratchet, run_id, "done")
        assert get(f"{base}/api/runs")[0] == 401  # reaching the port is not enough
        status, runs = get(f"{base}/api/runs", {"Authorization": "Bearer api-t0ken"})
        assert status == 200 and json.loads(runs)[0]["state"] == "done"
        status, metrics = get(f"{base}/metrics")
        assert status == 200 and 'ratchet_runs{state="done"} 1.0' in metrics
        assert "ratchet_resume_seconds_bucket" in metrics
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=30)
    # uvicorn shuts down gracefully, then re-raises the signal it handled.
    assert server.returncode in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in err


def test_sigterm_lets_the_worker_finish_its_step_and_release(tmp_path, postgres_url,
                                                            redis_url):
    block = tmp_path / "shared" / "block"
    with cluster(tmp_path, postgres_url, redis_url,
                 env={"AGENT_BLOCK_FILE": str(block)}) as group:
        first = group.start_worker()
        run_id = group.create_detached()
        group.wait_for_state(run_id, {"awaiting_approval"})
        assert group.ratchet.approve(run_id, "--detach").returncode == 0
        wait_for(Path(f"{block}.seen"))
        # Like `docker stop`: the main process only (Dramatiq forwards it to its children;
        # a second SIGTERM to a child means "kill now").
        os.kill(first.pid, signal.SIGTERM)
        time.sleep(2)  # Dramatiq notices the signal within a second and begins its shutdown
        block.write_text("go")  # the step in flight completes
        first.communicate(timeout=60)
        assert first.returncode == 0
        status = group.ratchet.status(run_id)
        assert "implement.1" in status["completed_steps"]
        assert status["lease"] is None or not status["lease"]["live"]
        assert status["state"] == "verify"  # released after the step, not abandoned in it
        group.start_worker()
        group.wait_for_state(run_id, {"done"})
        assert_finished_once(group, run_id)
        types = [e["type"] for e in group.ratchet.events(run_id)]
        assert "LEASE_EXPIRED" not in types  # a clean hand-over, not a timeout
