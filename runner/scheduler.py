"""Scheduling: when to take a run's lease and hold a session, from ``next_move``.

Two entry points. ``drive`` is the foreground (a person's command waiting for the outcome):
it waits out another holder's lease, a scheduled retry and a brief ledger outage,
until the run waits or ends. ``wake`` is a queue worker's: one pass that returns (or raises)
as soon as something is in the way; the queue or the reaper wakes the run again.
"""

from __future__ import annotations

import itertools
import logging
import time

from runner.decisions import MoveKind, next_move
from runner.errors import LedgerUnavailable, RatchetError
from runner.ledger.records import EffectStatus, Lease, Run
from runner.names import SignalStatus
from runner.session import Session, SessionParts
from runner.workflow import is_runnable

log = logging.getLogger(__name__)

LEDGER_PATIENCE = 60.0  # seconds a foreground command waits out a ledger outage


class OrphanedLease(RatchetError):
    """A foreground session lost the ledger mid-step; its lease is still recorded."""

    def __init__(self, lease: Lease, cause: LedgerUnavailable) -> None:
        super().__init__(str(cause))
        self.lease = lease
        self.cause = cause


class Scheduler:
    def __init__(self, parts: SessionParts) -> None:
        self.parts = parts
        self.store = parts.store
        self.owner = parts.settings.owner
        self._sessions = itertools.count(1)

    def has_work(self, run_id: str) -> bool:
        """A pending signal in the inbox, or an unsent effect in the outbox."""
        if self.store.signals(run_id, status=SignalStatus.PENDING):
            return True
        return any(e.status is EffectStatus.INTENDED for e in self.store.effects(run_id))

    def wake(self, run_id: str) -> Run:
        """One pass for a queue worker; raises ``LedgerUnavailable`` for the queue to retry,
        ``StaleWrite`` if another worker took the run over mid-step."""
        return self._pass(run_id, patient=False)

    def drive(self, run_id: str) -> Run:
        """Run until the run waits or ends, in the foreground (see the module docstring)."""
        give_up = time.monotonic() + LEDGER_PATIENCE
        delay = 0.5
        orphan: Lease | None = None
        while True:
            try:
                if orphan is not None:
                    # Our own session ended with the ledger: release its lease now that the
                    # ledger answers, rather than wait for it to expire.
                    self.store.release_lease(orphan)
                    orphan = None
                return self._pass(run_id, patient=True)
            except (LedgerUnavailable, OrphanedLease) as error:
                cause = error.cause if isinstance(error, OrphanedLease) else error
                if isinstance(error, OrphanedLease):
                    orphan = error.lease
                if time.monotonic() + delay > give_up:
                    raise cause from None
                log.warning("run %r: ledger unavailable, retrying in %.1fs: %s", run_id,
                            delay, cause)
                time.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _pass(self, run_id: str, *, patient: bool) -> Run:
        announced = False
        while True:
            run = self.store.get_run(run_id)
            if self.parts.stopping():
                return run
            now = time.time()
            move = next_move(run, now, has_work=self.has_work(run_id))
            if move.kind in {MoveKind.FINISHED, MoveKind.WAITING}:
                return run
            if move.kind is MoveKind.NOT_BEFORE:
                if not patient:
                    return run
                time.sleep(min((move.at or now) - now, 5.0))
                continue
            if move.kind is MoveKind.LEASED:
                if not patient:
                    return run
                if not announced:
                    announced = True
                    log.warning("run %r is held by %r (lease renewed by its heartbeat);"
                                " waiting for it to finish or for its lease to expire", run_id,
                                run.lease_owner)
                time.sleep(min(max((move.at or now) - now, 0.05), 1.0))
                continue
            # A fresh owner per session: two threads of one process never share a lease.
            owner = f"{self.owner}/{next(self._sessions)}"
            lease = self.store.acquire_lease(run_id, owner, ttl=self.parts.settings.lease_seconds)
            if lease is None:
                continue  # someone took it between our read and our acquire
            session = Session(self.parts, lease)
            try:
                run = session.execute()
            except LedgerUnavailable as exc:
                if not patient:
                    raise  # the queue retries the message; the lease expires meanwhile
                raise OrphanedLease(session.heartbeat.lease, exc) from exc
            if is_runnable(run.state) and (not patient or self.parts.stopping()):
                # A retry is scheduled or this worker is stopping: the queue or reaper wakes it.
                return self.store.get_run(run_id)
