"""Answering the run's inbox, built without I/O: a pending signal refused (one reply saying
why, at most one per forge author per run per minute), accepted (its transition, and a
reaction where it came with a comment) or deferred (its author's access could not be learned:
it is asked again later); a wait past its deadline timed out; on history that cannot be
trusted, every signal but a cancel refused.

``runner/signals.py`` decides whether a signal is accepted; this module builds the ``Change``
that answers it. ``runner/session.py`` reads what an answer needs (the signal, the run's
checkpoints and spec, the authorizer's answer, the status) and commits what these return, so a
signal's answer is one place, readable and tested apart from leases and transactions.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from runner.canonical import sha256_hex
from runner.changes import effect, entry_event, stop, unchanged, wait_deadline
from runner.decisions import Limits, approval_timed_out_reason, backoff
from runner.effects import EffectRequest
from runner.errors import CorruptRecord
from runner.ledger.records import (
    Change,
    Checkpoint,
    Event,
    NewEvent,
    Run,
    Signal,
    SignalDecision,
)
from runner.names import (
    LOCAL_ORIGIN,
    EffectKind,
    EventType,
    SignalKind,
    SignalStatus,
    StepId,
)
from runner.origin import AgentChoice, Origin
from runner.signal_payloads import RequestChanges, Retry
from runner.signals import Verdict
from runner.views import RunStatus
from runner.workflow import Outcome, transition

# One refusal reply per author per run in this many seconds: a reader posting twenty commands
# gets one reply, and the installation's spaced writes are not spent on the other nineteen.
REPLY_INTERVAL = 60.0


def answer(run: Run, signal: Signal, verdict: Verdict, *, spec_sha256: str | None,
           history: Sequence[Checkpoint], approval_timeout: float | None, now: float,
           status: RunStatus | None = None, replied_lately: bool = False,
           diff_sha256: str | None = None) -> Change:
    """The change answering ``signal`` as ``verdict`` decided: a refusal (without a reply when
    ``replied_lately`` says its author had one within ``REPLY_INTERVAL``), a status reply
    (``status``: the run's, read when ``needs_status`` says so), a budget raise or an accepted
    transition (``diff_sha256``: the diff an accepted approve-diff approved). A wait the answer
    enters gets its deadline from ``wait_deadline`` (``approval_timeout``: the service's
    default)."""
    if not verdict.accepted:
        return refusal(run, signal, verdict, reply=not replied_lately)
    if signal.kind is SignalKind.BUDGET:
        change, taken = budget_raise(run, signal, verdict, spec_sha256=spec_sha256,
                                     history=history)
    elif verdict.outcome is None:  # a status request: answered, nothing moves
        assert status is not None, "a status request is answered with the status"
        return status_reply(run, signal, verdict, status)
    else:
        change, taken = acceptance(
            run, signal, verdict.outcome, spec_sha256=spec_sha256, history=history,
            effects=acknowledgement(run, signal, "eyes"), diff_sha256=diff_sha256)
    if taken is not None:  # it entered a state: a wait there gets its deadline
        change = replace(change, deadline=wait_deadline(change.state, history,
                                                        default=approval_timeout, now=now))
    return change


def needs_status(signal: Signal, verdict: Verdict) -> bool:
    """Whether answering ``signal`` takes the run's status: an accepted status request."""
    return verdict.accepted and verdict.outcome is None and signal.kind is not SignalKind.BUDGET


def defer(run: Run, limits: Limits, *, now: float,
          jitter: Callable[[float, float], float] = random.uniform) -> Change:
    """The forge could not say who may signal (an outage, a rate limit): the signal stays
    pending and the run is asked again after a backoff. Never a failure of the run: an outage
    says nothing about the work."""
    delay = backoff(2, limits.backoff_base, limits.backoff_max, jitter=jitter)
    return unchanged(run, ready_at=now + delay)


def time_out(run: Run) -> Change:
    """A spec nobody approved or sent back before its deadline: a human decides."""
    return stop(run, Outcome.TIMED_OUT, approval_timed_out_reason(),
                [NewEvent(EventType.APPROVAL_TIMED_OUT, step=run.step)])


def answer_untrusted(run: Run, signal: Signal, error: CorruptRecord) -> Change:
    """A signal to a stopped run whose history is corrupt: a cancel ends the run; any other is
    refused (nothing can be retried on untrusted history)."""
    if signal.kind is SignalKind.CANCEL:
        return stop(run, Outcome.CANCELLED, f"cancelled by {signal.author}", [],
                    signal=SignalDecision(signal.id, SignalStatus.ACCEPTED, "cancelled"))
    return unchanged(run, signal=SignalDecision(
        signal.id, SignalStatus.REFUSED, f"history cannot be trusted: {error}"))


def answer_name(signal: Signal) -> str:
    """The name of a signal's reply or reaction: one per signal, whatever its text."""
    return f"{signal.kind.value}.{sha256_hex(signal.id)[:12]}"


def refusal(run: Run, signal: Signal, verdict: Verdict, *, reply: bool = True) -> Change:
    """A refused signal: its one reply saying why (none when ``reply`` is False: its author
    was answered lately), and the run stays where it is."""
    assert verdict.refusal is not None
    replies = (effect(run, EffectKind.REPLY, f"reply.{answer_name(signal)}", {
        "run": run.id, "signal": signal.id, "author": signal.author,
        "refusal": verdict.refusal.value, "params": dict(verdict.params),
        "in_reply_to": _comment(signal),
    }).intent(),) if reply else ()
    return unchanged(run, events=(NewEvent(
        EventType.SIGNAL_REFUSED, step=run.step,
        data={"signal": signal.id, "kind": signal.kind.value, "author": signal.author,
              "refusal": verdict.refusal.value, "params": dict(verdict.params),
              "replied": reply}),),
        effects=replies,
        signal=SignalDecision(signal.id, SignalStatus.REFUSED, verdict.reason))


def replied_lately(events: Sequence[Event], signal: Signal, *, now: float) -> bool:
    """Whether the author of ``signal`` (from a forge: this host's operator is answered every
    time) was sent a refusal in the run's last ``REPLY_INTERVAL`` seconds (``events``: the
    run's, from the ledger, so every worker sees the same answer)."""
    if signal.origin == LOCAL_ORIGIN:
        return False
    login = signal.author.lower()
    return any(e.type == EventType.SIGNAL_REFUSED and e.at > now - REPLY_INTERVAL
               and str(e.data.get("author", "")).lower() == login
               and e.data.get("replied", True) for e in events)


def status_reply(run: Run, signal: Signal, verdict: Verdict, status: RunStatus) -> Change:
    """A status request: answered with the status, and nothing moves."""
    reply = effect(run, EffectKind.REPLY, f"reply.{answer_name(signal)}", {
        "run": run.id, "signal": signal.id, "author": signal.author,
        "status": status_said(status), "in_reply_to": _comment(signal),
    })
    return unchanged(run, effects=(reply.intent(),),
                     signal=SignalDecision(signal.id, SignalStatus.ACCEPTED, verdict.reason))


def status_said(status: RunStatus) -> dict[str, Any]:
    """What a status reply says of ``status`` (``runner/render.py`` words it)."""
    return {"state": status.state, "step": status.step, "completed": status.completed_steps,
            "reason": status.reason, "next_action": status.next_action.to_dict(),
            "usage": {k: v for k, v in status.usage.items() if k != "steps"}}


def acknowledgement(run: Run, signal: Signal, content: str) -> tuple[EffectRequest, ...]:
    """A reaction on the comment that carried an accepted signal (none without a comment)."""
    if signal.payload.comment is None:
        return ()
    return (effect(run, EffectKind.REACTION, f"ack.{answer_name(signal)}", {
        "run": run.id, "signal": signal.id, "content": content,
        "comment": _comment(signal)}),)


def _comment(signal: Signal) -> dict[str, Any] | None:
    """The comment that carried ``signal``, as effect payloads name it (None: no comment)."""
    comment = signal.payload.comment
    return comment.model_dump(exclude_none=True) if comment is not None else None


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
               extra: Sequence[NewEvent] = (), diff_sha256: str | None = None
               ) -> tuple[Change, list[str] | None]:
    """An accepted signal's transition, with the steps completed after it, or None when the
    run stays in its step (a cancel, a raise that resumes nothing). A wait it enters has no
    deadline yet: ``answer`` sets it."""
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
    elif outcome is Outcome.DIFF_APPROVED:
        # The approval is checkpointed with the hash it names: publish compares it with the
        # tree it publishes, so it approves that diff and no later one.
        assert diff_sha256 is not None
        checkpoint = Checkpoint(run.id, run.step, run.attempt, {"diff": diff_sha256}, {
            "outcome": outcome.value, "signal": signal.id, "by": signal.author,
            "diff_approved": diff_sha256})
        events.append(NewEvent(EventType.DIFF_APPROVED, step=run.step,
                               data={"sha256": diff_sha256, "by": signal.author}))
    elif outcome is Outcome.CHANGES_REQUESTED:
        message = (signal.payload.message if isinstance(signal.payload, RequestChanges)
                   else "")
        checkpoint = Checkpoint(run.id, run.step, run.attempt, {"spec": spec_sha256}, {
            "outcome": outcome.value, "signal": signal.id, "by": signal.author,
            "changes_requested": message})
        events.append(NewEvent(EventType.CHANGES_REQUESTED, step=run.step,
                               data={"message": message, "by": signal.author,
                                     "spec": spec_sha256}))
    else:
        resumed: dict[str, Any] = {"by": signal.author, "to": target.value}
        origin = _with_new_agent(run, signal)
        if origin is not None:
            resumed["agent"] = origin.agent.model_dump(exclude_none=True)
        events.append(NewEvent(EventType.RUN_RESUMED, step=run.step, data=resumed))
    if checkpoint is not None:
        taken.append(checkpoint.step)
    step = str(StepId.next_for(target.value, taken))
    events.append(entry_event(target, step, None))
    return Change(
        version=run.version, state=target, step=step, attempt=1, events=tuple(events),
        checkpoint=checkpoint, artifacts=artifacts,
        effects=tuple(e.intent() for e in effects), signal=decision,
        origin=_with_new_agent(run, signal),
    ), taken


def _with_new_agent(run: Run, signal: Signal) -> Origin | None:
    """The run's origin with the agent a retry gives it; None when the retry gives none."""
    payload = signal.payload
    if signal.kind is not SignalKind.RETRY or not isinstance(payload, Retry) or not (
            payload.changes_agent):
        return None
    agent = AgentChoice(command=payload.agent_command, preset=payload.agent)
    return run.origin.model_copy(update={"agent": agent})
