"""Research subagents through a real engine: SQLite, git, bubblewrap and the scripted agent
(its ``subagent`` phase; ``AGENT_SUBAGENT_SLEEP``, ``AGENT_SUBAGENT_FAIL``, ``AGENT_PLAN``,
``AGENT_SUBAGENT_MEET``, ``AGENT_SUBAGENT_HOLD``).

Declared subagents run in parallel, each in its own sandbox on a read-only view of the
worktree; their artifacts reach the run directory and, by path and note only, the specify
prompt. A crash after some results were recorded runs only the others; a dynamic plan is
validated; a failed subagent is recorded with its log tail and stops the run only under
``require_all``.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.compose import build_engine
from app.settings import Settings
from runner.engine import Engine
from runner.ledger import open_store
from runner.ledger.store import Store
from runner.names import EventType, SignalKind
from runner.signal_payloads import RaiseBudget
from runner.workflow import State
from tests.e2e.harness import (
    AGENT,
    CONFIG,
    Ratchet,
    make_target_repo,
    process_alive,
    processes_with_env,
)

FOCUS = {"alpha": "How is it built?", "beta": "How is it tested?", "gamma": "What breaks?"}


def research_config(names: list[str], extra: str = "") -> str:
    entries = "".join(f"    - {{name: {n}, focus: {json.dumps(FOCUS[n])}}}\n" for n in names)
    return f"{CONFIG}research:\n  concurrency: 3\n{extra}  subagents:\n{entries}"


Make = Callable[..., tuple[Engine, Store, Ratchet]]


@pytest.fixture
def make_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Make]:
    """An in-process engine whose scripted agent sees ``env``, one repository per config."""
    stores: list[Store] = []

    def make(env: dict[str, str], *configs: str) -> tuple[Engine, Store, list[Ratchet]]:
        home = tmp_path / f"home{len(stores)}"
        ratchets = [Ratchet(home=home, repo=make_target_repo(
            tmp_path / f"repo{len(stores)}-{i}", config=config)) for i, config in
            enumerate(configs)]
        ratchets[0].shared.mkdir(parents=True, exist_ok=True)
        for name in ("AGENT_SUBAGENT_SLEEP", "AGENT_SUBAGENT_FAIL", "AGENT_PLAN",
                     "AGENT_SUBAGENT_MEET", "AGENT_SUBAGENT_HOLD"):
            monkeypatch.delenv(name, raising=False)
        channels = {**env, "AGENT_LOG": str(ratchets[0].agent_log)}
        for name, value in channels.items():
            monkeypatch.setenv(name, value)
        settings = Settings(home=home, agent_command=f"{sys.executable} {AGENT}",
                            sandbox_rw=str(ratchets[0].shared), agent_env=",".join(channels))
        store = open_store(settings.ledger_url)
        stores.append(store)
        return build_engine(store, settings), store, ratchets

    yield make  # type: ignore[misc]
    for store in stores:
        store.close()


def start(engine: Engine, ratchet: Ratchet) -> str:
    return engine.create_local_run(ratchet.repo, title="Add calc", body="Add calc.add(a, b).").id


def results(store: Store, run_id: str) -> dict[str, dict]:
    """Each subagent's recorded result, by name (every record, to count them)."""
    found: dict[str, dict] = {}
    for event in store.events(run_id):
        if event.type in {EventType.SUBAGENT_COMPLETED, EventType.SUBAGENT_FAILED}:
            result = event.data["result"]
            assert result["name"] not in found, f"{result['name']} recorded twice"
            found[result["name"]] = result
    return found


def started(ratchet: Ratchet) -> list[str]:
    """The subagents the scripted agent started, in order (a killed one included)."""
    path = Path(f"{ratchet.agent_log}.started")
    return path.read_text().split() if path.exists() else []


