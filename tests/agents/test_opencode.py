"""opencode (the real ``opencode-ai``, pinned in clis.py) through every phase, sandbox on,
against the scripted model API behind the egress proxy's route.

opencode's ``openai`` provider speaks the Responses API at ``OPENAI_BASE_URL``; the runner
holds the key and the base URL, the agent gets the proxy's route and a placeholder. The
runner holds no other provider's key here, so ``openai`` is the one provider opencode can use
(with several, the operator names the model in its seeded config). What happened is asserted from
outside: the branch's code, the output files each phase wrote through opencode's own tools
(its permission config lets it write the output folder, outside its project), the requests
the model API received, and the ledger's usage.
"""

from __future__ import annotations

import json

from tests.agents.conftest import KEYS, MakeRatchet
from tests.agents.test_claude import SUBAGENTS
from tests.e2e.harness import drive_to_done
from tests.fakes.modelapi import CALC, ModelServer
from tests.fakes.modelapi.script import Turns, read, write
from tests.gitrepo import git

# With several providers' keys opencode picks the provider (and model) itself: an operator
# names the model in its seeded config; here the runner holds only the OpenAI key.
ONLY_OPENAI = {"ANTHROPIC_API_KEY": "", "GEMINI_API_KEY": ""}


def test_opencode_takes_a_run_with_subagents_from_research_to_done(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    ratchet = agent_ratchet("opencode", config=SUBAGENTS, env=ONLY_OPENAI)
    run_id, _ = drive_to_done(ratchet)

    assert "return a + b" in git(ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
    assert "test_add" in git(ratchet.repo, "show", f"ratchet/{run_id}:test_calc.py")
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    # Each phase's output is what the model wrote through opencode's tools, not its chat.
    assert "unittest" in (folder / "research/repository-analysis.md").read_text()
    assert "calc.add(a, b)" in (folder / "spec.md").read_text()
    for name in ("alpha", "beta"):
        assert "The README is one line." in (folder / f"subagents/{name}.md").read_text()
    assert (folder / "prompts/specify.1.md").read_text().count("The package is tiny.") == 2
    # The model was asked through the proxy with the runner's key.
    assert {r.api for r in model.phase_requests()} == {"responses"}
    assert {r.headers.get("authorization") for r in model.requests} == {
        f"Bearer {KEYS['OPENAI_API_KEY']}"}

    usage = ratchet.status(run_id)["usage"]
    steps = {entry["step"]: entry for entry in usage["steps"] if "subagent" not in entry}
    assert {"research.1", "specify.1", "implement.1", "repair.1"} <= steps.keys()
    for step in ("research.1", "specify.1", "implement.1", "repair.1"):
        assert steps[step]["input_tokens"] > 0 and steps[step]["output_tokens"] > 0, step
        assert steps[step]["cost_usd"] > 0, step
    assert sorted(e["subagent"] for e in usage["steps"] if "subagent" in e) == ["alpha", "beta"]
    assert usage["total"]["unpriced_runs"] == 0


def test_opencode_refuses_a_research_model_that_writes_the_worktree(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    # The model jots notes into the worktree and reads a .env file before writing its
    # analysis: opencode's permission config for research refuses the write (it has no
    # read-only mode), the read asks and is rejected; both refusals reach the model, which
    # goes on (without continue_loop_on_deny the rejection ended the session with no output),
    # and the run is not stopped at the runner's worktree check. (Its shell is denied too:
    # opencode then offers the model no shell tool at all.)
    model.script.phases = {**CALC, "research": Turns(
        (write("{worktree}/notes.md", "jotted\n"), read("{worktree}/.env"),
         *CALC["research"].actions),
        "Research written.")}
    ratchet = agent_ratchet("opencode", env=ONLY_OPENAI)
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "awaiting_approval", status
    assert [e["step"] for e in status["usage"]["steps"]] == ["research.1", "specify.1"]
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    assert "unittest" in (folder / "research/repository-analysis.md").read_text()
    # Every turn was answered: the refusals reached the model as tool errors.
    assert max(r.turn for r in model.phase_requests("research")) == 4
    for worktree in (ratchet.home / "work" / "runs" / run_id).iterdir():
        assert not (worktree / "notes.md").exists()


def test_a_rate_limited_model_is_retried_without_charging_an_attempt(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    # opencode retries a 429 a few times on its own (the answer says retry-after 0), then
    # exits 1 with an APIError event (statusCode 429, isRetryable); the runner retries the step
    # after a backoff, and the next session gets through.
    model.script.switches.fail_first = 10
    model.script.switches.fail_status = 429
    ratchet = agent_ratchet("opencode", env=ONLY_OPENAI)
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    run_id = ratchet.run_id()
    assert ratchet.status(run_id)["state"] == "awaiting_approval"
    assert [r.status for r in model.requests[:10]] == 10 * [429]
    retried = [e for e in ratchet.events(run_id) if e["type"] == "STEP_RETRY_SCHEDULED"]
    assert [e["step"] for e in retried] == ["research.1"]
    assert "429" in json.dumps(retried)



def test_a_200_kib_prompt_reaches_the_model(agent_ratchet: MakeRatchet,
                                            model: ModelServer) -> None:
    ratchet = agent_ratchet("opencode", env=ONLY_OPENAI)
    body = ratchet.home.parent / "body.md"
    body.write_text("Add calc.add(a, b).\n\n" + "Background that matters. " * (200 * 1024 // 25))
    created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--body-file",
                      str(body))
    assert created.returncode == 0, created.stderr
    assert ratchet.status(ratchet.run_id())["state"] == "awaiting_approval"
    assert min(r.size for r in model.phase_requests("research")) > 200 * 1024
