"""The lease heartbeat: renews a run's lease in the background while its holder works.

A renewal refused by the ledger means another worker took the run over: ``lost`` is set, the
engine's agent is cancelled and its next fenced write would be refused anyway. During a ledger
outage the heartbeat keeps trying: the lease may expire meanwhile, but only a takeover (a new
epoch) makes this worker's writes stale, and the fencing of every write already says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from runner.errors import LedgerError, LedgerUnavailable, StaleWrite
from runner.ledger.records import Lease
from runner.ledger.store import Store

log = logging.getLogger(__name__)


class Heartbeat:
    """Renews the lease every third of its TTL. ``lost`` is set when a renewal is refused;
    ``stop_work`` too, and also when ``interrupt()`` (asked each beat) says the work in
    progress must stop (a cancel waiting in the inbox)."""

    def __init__(self, store: Store, lease: Lease, *, ttl: float,
                 interrupt: Callable[[], bool] = lambda: False) -> None:
        self.store = store
        self.lease = lease
        self.ttl = ttl
        self.interrupt = interrupt
        self.lost = threading.Event()
        self.stop_work = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"heartbeat-{lease.run_id}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        interval = max(self.ttl / 3, 0.05)
        while not self._stop.wait(interval):
            try:
                self.lease = self.store.renew_lease(self.lease, ttl=self.ttl)
            except StaleWrite as exc:
                log.warning("run %r: lease lost: %s", self.lease.run_id, exc)
                self.lost.set()
                self.stop_work.set()
                return
            except LedgerUnavailable as exc:
                log.info("run %r: lease renewal deferred (ledger unavailable): %s",
                         self.lease.run_id, exc)
                continue
            try:
                if self.interrupt():
                    self.stop_work.set()
            except LedgerError as exc:  # asked again at the next beat
                log.info("run %r: inbox not readable now: %s", self.lease.run_id, exc)
