"""Usage, budgets and hung agents through the real CLI, engine, ledger, git, sandbox and
scripted agent (``AGENT_USAGE`` makes it report usage, ``AGENT_SILENT`` hang, ``AGENT_SLEEP``
run long)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from app.service import create_app
from runner.ledger import open_store
from tests.e2e.harness import CONFIG, Ratchet, make_target_repo, processes_with_env

AGENT_STEPS = ["research.1", "specify.1", "implement.1", "repair.1"]
REPORT = {"cost_usd": 0.05, "input_tokens": 1000, "output_tokens": 200,
          "cache_read_tokens": 300, "model": "scripted-1", "turns": 3, "team": "payments"}


def ratchet_with(tmp_path: Path, config_extra: str = "", **env: str) -> Ratchet:
    ratchet = Ratchet(home=tmp_path / "home",
                      repo=make_target_repo(tmp_path / "repo", config=CONFIG + config_extra))
    ratchet.env.update(env)
    return ratchet


def drive_through_crashes(ratchet: Ratchet, crashes: list[str]) -> str:
    """Run, approve and resume until done, killing the CLI's process group at each crash
    point in turn (each armed until it fires)."""
    pending = list(crashes)

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        result = ratchet(*args, extra={"RATCHET_CRASH_AT": pending[0]} if pending else None)
        if result.returncode == -signal.SIGKILL:
            assert pending, f"unexpected SIGKILL of {args}"
            pending.pop(0)
        else:
            assert result.returncode == 0, f"{args} -> {result.returncode}\n{result.stderr}"
        return result

    call("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--body", "Add calc.add.")
    run_id = ratchet.run_id()
    for _ in range(12):
        status = ratchet.status(run_id)
        if status["state"] == "done" and status["next_action"]["kind"] == "none_done":
            assert not pending, f"crash points never reached: {pending}"
            return run_id
        if status["state"] == "awaiting_approval" and not status["pending_signals"]:
            call("approve-spec", run_id, "--hash", ratchet.spec_hash(run_id))
        else:
            call("resume", run_id)
    raise AssertionError(f"run {run_id} did not finish: {ratchet.status(run_id)}")


def metrics(ratchet: Ratchet) -> dict[str, float]:
    """The usage samples of ``/metrics``, scraped from the service over the run's ledger."""
    store = open_store(str(ratchet.home / "ratchet.db"))
    try:
        body = TestClient(create_app(store)).get("/metrics").text
    finally:
        store.close()
    return {name: float(value) for name, value in
            (line.rsplit(" ", 1) for line in body.splitlines()
             if line.startswith("ratchet_agent_"))}


@pytest.mark.slow
def test_usage_is_recorded_per_step_summed_once_across_crashes_and_shown_everywhere(
        tmp_path: Path) -> None:
    ratchet = ratchet_with(tmp_path, AGENT_USAGE=json.dumps(REPORT))
    # Killed after implement's agent wrote its usage but before the checkpoint (the finished
    # agent is adopted on resume), and after repair's checkpoint was committed.
    run_id = drive_through_crashes(ratchet, ["after_agent_output:implement.1",
                                             "after_commit:repair.1"])
    assert Counter(ratchet.agent_runs()) == Counter(AGENT_STEPS)  # each agent ran once

    status = ratchet.status(run_id)
    usage = status["usage"]
    assert [(s["step"], s["outcome"]) for s in usage["steps"]] == [
        (step, "completed") for step in AGENT_STEPS]
    for step in usage["steps"]:
        assert {k: step[k] for k in REPORT} == REPORT and step["agent_seconds"] > 0
    total = usage["total"]
    assert total["cost_usd"] == pytest.approx(0.20)
    assert (total["input_tokens"], total["output_tokens"], total["cache_read_tokens"]) == (
        4000, 800, 1200)
    assert total["agent_runs"] == 4 and total["unpriced_runs"] == 0
    assert total["agent_seconds"] == pytest.approx(
        sum(s["agent_seconds"] for s in usage["steps"]))

    # The run directory and the tracking comment say the same.
    folder = ratchet.export(run_id, tmp_path / "export")
    assert json.loads((folder / "usage.json").read_text()) == usage
    assert json.loads((folder / "state.snapshot.json").read_text())["usage"] == usage
    events = (folder / "events.ndjson").read_text().splitlines()
    assert [json.loads(line)["type"] for line in events].count("AGENT_USAGE") == 4
    [tracking] = [c for c in ratchet.outbox(run_id).comments
                  if c["name"] == f"{run_id}/tracking"]
    assert "Spent: $0.20 · 6.0k tokens (4.0k in, 800 out)" in tracking["text"]
    assert "over 4 agent run(s)" in tracking["text"]
    assert "spent: $0.20" in ratchet("status", run_id).stdout

    scraped = metrics(ratchet)
    assert scraped["ratchet_agent_cost_usd_total"] == pytest.approx(0.20)
    assert scraped['ratchet_agent_tokens_total{kind="input"}'] == 4000
    assert scraped['ratchet_agent_tokens_total{kind="output"}'] == 800
    assert scraped['ratchet_agent_tokens_total{kind="cache_read"}'] == 1200
    assert scraped["ratchet_agent_seconds_total"] == pytest.approx(total["agent_seconds"])


