"""The changes a session writes, built without I/O: the pieces every change is made of
(entering a state, keeping the run where it is, stopping, an effect of the current step) and a
completed step's change.

Answering a signal is built in ``runner/inbox.py`` and recording a failure in
``runner/failures.py``, from these pieces; ``runner/session.py`` reads what they need and
commits what they return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runner.effects import EffectRequest, effect_key
from runner.ledger.records import Change, Checkpoint, NewEvent, Run, SignalDecision
from runner.names import EffectKind, EventType, StepId
from runner.results import repository_config
from runner.workflow import Outcome, State, is_end, is_runnable, is_stopped, transition

if TYPE_CHECKING:
    from runner.steps.base import StepResult

# The event recording entry into each state: a step started, a wait begun, an end.
ENTRY_EVENTS = {
    State.RESEARCH: EventType.RESEARCH_STARTED,
    State.SPECIFY: EventType.SPEC_STARTED,
    State.IMPLEMENT: EventType.IMPLEMENTATION_STARTED,
    State.VERIFY: EventType.VERIFICATION_STARTED,
    State.REPAIR: EventType.REPAIR_STARTED,
    State.PUBLISH: EventType.PUBLISH_STARTED,
    State.AWAITING_APPROVAL: EventType.AWAITING_APPROVAL,
    State.AWAITING_DIFF_APPROVAL: EventType.AWAITING_DIFF_APPROVAL,
    State.DONE: EventType.RUN_COMPLETED,
    State.FAILED: EventType.RUN_FAILED,
    State.NEEDS_HUMAN: EventType.NEEDS_HUMAN,
    State.CANCELLED: EventType.RUN_CANCELLED,
}


def entry_event(state: State, step: str, reason: str | None) -> NewEvent:
    data = {"reason": reason} if reason and (is_end(state) or is_stopped(state)) else {}
    return NewEvent(ENTRY_EVENTS[state], step=step, attempt=1 if is_runnable(state) else None,
                    data=data)


def unchanged(run: Run, **fields: Any) -> Change:
    """A change that keeps the run where it is (events, a scheduled retry, a refusal)."""
    return Change(**{
        "version": run.version, "state": run.state, "step": run.step,
        "attempt": run.attempt, "ready_at": run.ready_at, "deadline": run.deadline,
        "reason": run.reason, **fields,
    })


def stop(run: Run, outcome: Outcome, reason: str, events: Sequence[NewEvent],
         artifacts: Mapping[str, bytes] | None = None, *,
         effects: Sequence[EffectRequest] = (), signal: SignalDecision | None = None) -> Change:
    """The run stops (or ends) in its current step, saying why."""
    target = transition(run.state, outcome)
    return Change(
        version=run.version, state=target, step=run.step, attempt=run.attempt,
        events=(*events, entry_event(target, run.step, reason)),
        artifacts=dict(artifacts or {}), reason=reason,
        effects=tuple(e.intent() for e in effects), signal=signal,
    )


def effect(run: Run, kind: EffectKind, name: str, payload: Mapping[str, Any]) -> EffectRequest:
    """An effect of the run's current step (its key: run, step, name)."""
    return EffectRequest(effect_key(run.id, run.step, name), run.id, run.step, kind, payload)


def wait_deadline(state: State, history: Sequence[Checkpoint], *, default: float | None,
                  now: float) -> float | None:
    """When a wait entered at ``now`` stops waiting: a spec awaiting approval waits the
    repository's ``approval.timeout_hours`` (as its queued step read the config), else
    ``default`` seconds, the service's (None: it never times out); other states have no
    deadline."""
    if state is not State.AWAITING_APPROVAL:
        return None
    configured = repository_config(history).approval.timeout_hours
    timeout = configured * 3600 if configured else default
    return None if timeout is None else now + timeout


def completion(run: Run, result: StepResult, *, step_input: dict[str, Any],
               history: Sequence[Checkpoint], approval_timeout: float | None,
               now: float) -> Change:
    """A step's result recorded: its checkpoint, and the state the workflow table maps its
    outcome to (``history``: the checkpoints before it; a wait it enters gets its deadline
    from ``wait_deadline``)."""
    target = transition(run.state, result.outcome)
    checkpoint = Checkpoint(run.id, run.step, run.attempt, step_input,
                            {**result.record, "outcome": result.outcome.value})
    taken = [c.step for c in history] + [run.step]
    # A stop keeps the step it stopped in, so a retry knows what to take up again.
    step = run.step if is_stopped(target) else str(StepId.next_for(target.value, taken))
    events = (*result.events, entry_event(target, step, result.reason))
    return Change(
        version=run.version, state=target, step=step, attempt=1, events=events,
        checkpoint=checkpoint, artifacts=result.artifacts,
        deadline=wait_deadline(target, history, default=approval_timeout, now=now),
        reason=result.reason, head_revision=result.head_revision,
        effects=tuple(e.intent() for e in result.effects),
    )
