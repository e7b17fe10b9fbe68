"""Codex (the real ``@openai/codex``, pinned in clis.py) through every phase, sandbox on,
against the scripted model API behind the egress proxy's route.

Codex 0.171.0 runs its own sandbox (a bubblewrap it ships) nested in Ratchet's; it tries the
Responses API over a WebSocket first and falls back to HTTPS when the endpoint has none (the
scripted API has none). What happened is asserted from outside: the branch's code, the requests
the model API received (with which key), the run's events and the ledger's usage.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.agents.conftest import KEYS, MakeRatchet
from tests.e2e.harness import CONFIG, drive_to_done
from tests.fakes.modelapi import CALC, ModelServer
from tests.gitrepo import git

# Dollars per million tokens for a model the price table does not know (Codex names none).
PRICES = {"*": {"input": 2.0, "output": 8.0, "cache_read": 0.5}}
SUBAGENTS = (CONFIG + "research:\n  concurrency: 2\n  subagents:\n"
             "    - {name: alpha, focus: \"How is it built?\"}\n"
             "    - {name: beta, focus: \"How is it tested?\"}\n")


def codex_seed(folder: Path) -> Path:
    """The operator's Codex config (RATCHET_AGENT_HOME_SEED): a model Codex has no metadata
    for gets its plain tools (exec_command), which the scripted model calls; Codex's own
    models get a JavaScript tool (exec) the script does not drive."""
    seed = folder / ".codex"
    seed.mkdir(parents=True)
    (seed / "config.toml").write_text('model = "ratchet-fake"\n')
    return seed


def codex_env(tmp_path: Path) -> dict[str, str]:
    return {"RATCHET_AGENT_HOME_SEED": str(codex_seed(tmp_path / "seed")),
            "RATCHET_AGENT_PRICES": json.dumps(PRICES)}


def test_codex_takes_a_run_with_subagents_from_research_to_done(
        agent_ratchet: MakeRatchet, model: ModelServer, tmp_path: Path) -> None:
    # A fifth of every answer's input is reported as cached (inside input_tokens, as OpenAI
    # reports it): the ledger must count it once.
    model.script.switches.cached_share = 0.2
    ratchet = agent_ratchet("codex", config=SUBAGENTS, env=codex_env(tmp_path))
    run_id, _ = drive_to_done(ratchet)

    assert "return a + b" in git(ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
    assert "test_add" in git(ratchet.repo, "show", f"ratchet/{run_id}:test_calc.py")
    # The subagents ran once each, wrote their findings and notes, and the notes reached the
    # next phase's prompt.
    assert sorted(r.turn for r in model.phase_requests("subagent") if r.status == 200) == sorted(
        2 * list(range(len(CALC["subagent"].actions) + 1)))
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    for name in ("alpha", "beta"):
        assert "The README is one line." in (folder / f"subagents/{name}.md").read_text()
    assert (folder / "prompts/specify.1.md").read_text().count("The package is tiny.") == 2
    # Every turn went through Codex's own shell in its own sandbox (nested in Ratchet's), and
    # implement saw the test fail before repair fixed it.
    for phase in ("research", "specify", "implement", "repair"):
        turns = [r.turn for r in model.phase_requests(phase) if r.status == 200]
        assert turns == list(range(len(CALC[phase].actions) + 1)), (phase, turns)
    implement = model.phase_requests("implement")
    assert "Process exited with code 1" in implement[3].tool_output
    assert "FAIL: test_add" in implement[3].tool_output
    # The model wrote the outputs; Codex's last message did not replace them.
    assert (folder / "implementation/summary.md").read_text() == "Implemented calc.add.\n"
    assert (folder / "spec.md").read_text().startswith("# Spec")
    # The runner's key, added by the proxy, on every request.
    assert {r.headers.get("authorization") for r in model.requests} == {
        f"Bearer {KEYS['OPENAI_API_KEY']}"}
    # Tokens as the API reported them, cached input once, priced from the table (Codex
    # reports no cost), per step and subagent.
    usage = ratchet.status(run_id)["usage"]
    cached = sum(r.cached_tokens for r in model.requests)
    assert cached > 0
    assert usage["total"]["input_tokens"] == sum(r.input_tokens for r in model.requests) - cached
    assert usage["total"]["cache_read_tokens"] == cached
    assert usage["total"]["output_tokens"] == sum(r.output_tokens for r in model.requests)
    expected = (usage["total"]["input_tokens"] * 2.0 + cached * 0.5
                + usage["total"]["output_tokens"] * 8.0) / 1e6
    assert abs(usage["total"]["cost_usd"] - expected) < 1e-6
    assert usage["total"]["unpriced_runs"] == 0
    steps = {e["step"]: e for e in usage["steps"] if "subagent" not in e}
    for step in ("research.1", "specify.1", "implement.1", "repair.1"):
        reported = model.phase_requests(step.split(".")[0])
        assert steps[step]["output_tokens"] == sum(r.output_tokens for r in reported), step
        assert steps[step]["cost_usd"] > 0 and steps[step]["cost_priced_as"] == "*"
        assert steps[step]["model"] == "ratchet-fake"  # read from the answers Codex logged
    assert sorted(e["subagent"] for e in usage["steps"] if "subagent" in e) == ["alpha", "beta"]


def test_a_rate_limited_codex_is_retried_without_charging_an_attempt(
        agent_ratchet: MakeRatchet, model: ModelServer, tmp_path: Path) -> None:
    # Codex 0.171 asks six times on a 429 (once, then "Reconnecting... n/5"), then exits 1
    # with "exceeded retry limit, last status: 429 Too Many Requests"; the runner retries the
    # step after a backoff.
    model.script.switches.fail_first = 6
    model.script.switches.fail_status = 429
    ratchet = agent_ratchet("codex", env=codex_env(tmp_path))
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    # Its plugins and analytics are off: nothing tried a host the allowlist refuses.
    assert "blocked a connection" not in created.stderr
    run_id = ratchet.run_id()
    assert ratchet.status(run_id)["state"] == "awaiting_approval"
    assert [r.status for r in model.requests[:7]] == [429] * 6 + [200]
    retried = [e for e in ratchet.events(run_id) if e["type"] == "STEP_RETRY_SCHEDULED"]
    assert [e["step"] for e in retried] == ["research.1"]
    assert "429" in json.dumps(retried)


def test_a_tiny_dollar_budget_stops_a_codex_run(agent_ratchet: MakeRatchet,
                                                model: ModelServer, tmp_path: Path) -> None:
    # Codex reports tokens only: the price table turns research's into more dollars than the
    # budget holds, and specify never starts.
    ratchet = agent_ratchet("codex", config=CONFIG + "budget: {max_cost_usd: 0.0001}\n",
                            env=codex_env(tmp_path))
    assert ratchet.create().returncode == 1
    status = ratchet.status(ratchet.run_id())
    assert (status["state"], status["step"]) == ("needs_human", "specify.1"), status
    assert status["next_action"]["kind"] == "raise_budget"
    assert status["reason"].startswith("the run's budget is spent"), status["reason"]
    assert [e["step"] for e in status["usage"]["steps"]] == ["research.1"]
    assert status["usage"]["total"]["cost_usd"] > 0.0001
    assert {r.phase for r in model.phase_requests()} == {"research"}


def test_a_refused_key_stops_a_codex_run_at_once_naming_what_to_set(
        agent_ratchet: MakeRatchet, model: ModelServer, tmp_path: Path) -> None:
    # Codex asks six times on a 401 too, then exits 1 with "unexpected status 401
    # Unauthorized"; the runner does not retry it.
    model.script.switches.fail_first = 1000
    model.script.switches.fail_status = 401
    ratchet = agent_ratchet("codex", env=codex_env(tmp_path))
    assert ratchet.create().returncode == 1
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert (status["state"], status["step"], status["attempt"]) == (
        "needs_human", "research.1", 1), status
    assert "401" in status["reason"] and "set OPENAI_API_KEY" in status["reason"]
    assert not [e for e in ratchet.events(run_id) if e["type"] == "STEP_RETRY_SCHEDULED"]
    assert {r.status for r in model.requests} == {401}


def test_a_200_kib_prompt_reaches_codex_on_stdin(agent_ratchet: MakeRatchet,
                                                 model: ModelServer, tmp_path: Path) -> None:
    ratchet = agent_ratchet("codex", env=codex_env(tmp_path))
    body = ratchet.home.parent / "body.md"
    body.write_text("Add calc.add(a, b).\n\n" + "Background that matters. " * (200 * 1024 // 25))
    created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--body-file",
                      str(body))
    assert created.returncode == 0, created.stderr
    assert ratchet.status(ratchet.run_id())["state"] == "awaiting_approval"
    assert min(r.size for r in model.phase_requests("research")) > 200 * 1024


def test_a_slow_model_that_streams_is_not_ended_as_idle(agent_ratchet: MakeRatchet,
                                                        model: ModelServer,
                                                        tmp_path: Path) -> None:
    # Research's final answer streams for twice the idle timeout, one event at a time.
    model.script.switches.delay_s = 0.5
    model.script.switches.text_chunks = 16
    model.script.switches.slow_phase = "research"
    ratchet = agent_ratchet("codex", config=CONFIG + "agent: {idle_timeout: 5}\n",
                            env=codex_env(tmp_path))
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    status = ratchet.status(ratchet.run_id())
    assert status["state"] == "awaiting_approval", status
    assert [e["step"] for e in status["usage"]["steps"]] == ["research.1", "specify.1"]
