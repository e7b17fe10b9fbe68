"""What a failure does to a run, built without I/O: a retry scheduled, or a stop (failed,
needs a human) with its evidence; history that cannot be trusted; a step whose workers kept
dying; an effect that failed after the run settled.

``runner/decisions.py`` classifies a failure (``decide_failure``); this module builds the
``Change`` that records it: the failure's record and artifacts (redacted), what its agent
spent, and the events the decision names. ``runner/session.py`` commits it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from runner.changes import stop, unchanged
from runner.decisions import Limits, decide_failure
from runner.errors import (
    AmbiguousFailure,
    BudgetExhausted,
    CorruptArtifact,
    CorruptRecord,
    DeterministicFailure,
    StepFailure,
    TransientFailure,
    WorktreeError,
    WorktreeMismatch,
    WorktreeTimedOut,
)
from runner.ledger.records import Change, NewEvent, Run
from runner.names import EventType
from runner.redact import Redactor
from runner.usage import usage_event_data
from runner.workflow import Outcome, is_end, is_stopped


def fail(run: Run, failure: StepFailure, *, during: str, limits: Limits, redact: Redactor,
         now: float, uncharged: int = 0,
         jitter: Callable[[float, float], float] = random.uniform) -> Change:
    """``run``'s step (or an effect ``during`` it) failed: a retry after a backoff, or a stop,
    as ``decide_failure`` says (``uncharged``: the step's attempts its agent's provider
    refused); either way the failure is recorded as evidence, redacted."""
    record = json.loads(redact(json.dumps(
        {"class": failure.failure_class, "error": str(failure), "during": during,
         "evidence": failure.evidence}, sort_keys=True, default=str)))
    artifacts = {
        f"evidence/{run.step}.{run.attempt}.json":
            json.dumps(record, indent=2, sort_keys=True).encode(),
        **{path: redact.bytes(data) for path, data in failure.artifacts.items()},
    }
    decision = decide_failure(run, failure, limits, uncharged=uncharged, jitter=jitter)
    events = [NewEvent(EventType.STEP_FAILED, step=run.step, attempt=run.attempt,
                       data=record)]
    if failure.usage is not None:  # the agent ran: what it spent is paid once, here
        events.append(NewEvent(EventType.AGENT_USAGE, step=run.step, attempt=run.attempt,
                               data=redact.value(usage_event_data(
                                   failure.failure_class, failure.usage))))
    if isinstance(failure, BudgetExhausted):
        events.append(NewEvent(EventType.BUDGET_EXHAUSTED, step=run.step,
                               attempt=run.attempt, data=failure.exhaustion))
    events += [NewEvent(t, step=run.step, attempt=run.attempt,
                        data={"reason": record["error"]}) for t in decision.events
               if t is not EventType.STEP_RETRY_SCHEDULED]
    if decision.outcome is None:
        events.append(NewEvent(EventType.STEP_RETRY_SCHEDULED, step=run.step,
                               attempt=run.attempt,
                               data={"delay_s": round(decision.delay, 3),
                                     "error": record["error"]}))
        return unchanged(run, events=tuple(events), artifacts=artifacts,
                         ready_at=now + decision.delay)
    return stop(run, decision.outcome, redact(decision.reason), events, artifacts)


def workspace_failure(error: WorktreeError) -> StepFailure:
    """A git operation on the run's mirror or worktree failed: transient (a fetch, a lock),
    retried with backoff, unless git ran past its timeout and was killed: the same tree would
    take as long again, so the step fails naming the command instead of retrying."""
    if isinstance(error, WorktreeTimedOut):
        return DeterministicFailure(f"workspace: {error}")
    return TransientFailure(f"workspace: {error}")


def distrust(run: Run, error: CorruptRecord | WorktreeMismatch) -> Change:
    """Corrupt history is never used: stop for a human, naming what is corrupt."""
    if isinstance(error, CorruptArtifact):
        event = NewEvent(EventType.ARTIFACT_CORRUPT, step=run.step, data={
            "path": error.path, "sha256": error.sha256, "actual": error.actual,
            "error": str(error)})
    else:
        event = NewEvent(EventType.CHECKPOINT_CORRUPT, step=run.step,
                         data={"error": str(error)})
    return stop(run, Outcome.NEEDS_HUMAN, f"history cannot be trusted: {error}", [event])


def exhausted(run: Run) -> Change:
    """A step taken up more times than allowed without completing: its worker died each time
    (``runner.decisions.attempts_exhausted``); the run fails."""
    return stop(run, Outcome.FAILED, (
        f"{run.step} was taken up {run.attempt} times without completing (its worker"
        " died each time); fix the cause, then retry the run"),
        [NewEvent(EventType.STEP_FAILED, step=run.step, attempt=run.attempt,
                  data={"class": "attempts_exhausted"})])


def gives_up_effect(run: Run, failure: StepFailure) -> bool:
    """Whether a failed effect is given up rather than failing ``run``: the run already ended
    or waits for a human, and sending again cannot fix the failure."""
    settled = is_end(run.state) or is_stopped(run.state)
    return settled and not isinstance(failure, TransientFailure | AmbiguousFailure)
