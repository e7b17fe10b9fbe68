"""Detached commands beside a running ``ratchet serve`` without a broker: the real CLI asks for
a pickup in the ledger, the real service's in-process worker takes the run up from there (not
the reaper: it is set to an hour here), and the run directory on disk follows the run whoever
drives it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.harness import ROOT, Ratchet, make_target_repo
from tests.services import free_port

PICKED_UP = "picked up at a detached command's request"


@pytest.fixture
def ratchet(tmp_path: Path) -> Ratchet:
    # The reaper would wake the run within its interval too: an hour leaves the pickup alone.
    return Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"),
                   env={"RATCHET_REAP_SECONDS": "3600"}, lease_seconds=30)


@pytest.fixture
def serve(ratchet: Ratchet, tmp_path: Path) -> Iterator[Path]:
    """``ratchet -v serve`` on the run's home; yields the file its log goes to."""
    log = tmp_path / "serve.log"
    port = free_port()
    ratchet.shared.mkdir(parents=True, exist_ok=True)
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "-v", "serve", "--port", str(port)],
            cwd=ROOT, env=ratchet.environ(), stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        wait_for("ratchet serve to answer", lambda: answers(proc, port), log)
        yield log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def answers(proc: subprocess.Popen[bytes], port: int) -> bool:
    assert proc.poll() is None, "ratchet serve exited"
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def wait_for(what: str, ready: Callable[[], Any], log: Path, timeout: float = 180) -> Any:
    """Wait on a state, not on a clock: ``timeout`` only bounds a broken run."""
    deadline = time.monotonic() + timeout
    while not (value := ready()):
        assert time.monotonic() < deadline, f"{what} never happened\n{log.read_text()[-4000:]}"
        time.sleep(0.1)
    return value


def on_disk(ratchet: Ratchet, run_id: str) -> dict[str, Any]:
    folder = ratchet.home / "runs" / run_id
    return {"run": json.loads((folder / "run.json").read_text())["state"],
            "snapshot": json.loads((folder / "state.snapshot.json").read_text())}


def test_a_detached_approval_is_taken_up_by_serve_and_the_run_directory_follows(
        ratchet: Ratchet, serve: Path) -> None:
    ratchet.create()
    run_id = ratchet.run_id()
    assert on_disk(ratchet, run_id)["run"] == "awaiting_approval"

    detached = ratchet.approve(run_id, "--detach")
    assert detached.returncode == 0, detached.stderr
    assert "picks it up within seconds" in detached.stdout
    wait_for("the run to be done", lambda: ratchet.status(run_id)["state"] == "done", serve)
    log = serve.read_text()
    assert f"run {run_id!r}: {PICKED_UP}" in log, log[-4000:]
    assert "reaper woke" not in log
    # serve drove it, and the directory `ratchet run` wrote comes to say what the ledger says
    # once serve's pass ends: done, every effect sent.
    assert ratchet.agent_runs() == ["research.1", "specify.1", "implement.1", "repair.1"]
    wait_for("the run directory to follow", lambda: on_disk(ratchet, run_id)["snapshot"][
        "next_action"]["kind"] == "none_done", serve)
    disk, final = on_disk(ratchet, run_id), ratchet.status(run_id)
    assert disk["run"] == "done" and disk["snapshot"]["state"] == "done"
    assert disk["snapshot"]["effects"] == final["effects"]
    assert {e["status"] for e in final["effects"]} == {"confirmed"}


def test_a_detached_run_is_taken_up_by_serve(ratchet: Ratchet, serve: Path) -> None:
    created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--detach")
    assert created.returncode == 0, created.stderr
    run_id = ratchet.run_id()
    wait_for("the spec's review",
             lambda: ratchet.status(run_id)["state"] == "awaiting_approval", serve)
    assert f"run {run_id!r}: {PICKED_UP}" in serve.read_text()
    # Written by serve as its pass ended (the lease released): the run waits for a reviewer.
    wait_for("the run directory to follow", lambda: on_disk(ratchet, run_id)["snapshot"][
        "next_action"]["kind"] == "review_spec", serve)
    # Taken once: nothing left to pick up, nothing picked up twice.
    assert serve.read_text().count(f"run {run_id!r}: {PICKED_UP}") == 1
