"""The ledger's records as plain dataclasses: what the store returns and what callers hand it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from runner.canonical import canonical_json, digest, sha256_hex
from runner.errors import CorruptCheckpoint
from runner.names import EffectKind, EventType, SignalKind, SignalStatus, StepId
from runner.origin import LocalOrigin, Origin, run_branch
from runner.signal_payloads import SignalPayload, check_payload
from runner.workflow import State


@dataclass(frozen=True)
class NewRun:
    """What a caller provides to create a run; the store assigns version, lease and times."""

    id: str
    repo: str
    title: str
    body: str = ""
    workflow: str = "issue"
    issue: int | None = None
    pr: int | None = None
    base_revision: str | None = None
    step: str = "queued.1"
    origin: Origin = field(default_factory=LocalOrigin)  # stored as the row's ``params`` JSON
    event_data: Mapping[str, Any] = field(default_factory=dict)
    effects: tuple[EffectIntent, ...] = ()  # recorded with the run, applied by its first session


@dataclass(frozen=True)
class Run:
    id: str
    repo: str
    title: str
    body: str
    workflow: str
    issue: int | None
    pr: int | None
    state: State
    step: str
    attempt: int
    version: int
    lease_owner: str | None
    lease_epoch: int
    lease_expires_at: float | None
    base_revision: str | None
    head_revision: str | None
    ready_at: float | None
    deadline: float | None
    reason: str | None
    origin: Origin
    created_at: float
    updated_at: float

    def lease_live(self, now: float) -> bool:
        """Whether some worker holds an unexpired lease on this run."""
        return self.lease_owner is not None and (self.lease_expires_at or 0) > now

    @property
    def step_id(self) -> StepId:
        return StepId.parse(self.step)

    @property
    def branch(self) -> str:
        """The branch the run pushes, named when it was created; a run that names none (the
        verification of a pull request, which pushes nothing) has the local form."""
        return self.origin.branch or run_branch(self.id)


@dataclass(frozen=True)
class Lease:
    """A worker's claim on a run; ``epoch`` is the fencing token every write is checked against."""

    run_id: str
    owner: str
    epoch: int
    expires_at: float


