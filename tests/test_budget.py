"""Usage sums, budgets, raises and hung agents as pure decisions: no database, no process."""

from __future__ import annotations

import pytest

from app.settings import SettingsError, load_settings
from github.commands import CommandError, parse_command
from runner.budget import (
    BadRaise,
    Budget,
    Limit,
    Spend,
    active_seconds,
    budget_of,
    budget_stop,
    exhausted,
    parse_raise,
    seconds_left,
    stopped_at,
)
from runner.config import parse_repository_config
from runner.decisions import decide_idle, idle_timeouts
from runner.errors import AgentIdle, DeterministicFailure
from runner.ledger.records import Event
from runner.names import EventType, SignalKind
from runner.render import render_reply, say_next_action, say_usage
from runner.signals import Authorization, Refusal, decide_signal
from runner.usage import (
    AgentRun,
    UsageTotals,
    agent_runs,
    decode_usage,
    parse_usage,
    total,
    usage_event_data,
)
from runner.views import NextActionKind, next_action, usage_view
from runner.workflow import Outcome, State
from tests.test_decisions import NOW, Words, run_in, signal
from verification.config import ConfigError

ALLOWED = Authorization(True, "a writer")


def event(type_: EventType, at: float = NOW, step: str = "research.1", attempt: int = 1,
          **data: object) -> Event:
    return Event("r1", 0, type_.value, at, step, attempt, 1, None, None, dict(data))


def used(step: str, outcome: str = "completed", **usage: object) -> Event:
    return event(EventType.AGENT_USAGE, step=step, **usage_event_data(outcome, usage))


# --- usage -----------------------------------------------------------------------------------


def test_a_usage_report_keeps_unknown_keys_and_drops_what_is_wrong() -> None:
    record = parse_usage({"cost_usd": 0.25, "input_tokens": 10.0, "output_tokens": -3,
                          "turns": True, "model": "m", "agent_seconds": 1e9, "tier": "pro"})
    assert record == {"cost_usd": 0.25, "input_tokens": 10, "model": "m", "tier": "pro",
                      "problems": ["output_tokens: -3 is not a non-negative whole number",
                                   "turns: True is not a non-negative whole number"]}
    assert parse_usage(["not", "an", "object"]) == {
        "problems": ["the usage report is a list, not an object"]}


def test_a_hostile_usage_file_is_noted_not_stored() -> None:
    assert "not JSON" in decode_usage(b"[" * 50_000 + b"]" * 50_000)["problems"][0]
    assert "not JSON" in decode_usage(b"\xff\xfe")["problems"][0]
    record = parse_usage({"cost_usd": 1, "notes": "x" * 5000, "deep": [[[[[[1]]]]]]})
    assert record["cost_usd"] == 1.0 and "notes" not in record and "deep" not in record
    assert len(record["problems"]) == 2


def test_totals_count_every_agent_run_once_failed_ones_included() -> None:
    runs = agent_runs([
        used("research.1", cost_usd=0.06, input_tokens=100, agent_seconds=2.0),
        event(EventType.STEP_FAILED),
        used("implement.1", "transient", agent_seconds=1.5, output_tokens=7),
        used("implement.1", cost_usd=0.04, cache_read_tokens=50, agent_seconds=0.5),
    ])
    totals = total(runs)
    assert totals == UsageTotals(cost_usd=pytest.approx(0.10), input_tokens=100,
                                 output_tokens=7, cache_read_tokens=50, agent_seconds=4.0,
                                 agent_runs=3, unpriced_runs=1)
    assert totals.tokens == 157


# --- budgets ---------------------------------------------------------------------------------


