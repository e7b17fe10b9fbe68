"""A model provider that refuses, through the real CLI, engine, ledger and sandbox: the
scripted agent runs as the claude preset's program and ends as Claude Code does when its API
answers 529 or refuses the key (``AGENT_OVERLOADED``, ``AGENT_UNAUTHORIZED``), or when it
reaches its dollar cap (``AGENT_MAX_BUDGET``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from runner.ledger import open_store
from runner.names import EventType
from tests.e2e.harness import CONFIG, Ratchet, make_target_repo
from tests.e2e.test_subagents import research_config

AGENT = Path(__file__).parents[1] / "fixtures" / "scripted_agent.py"


def claude_ratchet(tmp_path: Path, config: str = CONFIG, **env: str) -> Ratchet:
    """Ratchet running the claude preset, whose program is the scripted agent."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(f"#!{sys.executable}\n" + AGENT.read_text())
    (bin_dir / "claude").chmod(0o755)
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo",
                                                                    config=config))
    # One attempt per step: a refusal the provider answered must not use it up.
    ratchet.env.update(PATH=f"{bin_dir}:{os.environ['PATH']}", RATCHET_AGENT_COMMAND="",
                       RATCHET_AGENT="claude", RATCHET_MAX_ATTEMPTS="1", **env)
    return ratchet


def test_an_overloaded_model_is_waited_out_without_charging_an_attempt(tmp_path: Path) -> None:
    ratchet = claude_ratchet(tmp_path, research_config(["alpha", "beta"]),
                             AGENT_OVERLOADED="research,beta")

    assert ratchet.create().returncode == 0, ratchet.agent_log.read_text()
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "awaiting_approval"  # research and specify completed

    store = open_store(str(ratchet.home / "ratchet.db"))
    try:
        events = store.events(run_id)
    finally:
        store.close()
    refusals = [e for e in events if e.type == EventType.STEP_FAILED]
    assert [(e.step, e.data["class"], e.data["evidence"]["provider_error"]["trouble"])
            for e in refusals] == [("research.1", "transient", "transient")] * 2
    assert "overloaded (529)" in refusals[0].data["error"]
    assert "research subagent(s) beta did not complete" in refusals[1].data["error"]
    # No subagent failed: beta ran again with the step and completed; alpha ran once.
    assert not [e for e in events if e.type == EventType.SUBAGENT_FAILED]
    completed = [e.data["result"]["name"] for e in events
                 if e.type == EventType.SUBAGENT_COMPLETED]
    assert sorted(completed) == ["alpha", "beta"]
    # What each refused session spent is recorded with it.
    usage = [(e.data.get("subagent"), e.data["outcome"]) for e in events
             if e.type == EventType.AGENT_USAGE]
    assert (None, "transient") in usage and ("beta", "transient") in usage


def test_a_refused_key_stops_the_run_at_once_naming_what_to_set(tmp_path: Path) -> None:
    ratchet = claude_ratchet(tmp_path, AGENT_UNAUTHORIZED="research")

    assert ratchet.create().returncode == 1
    status = ratchet.status(ratchet.run_id())
    assert (status["state"], status["step"], status["attempt"]) == (
        "needs_human", "research.1", 1)
    assert "Invalid API key" in status["reason"]
    assert "set ANTHROPIC_API_KEY" in status["reason"]
    assert "RATCHET_AGENT_HOME_SEED" in status["reason"]


def test_claude_is_capped_at_what_the_budget_has_left_and_stopping_there_asks_for_a_raise(
        tmp_path: Path) -> None:
    ratchet = claude_ratchet(tmp_path, CONFIG + "budget: {max_cost_usd: 0.10}\n",
                             AGENT_USAGE=json.dumps({"cost_usd": 0.04}),
                             AGENT_MAX_BUDGET="specify")

    assert ratchet.create().returncode == 1
    status = ratchet.status(ratchet.run_id())
    assert (status["state"], status["step"]) == ("needs_human", "specify.1")
    assert status["next_action"]["kind"] == "raise_budget"
    # Research spent $0.04; specify was capped at the $0.06 left and spent it (the scripted
    # CLI reports its cap as its cost).
    assert status["reason"].startswith(
        "the run's budget is spent: $0.10 of max_cost_usd $0.10 (research.1 $0.04, specify.1"
        " $0.06)")
    assert "the specify agent stopped having spent what the budget had left" in status["reason"]
    [_, specify] = status["usage"]["steps"]
    assert specify["cost_usd"] == pytest.approx(0.06) and specify["outcome"] == "authority"


def test_a_refused_key_in_a_subagent_stops_the_run_without_failing_it(tmp_path: Path) -> None:
    ratchet = claude_ratchet(tmp_path, research_config(["alpha", "beta"]),
                             AGENT_UNAUTHORIZED="subagent")

    assert ratchet.create().returncode == 1
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert (status["state"], status["step"]) == ("needs_human", "research.1")
    assert "did not complete" in status["reason"] and "set ANTHROPIC_API_KEY" in status["reason"]
    assert not [e for e in ratchet.events(run_id) if e["type"] == "SUBAGENT_FAILED"]
