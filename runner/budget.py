"""Budgets the runner enforces: what a run may spend, what it has left, and raising it. Pure.

A run's budget is fixed when its queued step reads the repository config at the base
(``budget:`` in ``.github/ratchet.yml``; a limit it leaves unset takes the service's
``RATCHET_BUDGET_*`` default, and one above it is lowered to it: ``runner/ceilings.py``) and
recorded in that step's checkpoint. It is checked before
every agent step and enforced during one: the agent's timeout is the smaller of its own and the
time the budget has left. Spending it is an authority stop; someone with write access raises it
with a ``budget`` signal (``BUDGET_RAISED`` events add to the recorded budget) and the run
resumes. Cost can only be checked between steps (agents report it when they end), so the step
in progress is the only overshoot.

``max_run_hours`` counts the time a run was working: from its creation, without the time it
waited for people (a spec's approval, a stop).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any

from runner.ledger.records import Event
from runner.names import EventType
from runner.usage import AgentRun, UsageTotals, agent_runs, total


class Limit(StrEnum):
    """A budget's limits, named as in ``.github/ratchet.yml``."""

    COST = "max_cost_usd"
    AGENT_RUNS = "max_agent_runs"
    AGENT_MINUTES = "max_agent_minutes"
    RUN_HOURS = "max_run_hours"


# What a raise without a unit adds to when no limit stopped the run.
DEFAULT_LIMIT = Limit.COST
# Units a raise may name, and the limit each adds to.
_UNITS = {
    "": None, "$": Limit.COST, "usd": Limit.COST,
    "m": Limit.AGENT_MINUTES, "min": Limit.AGENT_MINUTES, "mins": Limit.AGENT_MINUTES,
    "minute": Limit.AGENT_MINUTES, "minutes": Limit.AGENT_MINUTES,
    "h": Limit.RUN_HOURS, "hour": Limit.RUN_HOURS, "hours": Limit.RUN_HOURS,
    "run": Limit.AGENT_RUNS, "runs": Limit.AGENT_RUNS,
}
_RAISE = re.compile(r"^\+?\s*(?P<dollar>\$)?\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[a-z$]*)$")
# The largest raise accepted at once: a typo's extra zeros should not lift every limit.
MAX_RAISE = 1_000_000
# What people are told to type to continue, per limit (the edge words the command).
SUGGESTED_RAISE = {Limit.COST: "+1", Limit.AGENT_RUNS: "+4runs",
                   Limit.AGENT_MINUTES: "+30m", Limit.RUN_HOURS: "+1h"}
# Events after which a run waits for people (not counted in max_run_hours), and the events
# that start it working again.
_WAIT_STARTS = frozenset({EventType.AWAITING_APPROVAL, EventType.AWAITING_DIFF_APPROVAL,
                          EventType.NEEDS_HUMAN, EventType.RUN_FAILED})
_WORK_STARTS = frozenset({
    EventType.RESEARCH_STARTED, EventType.SPEC_STARTED, EventType.IMPLEMENTATION_STARTED,
    EventType.VERIFICATION_STARTED, EventType.REPAIR_STARTED, EventType.PUBLISH_STARTED,
})


@dataclass(frozen=True)
class Budget:
    """A run's limits; None is no limit."""

    max_cost_usd: float | None = None
    max_agent_runs: int | None = None
    max_agent_minutes: float | None = None
    max_run_hours: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Budget:
        data = data or {}
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def limit(self, which: Limit) -> float | None:
        value = getattr(self, which.value)
        return None if value is None else float(value)

    def merged(self, defaults: Budget) -> Budget:
        """This budget, each unset limit taken from ``defaults``."""
        return Budget(**{f.name: getattr(self, f.name) if getattr(self, f.name) is not None
                         else getattr(defaults, f.name) for f in fields(self)})

    def raised(self, raises: Iterable[tuple[Limit, float]]) -> Budget:
        """This budget with ``raises`` added; a limit that is not set stays unlimited."""
        budget = self
        for which, amount in raises:
            current = budget.limit(which)
            if current is None:
                continue
            value: float | int = current + amount
            if which is Limit.AGENT_RUNS:
                value = round(value)
            budget = replace(budget, **{which.value: value})
        return budget

    @property
    def limited(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))


@dataclass(frozen=True)
class Spend:
    """What a run has used against each limit."""

    totals: UsageTotals
    active_seconds: float

    def of(self, which: Limit) -> float:
        if which is Limit.COST:
            return self.totals.cost_usd
        if which is Limit.AGENT_RUNS:
            return float(self.totals.agent_runs)
        if which is Limit.AGENT_MINUTES:
            return self.totals.agent_seconds / 60
        return self.active_seconds / 3600


