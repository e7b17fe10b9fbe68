"""Claude Code (the real ``@anthropic-ai/claude-code``, pinned in clis.py) through every phase,
sandbox on, against the scripted model API behind the egress proxy's route.

The runner's environment holds the key and ``ANTHROPIC_BASE_URL`` (the scripted API on
loopback); the agent gets the proxy's route and a placeholder. What happened is asserted from
outside: the branch's code, the requests the model API received (with which key), and the
ledger's usage against what the API reported.
"""

from __future__ import annotations

import json

from tests.agents.conftest import KEYS, MakeRatchet
from tests.e2e.harness import CONFIG, drive_to_done
from tests.fakes.modelapi import CALC, ModelServer
from tests.gitrepo import git

SUBAGENTS = (CONFIG + "research:\n  concurrency: 2\n  subagents:\n"
             "    - {name: alpha, focus: \"How is it built?\"}\n"
             "    - {name: beta, focus: \"How is it tested?\"}\n")


def test_claude_takes_a_run_with_subagents_from_research_to_done(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    ratchet = agent_ratchet("claude", config=SUBAGENTS)
    run_id, _ = drive_to_done(ratchet)

    assert "return a + b" in git(ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
    assert "test_add" in git(ratchet.repo, "show", f"ratchet/{run_id}:test_calc.py")
    # Each phase's turns went through Claude's own tools, one request per turn and one more
    # for the final text; the subagents ran once each.
    turns = {phase: [r.turn for r in model.phase_requests(phase) if r.status == 200]
             for phase in CALC}
    for phase in ("research", "specify", "implement", "repair"):
        assert turns[phase] == list(range(len(CALC[phase].actions) + 1)), (phase, turns)
    assert sorted(turns["subagent"]) == sorted(2 * list(range(4)))
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    for name in ("alpha", "beta"):
        assert "The README is one line." in (folder / f"subagents/{name}.md").read_text()
    # Their notes reach the next phase's prompt.
    assert (folder / "prompts/specify.1.md").read_text().count("The package is tiny.") == 2
    # Every request carried the runner's key, added by the proxy, never the placeholder.
    assert {r.headers.get("x-api-key") for r in model.requests} == {KEYS["ANTHROPIC_API_KEY"]}

    # Usage and cost: the tokens the ledger holds are the tokens the API reported.
    usage = ratchet.status(run_id)["usage"]
    steps = {entry["step"]: entry for entry in usage["steps"] if "subagent" not in entry}
    subagents = [entry for entry in usage["steps"] if "subagent" in entry]
    assert {"research.1", "specify.1", "implement.1", "repair.1"} <= steps.keys()
    for step in ("research.1", "specify.1", "implement.1", "repair.1"):
        reported = model.phase_requests(step.split(".")[0])
        assert steps[step]["input_tokens"] == sum(r.input_tokens for r in reported), step
        assert steps[step]["output_tokens"] == sum(r.output_tokens for r in reported), step
        assert steps[step]["cost_usd"] > 0 and steps[step]["turns"] == len(reported)
    assert sorted(entry["subagent"] for entry in subagents) == ["alpha", "beta"]
    assert sum(entry["input_tokens"] for entry in subagents) == sum(
        r.input_tokens for r in model.phase_requests("subagent"))
    assert usage["total"]["input_tokens"] == sum(r.input_tokens for r in model.requests)
    assert usage["total"]["cost_usd"] > 0 and usage["total"]["unpriced_runs"] == 0


def test_a_slow_model_that_streams_is_not_ended_as_idle(agent_ratchet: MakeRatchet,
                                                        model: ModelServer) -> None:
    # Research's final answer streams for twice the idle timeout, one event at a time (its
    # tool calls, over half of it each); the agent prints as the model streams
    # (--include-partial-messages), so the idle watch sees it working. The timeout leaves
    # Claude Code the few seconds it takes to print anything when it starts.
    model.script.switches.delay_s = 0.5
    model.script.switches.text_chunks = 16
    model.script.switches.slow_phase = "research"
    ratchet = agent_ratchet("claude", config=CONFIG + "agent: {idle_timeout: 5}\n")
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    status = ratchet.status(ratchet.run_id())
    assert status["state"] == "awaiting_approval", status
    assert [e["step"] for e in status["usage"]["steps"]] == ["research.1", "specify.1"]


def test_an_overloaded_model_is_retried_without_charging_an_attempt(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    # Claude Code retries a 529 twice on its own, then exits 1 saying so; the runner retries
    # the step after a backoff.
    model.script.switches.fail_first = 3
    model.script.switches.fail_status = 529
    ratchet = agent_ratchet("claude")
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    run_id = ratchet.run_id()
    assert ratchet.status(run_id)["state"] == "awaiting_approval"
    assert [r.status for r in model.requests[:4]] == [529, 529, 529, 200]
    retried = [e for e in ratchet.events(run_id) if e["type"] == "STEP_RETRY_SCHEDULED"]
    assert [e["step"] for e in retried] == ["research.1"]
    assert "529" in json.dumps(retried)


def test_a_200_kib_prompt_reaches_the_model(agent_ratchet: MakeRatchet,
                                            model: ModelServer) -> None:
    ratchet = agent_ratchet("claude")
    body = ratchet.home.parent / "body.md"
    body.write_text("Add calc.add(a, b).\n\n" + "Background that matters. " * (200 * 1024 // 25))
    created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--body-file",
                      str(body))
    assert created.returncode == 0, created.stderr
    assert ratchet.status(ratchet.run_id())["state"] == "awaiting_approval"
    assert min(r.size for r in model.phase_requests("research")) > 200 * 1024


def test_a_refused_key_stops_the_run_at_once_naming_the_variable(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    # Claude Code retries a 401 ten times over about three minutes on its own; the operator's
    # CLAUDE_CODE_MAX_RETRIES (an agent variable) shortens that here.
    model.script.switches.fail_first = 1000
    model.script.switches.fail_status = 401
    ratchet = agent_ratchet("claude", env={"CLAUDE_CODE_MAX_RETRIES": "1",
                                           "RATCHET_AGENT_ENV": "CLAUDE_CODE_MAX_RETRIES"})
    created = ratchet.create()
    assert created.returncode != 0
    status = ratchet.status(ratchet.run_id())
    assert "ANTHROPIC_API_KEY" in status["reason"], status["reason"]
    # One session, its own two tries; the runner did not retry the step.
    assert [r.status for r in model.requests] == [401, 401]