def test_a_cost_budget_is_reached_at_the_cap_and_names_what_was_spent_on_what() -> None:
    runs = [AgentRun("research.1", 1, "completed", {"cost_usd": 0.06}),
            AgentRun("specify.1", 1, "completed", {"cost_usd": 0.06})]
    budget = Budget(max_cost_usd=0.10)
    assert exhausted(budget, Spend(total(runs[:1]), 0), runs[:1]) is None
    exhaustion = exhausted(budget, Spend(total(runs), 0), runs)
    assert exhaustion is not None and exhaustion.limit is Limit.COST
    assert exhaustion.reason.startswith(
        "the run's budget is spent: $0.12 of max_cost_usd $0.10 (research.1 $0.06, specify.1"
        " $0.06)")
    assert exhaustion.to_dict()["raise"] == "+1"


def test_two_agent_minutes_bound_the_next_agent_to_what_is_left() -> None:
    budget = Budget(max_agent_minutes=2)
    fresh = Spend(UsageTotals(), 0)
    assert seconds_left(budget, fresh) == (120.0, Limit.AGENT_MINUTES)
    after = Spend(UsageTotals(agent_seconds=100.0, agent_runs=1), 0)
    assert seconds_left(budget, after) == (20.0, Limit.AGENT_MINUTES)
    # Run hours bind first when less of them is left.
    both = Budget(max_agent_minutes=2, max_run_hours=0.005)
    assert seconds_left(both, after) == (18.0, Limit.RUN_HOURS)
    assert seconds_left(Budget(max_cost_usd=1), after) is None
    # An agent stopped there has spent the whole budget, its own minutes included.
    bound = {"limit": "max_agent_minutes", "allowed": 2, "spent": 100 / 60,
             "by_step": [["research.1", 100 / 60]]}
    exhaustion = stopped_at(bound, step="implement.1", seconds=20.0)
    assert exhaustion.spent == pytest.approx(2.0)
    assert [step for step, _ in exhaustion.by_step] == ["research.1", "implement.1"]


def test_run_hours_do_not_count_waits_for_people() -> None:
    events = [
        event(EventType.RUN_CREATED, at=0),
        event(EventType.AWAITING_APPROVAL, at=100),
        event(EventType.IMPLEMENTATION_STARTED, at=10_000),
        event(EventType.NEEDS_HUMAN, at=10_050),
        event(EventType.IMPLEMENTATION_STARTED, at=20_000),
    ]
    assert active_seconds(events, now=20_030) == 100 + 50 + 30


def test_the_budget_is_the_recorded_one_plus_raises() -> None:
    prepared = {"budget": Budget(max_cost_usd=0.1, max_agent_runs=4).to_dict()}
    events = [event(EventType.BUDGET_RAISED, limit="max_cost_usd", add=1),
              event(EventType.BUDGET_RAISED, limit="max_agent_runs", add=2),
              event(EventType.BUDGET_RAISED, limit="max_run_hours", add=5)]  # unset: unlimited
    assert budget_of(prepared, events) == Budget(max_cost_usd=pytest.approx(1.1),
                                                 max_agent_runs=6)
    # A run recorded before budgets were: its config's budget over the service's defaults.
    older = {"config": {"budget": {"max_cost_usd": 2}}}
    assert budget_of(older, [], defaults=Budget(max_cost_usd=9, max_run_hours=1)) == Budget(
        max_cost_usd=2, max_run_hours=1)


@pytest.mark.parametrize(("text", "stopped_by", "expected"), [
    ("+1", None, (Limit.COST, 1.0)),
    ("$2.50", None, (Limit.COST, 2.5)),
    ("+1", Limit.AGENT_MINUTES, (Limit.AGENT_MINUTES, 1.0)),
    ("+$1", Limit.AGENT_MINUTES, (Limit.COST, 1.0)),
    ("+30m", None, (Limit.AGENT_MINUTES, 30.0)),
    ("2h", None, (Limit.RUN_HOURS, 2.0)),
    ("+3 runs", None, (Limit.AGENT_RUNS, 3.0)),
])
def test_a_raise_names_its_limit_or_takes_the_one_reached(text, stopped_by, expected) -> None:
    assert parse_raise(text, stopped_by=stopped_by) == expected


