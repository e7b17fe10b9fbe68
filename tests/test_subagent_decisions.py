"""Research subagents as pure decisions: the config, the plan, recorded results, the fan-in,
the budget's count of those in flight, and what the tracking comment and prompts say."""

from __future__ import annotations

import json

import pytest

from runner.agents.prompt import PromptContext, output_path, render_prompt
from runner.budget import Budget, allowance
from runner.config import parse_repository_config
from runner.ledger.records import Event
from runner.names import EventType
from runner.render import render_tracking
from runner.subagents import (
    BadPlan,
    Planned,
    Subagent,
    SubagentResult,
    SubagentStatus,
    failed_names,
    one_paragraph,
    parse_plan,
    plan_subagents,
    recorded_plan,
    recorded_results,
    render_fan_in,
    subagent_rows,
)
from runner.usage import usage_event_data
from tests.test_decisions import NOW, Words
from verification.config import ConfigError

ALPHA, BETA = Subagent("alpha", "How is it built?"), Subagent("beta", "How is it tested?")


def event(type_: EventType, step: str = "research.1", **data: object) -> Event:
    return Event("r1", 0, type_.value, NOW, step, 1, 1, None, None, dict(data))


def completed(name: str, note: str = "") -> Event:
    return event(EventType.SUBAGENT_COMPLETED, result=SubagentResult(
        name, SubagentStatus.COMPLETED, artifact=f"subagents/{name}.md", sha256="ab",
        note=note).to_dict())


def failed(name: str) -> Event:
    return event(EventType.SUBAGENT_FAILED, result=SubagentResult(
        name, SubagentStatus.FAILED, failure_class="deterministic", error="agent exited 3",
        log_tail="Traceback: no such table").to_dict())


def planned(*subagents: Subagent) -> Event:
    return event(EventType.SUBAGENTS_PLANNED, **Planned(
        "research.1", subagents, {"output": {"path": "a", "sha256": "b"}}).event_data())


# --- the config and the plan ---------------------------------------------------------------


def test_the_research_section_declares_subagents_and_its_errors_name_the_line() -> None:
    config = parse_repository_config(
        "research:\n  concurrency: 2\n  require_all: true\n  subagents:\n"
        '    - {name: database, focus: "How are migrations applied?"}\n')
    assert [(s.name, s.focus) for s in config.research.subagents] == [
        ("database", "How are migrations applied?")]
    assert (config.research.concurrency, config.research.max_subagents) == (2, 8)
    assert config.research.require_all and not parse_repository_config("").research.subagents
    for text, where in [
        ("research:\n  subagents:\n    - {name: Data Base, focus: x}\n",
         ":3: research.subagents\\[0\\].name: 'Data Base' is not a subagent name"),
        ("research:\n  subagents:\n    - {name: a, focus: x}\n    - {name: a, focus: y}\n",
         ":1: research: subagent 'a' is declared twice"),
        ("research:\n  max_subagents: 1\n  subagents: [{name: a, focus: x}, {name: b, focus: y}]\n",
         ":1: research: 2 subagents are declared but max_subagents is 1"),
        ("research:\n  concurrency: 0\n", ":2: research.concurrency"),
        ("research: {fan_out: 3}\n", ":1: research.fan_out: unknown key"),
    ]:
        with pytest.raises(ConfigError, match=f"^.github/ratchet.yml{where}"):
            parse_repository_config(text)


@pytest.mark.parametrize(("raw", "problem"), [
    (b"[{", "it is not JSON"),
    (b'{"name": "a", "focus": "b"}', "it is a JSON dict, not a list"),
    (b'["database"]', "[0] is a str, not an object with name and focus"),
    (b'[{"name": "a", "focus": "b", "model": "big"}]', "[0] has unknown key(s) 'model'"),
    (b'[{"focus": "b"}]', "[0].name is missing or not a string"),
    (b'[{"name": "a", "focus": "x"}, {"name": "-a", "focus": "b"}]',
     "[1].name: '-a' is not a subagent name"),
    (b'[{"name": "a", "focus": "  "}]', "[0].focus ('a') is missing or empty"),
])
def test_a_bad_plan_names_its_entry_and_problem(raw: bytes, problem: str) -> None:
    with pytest.raises(BadPlan) as raised:
        parse_plan(raw)
    assert problem in str(raised.value)


def test_the_plan_adds_to_the_declared_subagents_each_name_once_within_the_limit() -> None:
    written = parse_plan(json.dumps([{"name": "cache", "focus": " Where is state kept? "}])
                         .encode())
    assert plan_subagents([ALPHA], written, limit=2) == (
        ALPHA, Subagent("cache", "Where is state kept?"))
    with pytest.raises(BadPlan, match=r"\[0\].name 'alpha' is declared in .github/ratchet.yml"):
        plan_subagents([ALPHA], [Subagent("alpha", "again")], limit=8)
    with pytest.raises(BadPlan, match=r"\[1\].name 'beta' is planned twice"):
        plan_subagents([], [BETA, BETA], limit=8)
    with pytest.raises(BadPlan, match=r"plans 2 subagent\(s\) and 1 are declared, more than"
                                      r" research.max_subagents allows \(2\); plan at most 1"):
        plan_subagents([ALPHA], [BETA, Subagent("gamma", "x")], limit=2)