@dataclass(frozen=True)
class Exhaustion:
    """A limit the run has reached: how much was spent (and on which steps) of how much."""

    limit: Limit
    spent: float
    allowed: float
    by_step: tuple[tuple[str, float], ...] = ()  # (step, amount of this limit), in order

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit.value, "spent": round(self.spent, 6),
                "allowed": self.allowed, "by_step": [list(item) for item in self.by_step],
                "raise": SUGGESTED_RAISE[self.limit]}

    @property
    def reason(self) -> str:
        """The stop as a sentence for the ledger (the edge adds how to raise it)."""
        spent = ", ".join(f"{step} {format_amount(self.limit, amount)}"
                          for step, amount in self.by_step)
        on = f" ({spent})" if spent else ""
        return (f"the run's budget is spent: {format_amount(self.limit, self.spent)} of"
                f" {self.limit.value} {format_amount(self.limit, self.allowed)}{on}; no agent"
                " step starts until someone with write access raises it")


def exhausted(budget: Budget, spend: Spend, runs: Iterable[AgentRun] = ()) -> Exhaustion | None:
    """The first limit ``spend`` has reached (cost, agent runs, agent minutes, run hours),
    or None while every limit leaves room for another agent step."""
    for which in Limit:
        allowed = budget.limit(which)
        if allowed is None:
            continue
        spent = spend.of(which)
        if spent >= allowed - 1e-9:
            return Exhaustion(which, spent, allowed, tuple(_by_step(which, runs)))
    return None


def seconds_left(budget: Budget, spend: Spend) -> tuple[float, Limit] | None:
    """How long the next agent may run before a time limit is reached, and which limit that
    is; None when no time limit is set."""
    left: list[tuple[float, Limit]] = []
    minutes = budget.limit(Limit.AGENT_MINUTES)
    if minutes is not None:
        left.append((minutes * 60 - spend.totals.agent_seconds, Limit.AGENT_MINUTES))
    hours = budget.limit(Limit.RUN_HOURS)
    if hours is not None:
        left.append((hours * 3600 - spend.active_seconds, Limit.RUN_HOURS))
    return min(left, key=lambda item: item[0]) if left else None


def active_seconds(events: Iterable[Event], now: float) -> float:
    """The time a run has been working: since its creation, without its waits for people."""
    working_since: float | None = None
    seconds = 0.0
    for event in events:
        if event.type == EventType.RUN_CREATED:
            working_since = event.at
        elif event.type in _WAIT_STARTS and working_since is not None:
            seconds += max(0.0, event.at - working_since)
            working_since = None
        elif event.type in _WORK_STARTS and working_since is None:
            working_since = event.at
    if working_since is not None:
        seconds += max(0.0, now - working_since)
    return seconds


def raises(events: Iterable[Event]) -> list[tuple[Limit, float]]:
    """Every budget raise recorded in ``events``, oldest first."""
    found = []
    for event in events:
        if event.type == EventType.BUDGET_RAISED:
            try:
                found.append((Limit(event.data["limit"]), float(event.data["add"])))
            except (KeyError, ValueError, TypeError):
                continue  # a record this version cannot read raises nothing
    return found


def budget_stop(events: Iterable[Event]) -> dict[str, Any] | None:
    """The exhaustion that stopped the run, if its last stop was the budget's (a resume since
    then clears it)."""
    stop: dict[str, Any] | None = None
    for event in events:
        if event.type == EventType.BUDGET_EXHAUSTED:
            stop = dict(event.data)
        elif event.type == EventType.RUN_RESUMED:
            stop = None
    return stop


class BadRaise(ValueError):
    """A budget raise that names no positive amount or an unknown unit."""


def parse_raise(text: str, *, stopped_by: Limit | None = None) -> tuple[Limit, float]:
    """The limit and amount ``text`` raises: ``+1`` or ``$1`` (dollars; without a unit, the
    limit that stopped the run), ``+30m`` (agent minutes), ``+2h`` (run hours), ``+3runs``.

    Raises ``BadRaise`` saying what would work.
    """
    match = _RAISE.match(text.strip().lower())
    unit = match.group("unit") if match else None
    if match is None or unit not in _UNITS:
        raise BadRaise(
            f"{text.strip()!r} is not a budget raise; write an amount such as +1 (dollars),"
            " +30m (agent minutes), +2h (run hours) or +3runs (agent runs)")
    which = _UNITS[unit] or (Limit.COST if match.group("dollar") else None)
    which = which or stopped_by or DEFAULT_LIMIT
    amount = float(match.group("number"))
    if not (0 < amount <= MAX_RAISE) or not math.isfinite(amount):
        raise BadRaise(f"a budget raise must be more than 0 and at most {MAX_RAISE}")
    if which is Limit.AGENT_RUNS and not amount.is_integer():
        raise BadRaise("agent runs are raised by a whole number, such as +3runs")
    return which, amount


def format_amount(which: Limit, value: float) -> str:
    """An amount of ``which`` for people: $0.12, 2.5 agent minutes, 3 agent runs, 1.5 h."""
    if which is Limit.COST:
        return f"${value:.2f}"
    if which is Limit.AGENT_RUNS:
        return f"{value:g} agent run(s)"
    if which is Limit.AGENT_MINUTES:
        return f"{value:.2f} agent minutes"
    return f"{value:.2f} h"


