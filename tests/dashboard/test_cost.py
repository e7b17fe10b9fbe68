"""What the pages make of a run's spending and timeline, without a ledger: dollars (or
unpriced) and tokens as ``ratchet status`` says them, each agent step's cost, the budget left,
and which timeline rows fold as bookkeeping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from app.dashboard.pages import (
    BOOKKEEPING,
    Folded,
    Spent,
    TimelineEntry,
    agent_steps,
    budget_lines,
    fold,
    is_bookkeeping,
    timeline,
)
from runner.budget import Budget
from runner.ledger.records import Event
from runner.names import EventType
from runner.render import say_cost, say_usage
from runner.usage import AgentRun, UsageTotals, agent_runs, total, totals_by_run
from runner.views import usage_view

NOW = 1_900_000_000.0


def event(type_: EventType, seq: int = 1, *, run_id: str = "r1",
          step: str | None = "research.1", **data: Any) -> Event:
    return Event(run_id=run_id, seq=seq, type=type_, at=NOW + seq, step=step, attempt=1,
                 lease_epoch=1, revision=None, key=None, data=data)


def used(step: str, seq: int = 1, *, run_id: str = "r1", **usage: Any) -> Event:
    return event(EventType.AGENT_USAGE, seq, run_id=run_id, step=step, outcome="completed",
                 usage=usage)


def totals(*records: Mapping[str, Any]) -> dict[str, Any]:
    return total(AgentRun("s", 1, "completed", record) for record in records).to_dict()


# --- dollars ---------------------------------------------------------------------------------


def test_a_cost_nobody_reported_is_unpriced_never_zero_dollars() -> None:
    assert say_cost(totals({"cost_usd": 0.124}, {"cost_usd": 0.3})) == "$0.42"
    assert say_cost(totals({"input_tokens": 10})) == "unpriced"
    assert say_cost(totals({"input_tokens": 10}, {})) == "unpriced"
    assert say_cost(totals({"cost_usd": 0.05}, {"input_tokens": 10})) == "$0.05 + 1 unpriced"
    # A price of nothing is a price: free is $0.00, unknown is not.
    assert say_cost(totals({"cost_usd": 0})) == "$0.00"
    # No agent run: Spent shows nothing rather than a price.
    assert Spent(UsageTotals()).dollars == "" and Spent(UsageTotals()).tokens == ""


def test_ratchet_status_says_unpriced_too() -> None:
    view = usage_view([used("research.1", input_tokens=1500, output_tokens=20,
                            agent_seconds=3.0)], None, now=NOW)
    line = say_usage(view)
    assert line.startswith("unpriced · 1.5k tokens (1.5k in, 20 out)") and "$" not in line


def test_each_runs_totals_and_the_pages_sum_come_from_one_read() -> None:
    events = [used("research.1", 1, cost_usd=0.1, input_tokens=100),
              used("specify.1", 2, input_tokens=50),
              used("research.1", 1, run_id="r2", cost_usd=0.2, output_tokens=7)]
    by_run = totals_by_run(events)
    assert by_run["r1"] == total(agent_runs(events[:2]))
    assert by_run["r1"].unpriced_runs == 1 and by_run["r1"].input_tokens == 150
    assert by_run["r2"].cost_usd == pytest.approx(0.2)
    overall = total(agent_runs(events))
    assert overall.cost_usd == pytest.approx(0.3) and overall.agent_runs == 3
    assert UsageTotals.from_dict(overall.to_dict()).to_dict() == overall.to_dict()


# --- the run page: agent steps and budget ------------------------------------------------------


def test_agent_steps_are_the_status_steps_each_priced_as_the_total_is() -> None:
    events = [used("research.1", 1, cost_usd=0.12, input_tokens=1500, output_tokens=300,
                   agent_seconds=12.5, model="claude-sonnet-4-5"),
              event(EventType.AGENT_USAGE, 2, step="implement.1", outcome="transient",
                    usage={"input_tokens": 40, "agent_seconds": 2.0}, subagent="tests")]
    view = usage_view(events, None, now=NOW)
    rows = agent_steps(view)
    assert [(r.step, r.attempt, r.outcome, r.subagent, r.model) for r in rows] == [
        ("research.1", 1, "completed", None, "claude-sonnet-4-5"),
        ("implement.1", 1, "transient", "tests", "")]
    assert rows[0].spent.dollars == "$0.12"
    assert rows[0].spent.tokens == "1.8k tokens (1.5k in, 300 out)"
    assert rows[1].spent.dollars == "unpriced" and rows[1].spent.totals.agent_seconds == 2.0
    # The rows add up to the total the status carries (one sum, ``runner.usage.total``).
    assert total(AgentRun.from_dict(step) for step in view["steps"]).to_dict() == view["total"]


def test_budget_left_is_what_the_status_allows_less_what_it_spent() -> None:
    events = [used("research.1", 1, cost_usd=0.75, agent_seconds=90.0),
              used("specify.1", 2, cost_usd=0.5, agent_seconds=30.0)]
    budget = Budget(max_cost_usd=1.0, max_agent_runs=5, max_agent_minutes=10)
    view = usage_view(events, {"budget": budget.to_dict()}, now=NOW)
    lines = {line.name: line for line in budget_lines(view)}
    assert set(lines) == {"dollars", "agent runs", "agent minutes"}
    assert (lines["dollars"].allowed, lines["dollars"].spent) == ("$1.00", "$1.25")
    assert lines["dollars"].left == "$0.00"  # overspent (the step in progress overshoots)
    assert lines["agent runs"].left == "3 agent run(s)"
    assert lines["agent minutes"].left == "8.00 agent minutes"
    assert budget_lines(usage_view(events, None, now=NOW)) == []  # no budget


# --- the timeline's folds ----------------------------------------------------------------------


def entries(*kinds: EventType, effect: str = "push") -> list[TimelineEntry]:
    return timeline([event(kind, seq, owner="w", kind=effect)
                     for seq, kind in enumerate(kinds, start=1)])


def test_bookkeeping_is_decided_by_kind_and_what_happened_stays_shown() -> None:
    shown = [EventType.RESEARCH_STARTED, EventType.RESEARCH_COMPLETED, EventType.SPEC_CREATED,
             EventType.AGENT_USAGE, EventType.CHECK_COMPLETED, EventType.EFFECT_CONFIRMED,
             EventType.EFFECT_RECONCILED, EventType.EFFECT_FAILED, EventType.SPEC_APPROVED,
             EventType.SIGNAL_ACCEPTED, EventType.STEP_FAILED, EventType.LEASE_EXPIRED,
             EventType.RUN_COMPLETED, EventType.BUDGET_EXHAUSTED]
    for entry in entries(*shown):
        assert not is_bookkeeping(entry), entry.event.type
    for entry in entries(*BOOKKEEPING):
        assert is_bookkeeping(entry), entry.event.type
    # A confirmed effect is news but for the tracking comment's edits and reactions.
    for effect, quiet in (("push", False), ("pull_request", False), ("check_run", False),
                          ("reply", False), ("comment", True), ("reaction", True)):
        [confirmed] = entries(EventType.EFFECT_CONFIRMED, effect=effect)
        assert is_bookkeeping(confirmed) is quiet, effect


def test_consecutive_bookkeeping_folds_into_one_row() -> None:
    rows = fold(entries(
        EventType.RUN_CREATED, EventType.LEASE_ACQUIRED, EventType.WORKSPACE_PREPARED,
        EventType.RESEARCH_STARTED, EventType.EFFECT_INTENDED, EventType.EFFECT_ATTEMPTED,
        EventType.EFFECT_CONFIRMED, EventType.SIGNAL_RECEIVED))
    kinds = [[e.event.type for e in r.entries] if isinstance(r, Folded) else r.event.type
             for r in rows]
    assert kinds == [
        EventType.RUN_CREATED, [EventType.LEASE_ACQUIRED, EventType.WORKSPACE_PREPARED],
        EventType.RESEARCH_STARTED, [EventType.EFFECT_INTENDED, EventType.EFFECT_ATTEMPTED],
        EventType.EFFECT_CONFIRMED, [EventType.SIGNAL_RECEIVED]]  # a push, confirmed
    # Each fold is named by its first event, so a live refresh keeps an open one open.
    assert [r.id for r in rows if isinstance(r, Folded)] == ["fold-2", "fold-5", "fold-8"]
    assert fold([]) == []


def test_a_takeover_is_not_folded() -> None:
    rows = fold(timeline([
        event(EventType.LEASE_ACQUIRED, 1, owner="host-a"),
        event(EventType.LEASE_EXPIRED, 2, owner="host-a", epoch=1),
        event(EventType.LEASE_ACQUIRED, 3, owner="host-b"),
        event(EventType.LEASE_ACQUIRED, 4, owner="host-b"),
    ]))
    assert isinstance(rows[0], Folded) and isinstance(rows[3], Folded)
    assert isinstance(rows[2], TimelineEntry) and rows[2].tone == "takeover"
    assert "took the run over from host-a" in rows[2].note


def test_an_agent_row_says_what_it_spent() -> None:
    [row] = timeline([used("specify.1", cost_usd=0.08, input_tokens=800, output_tokens=200)])
    assert row.note == "agent completed, $0.08, 1.0k tokens (800 in, 200 out)"
    [unpriced] = timeline([used("specify.1", input_tokens=5)])
    assert unpriced.note == "agent completed, unpriced, 5 tokens (5 in, 0 out)"
