"""The ``Store`` protocol: the ledger every backend implements and one conformance suite tests."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from runner.ledger.records import (
    Change,
    Checkpoint,
    DeliveryIntake,
    DeliveryOutcome,
    Effect,
    EffectIntent,
    Event,
    Lease,
    NewDelivery,
    NewEvent,
    NewRun,
    NewSignal,
    RecoveryStats,
    Run,
    RunMark,
    Signal,
    SignalFor,
)
from runner.names import EventType, SignalStatus
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
        woken in the last ``rewake_after`` seconds, waits past their deadline, and runs in
        any state with a pending signal or an unsent effect."""
        ...

    def request_pickup(self, run_id: str, *, now: float | None = None) -> None:
        """Ask a worker without a broker (``ratchet serve``'s in-process one) to take
        ``run_id`` up now: a detached command's wake-up, kept in the ledger (once per run)."""
        ...

    def take_pickups(self) -> list[str]:
        """The runs asked for since the last take, oldest first, each handed out once; a
        read when there are none (it is asked every fraction of a second)."""
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
        """Commit a state change with its events, checkpoint, artifacts, outbox effects and
        signal decision in one transaction (``EffectConflict`` for a key decided before with
        another payload)."""
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

    def cancel(
        self, run_id: str, *, reason: str, signal: NewSignal,
        effects: Sequence[EffectIntent] = (), now: float | None = None,
    ) -> Run:
        """End a run that has not ended, whoever holds it: the lease epoch moves on, so the
        holder's next write (or heartbeat) is refused and it stops. ``signal`` is recorded
        as accepted and ``effects`` (the tracking comment) in the same transaction."""
        ...

    # history
    def events(self, run_id: str, *, after: int = 0) -> list[Event]: ...
    def events_of_type(self, event_type: EventType, *,
                       runs: Collection[str] | None = None) -> list[Event]:
        """Every run's events of one type (only ``runs``' when given; an empty collection
        matches nothing), by run and sequence: metrics' agent usage, a page of runs' costs in
        one query."""
        ...

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's checkpoints in commit order; raises ``CorruptCheckpoint`` on a bad hash."""
        ...

    def checkpoint(self, run_id: str, step: str) -> Checkpoint | None: ...
    def completed_steps(self, run_id: str) -> list[str]:
        """Steps with a checkpoint, in order (names only, no hash check: for reporting)."""
        ...

    # effects
    def begin_effect(self, lease: Lease, key: str, *, now: float | None = None) -> Effect:
        """Count one more send of an intended effect, before it is sent (fenced)."""
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
    def fail_effect(self, lease: Lease, key: str, reason: str, *,
                    now: float | None = None) -> Effect:
        """Give up an intended effect for good (the run has ended and it was refused)."""
        ...

    def get_effect(self, key: str) -> Effect | None: ...
    def effects(self, run_id: str) -> list[Effect]: ...

    # signals
    def add_signal(self, signal: NewSignal, *, now: float | None = None) -> tuple[Signal, bool]:
        """Put a signal in the run's inbox; a second signal with the same id is not recorded
        (``False``, with the first one)."""
        ...

    def signals(self, run_id: str, *, status: SignalStatus | None = None) -> list[Signal]: ...
    def get_signal(self, signal_id: str) -> Signal | None: ...

    # artifacts
    def put_artifact(self, data: bytes) -> str: ...
    def get_artifact(self, sha256: str) -> bytes: ...
    def artifacts(self, run_id: str) -> dict[str, str]:
        """The run's artifact paths mapped to the sha256 of their current content."""
        ...

    def read_artifact(self, run_id: str, path: str) -> bytes | None: ...

    # deliveries
    def accept_delivery(
        self, delivery: NewDelivery, *, start: NewRun | None = None,
        signal: SignalFor | None = None, now: float | None = None,
    ) -> DeliveryOutcome:
        """Record a webhook delivery with what it caused, in ONE transaction: a new run
        (``start``; unless a run is active for that issue), a pending signal for the active
        run of an issue or pull request (``signal``; unless there is none), or nothing. A
        delivery id seen before changes nothing (``recorded`` False, with the first answer)."""
        ...

    def accept_deliveries(self, intakes: Sequence[DeliveryIntake], *,
                          now: float | None = None) -> list[DeliveryOutcome]:
        """``accept_delivery`` for each, in order, all in ONE transaction (one commit for a
        burst of deliveries); an id twice in one batch is a redelivery the second time."""
        ...

    def delivery(self, delivery_id: str) -> DeliveryOutcome | None: ...

    def link_pull_request(self, lease: Lease, number: int, *,
                          now: float | None = None) -> None:
        """Remember the run's pull request number (commands on it then reach the run, and
        those that arrived for it before, within ``EARLY_SIGNAL_SECONDS``, join its inbox)."""
        ...

    def expire_early_signals(self, *, now: float | None = None) -> list[SignalFor]:
        """Take out the signals that waited ``EARLY_SIGNAL_SECONDS`` for a run to link their
        pull request and none did, oldest first: each is returned once, to one caller, whose
        forge asks its author to repeat it."""
        ...

    def count_deliveries(self, events: Collection[str]) -> int:
        """How many deliveries of these events were recorded (a cache of what they change is
        good while this stays the same)."""
        ...

    def claim_reply(self, repo: str, number: int, login: str, *, interval: float,
                    now: float | None = None) -> bool:
        """Whether ``login`` may be sent a reply on ``repo``'s issue ``number`` now: True at
        most once per ``interval`` seconds for the three, whichever process asks."""
        ...

    # reads for people (the dashboard)
    def runs_page(
        self, *, limit: int = 50, states: Collection[State] | None = None,
        repos: Collection[str] | None = None, before: str | None = None,
        after: str | None = None,
    ) -> list[Run]:
        """One page of runs, newest first. ``states`` and ``repos`` (values of ``Run.repo``)
        filter when given; an empty collection matches nothing. ``before`` (or ``after``)
        names a run: the page holds the runs created just before (just after) it, in the same
        order (``UnknownRun`` when it names no run)."""
        ...

    def repositories(self) -> dict[str, int]:
        """Every repository (``Run.repo``) the ledger holds runs of, with how many."""
        ...

    def run_marks(self) -> dict[str, RunMark]:
        """Every run's id with its ``RunMark``: one query, whatever the number of readers."""
        ...

    # housekeeping
    def schema_version(self) -> int: ...
    def ping(self) -> None: ...
    def close(self) -> None: ...