def _by_step(which: Limit, runs: Iterable[AgentRun]) -> list[tuple[str, float]]:
    """What each step's agent runs spent of ``which`` (run hours are not per step)."""
    if which is Limit.RUN_HOURS:
        return []
    spent: dict[str, float] = {}
    for run in runs:
        if which is Limit.COST:
            amount = run.usage.get("cost_usd")
            value = float(amount) if isinstance(amount, int | float) else 0.0
        elif which is Limit.AGENT_RUNS:
            value = 1.0
        else:
            amount = run.usage.get("agent_seconds")
            value = float(amount) / 60 if isinstance(amount, int | float) else 0.0
        spent[run.step] = spent.get(run.step, 0.0) + value
    return list(spent.items())


def bound_data(budget: Budget, spend: Spend, which: Limit,
               runs: Iterable[AgentRun] = ()) -> dict[str, Any]:
    """What a step needs to know when ``which`` bounds its agent's timeout: the limit, what
    was allowed, and what was spent before the agent started."""
    allowed = budget.limit(which)
    assert allowed is not None, f"{which.value} is not set"
    return {"limit": which.value, "allowed": allowed, "spent": spend.of(which),
            "by_step": [list(item) for item in _by_step(which, runs)]}


def stopped_at(bound: Mapping[str, Any], *, step: str, seconds: float) -> Exhaustion:
    """The exhaustion of an agent stopped because its step reached the time budget in
    ``bound`` (``bound_data``) after running ``seconds``."""
    which = Limit(bound["limit"])
    amount = seconds / 60 if which is Limit.AGENT_MINUTES else seconds / 3600
    by_step = [(str(s), float(v)) for s, v in bound.get("by_step", [])]
    if which is Limit.AGENT_MINUTES:
        by_step.append((step, amount))
    return Exhaustion(which, float(bound["spent"]) + amount, float(bound["allowed"]),
                      tuple(by_step))


def overspent(bound: Mapping[str, Any], *, step: str, cost: float) -> Exhaustion | None:
    """The exhaustion of the dollar budget in ``bound`` (``bound_data`` of max_cost_usd) once
    an agent of ``step`` spent ``cost`` on top of what was spent before it; None while some
    is left."""
    spent = float(bound["spent"]) + cost
    allowed = float(bound["allowed"])
    if spent < allowed - 1e-9:
        return None
    by_step = [(str(s), float(v)) for s, v in bound.get("by_step", [])] + [(step, cost)]
    return Exhaustion(Limit.COST, spent, allowed, tuple(by_step))


@dataclass(frozen=True)
class Allowance:
    """What the budget lets the next agent do: nothing (``exhaustion``), or run for
    ``seconds``; ``bound`` is ``bound_data`` when the budget, not the agent's own timeout, is
    what ends it."""

    exhaustion: Exhaustion | None
    seconds: float
    bound: dict[str, Any] | None = None
    cost_left: float | None = None  # dollars left under max_cost_usd (None: no such limit)
    cost_bound: dict[str, Any] | None = None  # ``bound_data`` of max_cost_usd, when set


def allowance(budget: Budget, events: Iterable[Event], *, now: float, timeout: float,
              running: int = 0, step: str = "") -> Allowance:
    """Whether another agent may start, and for how long (at most ``timeout``), given what
    ``events`` recorded and ``running`` agents of ``step`` started but not recorded yet
    (subagents in flight: each counts as an agent run)."""
    events = list(events)
    runs = agent_runs(events) + [AgentRun(step=step, attempt=None, outcome="running", usage={})
                                 for _ in range(running)]
    spend = Spend(total(runs), active_seconds(events, now))
    exhaustion = exhausted(budget, spend, runs)
    if exhaustion is not None:
        return Allowance(exhaustion, 0.0)
    dollars = budget.limit(Limit.COST)
    cost = {} if dollars is None else {
        "cost_left": max(0.0, dollars - spend.totals.cost_usd),
        "cost_bound": bound_data(budget, spend, Limit.COST, runs)}
    left = seconds_left(budget, spend)
    if left is None or left[0] >= timeout:
        return Allowance(None, timeout, **cost)
    return Allowance(None, left[0], bound_data(budget, spend, left[1], runs), **cost)


def budget_of(prepared: Mapping[str, Any] | None, events: Iterable[Event], *,
              defaults: Budget | None = None) -> Budget:
    """A run's budget: as its queued step recorded it (``prepared`` is that checkpoint's
    result; a run from before budgets were recorded takes its config's budget over
    ``defaults``), with every raise in ``events`` added."""
    prepared = prepared or {}
    recorded = prepared.get("budget")
    if isinstance(recorded, dict):
        budget = Budget.from_dict(recorded)
    else:
        config = prepared.get("config") if isinstance(prepared.get("config"), dict) else {}
        budget = Budget.from_dict(config.get("budget")).merged(defaults or Budget())
    return budget.raised(raises(events))