# --- recorded results and the fan-in -------------------------------------------------------


def test_a_step_taken_up_again_needs_only_the_subagents_without_a_result() -> None:
    events = [planned(ALPHA, BETA), completed("alpha"), failed("beta"),
              event(EventType.SUBAGENT_COMPLETED, step="research.2", result={
                  "name": "beta", "status": "completed"})]
    assert recorded_plan(events, "research.1") == Planned(
        "research.1", (ALPHA, BETA), {"output": {"path": "a", "sha256": "b"}})
    assert recorded_plan(events, "research.2") is None
    found = recorded_results(events, "research.1")
    assert {name: r.status for name, r in found.items()} == {
        "alpha": SubagentStatus.COMPLETED, "beta": SubagentStatus.FAILED}
    assert failed_names((ALPHA, BETA), found) == ["beta"]
    # A person's retry asks for the failed ones again; completed ones stay done.
    retried = recorded_results([*events, event(EventType.RUN_RESUMED)], "research.1")
    assert set(retried) == {"alpha"}


def test_the_fan_in_lists_paths_notes_and_failures_never_logs() -> None:
    results = recorded_results(
        [completed("alpha", "Migrations run at start-up."), failed("beta")], "research.1")
    text = render_fan_in((ALPHA, BETA), results)
    assert "1 of 2 subagent(s) completed" in text
    assert ("## alpha: completed\n\n- focus: How is it built?\n- artifact: subagents/alpha.md\n"
            in text)
    assert "- note: Migrations run at start-up." in text
    assert "## beta: failed" in text and "- failure (deterministic): agent exited 3" in text
    assert "Traceback" not in text
    assert one_paragraph("one\n\ntwo  three") == "one two three"
    assert one_paragraph("x" * 900).endswith("…") and len(one_paragraph("x" * 900)) == 800


def test_views_show_each_subagent_pending_until_its_result_and_link_it_where_served() -> None:
    events = [planned(ALPHA, BETA), completed("alpha")]
    rows = subagent_rows(events)
    assert [(r["name"], r["status"], r["artifact"]) for r in rows] == [
        ("alpha", "completed", "subagents/alpha.md"), ("beta", "pending", None)]
    assert subagent_rows([event(EventType.RESEARCH_STARTED)]) == []
    view = {"run": "r1", "state": "specify", "phases": [], "branch": "ratchet/r1",
            "elapsed_s": 3, "next_action": {"kind": "resume", "step": "specify.1"},
            "subagents": rows}
    local = render_tracking(view, Words())
    assert "Subagents: `alpha` completed (`subagents/alpha.md`) · `beta` pending" in local
    served = render_tracking(view, Words(), artifacts_url="https://ratchet.example/runs/r1/"
                             "artifacts")
    assert ("`alpha` completed ([subagents/alpha.md](https://ratchet.example/runs/r1/"
            "artifacts/subagents/alpha.md))") in served


# --- the budget and the prompts -------------------------------------------------------------


def test_subagents_in_flight_count_as_agent_runs() -> None:
    events = [event(EventType.AGENT_USAGE, **usage_event_data("completed", {}))]
    budget = Budget(max_agent_runs=3)
    assert allowance(budget, events, now=NOW, timeout=60, running=1).exhaustion is None
    stopped = allowance(budget, events, now=NOW, timeout=60, running=2, step="research.1")
    assert stopped.exhaustion is not None
    assert stopped.exhaustion.by_step == (("research.1", 3.0),)
    # Time left cuts the next agent's timeout, and says which limit did.
    timed = allowance(Budget(max_agent_minutes=1), events, now=NOW, timeout=600)
    assert timed.seconds == 60 and timed.bound is not None
    assert allowance(Budget(), events, now=NOW, timeout=600) == allowance(
        Budget(), [], now=NOW, timeout=600)


def test_prompts_offer_the_plan_to_research_and_a_focus_to_a_subagent() -> None:
    research = render_prompt(PromptContext(
        run_id="r1", phase="research", step="research.1", title="t", body="b",
        output_path=output_path("research"), subagents=(("alpha", "How is it\nbuilt?"),),
        plan_limit=7))
    assert "`alpha` (How is it built?)" in research
    assert "`$RATCHET_SUBAGENT_PLAN`" in research and "at most 7 entries" in research
    plain = render_prompt(PromptContext(
        run_id="r1", phase="research", step="research.1", title="t", body="b",
        output_path=output_path("research")))
    assert "RATCHET_SUBAGENT_PLAN" not in plain and "subagents" not in plain
    subagent = render_prompt(PromptContext(
        run_id="r1", phase="subagent", step="research.1", title="t", body="b",
        output_path=output_path("subagent", subagent="alpha"), focus="How is it built?"))
    assert "## Your focus\n\n```markdown\nHow is it built?\n```" in subagent
    assert "`subagents/alpha.md`" in subagent and "`$RATCHET_NOTE`" in subagent
    assert "read-only" in subagent
    with pytest.raises(ValueError, match="needs the subagent's name"):
        output_path("subagent")