@pytest.mark.parametrize("text", ["", "+0", "-1", "+1 parsec", "lots", "+1.5runs", "+9999999"])
def test_a_bad_raise_says_what_would_work(text) -> None:
    with pytest.raises(BadRaise):
        parse_raise(text)


# --- the budget signal -----------------------------------------------------------------------


def test_a_raise_resumes_a_run_its_budget_stopped_and_is_recorded_otherwise() -> None:
    stop = {"limit": "max_agent_minutes", "raise": "+30m"}
    stopped = run_in(State.NEEDS_HUMAN, "implement.1")
    verdict = decide_signal(stopped, signal(SignalKind.BUDGET, amount="+10"),
                            authorization=ALLOWED, spec_sha256=None, has_tree=False,
                            budget_stop=stop)
    assert verdict.accepted and verdict.outcome is Outcome.RETRIED
    assert verdict.params == {"limit": "max_agent_minutes", "add": 10.0}
    running = decide_signal(run_in(State.IMPLEMENT, "implement.1"),
                            signal(SignalKind.BUDGET, amount="+1"), authorization=ALLOWED,
                            spec_sha256=None, has_tree=False)
    assert running.accepted and running.outcome is None
    assert running.params == {"limit": "max_cost_usd", "add": 1.0}
    # A stop for another reason is not resumed by money.
    other = decide_signal(stopped, signal(SignalKind.BUDGET, amount="+1"),
                          authorization=ALLOWED, spec_sha256=None, has_tree=False)
    assert other.accepted and other.outcome is None


def test_a_raise_is_refused_without_write_access_or_an_amount() -> None:
    stopped = run_in(State.NEEDS_HUMAN, "implement.1")
    denied = decide_signal(stopped, signal(SignalKind.BUDGET, amount="+1"),
                           authorization=Authorization(False, "read access"), spec_sha256=None,
                           has_tree=False, budget_stop={"limit": "max_cost_usd"})
    assert denied.refusal is Refusal.NOT_PERMITTED
    bad = decide_signal(stopped, signal(SignalKind.BUDGET, amount="plenty"),
                        authorization=ALLOWED, spec_sha256=None, has_tree=False)
    assert bad.refusal is Refusal.BAD_BUDGET
    reply = render_reply({"run": "r1", "author": "ann", "refusal": "bad_budget",
                          "params": dict(bad.params)}, Words())
    assert reply.startswith("@ann: 'plenty' is not a budget raise") and "/budget +1" in reply
    ended = decide_signal(run_in(State.DONE, "done.1"), signal(SignalKind.BUDGET, amount="+1"),
                          authorization=ALLOWED, spec_sha256=None, has_tree=False)
    assert ended.refusal is Refusal.ENDED


def test_the_last_stop_decides_whether_the_budget_stopped_the_run() -> None:
    spent = event(EventType.BUDGET_EXHAUSTED, limit="max_cost_usd", raise_="+1")
    assert budget_stop([spent]) == spent.data
    assert budget_stop([spent, event(EventType.RUN_RESUMED)]) is None


def test_a_budget_stop_says_how_to_raise_it() -> None:
    run = run_in(State.NEEDS_HUMAN, "implement.1", reason="the run's budget is spent")
    action = next_action(run, [], spec_sha256=None, now=NOW,
                         budget_stop={"limit": "max_cost_usd", "raise": "+1"})
    assert action.kind is NextActionKind.RAISE_BUDGET
    text = say_next_action(action.to_dict(), "r1", Words())
    assert "`/budget +1`" in text and "`/cancel`" in text and "implement.1" in text


def test_usage_reads_as_one_line_with_the_budget() -> None:
    view = usage_view([used("research.1", cost_usd=0.06, input_tokens=1500, output_tokens=20,
                            agent_seconds=75.0)],
                      {"budget": Budget(max_cost_usd=0.1).to_dict()}, now=NOW)
    assert say_usage(view) == (
        "$0.06 · 1.5k tokens (1.5k in, 20 out) · agent time 1m 15s over 1 agent run(s)"
        " (budget: $0.06 of $0.10)")
    assert view["steps"][0]["step"] == "research.1"