def test_a_spent_cost_budget_starts_no_agent_step_until_it_is_raised(tmp_path: Path) -> None:
    ratchet = ratchet_with(tmp_path, "budget: {max_cost_usd: 0.10}\n",
                           AGENT_USAGE=json.dumps({"cost_usd": 0.06}))
    assert ratchet.create().returncode == 0
    run_id = ratchet.run_id()
    # research (0.06) and specify (0.12: the step in progress is the only overshoot) ran.
    stopped = ratchet.approve(run_id)
    assert stopped.returncode == 1, stopped.stderr
    assert ratchet.agent_runs() == ["research.1", "specify.1"]

    status = ratchet.status(run_id)
    assert (status["state"], status["step"]) == ("needs_human", "implement.1")
    assert status["reason"].startswith(
        "the run's budget is spent: $0.12 of max_cost_usd $0.10 (research.1 $0.06, specify.1"
        " $0.06)")
    action = status["next_action"]
    assert action["kind"] == "raise_budget"
    assert f"`ratchet budget {run_id} --add +1`" in action["text"]
    assert status["usage"]["budget"] == {"max_cost_usd": {"allowed": 0.1, "spent": 0.12}}
    tracking = ratchet.outbox(run_id).comments[0]["text"]
    assert "Failure class: authority" in tracking and "(budget: $0.12 of $0.10)" in tracking
    assert f"ratchet budget {run_id} --add +1" in tracking

    raised = ratchet("budget", run_id, "--add", "1")
    assert raised.returncode == 0, raised.stderr
    status = ratchet.status(run_id)
    assert status["state"] == "done"
    assert ratchet.agent_runs() == AGENT_STEPS  # nothing completed was redone
    assert status["usage"]["budget"]["max_cost_usd"]["allowed"] == pytest.approx(1.10)
    assert status["usage"]["total"]["cost_usd"] == pytest.approx(0.24)
    raise_events = [e for e in ratchet.events(run_id) if e["type"] == "BUDGET_RAISED"]
    assert [(e["data"]["limit"], e["data"]["add"]) for e in raise_events] == [
        ("max_cost_usd", 1.0)]


def test_an_agent_minutes_budget_kills_an_agent_that_would_run_longer_at_the_budget(
        tmp_path: Path) -> None:
    # 0.05 agent minutes (3 s) stand for the 2 minutes of a real budget; the agent would
    # take 30 s.
    ratchet = ratchet_with(tmp_path, "budget: {max_agent_minutes: 0.05}\n",
                           AGENT_SLEEP="30", AGENT_MARK="budget-test")
    assert ratchet.create().returncode == 1
    assert processes_with_env("AGENT_MARK", "budget-test") == []
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "needs_human" and status["next_action"]["kind"] == "raise_budget"
    assert "max_agent_minutes" in status["reason"] and "stopped at the budget" in status["reason"]
    [run] = status["usage"]["steps"]
    assert (run["step"], run["outcome"]) == ("research.1", "authority")
    assert run["agent_seconds"] >= 3.0  # it ran up to the budget; the reason says it stopped there


