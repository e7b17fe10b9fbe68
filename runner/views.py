"""What the ledger says about a run, as data: the four answers of ``status``, the next action
as an enum with parameters, and the tracking view a forge shows as its comment.

Pure: built from records. Words for people are added at the edge (``runner/render.py`` with
a vocabulary, ``app/`` for the CLI); nothing here names a command, a flag or a variable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from runner.budget import Limit, Spend, active_seconds, budget_of
from runner.errors import AGENT_DID_NOT_START
from runner.ledger.records import Effect, EffectStatus, Event, Run, Signal
from runner.names import EventType, SignalStatus, StepId
from runner.usage import agent_runs, total
from runner.workflow import State, is_end, is_runnable

# The phases a run goes through, in order, as the tracking comment lists them.
PHASES = (
    State.RESEARCH, State.SPECIFY, State.AWAITING_APPROVAL, State.IMPLEMENT, State.VERIFY,
    State.PUBLISH,
)


class NextActionKind(StrEnum):
    NONE_DONE = "none_done"  # params: head
    NONE_CANCELLED = "none_cancelled"
    WAIT_FOR_HOLDER = "wait_for_holder"  # params: owner, step, expires_at
    WAIT_FOR_RETRY = "wait_for_retry"  # params: step, at
    RESUME = "resume"  # params: step, unsent (effects to send first), ended (its end state)
    REVIEW_SPEC = "review_spec"  # params: spec_sha256
    REVIEW_DIFF = "review_diff"  # params: reason, diff_sha256
    HUMAN_DECISION = "human_decision"  # params: reason, step
    RAISE_BUDGET = "raise_budget"  # params: reason, step, limit, raise (a suggested amount)
    FIX_AND_RETRY = "fix_and_retry"  # params: reason, step, agent (True: it did not start)


@dataclass(frozen=True)
class NextAction:
    """The safest next action: what kind, and the values it needs."""

    kind: NextActionKind
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, **self.params}


def next_action(run: Run, effects: list[Effect], *, spec_sha256: str | None,
                now: float, pending_signals: int = 0,
                budget_stop: Mapping[str, Any] | None = None,
                answering: bool = False, agent_did_not_start: bool = False) -> NextAction:
    """What should happen next, from the ledger alone (``budget_stop``: the exhaustion that
    stopped the run, when its budget did; ``answering``: asked by the lease holder answering a
    status request, whose own lease is nobody to wait for; ``agent_did_not_start``: the
    failure was the run's agent command not starting)."""
    unsent = sum(1 for e in effects if e.status is EffectStatus.INTENDED)
    if run.lease_live(now) and not answering:
        return NextAction(NextActionKind.WAIT_FOR_HOLDER, {
            "owner": run.lease_owner, "step": run.step, "expires_at": run.lease_expires_at})
    if pending_signals or (unsent and not is_runnable(run.state)):
        # Its inbox or outbox has work: whoever takes the run next answers or sends it.
        return NextAction(NextActionKind.RESUME, {
            "step": run.step, "unsent": unsent, "signals": pending_signals,
            **({"ended": run.state.value} if is_end(run.state) else {})})
    if run.state is State.DONE:
        return NextAction(NextActionKind.NONE_DONE, {"head": run.head_revision})
    if run.state is State.CANCELLED:
        return NextAction(NextActionKind.NONE_CANCELLED)
    if run.state is State.AWAITING_APPROVAL:
        return NextAction(NextActionKind.REVIEW_SPEC, {"spec_sha256": spec_sha256})
    if run.state is State.AWAITING_DIFF_APPROVAL:
        return NextAction(NextActionKind.REVIEW_DIFF, {
            "reason": run.reason, "diff_sha256": diff_in_reason(run.reason)})
    if run.state is State.NEEDS_HUMAN and budget_stop is not None:
        return NextAction(NextActionKind.RAISE_BUDGET, {
            "reason": run.reason, "step": run.step, "limit": budget_stop.get("limit"),
            "raise": budget_stop.get("raise")})
    if run.state is State.NEEDS_HUMAN:
        return NextAction(NextActionKind.HUMAN_DECISION, {"reason": run.reason, "step": run.step})
    if run.state is State.FAILED:
        return NextAction(NextActionKind.FIX_AND_RETRY, {
            "reason": run.reason, "step": run.step,
            **({"agent": True} if agent_did_not_start else {})})
    assert is_runnable(run.state)
    if run.ready_at is not None and run.ready_at > now:
        return NextAction(NextActionKind.WAIT_FOR_RETRY, {"step": run.step, "at": run.ready_at})
    return NextAction(NextActionKind.RESUME, {"step": run.step, "unsent": unsent})


def diff_in_reason(reason: str | None) -> str | None:
    """The diff hash the reason of a run awaiting diff approval names (verify writes it as
    ``diff sha256 <hex>``): the run's one record of it outside its checkpoints."""
    found = _DIFF_SHA.search(reason or "")
    return found.group(1) if found else None


_DIFF_SHA = re.compile(r"diff sha256 ([0-9a-f]{64})")


@dataclass(frozen=True)
class RunStatus:
    """The four answers: what was completed, the state, the effects, the safest next action."""

    run_id: str
    title: str
    state: str
    step: str
    attempt: int
    completed_steps: list[str]
    effects: list[dict[str, Any]]
    next_action: NextAction
    reason: str | None
    lease: dict[str, Any] | None
    head_revision: str | None
    spec_sha256: str | None
    pending_signals: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)  # e.g. a corrupt artifact, named
    usage: dict[str, Any] = field(default_factory=dict)  # ``usage_view``: spend and budget
    subagents: list[dict[str, Any]] = field(default_factory=list)  # ``subagent_rows``

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "title": self.title, "state": self.state, "step": self.step,
            "attempt": self.attempt, "completed_steps": self.completed_steps,
            "effects": self.effects, "next_action": self.next_action.to_dict(),
            "reason": self.reason, "lease": self.lease, "head_revision": self.head_revision,
            "spec_sha256": self.spec_sha256, "pending_signals": self.pending_signals,
            "problems": self.problems, "usage": self.usage, "subagents": self.subagents,
        }


