"""The run's state machine as data: states, outcomes, allowed transitions, capability profiles.

Nothing else decides a transition. The engine reports what happened (an ``Outcome``) and
``transition`` answers with the next state from ``TRANSITIONS``, or raises ``IllegalTransition``.

Three kinds of state: runnable ones have a step for a worker; waits hold no lease and move
only on a signal (``awaiting_approval`` of the spec, ``awaiting_diff_approval`` of a verified
change that touches protected paths or waits for review before its push, and the two stops
``failed`` and ``needs_human``, which a person may retry); ends (``done``, ``cancelled``) never
change again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from runner.errors import IllegalTransition
from runner.names import EffectKind, StepId


class State(StrEnum):
    QUEUED = "queued"
    RESEARCH = "research"
    SPECIFY = "specify"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_DIFF_APPROVAL = "awaiting_diff_approval"
    IMPLEMENT = "implement"
    VERIFY = "verify"
    REPAIR = "repair"
    PUBLISH = "publish"
    DONE = "done"
    FAILED = "failed"
    NEEDS_HUMAN = "needs_human"
    CANCELLED = "cancelled"


class Outcome(StrEnum):
    """What a step or a signal reports; the table maps (state, outcome) to the next state."""

    COMPLETED = "completed"  # a step finished its work
    CHECKS_PASSED = "checks_passed"
    CHECKS_FAILED = "checks_failed"  # repair attempts remain
    REPAIRS_EXHAUSTED = "repairs_exhausted"  # checks failed and no repair attempt remains
    APPROVED = "approved"  # signal: spec approved against its hash
    CHANGES_REQUESTED = "changes_requested"  # signal: reviewer feedback
    DIFF_APPROVAL_NEEDED = "diff_approval_needed"  # verified, but a person approves the diff
    DIFF_APPROVED = "diff_approved"  # signal: the verified diff approved against its hash
    TIMED_OUT = "timed_out"  # a wait's deadline passed
    FAILED = "failed"  # deterministic failure, or transient retries exhausted
    NEEDS_HUMAN = "needs_human"  # authority failure, policy violation, corrupt history
    CANCELLED = "cancelled"
    RETRIED = "retried"  # signal: a stopped run takes its step up again
    VERIFY_AGAIN = "verification_rerun"  # signal: verify the checkpointed tree again
    VERIFY_ONLY = "verify_only"  # a pull request's run: prepared, it only verifies
    REPORTED = "reported"  # a pull request's verification is reported, pass or fail


@dataclass(frozen=True)
class Capability:
    """What a state's step may do. Enforced by the engine, not requested by the agent."""

    agent: bool  # an agent process runs in this state
    modify_worktree: bool  # product changes allowed (checked against the tree after the step)
    effects: frozenset[EffectKind] = frozenset()  # remote effects this state's step may decide

    def to_dict(self) -> dict[str, object]:
        return {"agent": self.agent, "modify_worktree": self.modify_worktree,
                "effects": sorted(self.effects)}


_REVIEW = frozenset({EffectKind.PUSH, EffectKind.PULL_REQUEST, EffectKind.CHECK_RUN})
# The capability profile of every state that runs a step. The runner (never the agent) decides
# the effects: specify opens the spec's review (branch, draft pull request, spec check run),
# verify pushes the candidate and its evidence, publish marks the pull request ready (and, when
# the candidate waited on the review ref for its diff's approval, pushes it to the branch and
# marks its check run approved).
PROFILES: dict[State, Capability] = {
    State.QUEUED: Capability(agent=False, modify_worktree=False),
    State.RESEARCH: Capability(agent=True, modify_worktree=False),
    State.SPECIFY: Capability(agent=True, modify_worktree=False, effects=_REVIEW),
    State.IMPLEMENT: Capability(agent=True, modify_worktree=True),
    State.REPAIR: Capability(agent=True, modify_worktree=True),
    State.VERIFY: Capability(
        agent=False, modify_worktree=False,
        effects=frozenset({EffectKind.PUSH, EffectKind.CHECK_RUN}),
    ),
    State.PUBLISH: Capability(
        agent=False, modify_worktree=False,
        effects=frozenset({EffectKind.PUSH, EffectKind.PULL_REQUEST, EffectKind.CHECK_RUN}),
    ),
}
# Effects any transition may decide: the tracking comment, and answers to signals.
BOOKKEEPING_EFFECTS = frozenset({EffectKind.COMMENT, EffectKind.REPLY, EffectKind.REACTION})

STOPS: frozenset[State] = frozenset({State.FAILED, State.NEEDS_HUMAN})
APPROVALS: frozenset[State] = frozenset({State.AWAITING_APPROVAL, State.AWAITING_DIFF_APPROVAL})
WAITS: frozenset[State] = APPROVALS | STOPS
ENDS: frozenset[State] = frozenset({State.DONE, State.CANCELLED})
RUNNABLE: frozenset[State] = frozenset(PROFILES)
# The outcomes any runnable or awaiting state may take, on top of its own row.
_ESCAPES = {
    Outcome.FAILED: State.FAILED,
    Outcome.NEEDS_HUMAN: State.NEEDS_HUMAN,
    Outcome.CANCELLED: State.CANCELLED,
}

