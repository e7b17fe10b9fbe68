"""The run's inbox: who may signal (the ``Authorizer`` port) and what a signal does (pure).

Signals are approve (with the spec's hash), approve-diff (with the verified diff's hash),
request changes (with text), retry, cancel,
verify again and a budget raise (with an amount), each with its author and source. A
worker holding the run answers pending signals one at a time: it asks the authorizer (the
local one allows the local user; GitHub's asks the permission API), then ``decide_signal``
says, from what the ledger recorded, whether the signal is accepted (and which outcome it
causes) or refused (and why, as a ``Refusal`` with parameters that the edge renders into a
reply). A signal is valid only for the state it names: an approval recorded (by ledger
sequence) before the spec now waiting was committed is refused, whatever hash it names, since
whoever sent it had not seen that spec (an agent can hash the spec it is still writing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from runner.budget import BadRaise, Limit, parse_raise
from runner.ledger.records import Event, Run, Signal
from runner.names import LOCAL_ORIGIN, EventType, SignalKind, StepId
from runner.protected import MIN_DIFF_PREFIX, matches_diff
from runner.signal_payloads import Approve, ApproveDiff, RaiseBudget, RequestChanges, Retry
from runner.workflow import Outcome, State, is_end, is_stopped

# Every text that names the spec's hash gives its first 12 characters; a shorter prefix is too
# easy to match by accident (or by a guess), so it is refused with a reply saying how many.
MIN_HASH_PREFIX = 12


class Refusal(StrEnum):
    """Why a signal was refused; the reply says it with these parameters."""

    NOT_PERMITTED = "not_permitted"  # params: author, detail
    NOT_WAITING_FOR_APPROVAL = "not_waiting_for_approval"  # params: state
    STALE_HASH = "stale_hash"  # params: given, current
    SHORT_HASH = "short_hash"  # params: given, needed, current
    BEFORE_SPEC = "before_spec"  # params: given, current
    NO_SPEC = "no_spec"
    EMPTY_MESSAGE = "empty_message"
    NOTHING_TO_RETRY = "nothing_to_retry"  # params: state
    NOTHING_TO_VERIFY = "nothing_to_verify"  # params: state
    ENDED = "ended"  # params: state
    BAD_BUDGET = "bad_budget"  # params: amount, detail
    NOT_WAITING_FOR_DIFF_APPROVAL = "not_waiting_for_diff_approval"  # params: state
    STALE_DIFF = "stale_diff"  # params: given, current, min (a wrong, stale or short hash)


@dataclass(frozen=True)
class Authorization:
    """The authorizer's answer for one signal's author."""

    allowed: bool
    detail: str = ""  # why not, or how (e.g. "write permission")


class Authorizer(Protocol):
    """Who may signal a run; asked by the worker holding it (it may do I/O)."""

    def authorize(self, run: Run, signal: Signal) -> Authorization: ...


class LocalAuthorizer:
    """Runs on this host obey the local user (CLI signals); other sources are not trusted."""

    def authorize(self, run: Run, signal: Signal) -> Authorization:
        if signal.origin == LOCAL_ORIGIN:
            return Authorization(True, "local user")
        return Authorization(False, f"signals from {signal.origin!r} are not accepted for a"
                                    " local run")


@dataclass(frozen=True)
class Verdict:
    """A decided signal: accepted with the outcome it causes, or refused with a reason."""

    accepted: bool
    outcome: Outcome | None = None
    refusal: Refusal | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """The decision as a plain sentence, for the ledger and logs."""
        if self.accepted:
            return f"accepted: {self.outcome.value if self.outcome else 'no change'}"
        assert self.refusal is not None
        details = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"refused ({self.refusal.value}{': ' + details if details else ''})"


def _refuse(refusal: Refusal, **params: Any) -> Verdict:
    return Verdict(False, refusal=refusal, params=params)


def decide_signal(
    run: Run, signal: Signal, *, authorization: Authorization, spec_sha256: str | None,
    has_tree: bool, budget_stop: Mapping[str, Any] | None = None,
    before_spec: bool = False, diff_sha256: str | None = None,
) -> Verdict:
    """What ``signal`` does to ``run`` as it stands; pure.

    ``spec_sha256`` is the current spec's hash (None before one exists); ``has_tree`` says
    whether an implementation has been checkpointed (verification can be rerun on it);
    ``budget_stop`` is the exhaustion that stopped the run, when its budget did
    (``runner.budget.budget_stop``); ``before_spec`` says the signal was recorded before
    the spec now waiting was committed (``recorded_before_spec``); ``diff_sha256`` is the hash
    of the diff waiting for approval (an approval of any other diff, an earlier one included,
    is refused). A budget raise is accepted in any state but an end, with ``params`` naming
    the limit and amount; it resumes a run its budget stopped (``RETRIED``) and otherwise
    changes no state (outcome None).
    """
    if not authorization.allowed:
        return _refuse(Refusal.NOT_PERMITTED, author=signal.author, detail=authorization.detail)
    if signal.kind is SignalKind.STATUS:
        return Verdict(True)  # answered with the status, whatever the state
    if is_end(run.state):
        return _refuse(Refusal.ENDED, state=run.state.value)
    kind = signal.kind
    if kind is SignalKind.CANCEL:
        return Verdict(True, Outcome.CANCELLED)
    if kind in {SignalKind.APPROVE, SignalKind.REQUEST_CHANGES}:
        if run.state is not State.AWAITING_APPROVAL:
            return _refuse(Refusal.NOT_WAITING_FOR_APPROVAL, state=run.state.value)
        if spec_sha256 is None:
            return _refuse(Refusal.NO_SPEC)
        payload = signal.payload
        if kind is SignalKind.REQUEST_CHANGES:
            if not isinstance(payload, RequestChanges) or not payload.message.strip():
                return _refuse(Refusal.EMPTY_MESSAGE)
            return Verdict(True, Outcome.CHANGES_REQUESTED)
        given = payload.hash.strip().lower() if isinstance(payload, Approve) else ""
        if before_spec:
            return _refuse(Refusal.BEFORE_SPEC, given=given, current=spec_sha256)
        if len(given) < MIN_HASH_PREFIX:
            return _refuse(Refusal.SHORT_HASH, given=given, needed=MIN_HASH_PREFIX,
                           current=spec_sha256)
        if not spec_sha256.startswith(given):
            return _refuse(Refusal.STALE_HASH, given=given, current=spec_sha256)
        return Verdict(True, Outcome.APPROVED)
    if kind is SignalKind.APPROVE_DIFF:
        if run.state is not State.AWAITING_DIFF_APPROVAL or diff_sha256 is None:
            return _refuse(Refusal.NOT_WAITING_FOR_DIFF_APPROVAL, state=run.state.value)
        given = signal.payload.hash.strip().lower() if isinstance(signal.payload,
                                                                  ApproveDiff) else ""
        if not matches_diff(given, diff_sha256):
            return _refuse(Refusal.STALE_DIFF, given=given, current=diff_sha256,
                           min=MIN_DIFF_PREFIX)
        return Verdict(True, Outcome.DIFF_APPROVED)
    if kind is SignalKind.RETRY:
        if (isinstance(signal.payload, Retry) and signal.payload.changes_agent
                and signal.origin != LOCAL_ORIGIN):
            # What a run executes is the operator's to choose, never a commenter's.
            return _refuse(Refusal.NOT_PERMITTED, author=signal.author,
                           detail="only the operator at this host's CLI may change a run's agent")
        if not is_stopped(run.state):
            return _refuse(Refusal.NOTHING_TO_RETRY, state=run.state.value)
        return Verdict(True, Outcome.RETRIED)
    if kind is SignalKind.BUDGET:
        return _decide_raise(run, signal, budget_stop)
    if kind is SignalKind.VERIFY_AGAIN:
        if not is_stopped(run.state) or not has_tree:
            return _refuse(Refusal.NOTHING_TO_VERIFY, state=run.state.value)
        return Verdict(True, Outcome.VERIFY_AGAIN)
    raise AssertionError(f"unhandled signal kind {kind!r}")  # pragma: no cover


def _decide_raise(run: Run, signal: Signal, budget_stop: Mapping[str, Any] | None) -> Verdict:
    amount = signal.payload.amount.strip() if isinstance(signal.payload, RaiseBudget) else ""
    stopped = budget_stop if run.state is State.NEEDS_HUMAN else None
    try:
        which, add = parse_raise(amount, stopped_by=Limit(stopped["limit"]) if stopped else None)
    except (BadRaise, ValueError, KeyError) as exc:
        return _refuse(Refusal.BAD_BUDGET, amount=amount, detail=str(exc))
    params = {"limit": which.value, "add": add}
    return Verdict(True, Outcome.RETRIED if stopped else None, params=params)


def recorded_before_spec(events: Iterable[Event], signal_id: str) -> bool:
    """Whether signal ``signal_id`` was recorded (its ``SIGNAL_RECEIVED``) before the run last
    began waiting for approval (the ``AWAITING_APPROVAL`` event committed with its spec)."""
    received = waiting = None
    for event in events:
        if event.type == EventType.SIGNAL_RECEIVED and event.data.get("signal") == signal_id:
            received = event.seq
        elif event.type == EventType.AWAITING_APPROVAL:
            waiting = event.seq
    return received is not None and waiting is not None and received < waiting


def has_tree(completed_steps: Iterable[str]) -> bool:
    """Whether an implement step completed: the run has a checkpointed tree that verification
    can check again."""
    return any(StepId.parse(step).state == State.IMPLEMENT for step in completed_steps)


def stopped_step(run: Run) -> StepId:
    """The step a stopped run stopped in (a retry takes it up again)."""
    return run.step_id
