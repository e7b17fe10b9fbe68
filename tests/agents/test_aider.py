"""aider (the real ``aider-chat``, pinned in clis.py, in a virtual environment of its own)
through every phase, sandbox on, against the scripted model API behind the egress proxy's
route.

aider calls Chat Completions without tools: it edits through its reply's text, here its
``diff`` edit format (SEARCH/REPLACE blocks), the scripted model writing every file of a phase,
the output by its absolute path, in one answer. The runner holds the key and
``OPENAI_BASE_URL``; the model is the operator's choice (``AIDER_MODEL``). What happened is
asserted from outside: the branch's code, the output files, the requests and the ledger.
"""

from __future__ import annotations

from tests.agents.conftest import KEYS, MakeRatchet
from tests.agents.test_claude import SUBAGENTS
from tests.e2e.harness import CONFIG, drive_to_done
from tests.fakes.modelapi import CALC, ModelServer
from tests.fakes.modelapi.script import Turns, write
from tests.gitrepo import git

AIDER_ENV = {"AIDER_MODEL": "openai/gpt-4o", "ANTHROPIC_API_KEY": ""}


def test_aider_takes_a_run_with_subagents_from_research_to_done(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    ratchet = agent_ratchet("aider", config=SUBAGENTS, env=AIDER_ENV)
    run_id, _ = drive_to_done(ratchet)

    assert "return a + b" in git(ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
    assert "test_add" in git(ratchet.repo, "show", f"ratchet/{run_id}:test_calc.py")
    # Nothing of aider's own reached the branch (its history stays in the output folder).
    assert sorted(git(ratchet.repo, "diff", "--name-only", f"HEAD...ratchet/{run_id}").split()
                  ) == ["calc.py", "test_calc.py"]
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    assert "unittest" in (folder / "research/repository-analysis.md").read_text()
    assert "calc.add(a, b)" in (folder / "spec.md").read_text()
    for name in ("alpha", "beta"):
        assert "The README is one line." in (folder / f"subagents/{name}.md").read_text()
    assert (folder / "prompts/specify.1.md").read_text().count("The package is tiny.") == 2
    # One answer per session, through the proxy with the runner's key.
    asked = model.phase_requests()
    assert {r.api for r in asked} == {"chat"}
    assert sorted(r.phase for r in asked if r.status == 200) == sorted(
        ["research", "specify", "implement", "repair", "subagent", "subagent"])
    assert {r.headers.get("authorization") for r in model.requests} == {
        f"Bearer {KEYS['OPENAI_API_KEY']}"}

    # aider prints its tokens and cost per message; the ledger holds them.
    usage = ratchet.status(run_id)["usage"]
    steps = {entry["step"]: entry for entry in usage["steps"] if "subagent" not in entry}
    for step in ("research.1", "specify.1", "implement.1", "repair.1"):
        assert steps[step]["input_tokens"] > 0 and steps[step]["output_tokens"] > 0, step
        assert steps[step]["cost_usd"] > 0, step
    assert sorted(e["subagent"] for e in usage["steps"] if "subagent" in e) == ["alpha", "beta"]
    assert usage["total"]["unpriced_runs"] == 0


def test_aider_writing_the_worktree_in_research_stops_the_run_for_a_human(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    # aider has no read-only mode: its edits apply wherever the reply points. The runner's
    # check after the step is what holds it: the change is kept as evidence, not in the run.
    model.script.phases = {**CALC, "research": Turns(
        (write("{worktree}/notes.md", "jotted\n"), *CALC["research"].actions),
        "Research written.")}
    ratchet = agent_ratchet("aider", env=AIDER_ENV)
    assert ratchet.create().returncode == 1
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "needs_human"
    assert "research agent changed the worktree (notes.md)" in status["reason"]
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    assert "jotted" in (folder / "evidence/research.1.policy-violation.patch").read_text()


def test_a_refused_key_stops_the_run_at_once_naming_the_variable(
        agent_ratchet: MakeRatchet, model: ModelServer) -> None:
    # aider prints litellm's AuthenticationError and exits 0 with no output; the runner reads
    # it as refused credentials: no retry, the run stops saying what to set.
    model.script.switches.fail_first = 1000
    model.script.switches.fail_status = 401
    ratchet = agent_ratchet("aider", env=AIDER_ENV)
    assert ratchet.create().returncode != 0
    status = ratchet.status(ratchet.run_id())
    assert "OPENAI_API_KEY" in status["reason"], status["reason"]
    assert [r.status for r in model.requests] == [401]


def test_a_slow_model_that_streams_is_not_ended_as_idle(agent_ratchet: MakeRatchet,
                                                        model: ModelServer) -> None:
    # Research's one answer streams for twice the idle timeout, one event at a time; aider
    # prints each piece as it arrives. The timeout leaves aider the seconds it takes to print
    # anything when it starts (importing litellm).
    model.script.switches.delay_s = 0.5
    model.script.switches.text_chunks = 64
    model.script.switches.slow_phase = "research"
    ratchet = agent_ratchet("aider", config=CONFIG + "agent: {idle_timeout: 15}\n",
                            env=AIDER_ENV)
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    status = ratchet.status(ratchet.run_id())
    assert status["state"] == "awaiting_approval", status
    assert [e["step"] for e in status["usage"]["steps"]] == ["research.1", "specify.1"]


def test_a_200_kib_prompt_reaches_the_model(agent_ratchet: MakeRatchet,
                                            model: ModelServer) -> None:
    ratchet = agent_ratchet("aider", env=AIDER_ENV)
    body = ratchet.home.parent / "body.md"
    body.write_text("Add calc.add(a, b).\n\n" + "Background that matters. " * (200 * 1024 // 25))
    created = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--body-file",
                      str(body))
    assert created.returncode == 0, created.stderr
    assert ratchet.status(ratchet.run_id())["state"] == "awaiting_approval"
    assert min(r.size for r in model.phase_requests("research")) > 200 * 1024
