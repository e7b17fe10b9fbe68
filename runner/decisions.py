"""Pure decisions the engine applies: what to do next with a run, and what a failure means.

Each function takes what the ledger recorded (and the time) and returns a value; the session
and the scheduler turn it into a fenced ledger write. Tested without a database.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from runner.errors import (
    AgentIdle,
    AmbiguousFailure,
    AuthorityFailure,
    DeterministicFailure,
    PolicyViolation,
    ProviderUnavailable,
    StepFailure,
    TransientFailure,
)
from runner.ledger.records import Event, Run
from runner.names import EventType
from runner.workflow import Outcome, is_end, is_runnable, is_wait


@dataclass(frozen=True)
class Limits:
    """How far the runner retries on its own: attempts per step, and the backoff curve."""

    max_attempts: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    # Retries in a row of a step whose agent's provider refused for now (rate limit,
    # overload): not charged as attempts, bounded on their own.
    max_provider_retries: int = 10


class MoveKind(StrEnum):
    FINISHED = "finished"  # ended: nothing will ever move it again
    WAITING = "waiting"  # for a signal (approval, a human); nothing to do meanwhile
    LEASED = "leased"  # another worker holds it
    NOT_BEFORE = "not_before"  # a retry is scheduled at ``at``
    TIME_OUT = "time_out"  # a wait's deadline passed
    WORK = "work"  # take the lease: a step to run, signals to answer or effects to send


@dataclass(frozen=True)
class Move:
    kind: MoveKind
    at: float | None = None  # NOT_BEFORE: when; LEASED: when the lease expires


def next_move(run: Run, now: float, *, has_work: bool) -> Move:
    """What a scheduler should do with ``run`` now.

    ``has_work``: the run has a pending signal or an unsent effect (its inbox or outbox).
    """
    if run.lease_live(now):
        return Move(MoveKind.LEASED, run.lease_expires_at)
    if run.ready_at is not None and run.ready_at > now and (is_runnable(run.state) or has_work):
        return Move(MoveKind.NOT_BEFORE, run.ready_at)
    if has_work:
        return Move(MoveKind.WORK)
    if is_end(run.state):
        return Move(MoveKind.FINISHED)
    if is_wait(run.state):
        if run.deadline is not None and run.deadline <= now:
            return Move(MoveKind.TIME_OUT)
        return Move(MoveKind.WAITING)
    return Move(MoveKind.WORK)


@dataclass(frozen=True)
class FailureDecision:
    """What a failed step (or a failed effect) leads to.

    ``outcome`` None: retry the same step after ``delay`` seconds, under a new lease.
    """

    outcome: Outcome | None
    reason: str
    delay: float = 0.0
    events: tuple[EventType, ...] = ()


def decide_failure(
    run: Run, failure: StepFailure, limits: Limits, *, uncharged: int = 0,
    jitter: Callable[[float, float], float] = random.uniform,
) -> FailureDecision:
    """Classify by type (DESIGN.md "Failure classification"): authority stops for a human,
    transient and ambiguous retry with bounded exponential backoff, the rest fails.

    ``uncharged``: the step's earlier attempts that its agent's provider refused
    (``provider_retries``); they do not count against ``max_attempts``, and a provider's
    refusal is bounded by ``max_provider_retries`` instead."""
    error = str(failure)
    if isinstance(failure, AuthorityFailure):
        events = (EventType.POLICY_VIOLATION,) if isinstance(failure, PolicyViolation) else ()
        return FailureDecision(Outcome.NEEDS_HUMAN, error, events=events)
    if isinstance(failure, ProviderUnavailable):
        retry = uncharged + 1
        if retry > limits.max_provider_retries:
            return FailureDecision(Outcome.FAILED, (
                f"{run.step}: the agent's model provider refused {retry} times in a row, last:"
                f" {error}; retry the run once the provider answers again"))
        delay = backoff(retry, limits.backoff_base, limits.backoff_max, jitter=jitter)
        return FailureDecision(None, error, delay=delay,
                               events=(EventType.STEP_RETRY_SCHEDULED,))
    if isinstance(failure, TransientFailure | AmbiguousFailure):
        if run.attempt - uncharged >= limits.max_attempts:
            return FailureDecision(Outcome.FAILED, (
                f"{run.step} failed {run.attempt} times, last: {error}; fix the cause, then"
                " retry the run"))
        delay = backoff(run.attempt, limits.backoff_base, limits.backoff_max, jitter=jitter)
        return FailureDecision(None, error, delay=delay,
                               events=(EventType.STEP_RETRY_SCHEDULED,))
    return FailureDecision(Outcome.FAILED, error)


def backoff(attempt: int, base: float, cap: float, *,
            jitter: Callable[[float, float], float] = random.uniform) -> float:
    """Exponential backoff with full jitter, bounded by ``cap``."""
    return jitter(base / 2, min(cap, base * 2 ** (attempt - 1)))


def attempts_exhausted(run: Run, limits: Limits, *, uncharged: int = 0) -> bool:
    """A step taken up more than ``max_attempts`` times (``uncharged`` provider refusals
    aside): its worker died each time (OOM, a segfault); redelivering it forever would never
    end."""
    return is_runnable(run.state) and run.attempt - uncharged > limits.max_attempts


def provider_retries(events: Iterable[Event], step: str) -> int:
    """How many of ``step``'s attempts its agent's provider refused for now (a rate limit,
    an overload) since the run last resumed: attempts not charged."""
    count = 0
    for event in events:
        if event.type == EventType.RUN_RESUMED:
            count = 0
        elif (event.type == EventType.STEP_FAILED and event.step == step
              and ((event.data.get("evidence") or {}).get("provider_error") or {}).get(
                  "trouble") == "transient"):
            count += 1
    return count


def approval_timed_out_reason() -> str:
    return ("the spec was neither approved nor sent back before the approval timeout; review"
            " it, then retry the run to wait again, or cancel it")


def idle_timeouts(events: Iterable[Event], step: str) -> int:
    """How often ``step``'s agent was ended for idleness since the run last resumed (a person's
    retry or raise starts the count again)."""
    count = 0
    for event in events:
        if event.type == EventType.RUN_RESUMED:
            count = 0
        elif (event.type == EventType.STEP_FAILED and event.step == step
              and (event.data.get("evidence") or {}).get("stopped") == "idle"):
            count += 1
    return count


def decide_idle(failure: AgentIdle, *, earlier: int) -> StepFailure:
    """A hung agent: the first idle timeout of a step is transient (an unlucky network stall,
    retried with backoff); a second one is deterministic: the agent hangs on this step, and
    running it again would only burn time. The log tail stays the evidence."""
    if earlier < 1:
        return failure
    return DeterministicFailure(
        f"{failure}; the agent hung in this step {earlier + 1} times, so it is not retried"
        " again: read the log tail in the evidence, fix the agent or the task, then retry the"
        " run",
        evidence=failure.evidence, artifacts=failure.artifacts, usage=failure.usage,
    )
