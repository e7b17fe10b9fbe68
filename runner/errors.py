"""The error tree: failure classes of DESIGN.md are types, so classification is a type check.

``StepFailure`` subclasses say what the engine does next (retry, stop, reconcile, ask a human);
``LedgerError`` subclasses say why the ledger refused or could not serve a request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class RatchetError(Exception):
    """Base of every error Ratchet raises on purpose."""


class StepFailure(RatchetError):
    """A step did not complete; ``failure_class`` selects the policy of DESIGN.md."""

    failure_class: ClassVar[str] = "deterministic"

    def __init__(
        self,
        message: str,
        *,
        evidence: dict[str, Any] | None = None,
        artifacts: dict[str, bytes] | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.evidence = evidence or {}
        self.artifacts = artifacts or {}  # run path -> bytes, kept as the failure's evidence
        # What an agent spent before the step failed (runner/usage.py), recorded with the
        # failure so a failed attempt is paid for once, like a completed one.
        self.usage: Mapping[str, Any] | None = usage


class TransientFailure(StepFailure):
    """Worth retrying with backoff: 5xx, timeouts before any effect, agent exit 75, outages."""

    failure_class = "transient"


class AgentTimedOut(TransientFailure):
    """The agent ran past its timeout; its process group was killed."""


class AgentIdle(TransientFailure):
    """The agent printed nothing and changed nothing for its idle timeout; its sandbox was
    ended. Transient the first time in a step (``runner.decisions.decide_idle``)."""


class ProviderUnavailable(TransientFailure):
    """The agent's model provider refused for now (a rate limit, an overload, a 5xx) or could
    not be reached: retried with backoff without charging an attempt of the step, at most
    ``Limits.max_provider_retries`` times in a row (``runner.decisions``)."""


# ``evidence["cause"]`` of a step whose agent command could not start (missing, not executable,
# no command at all): retrying helps only with another agent (``ratchet retry --agent-command``).
AGENT_DID_NOT_START = "agent_did_not_start"


class DeterministicFailure(StepFailure):
    """Retrying gives the same answer: a non-zero agent exit, a 4xx validation error."""

    failure_class = "deterministic"


class AmbiguousFailure(StepFailure):
    """A mutating call may or may not have happened: reconcile remote state before retrying."""

    failure_class = "ambiguous"


class AuthorityFailure(StepFailure):
    """A human must decide: protected branch, action outside the capability profile."""

    failure_class = "authority"


class PolicyViolation(AuthorityFailure):
    """An agent acted outside its step's capability profile (its changes are kept as evidence)."""


class AgentUnauthorized(AuthorityFailure):
    """The agent's model provider refused its credentials, or the CLI has none: retrying
    cannot help, so the run stops at once until the operator sets what the message names."""


class BudgetExhausted(AuthorityFailure):
    """The run's budget is spent: someone with write access must raise it (or cancel).

    ``exhaustion`` is the data of ``runner.budget.Exhaustion``: which limit, what was spent on
    what, and what was allowed.
    """

    def __init__(self, message: str, *, exhaustion: Mapping[str, Any],
                 usage: Mapping[str, Any] | None = None) -> None:
        super().__init__(message, evidence={"budget": dict(exhaustion)}, usage=usage)
        self.exhaustion = dict(exhaustion)


class IllegalTransition(RatchetError):
    """A transition the workflow table does not allow was asked for."""


class LedgerError(RatchetError):
    """The ledger refused a request or could not serve it."""


class UnknownRun(LedgerError):
    """No run has this id."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"unknown run {run_id!r}: this ledger holds no run with that id")
        self.run_id = run_id


class StaleWrite(LedgerError):
    """A fenced write was refused: the run's version or lease epoch moved on (another worker)."""


class CorruptRecord(LedgerError):
    """A stored record's content no longer matches its recorded sha256; it is never used."""


class CorruptCheckpoint(CorruptRecord):
    """A checkpoint failed its hash check on load."""


class CorruptArtifact(CorruptRecord):
    """An artifact's bytes do not hash to the address they are stored under.

    ``run_id`` and ``path`` are known when it was read by name (``Store.read_artifact``).
    """

    def __init__(
        self, *, sha256: str, actual: str, run_id: str | None = None, path: str | None = None
    ) -> None:
        self.sha256 = sha256
        self.actual = actual
        self.run_id = run_id
        self.path = path
        what = f"artifact {path} of run {run_id}" if path else f"artifact {sha256}"
        super().__init__(
            f"{what} is corrupt: its stored bytes hash to {actual}, not {sha256}; it is never"
            " used. Restore the ledger from a backup, or start a new run"
        )

    def about(self, run_id: str, path: str) -> CorruptArtifact:
        """The same corruption, named by the run and path that reached it."""
        return CorruptArtifact(sha256=self.sha256, actual=self.actual, run_id=run_id, path=path)


class EffectConflict(LedgerError):
    """An idempotency key was replayed with a different payload: refused, never applied."""


class LedgerUnavailable(LedgerError, TransientFailure):
    """The database could not be reached or was busy past its timeout; retry with backoff."""


class WorktreeError(RatchetError):
    """A git operation on a mirror or worktree failed."""


class WorktreeTimedOut(WorktreeError):
    """A git command on a mirror or worktree ran past its timeout and was killed: the step
    fails (naming the command) instead of hanging or being retried on the same tree."""


class WorktreeMismatch(WorktreeError):
    """A rebuilt worktree does not hash to the checkpointed tree."""
