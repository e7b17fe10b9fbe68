"""GitHub Copilot CLI (the real ``@github/copilot``, pinned in clis.py) through every phase,
sandbox on, against the scripted model API's Chat Completions behind the egress proxy's
``openai`` route.

Copilot's own endpoint (GitHub's Copilot API, with a GitHub token) cannot be pointed
elsewhere; its BYOK provider can: COPILOT_PROVIDER_TYPE=openai makes the preset point
COPILOT_PROVIDER_BASE_URL at the route with the placeholder key, and the proxy adds the
runner's OPENAI_API_KEY. Asserted from outside: the branch's code, the requests the API
received (with which key), and that the ledger says its cost is unknown (Copilot reports no
tokens).
"""

from __future__ import annotations

import json

from runner.agents.presets import COPILOT_NO_TOKENS
from tests.agents.conftest import KEYS, MakeRatchet
from tests.agents.test_claude import SUBAGENTS
from tests.e2e.harness import CONFIG, drive_to_done
from tests.fakes.modelapi import CALC, ModelServer, Script, Turns
from tests.fakes.modelapi.script import shell, write
from tests.gitrepo import git

BYOK = {"COPILOT_PROVIDER_TYPE": "openai", "COPILOT_MODEL": "gpt-4.1"}


def test_copilot_takes_a_run_with_subagents_from_research_to_done(agent_ratchet: MakeRatchet,
                                                   model: ModelServer) -> None:
    ratchet = agent_ratchet("copilot", config=SUBAGENTS, env=BYOK)
    run_id, _ = drive_to_done(ratchet)

    assert "return a + b" in git(ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
    assert "test_add" in git(ratchet.repo, "show", f"ratchet/{run_id}:test_calc.py")
    for phase in ("research", "specify", "implement", "repair"):
        turns = [r.turn for r in model.phase_requests(phase) if r.status == 200]
        assert turns == list(range(len(CALC[phase].actions) + 1)), (phase, turns)
    assert "FAIL: test_add" in model.phase_requests("implement")[3].tool_output
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    # Two read-only subagents wrote their findings and notes outside their worktree.
    assert sorted(r.turn for r in model.phase_requests("subagent") if r.status == 200) == \
        sorted(2 * list(range(len(CALC["subagent"].actions) + 1)))
    for name in ("alpha", "beta"):
        assert "The README is one line." in (folder / f"subagents/{name}.md").read_text()
    assert (folder / "prompts/specify.1.md").read_text().count("The package is tiny.") == 2
    assert (folder / "spec.md").read_text().startswith("# Spec")
    # The runner's key, added by the proxy, on every request; never the placeholder.
    assert {r.headers.get("authorization") for r in model.requests} == {
        f"Bearer {KEYS['OPENAI_API_KEY']}"}
    # Turns counted; no tokens, so no cost, and the record says why.
    usage = ratchet.status(run_id)["usage"]
    steps = {entry["step"]: entry for entry in usage["steps"]}
    assert steps["implement.1"]["turns"] == len(model.phase_requests("implement"))
    assert COPILOT_NO_TOKENS in json.dumps(usage)


def test_a_read_only_copilot_phase_cannot_run_the_shell(agent_ratchet: MakeRatchet,
                                                        model: ModelServer) -> None:
    # Research asks for the shell once before writing its output: Copilot refuses it
    # (--deny-tool shell), and the run still reaches the spec.
    model.script = Script(phases={**CALC, "research": Turns((
        shell("touch {worktree}/shell-ran"), write("{output}", "# Analysis\n")), "Done.")})
    ratchet = agent_ratchet("copilot", config=CONFIG, env=BYOK)
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    assert ratchet.status(ratchet.run_id())["state"] == "awaiting_approval"
    assert "denied" in model.phase_requests("research")[1].tool_output
    assert "shell-ran" not in git(ratchet.repo, "ls-files")


def test_agent_try_runs_copilot_against_the_trial_model(agent_ratchet: MakeRatchet,
                                                         model: ModelServer) -> None:
    ratchet = agent_ratchet("copilot", env=BYOK)
    done = ratchet("agent", "try", "--agent", "copilot", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "GitHub Copilot CLI 1.0.102" in done.stdout
    assert "ok    trial: copilot reached the trial model" in done.stdout
    assert not model.requests


def test_a_rate_limited_copilot_is_retried_without_charging_an_attempt(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    # Copilot retries a 429 five times on its own, then exits 1 with a rate_limit error; the
    # runner waits and runs the step again.
    model.script.switches.fail_first = 6
    model.script.switches.fail_status = 429
    ratchet = agent_ratchet("copilot", config=CONFIG, env=BYOK)
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    run_id = ratchet.run_id()
    assert ratchet.status(run_id)["state"] == "awaiting_approval"
    assert [r.status for r in model.requests[:7]] == 6 * [429] + [200]
    retried = [e for e in ratchet.events(run_id) if e["type"] == "STEP_RETRY_SCHEDULED"]
    assert [e["step"] for e in retried] == ["research.1"]


def test_a_200_kib_prompt_reaches_the_model(agent_ratchet: MakeRatchet,
                                            model: ModelServer) -> None:
    ratchet = agent_ratchet("copilot", config=CONFIG, env=BYOK)
    body = ratchet.home.parent / "body.md"
    body.write_text("Add calc.add(a, b).\n\n" + "Background that matters. " * (200 * 1024 // 25))
    created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--body-file",
                      str(body))
    assert created.returncode == 0, created.stderr
    assert ratchet.status(ratchet.run_id())["state"] == "awaiting_approval"
    # The whole prompt reached the model; past its BYOK window (64k tokens by default,
    # COPILOT_PROVIDER_MAX_PROMPT_TOKENS) Copilot then compacts the conversation itself.
    assert model.phase_requests("research")[0].size > 200 * 1024