def test_a_hung_agent_is_ended_at_its_idle_timeout_retried_once_then_failed(
        tmp_path: Path) -> None:
    ratchet = ratchet_with(tmp_path, "agent: {idle_timeout: 1}\n", AGENT_SILENT="research",
                           AGENT_MARK="idle-test")
    assert ratchet.create().returncode == 1
    assert processes_with_env("AGENT_MARK", "idle-test") == []
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "failed" and status["attempt"] == 2
    assert "changed nothing in the worktree for 1s" in status["reason"]
    failures = [e for e in ratchet.events(run_id) if e["type"] == "STEP_FAILED"]
    assert [e["data"]["class"] for e in failures] == ["transient", "deterministic"]
    for failure in failures:
        evidence: dict[str, Any] = failure["data"]["evidence"]
        assert evidence["stopped"] == "idle" and "thinking about it..." in evidence["log_tail"]
    folder = ratchet.export(run_id, tmp_path / "export")
    final = json.loads((folder / "evidence" / "research.1.2.json").read_text())
    assert final["class"] == "deterministic"
    assert "thinking about it..." in final["evidence"]["log_tail"]
    assert [s["outcome"] for s in status["usage"]["steps"]] == ["transient", "deterministic"]


@pytest.mark.skipif(shutil.which("codex", path="/usr/bin:/bin") is not None,
                    reason="codex is installed here")
def test_a_preset_whose_cli_is_missing_fails_at_run_with_the_install_hint(
        tmp_path: Path) -> None:
    ratchet = ratchet_with(tmp_path, PATH="/usr/bin:/bin")
    result = ratchet("run", "--repo", str(ratchet.repo), "--title", "x", "--agent", "codex")
    assert result.returncode == 2
    assert "npm install -g @openai/codex" in result.stderr and "--agent-command" in result.stderr
    from_env = ratchet("run", "--repo", str(ratchet.repo), "--title", "x",
                       extra={"RATCHET_AGENT_COMMAND": "", "RATCHET_AGENT": "aider"})
    assert from_env.returncode == 2 and "aider-install" in from_env.stderr
    assert json.loads(ratchet("runs", "--json").stdout) == []  # no run was created


# Codex as its JSON events show it: tokens (cached input inside input_tokens), no cost.
FAKE_CODEX = """\
#!{python}
import json, os, sys
assert sys.argv[1:3] == ["exec", "--json"] and sys.argv[-1] == "-", sys.argv
assert sys.stdin.read().startswith("# Ratchet")  # the prompt, on stdin
with open(os.environ["AGENT_LOG"], "a") as log:
    log.write(os.environ["RATCHET_STEP"] + "\\n")
with open(os.environ["RATCHET_OUTPUT"], "w") as output:
    output.write("# Analysis\\n\\nThe repository is small.\\n")
for event in ({{"type": "thread.started", "thread_id": "0199a213"}}, {{"type": "turn.started"}},
              {{"type": "turn.completed", "usage": {{"input_tokens": 100000,
                "cached_input_tokens": 80000, "output_tokens": 5000}}}}):
    print(json.dumps(event), flush=True)
"""


def test_a_tiny_dollar_budget_stops_a_codex_run_priced_from_its_tokens(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text(FAKE_CODEX.format(python=sys.executable))
    (bin_dir / "codex").chmod(0o755)
    # Codex names no model in its events: the operator prices it ("*": its configured model).
    ratchet = ratchet_with(tmp_path, "budget: {max_cost_usd: 0.01}\n",
                           PATH=f"{bin_dir}:{os.environ['PATH']}", RATCHET_AGENT_COMMAND="",
                           RATCHET_AGENT="codex", RATCHET_AGENT_PRICES=json.dumps(
                               {"*": {"input": 1.25, "output": 10, "cache_read": 0.125}}))

    assert ratchet.create().returncode == 1
    assert ratchet.agent_runs() == ["research.1"]  # specify never started

    status = ratchet.status(ratchet.run_id())
    assert (status["state"], status["step"]) == ("needs_human", "specify.1")
    assert status["next_action"]["kind"] == "raise_budget"
    assert status["reason"].startswith("the run's budget is spent: $0.09 of max_cost_usd $0.01")
    [run] = status["usage"]["steps"]
    # 20k uncached input at $1.25/M, 80k cached at $0.125/M (counted once), 5k out at $10/M.
    assert (run["input_tokens"], run["cache_read_tokens"], run["output_tokens"]) == (
        20000, 80000, 5000)
    assert run["cost_usd"] == pytest.approx(0.085) and run["cost_priced_as"] == "*"
    assert status["usage"]["total"]["unpriced_runs"] == 0