def describe(
    run: Run, completed: list[str], effects: list[Effect], signals: list[Signal], *,
    spec_sha256: str | None, now: float, problems: list[str] | None = None,
    usage: dict[str, Any] | None = None, budget_stop: Mapping[str, Any] | None = None,
    subagents: Sequence[Mapping[str, Any]] = (), answering: str | None = None,
    agent_did_not_start: bool = False,
) -> RunStatus:
    """The run's status; ``answering``: the id of the status request this answers (its
    answerer holds the lease and the request itself is pending: neither is what the run
    waits for)."""
    pending = [s for s in signals if s.status is SignalStatus.PENDING and s.id != answering]
    lease = None
    if run.lease_owner is not None:
        lease = {"owner": run.lease_owner, "epoch": run.lease_epoch,
                 "expires_at": run.lease_expires_at, "live": run.lease_live(now)}
    return RunStatus(
        run_id=run.id, title=run.title, state=run.state.value, step=run.step,
        attempt=run.attempt, completed_steps=completed, effects=[e.to_dict() for e in effects],
        next_action=next_action(run, effects, spec_sha256=spec_sha256, now=now,
                                pending_signals=len(pending), budget_stop=budget_stop,
                                answering=answering is not None,
                                agent_did_not_start=agent_did_not_start),
        reason=run.reason, lease=lease, head_revision=run.head_revision,
        spec_sha256=spec_sha256,
        pending_signals=[s.to_dict() for s in pending],
        problems=list(problems or []),
        usage=dict(usage or {}),
        subagents=[dict(row) for row in subagents],
    )


