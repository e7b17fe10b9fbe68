"""Recovery beyond clean crashes: a frozen stale worker, salvage, corrupt history, policy."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.e2e.harness import Ratchet, make_target_repo, process_alive, processes_with_env
from tests.gitrepo import git


@pytest.fixture
def ratchet(tmp_path):
    return Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"),
                   lease_seconds=2.0)


def approved_run(ratchet: Ratchet) -> str:
    assert ratchet.create().returncode == 0
    run_id = ratchet.run_id()
    assert ratchet.approve(run_id, "--detach").returncode == 0
    return run_id


def wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_frozen_stale_worker_is_fenced_out(ratchet, tmp_path):
    run_id = approved_run(ratchet)
    block = tmp_path / "shared" / "block"
    worker_a = ratchet.start("resume", run_id, extra={"AGENT_BLOCK_FILE": str(block)})
    wait_for(Path(f"{block}.seen"))
    os.killpg(worker_a.pid, signal.SIGSTOP)  # frozen mid-implement, lease still recorded
    try:
        time.sleep(ratchet.lease_seconds + 1)
        worker_b = ratchet("resume", run_id, extra={"AGENT_BLOCK_FILE": str(block)})
        assert worker_b.returncode == 0, worker_b.stderr
        assert ratchet.status(run_id)["state"] == "done"
        events_after_b = ratchet.events(run_id)
    finally:
        block.write_text("go")
        os.killpg(worker_a.pid, signal.SIGCONT)
    _, err = worker_a.communicate(timeout=60)

    assert worker_a.returncode == 3, err
    assert "no longer current" in err or "lease lost" in err
    events = ratchet.events(run_id)
    assert events == events_after_b  # every write A attempted after thawing was refused
    takeover = next(e for e in events if e["type"] == "LEASE_EXPIRED")
    assert all(e["lease"] > takeover["data"]["epoch"] for e in events
               if e["seq"] > takeover["seq"])
    ratchet.assert_published_once(run_id)
    assert git(ratchet.repo, "ls-tree", "--name-only", f"ratchet/{run_id}").split() == [
        ".github", "README.md", "calc.py", "test_calc.py"]


@pytest.mark.slow
def test_interrupted_step_is_salvaged_before_the_reset(ratchet, tmp_path):
    run_id = approved_run(ratchet)
    block = tmp_path / "shared" / "block"
    worker = ratchet.start("resume", run_id, extra={"AGENT_BLOCK_FILE": str(block)})
    wait_for(Path(f"{block}.seen"))
    os.killpg(worker.pid, signal.SIGKILL)
    worker.communicate()

    resumed = ratchet("resume", run_id, extra={"AGENT_BLOCK_FILE": str(block)})
    assert resumed.returncode == 0, resumed.stderr
    folder = ratchet.export(run_id, tmp_path / "export")
    [salvage] = list((folder / "salvage").iterdir())
    assert salvage.name.startswith("implement.1.")
    assert "partial.txt" in salvage.read_text()
    prompt = (folder / "prompts/implement.1.md").read_text()
    assert f"salvage/{salvage.name}" in prompt
    # The retry started from the checkpoint: the leftover file is not in the published tree.
    assert "partial.txt" not in git(ratchet.repo, "ls-tree", "--name-only", f"ratchet/{run_id}")
    assert "SALVAGE_SAVED" in {e["type"] for e in ratchet.events(run_id)}


def test_corrupted_checkpoint_is_never_used(ratchet):
    assert ratchet.create().returncode == 0
    run_id = ratchet.run_id()
    with sqlite3.connect(ratchet.home / "ratchet.db") as db:
        (body,) = db.execute("SELECT body FROM checkpoints WHERE run_id = ? AND step = ?",
                             (run_id, "specify.1")).fetchone()
        flipped = body.replace('"exit_code":0', '"exit_code":1', 1)
        assert flipped != body
        db.execute("UPDATE checkpoints SET body = ? WHERE run_id = ? AND step = ?",
                   (flipped, run_id, "specify.1"))

    result = ratchet("approve-spec", run_id, "--hash", ratchet.spec_hash(run_id))
    assert result.returncode == 1
    status = ratchet.status(run_id)
    assert status["state"] == "needs_human"
    assert "specify.1" in status["reason"] and "hash mismatch" in status["reason"]
    assert "implement.1" not in ratchet.agent_runs()
    assert "CHECKPOINT_CORRUPT" in {e["type"] for e in ratchet.events(run_id)}


def test_research_agent_editing_a_product_file_is_a_policy_violation(ratchet, tmp_path):
    result = ratchet.create(extra={"AGENT_EDIT_IN_RESEARCH": "1"})
    assert result.returncode == 1
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "needs_human"
    assert "research agent changed the worktree (README.md)" in status["reason"]
    assert "the run waits for a person with write access to decide" in status["next_action"]["text"]
    folder = ratchet.export(run_id, tmp_path / "export")
    evidence = (folder / "evidence/research.1.policy-violation.patch").read_text()
    assert "research was here" in evidence
    worktrees = list((ratchet.home / "work" / "runs" / run_id).iterdir())
    assert [(w / "README.md").read_text() for w in worktrees] == ["# demo\n"]
    assert (ratchet.repo / "README.md").read_text() == "# demo\n"
    assert "POLICY_VIOLATION" in {e["type"] for e in ratchet.events(run_id)}
    assert "specify.1" not in ratchet.agent_runs()


@pytest.mark.slow
def test_cancel_stops_the_worker_and_its_agent(ratchet, tmp_path):
    run_id = approved_run(ratchet)
    block = tmp_path / "shared" / "block"
    worker = ratchet.start("resume", run_id, extra={"AGENT_BLOCK_FILE": str(block)})
    wait_for(Path(f"{block}.seen"))
    agents = processes_with_env("AGENT_BLOCK_FILE", str(block))
    assert agents, "the blocked agent is not running"
    cancelled = ratchet("cancel", run_id, "--reason", "superseded")
    assert cancelled.returncode == 0, cancelled.stderr
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 3 and "was cancelled (superseded)" in err
    deadline = time.monotonic() + 30
    while any(process_alive(pid) for pid in agents):
        assert time.monotonic() < deadline, "the agent outlived its cancelled run"
        time.sleep(0.05)
    status = ratchet.status(run_id)
    assert status["state"] == "cancelled" and status["reason"] == "superseded"
    events = ratchet.events(run_id)
    cancelled = next(e for e in events if e["type"] == "RUN_CANCELLED")
    assert all(e["type"] in {"EFFECT_INTENDED", "EFFECT_ATTEMPTED", "EFFECT_CONFIRMED",
                             "LEASE_ACQUIRED"} for e in events if e["seq"] > cancelled["seq"])
    assert ratchet("cancel", run_id).returncode == 2  # already ended


@pytest.mark.slow
def test_takeover_on_a_host_with_an_older_worktree_salvages_nothing(tmp_path):
    """Host A researched; host B implemented and died in repair; A takes over. A's old
    worktree is from research, not from repair: diffing it against the checkpoint would
    'salvage' a patch that undoes the implementation."""
    repo = make_target_repo(tmp_path / "repo")
    ledger = {"RATCHET_STORE_URL": str(tmp_path / "shared-ledger.db")}
    host_a = Ratchet(home=tmp_path / "host-a", repo=repo, env=dict(ledger))
    host_b = Ratchet(home=tmp_path / "host-b", repo=repo, env=dict(ledger))
    assert host_a.create().returncode == 0
    run_id = host_a.run_id()
    died = host_b("approve-spec", run_id, "--hash", host_a.spec_hash(run_id),
                  extra={"RATCHET_CRASH_AT": "after_agent_output:repair.1"})
    assert died.returncode == -9
    resumed = host_a("resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    events = host_a.events(run_id)
    assert "SALVAGE_SAVED" not in {e["type"] for e in events}
    folder = host_a.export(run_id, tmp_path / "export")
    assert "salvage" not in (folder / "prompts/repair.1.md").read_text()
    assert "return a + b" in git(repo, "show", f"ratchet/{run_id}:calc.py")