_FORWARD: dict[tuple[State, Outcome], State] = {
    (State.QUEUED, Outcome.COMPLETED): State.RESEARCH,
    (State.RESEARCH, Outcome.COMPLETED): State.SPECIFY,
    (State.SPECIFY, Outcome.COMPLETED): State.AWAITING_APPROVAL,
    (State.AWAITING_APPROVAL, Outcome.APPROVED): State.IMPLEMENT,
    (State.AWAITING_APPROVAL, Outcome.CHANGES_REQUESTED): State.SPECIFY,
    (State.AWAITING_APPROVAL, Outcome.TIMED_OUT): State.NEEDS_HUMAN,
    (State.IMPLEMENT, Outcome.COMPLETED): State.VERIFY,
    (State.VERIFY, Outcome.CHECKS_PASSED): State.PUBLISH,
    # Verified, but touching protected paths (or held for review): a writer approves the diff.
    (State.VERIFY, Outcome.DIFF_APPROVAL_NEEDED): State.AWAITING_DIFF_APPROVAL,
    (State.AWAITING_DIFF_APPROVAL, Outcome.DIFF_APPROVED): State.PUBLISH,
    (State.VERIFY, Outcome.CHECKS_FAILED): State.REPAIR,
    (State.VERIFY, Outcome.REPAIRS_EXHAUSTED): State.NEEDS_HUMAN,
    (State.REPAIR, Outcome.COMPLETED): State.VERIFY,
    (State.PUBLISH, Outcome.COMPLETED): State.DONE,
    # A pull request's run (a fork's, say) verifies its head and reports; nothing else.
    (State.QUEUED, Outcome.VERIFY_ONLY): State.VERIFY,
    (State.VERIFY, Outcome.REPORTED): State.DONE,
}
# The workflow of a run that only verifies a pull request's head.
PULL_REQUEST_WORKFLOW = "pull_request"

TRANSITIONS: dict[tuple[State, Outcome], State] = {
    **_FORWARD,
    **{
        (state, outcome): target
        for state in State
        if state not in ENDS and state not in STOPS
        for outcome, target in _ESCAPES.items()
    },
    # A stopped run is cancelled, or verifies its checkpointed tree again, on request.
    **{(state, Outcome.CANCELLED): State.CANCELLED for state in STOPS},
    **{(state, Outcome.VERIFY_AGAIN): State.VERIFY for state in STOPS},
}
# A retried stop goes back to the state of the step it stopped in: any runnable state, or a
# wait for approval (an approval that timed out waits again).
RESUMES: frozenset[tuple[State, State]] = frozenset(
    (stop, target) for stop in STOPS
    for target in RUNNABLE | APPROVALS
)


def transition(state: State, outcome: Outcome, *, step: StepId | None = None) -> State:
    """The next state for ``outcome`` in ``state``; raises ``IllegalTransition`` if none.

    ``RETRIED`` takes a stopped run back to the state of the step it stopped in (``step``).
    """
    if outcome is Outcome.RETRIED and step is not None:
        target = State(step.state)
        if (state, target) in RESUMES:
            return target
    try:
        return TRANSITIONS[(state, outcome)]
    except KeyError:
        raise IllegalTransition(
            f"no transition from {state.value!r} on {outcome.value!r}; "
            f"allowed there: {sorted(o.value for (s, o) in TRANSITIONS if s is state) or 'none'}"
        ) from None


def allowed(state: State, target: State) -> bool:
    """Whether any outcome takes ``state`` to ``target``."""
    return (state, target) in RESUMES or any(
        s is state and t is target for (s, _), t in TRANSITIONS.items()
    )


def outcomes(state: State) -> list[Outcome]:
    """The outcomes ``state`` accepts, in table order."""
    return [o for (s, o) in TRANSITIONS if s is state]


def is_wait(state: State) -> bool:
    return state in WAITS


def is_end(state: State) -> bool:
    """Final: nothing moves the run again."""
    return state in ENDS


def is_stopped(state: State) -> bool:
    """Failed or waiting for a human: no work left unless someone retries or cancels it."""
    return state in STOPS


def is_runnable(state: State) -> bool:
    """A state with a step for a worker to execute (not a wait, not an end)."""
    return state in RUNNABLE


def verify_outcome(*, passed: bool, repairs_done: int, max_repairs: int) -> Outcome:
    """How a verification result maps to an outcome, with repair bounded by ``max_repairs``."""
    if passed:
        return Outcome.CHECKS_PASSED
    if repairs_done < max_repairs:
        return Outcome.CHECKS_FAILED
    return Outcome.REPAIRS_EXHAUSTED