def usage_view(events: Iterable[Event], prepared: Mapping[str, Any] | None, *, now: float,
               steps: bool = True) -> dict[str, Any]:
    """What a run's agents spent, in total and per agent run (``steps``), and its budget:
    each limit that is set, with what was allowed and what was spent of it."""
    events = list(events)
    runs = agent_runs(events)
    totals = total(runs)
    budget = budget_of(prepared, events)
    spend = Spend(totals, active_seconds(events, now))
    limits = {which.value: {"allowed": budget.limit(which), "spent": round(spend.of(which), 6)}
              for which in Limit if budget.limit(which) is not None}
    view: dict[str, Any] = {"total": totals.to_dict(), "budget": limits}
    if steps:
        view["steps"] = [run.to_dict() for run in runs]
    return view


class PhaseStatus(StrEnum):
    DONE = "done"
    RUNNING = "running"
    WAITING = "waiting"
    STOPPED = "stopped"
    PENDING = "pending"


def tracking_view(run: Run, completed: list[str], *, spec_sha256: str | None,
                  branch: str, at: float, failure: str | None = None,
                  usage: Mapping[str, Any] | None = None,
                  budget_stop: Mapping[str, Any] | None = None,
                  subagents: Sequence[Mapping[str, Any]] = (),
                  limited: Sequence[str] = (),
                  agent_did_not_start: bool = False) -> dict[str, Any]:
    """The tracking comment's content as data, at the transition recorded at ``at``
    (``usage``: ``usage_view`` without steps; ``budget_stop``: the exhaustion that stops it;
    ``subagents``: ``runner.subagents.subagent_rows``; ``limited``: the notes of settings
    lowered to the service's ceilings; ``agent_did_not_start``: the failure that stops it)."""
    done = {StepId.parse(step).state for step in completed}
    current = run.step_id.state
    phases = []
    shown = PHASES
    if State.AWAITING_DIFF_APPROVAL.value in done | {current}:  # only where a run waited so
        shown = (*PHASES[:-1], State.AWAITING_DIFF_APPROVAL, PHASES[-1])
    for phase in shown:
        if run.state is State.DONE or (phase.value in done and phase.value != current):
            status = PhaseStatus.DONE
        elif phase.value == current or phase is run.state:
            status = {State.AWAITING_APPROVAL: PhaseStatus.WAITING,
                      State.AWAITING_DIFF_APPROVAL: PhaseStatus.WAITING,
                      State.NEEDS_HUMAN: PhaseStatus.STOPPED,
                      State.FAILED: PhaseStatus.STOPPED,
                      State.CANCELLED: PhaseStatus.STOPPED}.get(run.state, PhaseStatus.RUNNING)
        else:
            status = PhaseStatus.PENDING
        repairs = sum(1 for step in completed if StepId.parse(step).state == State.REPAIR)
        phases.append({"phase": phase.value, "status": status.value,
                       **({"repairs": repairs} if phase is State.VERIFY and repairs else {})})
    # Recorded under the writer's lease: what comes next does not depend on who holds it.
    action = next_action(replace(run, lease_owner=None), [], spec_sha256=spec_sha256, now=at,
                         budget_stop=budget_stop, agent_did_not_start=agent_did_not_start)
    return {
        "run": run.id, "title": run.title, "state": run.state.value, "step": run.step,
        "phases": phases, "branch": branch, "spec_sha256": spec_sha256,
        "elapsed_s": round(max(0.0, at - run.created_at), 1),
        "reason": run.reason, "next_action": action.to_dict(),
        **({"failure_class": failure} if failure else {}),
        **({"usage": dict(usage)} if usage and usage.get("total", {}).get("agent_runs")
           else {}),
        **({"subagents": [{k: row.get(k) for k in ("name", "status", "artifact")}
                          for row in subagents]} if subagents else {}),
        **({"limited": list(limited)} if limited else {}),
    }


def agent_did_not_start(events: Iterable[Event]) -> bool:
    """Whether the run's last failure was its agent command not starting (a resume since then
    clears it): another agent, not a plain retry, is what helps."""
    stopped = False
    for event in events:
        if event.type == EventType.STEP_FAILED:
            evidence = event.data.get("evidence")
            stopped = isinstance(evidence, dict) and evidence.get("cause") == AGENT_DID_NOT_START
        elif event.type == EventType.RUN_RESUMED:
            stopped = False
    return stopped