# --- /ratchet budget -------------------------------------------------------------------------


def test_the_budget_command_carries_its_amount() -> None:
    command = parse_command("Fine by me.\n/ratchet budget +30m\n")
    assert command is not None and command.kind is SignalKind.BUDGET
    assert command.argument == "+30m"
    for text in ("/ratchet budget", "/ratchet budget lots"):
        with pytest.raises(CommandError, match="budget"):
            parse_command(text)


# --- hung agents -----------------------------------------------------------------------------


def test_a_step_that_hangs_twice_fails_for_good() -> None:
    idle = event(EventType.STEP_FAILED, evidence={"stopped": "idle"})
    other_step = event(EventType.STEP_FAILED, step="specify.1", evidence={"stopped": "idle"})
    assert idle_timeouts([other_step], "research.1") == 0
    assert idle_timeouts([idle], "research.1") == 1
    assert idle_timeouts([idle, event(EventType.RUN_RESUMED)], "research.1") == 0

    failure = AgentIdle("agent printed nothing", evidence={"log_tail": "thinking"},
                        usage={"agent_seconds": 600})
    assert decide_idle(failure, earlier=0) is failure  # transient: retried with backoff
    final = decide_idle(failure, earlier=1)
    assert isinstance(final, DeterministicFailure)
    assert final.evidence == {"log_tail": "thinking"} and final.usage == {"agent_seconds": 600}
    assert "hung in this step 2 times" in str(final)


# --- where budgets come from -----------------------------------------------------------------


def test_budget_and_idle_timeout_config_errors_name_the_line() -> None:
    config = parse_repository_config(
        "budget:\n  max_cost_usd: 5\n  max_agent_runs: 8\nagent: {idle_timeout: 120}\n")
    assert config.budget.max_cost_usd == 5 and config.budget.max_agent_runs == 8
    assert config.agent.idle_timeout == 120
    assert parse_repository_config("").agent.idle_timeout == 600
    for text, where in [("budget:\n  max_cost_usd: -1\n", ":2: budget.max_cost_usd"),
                        ("budget:\n  max_agent_runs: 1.5\n", ":2: budget.max_agent_runs"),
                        ("budget: {max_dollars: 3}\n", ":1: budget.max_dollars"),
                        ("agent:\n  idle_timeout: 0\n", ":2: agent.idle_timeout")]:
        with pytest.raises(ConfigError, match=f"^.github/ratchet.yml{where}"):
            parse_repository_config(text)


def test_service_defaults_fill_what_a_repository_leaves_unset(monkeypatch) -> None:
    monkeypatch.setenv("RATCHET_BUDGET_MAX_COST_USD", "5")
    monkeypatch.setenv("RATCHET_BUDGET_MAX_RUN_HOURS", "2")
    monkeypatch.setenv("RATCHET_AGENT", "claude")
    monkeypatch.delenv("RATCHET_AGENT_COMMAND", raising=False)
    engine = load_settings().engine_settings()
    assert engine.budget == Budget(max_cost_usd=5, max_run_hours=2)
    assert engine.default_agent == "claude"
    prepared = {"config": {"budget": {"max_cost_usd": 1}}}
    assert budget_of(prepared, [], defaults=engine.budget) == Budget(max_cost_usd=1,
                                                                     max_run_hours=2)
    monkeypatch.setenv("RATCHET_AGENT", "cursor")
    with pytest.raises(SettingsError, match="RATCHET_AGENT: 'cursor' is not a preset"):
        load_settings()
    monkeypatch.setenv("RATCHET_AGENT", "aider")
    monkeypatch.setenv("RATCHET_AGENT_COMMAND", "my-agent {prompt}")
    with pytest.raises(SettingsError, match="set one of them"):
        load_settings()
