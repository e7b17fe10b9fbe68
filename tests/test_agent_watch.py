"""The command agent's watch and usage through real subprocesses: a hung agent is ended at its
idle timeout, a busy silent one is not, and what an agent spent travels with its result or its
failure (its own report over its CLI's, the wall time measured by the runner)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from runner.agents.presets import PRESETS, parse_claude
from runner.errors import AgentIdle, AgentTimedOut, DeterministicFailure
from tests.test_agents import make_task, script, unconfined_agent, wait_for_pid

CLAUDE_RESULT = Path(__file__).parent / "data" / "agents" / "claude.json"


def test_an_agent_that_prints_nothing_and_changes_nothing_is_ended(tmp_path: Path) -> None:
    task = replace(make_task(tmp_path), idle_timeout=1.0)  # the start, up to its first line, fits
    pid_file = tmp_path / "agent.pid"
    prefix = script(tmp_path, f"""
        import os, time
        print("thinking...", flush=True)
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(600)
        """)
    # The agent would sleep 600 s (the task's timeout is 30 s): ended as idle, not timed out.
    with pytest.raises(AgentIdle) as raised:
        unconfined_agent(prefix, kill_grace=0.5).run(task)
    failure = raised.value
    assert failure.evidence["stopped"] == "idle" and "thinking..." in failure.evidence["log_tail"]
    assert failure.usage["agent_seconds"] >= 1.0  # measured up to the end, idle time included
    pid = wait_for_pid(pid_file)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_silent_agent_that_keeps_changing_the_worktree_is_not_idle(tmp_path: Path) -> None:
    # It changes a file every 0.05 s for 1.6 s, past an idle timeout of 1 s (a change every
    # twentieth of the timeout, so a loaded machine's late wake-ups do not make it look idle).
    task = replace(make_task(tmp_path), idle_timeout=1.0)
    prefix = script(tmp_path, """
        import os, time
        for n in range(32):
            open("work.txt", "w").write("x" * n)
            time.sleep(0.05)
        open(os.environ["RATCHET_OUTPUT"], "w").write("done")
        """)
    result = unconfined_agent(prefix).run(task)
    assert result.exit_code == 0 and result.usage["agent_seconds"] >= 1.6


def test_usage_comes_from_the_report_over_the_cli_and_time_from_the_runner(
        tmp_path: Path) -> None:
    task = make_task(tmp_path)
    prefix = script(tmp_path, """
        import json, os, sys
        print(open(sys.argv[1]).read(), flush=True)  # as Claude Code prints its result
        json.dump({"cost_usd": 0.5, "model": "mine", "agent_seconds": 0, "budget": "team-a"},
                  open(os.environ["RATCHET_USAGE"], "w"))
        open(os.environ["RATCHET_OUTPUT"], "w").write("done")
        """)
    agent = unconfined_agent(f"{prefix} {CLAUDE_RESULT}", parse_usage=parse_claude)
    usage = agent.run(task).usage
    assert usage["cost_usd"] == 0.5 and usage["model"] == "mine"  # the agent's own report
    assert usage["output_tokens"] == 2317 and usage["turns"] == 7  # its CLI's output
    assert usage["budget"] == "team-a"  # unknown keys are kept
    assert usage["agent_seconds"] > 0  # measured, never taken from the agent


def test_a_failed_agent_still_says_what_it_spent(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    prefix = script(tmp_path, """
        import os, sys
        open(os.environ["RATCHET_USAGE"], "w").write('{"cost_usd": 0.07}')
        sys.exit(3)
        """)
    with pytest.raises(DeterministicFailure) as raised:
        unconfined_agent(prefix).run(task)
    assert raised.value.usage["cost_usd"] == 0.07
    (tmp_path / "slow").mkdir()
    slow = make_task(tmp_path / "slow", timeout=0.5)
    with pytest.raises(AgentTimedOut) as timed_out:
        unconfined_agent(f"{sys.executable} -c 'import time; time.sleep(30)'",
                         kill_grace=0.5).run(slow)
    assert timed_out.value.usage["agent_seconds"] >= 0.5


def test_a_usage_file_that_points_elsewhere_is_not_followed(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    secret = tmp_path / "host-secret.json"
    secret.write_text('{"cost_usd": 99}')
    prefix = script(tmp_path, f"""
        import os
        os.symlink({str(secret)!r}, os.environ["RATCHET_USAGE"])
        open(os.environ["RATCHET_OUTPUT"], "w").write("done")
        """)
    usage = unconfined_agent(prefix).run(task).usage
    assert "cost_usd" not in usage and "cannot be used" in usage["problems"][0]


def test_a_preset_whose_program_is_missing_says_how_to_install_it(tmp_path: Path) -> None:
    claude = PRESETS["claude"]
    agent = unconfined_agent(claude.templates, env={"PATH": str(tmp_path)},
                             install_hint=claude.install_hint)
    with pytest.raises(DeterministicFailure, match="npm install -g @anthropic-ai/claude-code"):
        agent.run(make_task(tmp_path))
