"""Gemini CLI (the real ``@google/gemini-cli``, pinned in clis.py) through every phase,
sandbox on, against the scripted model API (Gemini's ``streamGenerateContent``) behind the
egress proxy's ``gemini`` route.

The runner's environment holds GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL (the scripted API on
loopback); the agent gets the route and a placeholder, and the proxy sends the key as
``x-goog-api-key``. Asserted from outside: the branch's code, the requests the API received
(with which key), the ledger's usage against what the API reported.
"""

from __future__ import annotations

import json

from tests.agents.conftest import KEYS, MakeRatchet
from tests.agents.test_claude import SUBAGENTS
from tests.e2e.harness import CONFIG, drive_to_done
from tests.fakes.modelapi import CALC, ModelServer
from tests.gitrepo import git

PRICES = {"*": {"input": 0.3, "output": 2.5}}
# A model named: the default ("auto") first asks a flash-lite classifier, quoting the prompt,
# which model should answer each turn; the scripted API would take that for the turn itself.
MODEL = {"GEMINI_MODEL": "gemini-2.5-flash"}


def test_gemini_takes_a_run_with_subagents_from_research_to_done(agent_ratchet: MakeRatchet,
                                                  model: ModelServer) -> None:
    ratchet = agent_ratchet("gemini", config=SUBAGENTS, env={**MODEL,
                                              "RATCHET_AGENT_PRICES": json.dumps(PRICES)})
    run_id, _ = drive_to_done(ratchet)

    assert "return a + b" in git(ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
    assert "test_add" in git(ratchet.repo, "show", f"ratchet/{run_id}:test_calc.py")
    # Every turn went through Gemini CLI's own tools (read_file, write_file, replace,
    # run_shell_command), and implement saw the test fail before repair fixed it.
    for phase in ("research", "specify", "implement", "repair"):
        turns = [r.turn for r in model.phase_requests(phase) if r.status == 200]
        assert turns == list(range(len(CALC[phase].actions) + 1)), (phase, turns)
    assert "FAIL: test_add" in model.phase_requests("implement")[3].tool_output
    # Read-only phases (auto_edit) are not offered the shell; implement and repair (yolo) are.
    offered = {phase: {tool for r in model.phase_requests(phase) for tool in r.tools}
               for phase in CALC}
    for phase in ("research", "specify", "subagent"):
        assert "write_file" in offered[phase] and "run_shell_command" not in offered[phase]
    assert "run_shell_command" in offered["implement"] & offered["repair"]
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    # Two read-only subagents wrote their findings and notes outside their worktree.
    assert sorted(r.turn for r in model.phase_requests("subagent") if r.status == 200) == \
        sorted(2 * list(range(len(CALC["subagent"].actions) + 1)))
    for name in ("alpha", "beta"):
        assert "The README is one line." in (folder / f"subagents/{name}.md").read_text()
    assert (folder / "prompts/specify.1.md").read_text().count("The package is tiny.") == 2
    assert (folder / "spec.md").read_text().startswith("# Spec")
    assert (folder / "implementation/summary.md").read_text() == "Implemented calc.add.\n"
    # The runner's key, added by the proxy, on every request; never the placeholder.
    assert {r.headers.get("x-goog-api-key") for r in model.requests} == {KEYS["GEMINI_API_KEY"]}
    # Tokens as the API reported them, priced from the table (Gemini CLI reports no cost).
    usage = ratchet.status(run_id)["usage"]
    assert usage["total"]["input_tokens"] == sum(r.input_tokens for r in model.requests)
    assert usage["total"]["output_tokens"] == sum(r.output_tokens for r in model.requests)
    assert usage["total"]["cost_usd"] > 0 and usage["total"]["unpriced_runs"] == 0


def test_a_refused_gemini_key_stops_the_run_naming_the_variable(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    model.script.switches.fail_first = 100
    model.script.switches.fail_status = 401
    ratchet = agent_ratchet("gemini", config=CONFIG, env=MODEL)
    created = ratchet.create()
    status = ratchet.status(ratchet.run_id())
    assert status["state"] != "awaiting_approval", created.stdout
    text = json.dumps(ratchet.events(ratchet.run_id()))
    assert "GEMINI_API_KEY" in text
    # Refused once, not retried: credentials are the operator's to fix.
    assert [r.status for r in model.requests if r.phase] == [401]


def test_agent_try_runs_gemini_against_the_trial_model(agent_ratchet: MakeRatchet,
                                                        model: ModelServer) -> None:
    ratchet = agent_ratchet("gemini")
    done = ratchet("agent", "try", "--agent", "gemini", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(version 0.61.0)" in done.stdout
    assert "ok    trial: gemini reached the trial model" in done.stdout
    assert not model.requests  # the trial never reaches the configured endpoint


def test_an_unavailable_model_does_not_fail_the_run(agent_ratchet: MakeRatchet,
                                                    model: ModelServer) -> None:
    # Gemini CLI waits out a 503 on its own (with backoff: minutes before it gives up, when
    # the runner's classifier takes over, tests/test_provider_errors.py).
    model.script.switches.fail_first = 2
    model.script.switches.fail_status = 503
    ratchet = agent_ratchet("gemini", config=CONFIG, env=MODEL)
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    assert ratchet.status(ratchet.run_id())["state"] == "awaiting_approval"
    assert [r.status for r in model.requests[:3]] == [503, 503, 200]


def test_a_200_kib_prompt_reaches_the_model(agent_ratchet: MakeRatchet,
                                            model: ModelServer) -> None:
    ratchet = agent_ratchet("gemini", config=CONFIG, env=MODEL)
    body = ratchet.home.parent / "body.md"
    body.write_text("Add calc.add(a, b).\n\n" + "Background that matters. " * (200 * 1024 // 25))
    created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--body-file",
                      str(body))
    assert created.returncode == 0, created.stderr
    assert ratchet.status(ratchet.run_id())["state"] == "awaiting_approval"
    assert min(r.size for r in model.phase_requests("research")) > 200 * 1024