@dataclass(frozen=True)
class NewEvent:
    type: EventType
    step: str | None = None
    attempt: int | None = None
    revision: str | None = None
    key: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    run_id: str
    seq: int
    type: str
    at: float
    step: str | None
    attempt: int | None
    lease_epoch: int
    revision: str | None
    key: str | None
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The exported form (one line of ``events.ndjson``)."""
        out: dict[str, Any] = {
            "seq": self.seq,
            "type": self.type,
            "at": self.at,
            "run": self.run_id,
            "step": self.step,
            "attempt": self.attempt,
            "lease": self.lease_epoch,
            "revision": self.revision,
        }
        if self.key is not None:
            out["key"] = self.key
        if self.data:
            out["data"] = self.data
        return out


@dataclass(frozen=True)
class Checkpoint:
    """A completed step: what it started from (``input``) and what it produced (``result``).

    The stored form is the canonical JSON of all fields but ``sha256``; ``sha256`` is that
    text's hash, checked on every load.
    """

    run_id: str
    step: str
    attempt: int
    input: dict[str, Any]
    result: dict[str, Any]
    sha256: str = ""

    def body(self) -> str:
        return canonical_json(
            {
                "run": self.run_id,
                "step": self.step,
                "attempt": self.attempt,
                "input": self.input,
                "result": self.result,
            }
        )

    def sealed(self) -> Checkpoint:
        """This checkpoint with its hash filled in."""
        return Checkpoint(self.run_id, self.step, self.attempt, self.input, self.result,
                          sha256_hex(self.body()))

    @classmethod
    def from_stored(cls, body: str, sha256: str) -> Checkpoint:
        """Parse a stored checkpoint, refusing one whose content does not match its hash."""
        if sha256_hex(body) != sha256:
            raise CorruptCheckpoint(
                f"checkpoint hash mismatch (stored {sha256[:12]}, content {sha256_hex(body)[:12]});"
                " it will not be used"
            )
        try:
            data = json.loads(body)
            return cls(data["run"], data["step"], data["attempt"], data["input"], data["result"],
                       sha256)
        except (ValueError, KeyError, TypeError) as exc:  # pragma: no cover - hash already matched
            raise CorruptCheckpoint(f"checkpoint body unreadable: {exc}") from exc


class EffectStatus(StrEnum):
    INTENDED = "intended"  # decided and recorded; ``attempts`` says whether it was ever sent
    CONFIRMED = "confirmed"
    FAILED = "failed"  # refused for good after the run ended: never sent again


@dataclass(frozen=True)
class EffectIntent:
    """An effect decided by a transition, recorded in its transaction and applied after it."""

    key: str  # <run>:<step>:<name>
    run_id: str
    step: str
    kind: EffectKind
    payload: Mapping[str, Any]  # host-independent data (never forge wording), hashed

    @property
    def payload_hash(self) -> str:
        return digest(dict(self.payload))


@dataclass(frozen=True)
class Effect:
    """A recorded effect; ``attempts`` counts sends: 0 means it never left this host."""

    key: str
    run_id: str
    step: str
    kind: EffectKind
    payload_hash: str
    payload: dict[str, Any]
    status: EffectStatus
    resource: dict[str, Any] | None
    attempts: int
    created_at: float
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "step": self.step,
            "kind": self.kind,
            "payload_hash": self.payload_hash,
            "status": self.status.value,
            "resource": self.resource,
            "attempts": self.attempts,
        }


@dataclass(frozen=True)
class Change:
    """A fenced write to a run: compare-and-set on ``version`` and the writer's lease epoch.

    Its events, checkpoint and artifacts commit in the same transaction as the state change.
    ``state`` may equal the current state (a retry scheduled, a step's attempt bumped).
    """

    version: int
    state: State
    step: str
    attempt: int = 1
    events: tuple[NewEvent, ...] = ()
    checkpoint: Checkpoint | None = None
    artifacts: Mapping[str, bytes] = field(default_factory=dict)
    ready_at: float | None = None
    deadline: float | None = None
    reason: str | None = None
    head_revision: str | None = None
    base_revision: str | None = None  # set once, when a run created without one resolves it
    effects: tuple[EffectIntent, ...] = ()  # the outbox: applied after this commits
    signal: SignalDecision | None = None  # the signal this change answers
    origin: Origin | None = None  # the run's new origin (a retry giving it another agent)


@dataclass(frozen=True)
class NewSignal:
    """A request in a run's inbox. ``id`` names its source (``cli:<uuid>``, a webhook
    delivery id): the same id twice is recorded once."""

    id: str
    run_id: str
    kind: SignalKind
    author: str
    origin: str  # where it came from, for the authorizer (runner.names: LOCAL_ORIGIN, ...)
    payload: SignalPayload = field(default_factory=SignalPayload)  # the kind's (PAYLOADS)

    def __post_init__(self) -> None:
        check_payload(self.kind, self.payload)


@dataclass(frozen=True)
class Signal:
    id: str
    run_id: str
    kind: SignalKind
    author: str
    origin: str
    payload: SignalPayload  # the kind's type (runner.signal_payloads.PAYLOADS)
    status: SignalStatus
    reason: str | None
    created_at: float
    decided_at: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind.value, "author": self.author,
                "origin": self.origin, "payload": self.payload.to_stored(),
                "status": self.status.value, "reason": self.reason,
                "created_at": self.created_at, "decided_at": self.decided_at}


@dataclass(frozen=True)
class SignalDecision:
    """The answer to one pending signal, committed with the change it causes (if any)."""

    id: str
    status: SignalStatus
    reason: str | None = None


@dataclass(frozen=True)
class RecoveryStats:
    """What the ledger says about recovery, for metrics (all derived, nothing stored twice)."""

    runs_by_state: dict[str, int]
    lease_expirations: int
    effect_reconciliations: int
    resume_seconds: list[float]  # lease expired -> next lease acquired, per takeover
    checkpoint_ages: list[float]  # seconds since the last checkpoint of each runnable run
    step_attempts: list[int]  # attempts each completed step needed


@dataclass(frozen=True)
class NewDelivery:
    """A forge's webhook delivery and what routing decided for it (before the ledger checks
    whether a run is active)."""

    id: str  # the forge's delivery id: the same id twice is recorded once
    event: str
    action: str | None
    decision: str  # "start", "signal" or "ignore"
    reason: str


@dataclass(frozen=True)
class SignalFor:
    """A signal for the active run of an issue or pull request (found in the transaction):
    what ``github.routing.route`` decides for a command, a review, a button or a close."""

    repo: str  # the run's repository (``Run.repo``)
    number: int  # an issue or pull request number (0 with ``run_id``)
    kind: SignalKind
    author: str
    origin: str
    payload: SignalPayload = field(default_factory=SignalPayload)  # the kind's (PAYLOADS)
    run_id: str | None = None  # the run itself, when the event names it (a check run's)
    # ``number`` is a pull request: with no run for it yet, the signal waits (for at most
    # ``EARLY_SIGNAL_SECONDS``) for a run to link it, since the run that opened it may not
    # have confirmed it yet.
    pull_request: bool = False

    def __post_init__(self) -> None:
        check_payload(self.kind, self.payload)


# How long a signal for a pull request no run has linked waits for one to link it.
EARLY_SIGNAL_SECONDS = 24 * 3600.0


@dataclass(frozen=True)
class DeliveryIntake:
    """A delivery with what it would cause: a new run, a signal for an active run, or
    nothing (``Store.accept_deliveries`` decides against the ledger)."""

    delivery: NewDelivery
    start: NewRun | None = None
    signal: SignalFor | None = None


@dataclass(frozen=True)
class DeliveryOutcome:
    recorded: bool  # False: a redelivery; nothing changed
    decision: str  # what was done: "start", "signal", "wait" (an early signal) or "ignore"
    reason: str
    run_id: str | None = None


@dataclass(frozen=True)
class RunMark:
    """What changes whenever a run does, cheap to read for every run at once (a poller
    compares marks to see which runs moved): the sequence number of its newest event (every
    write to a run records one, except a lease's release and renewal) and its lease holder."""

    repo: str
    seq: int
    holder: str | None
