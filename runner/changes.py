"""The changes a session writes, built without I/O: entering a state, stopping, and answering a
signal (refused with a reply, a status reply, a budget raise, an accepted transition).

``runner/session.py`` reads what these need (the run, its checkpoints, the spec, the signal's
verdict) and commits what they return; ``runner/signals.py`` decides whether a signal is
accepted. Keeping the building here means a signal's answer is one place, readable and tested
apart from leases and transactions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runner.canonical import sha256_hex
from runner.effects import EffectRequest, effect_key
from runner.ledger.records import Change, Checkpoint, NewEvent, Run, Signal, SignalDecision
from runner.names import EffectKind, EventType, SignalStatus, StepId
from runner.signals import Verdict
from runner.views import RunStatus
from runner.workflow import Outcome, State, is_end, is_runnable, is_stopped, transition

# The event recording entry into each state: a step started, a wait begun, an end.
ENTRY_EVENTS = {
    State.RESEARCH: EventType.RESEARCH_STARTED,
    State.SPECIFY: EventType.SPEC_STARTED,
    State.IMPLEMENT: EventType.IMPLEMENTATION_STARTED,
    State.VERIFY: EventType.VERIFICATION_STARTED,
    State.REPAIR: EventType.REPAIR_STARTED,
    State.PUBLISH: EventType.PUBLISH_STARTED,
    State.AWAITING_APPROVAL: EventType.AWAITING_APPROVAL,
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


def answer_name(signal: Signal) -> str:
    """The name of a signal's reply or reaction: one per signal, whatever its text."""
    return f"{signal.kind.value}.{sha256_hex(signal.id)[:12]}"


def refusal(run: Run, signal: Signal, verdict: Verdict) -> Change:
    """A refused signal: its one reply, saying why, and the run stays where it is."""
    assert verdict.refusal is not None
    reply = effect(run, EffectKind.REPLY, f"reply.{answer_name(signal)}", {
        "run": run.id, "signal": signal.id, "author": signal.author,
        "refusal": verdict.refusal.value, "params": dict(verdict.params),
        "in_reply_to": signal.payload.get("comment"),
    })
    return unchanged(run, events=(NewEvent(
        EventType.SIGNAL_REFUSED, step=run.step,
        data={"signal": signal.id, "kind": signal.kind.value, "author": signal.author,
              "refusal": verdict.refusal.value, "params": dict(verdict.params)}),),
        effects=(reply.intent(),),
        signal=SignalDecision(signal.id, SignalStatus.REFUSED, verdict.reason))


def status_reply(run: Run, signal: Signal, verdict: Verdict, status: RunStatus) -> Change:
    """A status request: answered with the status, and nothing moves."""
    reply = effect(run, EffectKind.REPLY, f"reply.{answer_name(signal)}", {
        "run": run.id, "signal": signal.id, "author": signal.author,
        "status": {"state": status.state, "step": status.step,
                   "completed": status.completed_steps, "reason": status.reason,
                   "next_action": status.next_action.to_dict(),
                   "usage": {k: v for k, v in status.usage.items() if k != "steps"}},
        "in_reply_to": signal.payload.get("comment"),
    })
    return unchanged(run, effects=(reply.intent(),),
                     signal=SignalDecision(signal.id, SignalStatus.ACCEPTED, verdict.reason))


def acknowledgement(run: Run, signal: Signal, content: str) -> tuple[EffectRequest, ...]:
    """A reaction on the comment that carried an accepted signal (none without a comment)."""
    if signal.payload.get("comment") is None:
        return ()
    return (effect(run, EffectKind.REACTION, f"ack.{answer_name(signal)}", {
        "run": run.id, "signal": signal.id, "content": content,
        "comment": signal.payload["comment"]}),)


def _accepted_event(run: Run, signal: Signal) -> NewEvent:
    return NewEvent(EventType.SIGNAL_ACCEPTED, step=run.step, data={
        "signal": signal.id, "kind": signal.kind.value, "author": signal.author})


def budget_raise(run: Run, signal: Signal, verdict: Verdict, *, spec_sha256: str | None,
                 history: Sequence[Checkpoint]) -> tuple[Change, list[str] | None]:
    """A raise by someone allowed: recorded as a ``BUDGET_RAISED`` event (the run's budget is
    its recorded one plus its raises); a run its budget stopped resumes its step."""
    raised = NewEvent(EventType.BUDGET_RAISED, step=run.step, data={
        "limit": verdict.params["limit"], "add": verdict.params["add"], "by": signal.author,
        "signal": signal.id})
    effects = acknowledgement(run, signal, "+1")
    if verdict.outcome is not None:
        return acceptance(run, signal, verdict.outcome, spec_sha256=spec_sha256,
                          history=history, effects=effects, extra=(raised,))
    return unchanged(
        run, events=(_accepted_event(run, signal), raised),
        effects=tuple(e.intent() for e in effects),
        signal=SignalDecision(signal.id, SignalStatus.ACCEPTED, "accepted: budget raised"),
    ), None


def acceptance(run: Run, signal: Signal, outcome: Outcome, *, spec_sha256: str | None,
               history: Sequence[Checkpoint], effects: Sequence[EffectRequest],
               extra: Sequence[NewEvent] = ()) -> tuple[Change, list[str] | None]:
    """An accepted signal's transition, with the steps completed after it, or None when the
    run stays in its step (a cancel, a raise that resumes nothing). A wait it enters has no
    deadline yet: the session sets it from the repository's config and its clock."""
    accepted = _accepted_event(run, signal)
    decision = SignalDecision(signal.id, SignalStatus.ACCEPTED, f"accepted: {outcome.value}")
    if outcome is Outcome.CANCELLED:
        return stop(run, outcome, f"cancelled by {signal.author}", [accepted], effects=effects,
                    signal=decision), None
    target = transition(run.state, outcome, step=run.step_id)
    taken = [c.step for c in history]
    checkpoint = None
    events = [accepted, *extra]
    artifacts: dict[str, bytes] = {}
    if outcome is Outcome.APPROVED:
        assert spec_sha256 is not None
        checkpoint = Checkpoint(run.id, run.step, run.attempt, {"spec": spec_sha256}, {
            "outcome": outcome.value, "signal": signal.id, "by": signal.author,
            "approved": spec_sha256})
        events.append(NewEvent(EventType.SPEC_APPROVED, step=run.step,
                               data={"sha256": spec_sha256, "by": signal.author}))
        artifacts["approved-spec.sha256"] = f"{spec_sha256}\n".encode()
    elif outcome is Outcome.CHANGES_REQUESTED:
        message = str(signal.payload.get("message", ""))
        checkpoint = Checkpoint(run.id, run.step, run.attempt, {"spec": spec_sha256}, {
            "outcome": outcome.value, "signal": signal.id, "by": signal.author,
            "changes_requested": message})
        events.append(NewEvent(EventType.CHANGES_REQUESTED, step=run.step,
                               data={"message": message, "by": signal.author,
                                     "spec": spec_sha256}))
    else:
        events.append(NewEvent(EventType.RUN_RESUMED, step=run.step,
                               data={"by": signal.author, "to": target.value}))
    if checkpoint is not None:
        taken.append(checkpoint.step)
    step = str(StepId.next_for(target.value, taken))
    events.append(entry_event(target, step, None))
    return Change(
        version=run.version, state=target, step=step, attempt=1, events=tuple(events),
        checkpoint=checkpoint, artifacts=artifacts,
        effects=tuple(e.intent() for e in effects), signal=decision,
    ), taken