def test_three_subagents_run_in_parallel_and_the_specify_prompt_gets_paths_and_notes(
        make_engine: Make, tmp_path: Path) -> None:
    # Each subagent waits until all three have started: run one at a time, the first would
    # wait in vain and fail (order, not wall time: a loaded machine changes nothing).
    engine, store, (three,) = make_engine(
        {"AGENT_SUBAGENT_MEET": "3"}, research_config(["alpha", "beta", "gamma"]))

    run_id = start(engine, three)
    assert engine.drive(run_id).state is State.AWAITING_APPROVAL
    assert set(results(store, run_id)) == set(FOCUS)  # each recorded once

    folder = three.export(run_id, tmp_path / "export")
    for name in FOCUS:
        artifact = (folder / "subagents" / f"{name}.md").read_text()
        assert FOCUS[name] in artifact
        assert "worktree read-only: yes" in artifact  # its sandbox's view of the worktree
    fan_in = (folder / "research/subagents.md").read_text()
    prompt = (folder / "prompts/specify.1.md").read_text()
    for name in FOCUS:
        assert f"## {name}: completed" in fan_in
        assert f"subagents/{name}.md" in prompt
        assert f"NOTE-{name}: the {name} part is simple." in prompt
    assert "LOG-LINE" not in prompt  # the subagents' logs are evidence only
    # The specify agent read the artifacts themselves, shown to it read-only.
    assert "Read subagent artifacts: alpha.md, beta.md, gamma.md" in (
        folder / "spec.md").read_text()

    # Every subagent is an agent run on the run's usage; the status and the tracking comment
    # list them.
    runs = [(s["step"], s.get("subagent")) for s in three.status(run_id)["usage"]["steps"]]
    assert Counter(runs) == Counter([("research.1", None), ("specify.1", None)]
                                    + [("research.1", name) for name in FOCUS])
    status = three("status", run_id)
    assert ("subagents: alpha completed (subagents/alpha.md), beta completed"
            in status.stdout), status.stdout
    assert [row["status"] for row in three.status(run_id)["subagents"]] == ["completed"] * 3
    [tracking] = [c for c in three.outbox(run_id).comments if c["name"] == f"{run_id}/tracking"]
    assert ("Subagents: `alpha` completed (`subagents/alpha.md`) · `beta` completed"
            in tracking["text"])


