"""The ``Store`` protocol: the ledger every backend implements and one conformance suite tests."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from runner.ledger.records import (
    Change,
    Checkpoint,
    Effect,
    EffectIntent,
    Event,
    Lease,
    NewEvent,
    NewRun,
    RecoveryStats,
    Run,
)
from runner.workflow import State


class Store(Protocol):
    """The source of truth. Every write by a worker is fenced by its lease epoch.

    Writes raise ``StaleWrite`` when the caller's version or lease epoch is no longer current,
    ``LedgerUnavailable`` when the database cannot be reached (transient), and
    ``IllegalTransition`` when a change is not in the workflow table.
    """

    # runs
    def create_run(self, new: NewRun, *, now: float | None = None) -> Run: ...
    def get_run(self, run_id: str) -> Run: ...
    def list_runs(
        self, *, limit: int = 100, states: Collection[State] | None = None
    ) -> list[Run]: ...
    def wake_due(
        self, *, now: float | None = None, rewake_after: float = 30.0, limit: int = 1000
    ) -> list[Run]:
        """Runs a worker should look at now, marked as woken: runnable runs whose lease
        expired (cleared here, with one LEASE_EXPIRED event) or that have none and were not
        woken in the last ``rewake_after`` seconds, and waits past their deadline."""
        ...

    def recovery_stats(self, *, now: float | None = None) -> RecoveryStats: ...

    # leases
    def acquire_lease(
        self, run_id: str, owner: str, *, ttl: float, now: float | None = None
    ) -> Lease | None:
        """Take the run's lease if it is free or expired; ``None`` while another holds it."""
        ...

    def renew_lease(self, lease: Lease, *, ttl: float, now: float | None = None) -> Lease: ...
    def release_lease(self, lease: Lease) -> None: ...

    # fenced writes
    def apply(self, lease: Lease, change: Change, *, now: float | None = None) -> Run:
        """Commit a state change with its events, checkpoint and artifacts in one transaction."""
        ...

    def append(
        self,
        lease: Lease,
        *,
        events: Sequence[NewEvent] = (),
        artifacts: Mapping[str, bytes] | None = None,
        now: float | None = None,
    ) -> None:
        """Record events and artifacts without changing the run's state (still fenced)."""
        ...

    def signal(self, run_id: str, change: Change, *, now: float | None = None) -> Run:
        """A change to a run that waits (no lease held), e.g. an approval; CAS on version."""
        ...

    def cancel(self, run_id: str, *, reason: str, by: str, now: float | None = None) -> Run:
        """End a run that has not ended, whoever holds it: the lease epoch moves on, so the
        holder's next write (or heartbeat) is refused and it stops."""
        ...

    # history
    def events(self, run_id: str, *, after: int = 0) -> list[Event]: ...
    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's checkpoints in commit order; raises ``CorruptCheckpoint`` on a bad hash."""
        ...

    def checkpoint(self, run_id: str, step: str) -> Checkpoint | None: ...
    def completed_steps(self, run_id: str) -> list[str]:
        """Steps with a checkpoint, in order (names only, no hash check: for reporting)."""
        ...

    # effects
    def intend_effect(
        self, lease: Lease, intent: EffectIntent, *, now: float | None = None
    ) -> Effect:
        """Record intent, or return the key's existing record; ``EffectConflict`` if the
        payload hash differs."""
        ...

    def confirm_effect(
        self,
        lease: Lease,
        key: str,
        resource: Mapping[str, Any],
        *,
        reconciled: bool = False,
        now: float | None = None,
    ) -> Effect: ...
    def get_effect(self, key: str) -> Effect | None: ...
    def effects(self, run_id: str) -> list[Effect]: ...

    # artifacts
    def put_artifact(self, data: bytes) -> str: ...
    def get_artifact(self, sha256: str) -> bytes: ...
    def artifacts(self, run_id: str) -> dict[str, str]:
        """The run's artifact paths mapped to the sha256 of their current content."""
        ...

    def read_artifact(self, run_id: str, path: str) -> bytes | None: ...

    # deliveries
    def record_delivery(
        self, delivery_id: str, *, event: str, run_id: str | None = None,
        now: float | None = None,
    ) -> bool:
        """``True`` the first time a webhook delivery id is seen, ``False`` on a redelivery."""
        ...

    def delivery_run(self, delivery_id: str) -> str | None: ...

    # housekeeping
    def schema_version(self) -> int: ...
    def ping(self) -> None: ...
    def close(self) -> None: ...
