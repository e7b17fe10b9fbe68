"""The domain's identifiers as values: step ids, event types, effect kinds, signal kinds.

Strings cross the ledger boundary; inside, these types are used so that a step id is parsed
in one place and an event type or effect kind is a name the type checker knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True, order=True)
class StepId:
    """``<state>.<n>``: the n-th time a run entered that state (``verify.2``, ``repair.1``)."""

    state: str
    n: int

    @classmethod
    def parse(cls, text: str) -> StepId:
        """Parse ``research.1``; raises ``ValueError`` naming the text otherwise."""
        state, dot, number = text.rpartition(".")
        if not dot or not state or not number.isdigit() or int(number) < 1:
            raise ValueError(f"{text!r} is not a step id (<state>.<n>, e.g. 'verify.2')")
        return cls(state, int(number))

    @classmethod
    def next_for(cls, state: str, taken: list[str] | list[StepId]) -> StepId:
        """The step id a run gets on entering ``state`` after the steps ``taken``."""
        ids = [s if isinstance(s, StepId) else cls.parse(s) for s in taken]
        return cls(state, sum(1 for s in ids if s.state == state) + 1)

    def __str__(self) -> str:
        return f"{self.state}.{self.n}"


class EventType(StrEnum):
    """Every event the ledger records; readers match on these, never on bare strings."""

    RUN_CREATED = "RUN_CREATED"
    LEASE_ACQUIRED = "LEASE_ACQUIRED"
    LEASE_EXPIRED = "LEASE_EXPIRED"
    WORKSPACE_PREPARED = "WORKSPACE_PREPARED"
    RESEARCH_STARTED = "RESEARCH_STARTED"
    RESEARCH_COMPLETED = "RESEARCH_COMPLETED"
    # Research subagents (runner/subagents.py): the research agent's result and the validated
    # plan, recorded before the fan-out; then each subagent's result, one transaction each.
    SUBAGENTS_PLANNED = "SUBAGENTS_PLANNED"  # data: plan, record (the research agent's)
    SUBAGENT_COMPLETED = "SUBAGENT_COMPLETED"  # data: result (name, artifact, sha256, note)
    SUBAGENT_FAILED = "SUBAGENT_FAILED"  # data: result (name, class, error, log_tail)
    SPEC_STARTED = "SPEC_STARTED"
    SPEC_CREATED = "SPEC_CREATED"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    SPEC_APPROVED = "SPEC_APPROVED"
    CHANGES_REQUESTED = "CHANGES_REQUESTED"
    APPROVAL_TIMED_OUT = "APPROVAL_TIMED_OUT"
    # A verified diff that waits for a person (data: sha256, paths, ref), the wait, and the
    # approval (data: sha256, by).
    DIFF_APPROVAL_REQUESTED = "DIFF_APPROVAL_REQUESTED"
    AWAITING_DIFF_APPROVAL = "AWAITING_DIFF_APPROVAL"
    DIFF_APPROVED = "DIFF_APPROVED"
    IMPLEMENTATION_STARTED = "IMPLEMENTATION_STARTED"
    IMPLEMENTATION_COMPLETED = "IMPLEMENTATION_COMPLETED"
    VERIFICATION_STARTED = "VERIFICATION_STARTED"
    CHECK_COMPLETED = "CHECK_COMPLETED"
    VERIFICATION_PASSED = "VERIFICATION_PASSED"
    VERIFICATION_UNVERIFIED = "VERIFICATION_UNVERIFIED"
    STATIC_CHECK_FAILED = "STATIC_CHECK_FAILED"
    TESTS_FAILED = "TESTS_FAILED"
    CHECKS_FAILED = "CHECKS_FAILED"
    REPAIR_STARTED = "REPAIR_STARTED"
    REPAIR_COMPLETED = "REPAIR_COMPLETED"
    PUBLISH_STARTED = "PUBLISH_STARTED"
    PUBLISHED = "PUBLISHED"
    RUN_COMPLETED = "RUN_COMPLETED"
    RUN_FAILED = "RUN_FAILED"
    NEEDS_HUMAN = "NEEDS_HUMAN"
    RUN_CANCELLED = "RUN_CANCELLED"
    RUN_RESUMED = "RUN_RESUMED"
    STEP_FAILED = "STEP_FAILED"
    STEP_RETRY_SCHEDULED = "STEP_RETRY_SCHEDULED"
    POLICY_VIOLATION = "POLICY_VIOLATION"
    CHECKPOINT_CORRUPT = "CHECKPOINT_CORRUPT"
    ARTIFACT_CORRUPT = "ARTIFACT_CORRUPT"
    SALVAGE_SAVED = "SALVAGE_SAVED"
    SALVAGE_REFUSED = "SALVAGE_REFUSED"
    AGENT_RESULT_ADOPTED = "AGENT_RESULT_ADOPTED"
    EFFECT_INTENDED = "EFFECT_INTENDED"
    EFFECT_ATTEMPTED = "EFFECT_ATTEMPTED"
    EFFECT_CONFIRMED = "EFFECT_CONFIRMED"
    EFFECT_RECONCILED = "EFFECT_RECONCILED"
    EFFECT_FAILED = "EFFECT_FAILED"
    SIGNAL_RECEIVED = "SIGNAL_RECEIVED"
    SIGNAL_ACCEPTED = "SIGNAL_ACCEPTED"
    SIGNAL_REFUSED = "SIGNAL_REFUSED"
    AGENT_USAGE = "AGENT_USAGE"  # one agent run's usage (runner/usage.py), with its step's end
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"  # data: the exhaustion (runner/budget.py)
    BUDGET_RAISED = "BUDGET_RAISED"  # data: limit, add, by


class EffectKind(StrEnum):
    """What a forge does for a run; executors give each kind the same meaning everywhere.

    ``comment`` is upserted by name (one ``tracking`` comment per run, edited in place);
    ``reply`` answers a signal; ``reaction`` acknowledges one; ``push`` fast-forwards the
    run's branch from the head last confirmed; ``pull_request`` is upserted by branch, draft
    then ready; ``check_run`` is upserted by ``external_id`` on a head.
    """

    COMMENT = "comment"
    REPLY = "reply"
    REACTION = "reaction"
    PUSH = "push"
    PULL_REQUEST = "pull_request"
    CHECK_RUN = "check_run"


class SignalKind(StrEnum):
    """What a person (or a forge event) asks of a run through its inbox."""

    APPROVE = "approve"  # payload: {"hash": prefix of the spec's sha256}
    APPROVE_DIFF = "approve_diff"  # payload: {"hash": prefix of the verified diff's sha256}
    REQUEST_CHANGES = "request_changes"  # payload: {"message": text}
    RETRY = "retry"  # a stopped run takes its step up again
    CANCEL = "cancel"
    VERIFY_AGAIN = "rerequest"  # verify the checkpointed tree again
    STATUS = "status"  # answered with the run's status; changes nothing
    BUDGET = "budget"  # payload: {"amount": "+1" | "+30m" | ...}; raises it, resumes a stop


# The verbs people use, each for one kind, the same on every surface: ``/ratchet <verb>`` in a
# comment, the dashboard's ``/runs/<run>/<verb>`` form, the spec check run's button, and
# ``ratchet <verb> RUN`` (but for the kinds in CLI_VERBS). Payloads: runner/signal_payloads.py.
VERBS: dict[str, SignalKind] = {
    "approve": SignalKind.APPROVE,
    "approve-diff": SignalKind.APPROVE_DIFF,
    "request-changes": SignalKind.REQUEST_CHANGES,
    "retry": SignalKind.RETRY,
    "verify-again": SignalKind.VERIFY_AGAIN,
    "cancel": SignalKind.CANCEL,
    "status": SignalKind.STATUS,
    "budget": SignalKind.BUDGET,
}
# Where the command line says it otherwise: ``ratchet approve-spec RUN --hash H``.
CLI_VERBS: dict[SignalKind, str] = {SignalKind.APPROVE: "approve-spec"}


def verb_of(kind: SignalKind, *, cli: bool = False) -> str:
    """The verb that asks for ``kind`` (on the command line, with ``cli``)."""
    if cli and kind in CLI_VERBS:
        return CLI_VERBS[kind]
    return next(verb for verb, known in VERBS.items() if known is kind)


# Where a signal came from (``Signal.origin``), for the authorizer: this host's operator (the
# CLI, an open dashboard), or GitHub (a webhook delivery, a dashboard user signed in with it).
LOCAL_ORIGIN = "local"
GITHUB_ORIGIN = "github"


class SignalStatus(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REFUSED = "refused"