def test_a_crash_after_two_of_three_results_runs_only_the_third(tmp_path: Path) -> None:
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(
        tmp_path / "repo", config=research_config(["alpha", "beta", "gamma"])))
    # All three start before any finishes (MEET); gamma is still running when the crash comes
    # after the second result (HOLD, on its first start only): whatever the machine's load.
    ratchet.env.update({"AGENT_SUBAGENT_MEET": "3", "AGENT_SUBAGENT_HOLD": "gamma"})

    crashed = ratchet.create(extra={"RATCHET_CRASH_AT": "after_subagent_result:research.1:2"})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    run_id = ratchet.run_id()
    before = ratchet.agent_runs()
    assert Counter(before) == Counter(["research.1", "research.1/alpha", "research.1/beta"])

    resumed = ratchet("resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert ratchet.status(run_id)["state"] == "awaiting_approval"
    # The resume ran the third subagent and moved on: not research, not the first two.
    assert ratchet.agent_runs()[len(before):] == ["research.1/gamma", "specify.1"]
    assert Counter(ratchet.agent_runs()) == Counter(
        ["research.1", "research.1/alpha", "research.1/beta", "research.1/gamma", "specify.1"])
    # Counted as they started: the first two once across the whole run, the third killed
    # mid-way by the crash and started again.
    assert Counter(started(ratchet)) == Counter(
        {"research.1/alpha": 1, "research.1/beta": 1, "research.1/gamma": 2})
    events = ratchet.events(run_id)
    recorded = Counter(e["data"]["result"]["name"] for e in events
                       if e["type"] == "SUBAGENT_COMPLETED")
    assert recorded == Counter(list(FOCUS))  # each recorded once
    assert [e["type"] for e in events].count("SUBAGENTS_PLANNED") == 1
    assert "LEASE_EXPIRED" in {e["type"] for e in events}


def test_a_dynamic_plan_is_validated_and_run(make_engine: Make, tmp_path: Path) -> None:
    plan = [{"name": "cache", "focus": "Where is state cached?"},
            {"name": "front-end", "focus": "Which views change?"}]
    engine, store, (ratchet,) = make_engine(
        {"AGENT_PLAN": json.dumps(plan)}, research_config(["alpha"]))
    run_id = start(engine, ratchet)

    assert engine.drive(run_id).state is State.AWAITING_APPROVAL
    assert set(results(store, run_id)) == {"alpha", "cache", "front-end"}
    assert json.loads(store.read_artifact(run_id, "research/subagent-plan.json") or b"") == [
        {"name": "alpha", "focus": FOCUS["alpha"]}, *plan]
    assert "Where is state cached?" in (store.read_artifact(run_id, "subagents/cache.md")
                                        or b"").decode()


@pytest.mark.parametrize(("plan", "problem"), [
    ([{"name": "Data Base", "focus": "Which tables?"}],
     "[0].name: 'Data Base' is not a subagent name"),
    ([{"name": f"part-{n}", "focus": "Anything?"} for n in range(3)],
     "plans 3 subagent(s) and 1 are declared, more than research.max_subagents allows (3)"),
])
def test_an_invalid_plan_fails_the_step_naming_the_problem(
        make_engine: Make, plan: list[dict[str, str]], problem: str) -> None:
    engine, store, (ratchet,) = make_engine(
        {"AGENT_PLAN": json.dumps(plan)}, research_config(["alpha"], "  max_subagents: 3\n"))
    run_id = start(engine, ratchet)

    failed = engine.drive(run_id)
    assert failed.state is State.FAILED and failed.step == "research.1"
    assert problem in (failed.reason or "") and "RATCHET_SUBAGENT_PLAN" in (failed.reason or "")
    assert json.loads(store.read_artifact(
        run_id, "evidence/research.1.subagent-plan.json") or b"") == plan
    assert not results(store, run_id) and ratchet.agent_runs() == ["research.1"]


def test_a_failed_subagent_is_recorded_and_only_require_all_stops_the_run(
        make_engine: Make) -> None:
    engine, store, (lenient, strict) = make_engine(
        {"AGENT_SUBAGENT_FAIL": "beta"}, research_config(["alpha", "beta"]),
        research_config(["alpha", "beta"], "  require_all: true\n"))
    lenient_id, strict_id = start(engine, lenient), start(engine, strict)

    # Without require_all the failure is recorded, with its log tail, and the run goes on.
    assert engine.drive(lenient_id).state is State.AWAITING_APPROVAL
    found = results(store, lenient_id)
    assert found["alpha"]["status"] == "completed" and found["beta"]["status"] == "failed"
    assert "exploded: no such table" in found["beta"]["log_tail"]
    assert "exited 3" in found["beta"]["error"] and found["beta"]["class"] == "deterministic"
    fan_in = (store.read_artifact(lenient_id, "research/subagents.md") or b"").decode()
    assert "## beta: failed" in fan_in and "exploded" not in fan_in
    prompt = (store.read_artifact(lenient_id, "prompts/specify.1.md") or b"").decode()
    assert "## beta: failed" in prompt and "LOG-LINE" not in prompt

    # With require_all the run stops for a human, naming the failed subagent.
    stopped = engine.drive(strict_id)
    assert stopped.state is State.NEEDS_HUMAN and stopped.step == "research.1"
    assert "beta" in (stopped.reason or "") and "require_all" in (stopped.reason or "")
    evidence = json.loads(store.read_artifact(strict_id, "evidence/research.1.1.json") or b"")
    assert "exploded" in evidence["evidence"]["failed"][0]["log_tail"]

    # A retry runs the failed one again, not the completed one, nor the research agent.
    engine.signal(strict_id, SignalKind.RETRY, author="ann")
    strict.agent_log.write_text("")
    assert engine.drive(strict_id).state is State.NEEDS_HUMAN  # beta fails again
    assert strict.agent_runs() == []  # nothing completed: beta exited 3 before logging
    failures = [e for e in store.events(strict_id) if e.type == EventType.SUBAGENT_FAILED]
    assert [e.data["result"]["name"] for e in failures] == ["beta", "beta"]
    assert [e.data["result"]["name"] for e in store.events(strict_id)
            if e.type == EventType.SUBAGENT_COMPLETED] == ["alpha"]


def test_subagents_count_against_the_budget_and_a_raise_runs_the_rest(
        make_engine: Make) -> None:
    engine, store, (ratchet,) = make_engine(
        {}, research_config(["alpha", "beta", "gamma"]) + "budget: {max_agent_runs: 3}\n")
    run_id = start(engine, ratchet)

    # Research is one agent run; two subagents in flight make three: the third never starts.
    stopped = engine.drive(run_id)
    assert stopped.state is State.NEEDS_HUMAN and stopped.step == "research.1"
    assert "max_agent_runs" in (stopped.reason or "") and "gamma" in (stopped.reason or "")
    assert set(results(store, run_id)) == {"alpha", "beta"}

    engine.signal(run_id, SignalKind.BUDGET, author="ann", payload=RaiseBudget(amount="+2runs"))
    assert engine.drive(run_id).state is State.AWAITING_APPROVAL
    assert Counter(ratchet.agent_runs()) == Counter(
        ["research.1", "research.1/alpha", "research.1/beta", "research.1/gamma", "specify.1"])


def test_a_crash_before_the_plan_was_recorded_adopts_the_research_agent_with_its_plan(
        tmp_path: Path) -> None:
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    ratchet.env["AGENT_PLAN"] = json.dumps([{"name": "cache", "focus": "Where is state?"}])

    crashed = ratchet.create(extra={"RATCHET_CRASH_AT": "after_agent_output:research.1"})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    run_id = ratchet.run_id()
    assert ratchet("resume", run_id).returncode == 0
    assert ratchet.status(run_id)["state"] == "awaiting_approval"
    # The finished research agent was adopted with the plan it wrote, not run again.
    assert ratchet.agent_runs() == ["research.1", "research.1/cache", "specify.1"]
    types = [e["type"] for e in ratchet.events(run_id)]
    assert "AGENT_RESULT_ADOPTED" in types and types.count("SUBAGENT_COMPLETED") == 1


def test_a_cancel_stops_every_subagent_and_records_no_result(tmp_path: Path) -> None:
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(
        tmp_path / "repo", config=research_config(["alpha", "beta", "gamma"])))
    mark = f"subagents-{tmp_path.name}"
    worker = ratchet.start("run", "--repo", str(ratchet.repo), "--title", "Add calc",
                           "--body", "Add calc.", extra={"AGENT_SUBAGENT_SLEEP": "60",
                                                         "AGENT_MARK": mark})
    deadline = time.monotonic() + 30
    while len(started(ratchet)) < 3:  # all three run at once
        assert time.monotonic() < deadline and worker.poll() is None, worker.communicate()
        time.sleep(0.05)
    agents = processes_with_env("AGENT_MARK", mark)
    assert agents

    run_id = ratchet.run_id()
    assert ratchet("cancel", run_id, "--reason", "not needed").returncode == 0
    _, err = worker.communicate(timeout=30)
    assert worker.returncode == 3 and "was cancelled (not needed)" in err
    deadline = time.monotonic() + 30
    while any(process_alive(pid) for pid in agents):
        assert time.monotonic() < deadline, "a subagent outlived its cancelled run"
        time.sleep(0.05)
    assert ratchet.status(run_id)["state"] == "cancelled"
    types = [e["type"] for e in ratchet.events(run_id)]
    assert "SUBAGENTS_PLANNED" in types
    assert not {"SUBAGENT_COMPLETED", "SUBAGENT_FAILED"} & set(types)
