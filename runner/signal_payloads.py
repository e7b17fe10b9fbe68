"""What a signal carries, typed per kind: approving a spec or a diff its hash, request changes
a message, a budget raise an amount, a cancel its reason, a retry (from this host's CLI only)
the agent to take the step up with; verify again and status carry no argument.

Every payload may also name where on a forge the signal came from, so that its answer goes
there: the ``/ratchet`` comment (replies and reactions), the review that requested changes, the
check run whose button approved. The ledger stores a payload as the flat JSON object Ratchet
has always written (``to_stored``: absent fields left out) and reads it back with
``read_payload``, ignoring keys it does not know, so every row, old or new, loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from runner.names import SignalKind


class _Frozen(BaseModel):
    # Frozen: a recorded signal never changes. Unknown keys are ignored: a row may hold keys a
    # newer Ratchet added.
    model_config = ConfigDict(frozen=True, extra="ignore")


class CommentRef(_Frozen):
    """The comment that carried a signal: its reply goes to that issue, its reaction on it."""

    id: int
    issue: int | None = None  # the issue or pull request it is on (else: the run's)


class SignalPayload(_Frozen):
    """A signal's payload; as such, the payload of a kind without argument (retry, verify
    again, status)."""

    comment: CommentRef | None = None  # a ``/ratchet`` command in this comment
    review: int | None = None  # a pull request review requesting changes
    check_run: int | None = None  # the spec check run's Approve button

    def to_stored(self) -> dict[str, Any]:
        """The ledger's JSON object (and the exported ``signals.json``'s)."""
        return self.model_dump(exclude_none=True)


class Approve(SignalPayload):
    hash: str  # the spec's sha256 or a prefix of it (at least runner.signals.MIN_HASH_PREFIX)


class ApproveDiff(SignalPayload):
    hash: str  # the diff's sha256 or a prefix of it (at least runner.protected.MIN_DIFF_PREFIX)


class RequestChanges(SignalPayload):
    message: str  # the feedback for the next spec


class RaiseBudget(SignalPayload):
    amount: str  # "+1", "$1", "30m", "2h", "3runs" (runner.budget.parse_raise)


class Retry(SignalPayload):
    """A retry; the operator at the CLI may give the run another agent with it (a run whose
    agent command could not start is retried with one that does)."""

    agent_command: str | None = None  # a command template (runner.agents.command)
    agent: str | None = None  # a preset's name (runner.agents.presets)

    @property
    def changes_agent(self) -> bool:
        return bool(self.agent_command or self.agent)


class Cancel(SignalPayload):
    reason: str | None = None  # why, when the source says (a label removed, the issue closed)


# The payload type of every kind.
PAYLOADS: dict[SignalKind, type[SignalPayload]] = {
    SignalKind.APPROVE: Approve,
    SignalKind.APPROVE_DIFF: ApproveDiff,
    SignalKind.REQUEST_CHANGES: RequestChanges,
    SignalKind.BUDGET: RaiseBudget,
    SignalKind.CANCEL: Cancel,
    SignalKind.RETRY: Retry,
    SignalKind.VERIFY_AGAIN: SignalPayload,
    SignalKind.STATUS: SignalPayload,
}


def check_payload(kind: SignalKind, payload: SignalPayload) -> None:
    """Raise ``TypeError`` unless ``payload`` is a ``kind`` signal's (a bare ``SignalPayload``
    will do for a kind whose argument is optional: a cancel without a reason)."""
    expected = PAYLOADS[kind]
    if isinstance(payload, expected):
        return
    if type(payload) is SignalPayload and not any(
            field.is_required() for field in expected.model_fields.values()):
        return
    raise TypeError(f"a {kind.value} signal carries {expected.__name__},"
                    f" not {type(payload).__name__}")


def read_payload(kind: SignalKind, stored: Mapping[str, Any]) -> SignalPayload:
    """The typed payload of a ``kind`` signal from its stored JSON object.

    Raises pydantic's ``ValidationError`` when the object lacks the kind's argument or holds a
    value of the wrong type (Ratchet never wrote one so).
    """
    return PAYLOADS[kind].model_validate(stored)
