"""Wake-ups: Dramatiq carries wake-up messages; the ledger stays the source of truth.

``advance_run(run_id)`` may arrive twice, late, or never. A duplicate finds the lease held or
the run moved on and does nothing; a lost one is made good by the ``Reaper``, which re-enqueues
runs whose lease expired (recording LEASE_EXPIRED once) or that sit runnable without one.
Dramatiq retries only transient failures; attempts are counted in the ledger, because a
SIGKILLed worker's message comes back without counting a retry.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import dramatiq
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Middleware

from runner.engine import Engine
from runner.errors import LedgerError, StaleWrite, TransientFailure, UnknownRun
from runner.ledger.store import Store
from runner.workflow import is_runnable

log = logging.getLogger(__name__)

ACTOR = "advance_run"
MAX_RETRIES = 10  # Dramatiq-level retries of a transient failure (ledger or broker outage)
# Agent steps carry their own timeouts; Dramatiq's default 10 minutes would cut them short.
TIME_LIMIT_MS = 24 * 3600 * 1000
# How often `ratchet serve`'s in-process worker asks the ledger for pickups: a detached
# command is taken up well within 2 s; an empty ask is one indexed read.
PICKUP_SECONDS = 0.5


def make_broker(url: str | None, *, namespace: str = "ratchet") -> dramatiq.Broker:
    """Redis (``redis://``), RabbitMQ (``amqp://``), or an in-process StubBroker when unset."""
    if not url:
        return StubBroker()
    if url.startswith(("redis://", "rediss://", "unix://")):
        from dramatiq.brokers.redis import RedisBroker

        return RedisBroker(url=url, namespace=namespace)
    if url.startswith(("amqp://", "amqps://")):
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        return RabbitmqBroker(url=url)
    raise ValueError(
        f"unsupported RATCHET_BROKER_URL scheme in {url.split('://')[0]!r}: use redis://,"
        " amqp://, or leave it unset for the in-process broker"
    )


def _retry_transient(retries: int, exception: Exception) -> bool:
    return isinstance(exception, TransientFailure) and retries < MAX_RETRIES


class WakeUps:
    """The ``advance_run`` actor on one broker, with an engine built lazily per process."""

    def __init__(self, broker: dramatiq.Broker, engine_factory: Callable[[], Engine], *,
                 queue: str = "ratchet") -> None:
        self.broker = broker
        self.queue = queue
        self._engine_factory = engine_factory
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self.actor: dramatiq.Actor[[str], None] = dramatiq.actor(
            broker=broker, actor_name=ACTOR, queue_name=queue,
            retry_when=_retry_transient, min_backoff=500, max_backoff=30_000,
            time_limit=TIME_LIMIT_MS,
        )(self._advance)

    def engine(self) -> Engine:
        """The process's engine, built after fork so no connection crosses processes."""
        with self._lock:
            if self._engine is None:
                self._engine = self._engine_factory()
            return self._engine

    def stop_sessions(self) -> None:
        """Ask running sessions to release their runs after the step they are in."""
        if self._engine is not None:
            self._engine.stopping.set()

    def enqueue(self, run_id: str, *, delay_s: float = 0.0) -> None:
        self.actor.send_with_options(args=(run_id,),
                                     delay=int(delay_s * 1000) if delay_s > 0 else None)

    def _advance(self, run_id: str) -> None:
        engine = self.engine()
        try:
            run = engine.wake(run_id)
        except StaleWrite as exc:
            log.warning("run %r: another worker took it over: %s", run_id, exc)
            return
        except UnknownRun:
            log.warning("run %r: not in this ledger; dropping its message", run_id)
            return
        now = time.time()
        if (is_runnable(run.state) or engine.scheduler.has_work(run_id)) and not run.lease_live(
                now):
            # Released with work left (a scheduled retry, or this worker is stopping).
            self.enqueue(run_id, delay_s=max(0.0, (run.ready_at or now) - now))


class Periodic(ABC):
    """A daemon thread doing one ``round`` every ``pace()`` seconds until stopped. A ledger
    outage or an unexpected error is logged and the next round tried: the thread must outlive
    what it recovers from."""

    name = "periodic"  # the thread's name is ratchet-<name>; log lines start with it
    interval: float

    def pace(self) -> float:
        return self.interval

    @abstractmethod
    def round(self) -> None:
        """One pass of the task."""

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.pace()):
            try:
                self.round()
            except LedgerError as exc:
                log.warning("%s: ledger unavailable, retrying: %s", self.name, exc)
            except Exception:
                log.exception("%s: unexpected error; continuing", self.name)

    def start(self) -> tuple[threading.Thread, threading.Event]:
        stop = threading.Event()
        thread = threading.Thread(target=self.run, args=(stop,), name=f"ratchet-{self.name}",
                                  daemon=True)
        thread.start()
        return thread, stop


class Reaper(Periodic):
    """Wakes runs whose messages were lost or whose worker died, every ``interval`` seconds."""

    name = "reaper"

    def __init__(self, store: Store, enqueue: Callable[[str], None], *, interval: float,
                 rewake_after: float | None = None) -> None:
        self.store = store
        self.enqueue = enqueue
        self.interval = interval
        # A run that was woken but has not moved is woken again after this long (lost message).
        self.rewake_after = rewake_after if rewake_after is not None else max(6 * interval, 5.0)

    def reap_once(self) -> list[str]:
        woken = []
        for run in self.store.wake_due(rewake_after=self.rewake_after):
            try:
                self.enqueue(run.id)
                woken.append(run.id)
            except Exception as exc:  # broker down: the run is woken again after rewake_after
                log.warning("run %r: could not enqueue: %s", run.id, exc)
        if woken:
            log.info("reaper woke %d run(s): %r", len(woken), woken)
        return woken

    def pace(self) -> float:
        # Jittered, so the reapers of several hosts do not ask the ledger in step.
        return self.interval * random.uniform(0.8, 1.2)

    def round(self) -> None:
        self.reap_once()


class Pickups(Periodic):
    """Wakes the runs a detached command asked for in the ledger (``Store.request_pickup``)
    within ``interval``: without a broker, the ledger is the only way a ``ratchet`` process
    reaches the in-process worker of ``ratchet serve`` (the reaper would take a lost wake-up
    up only at its own pace)."""

    name = "pickups"

    def __init__(self, store: Store, enqueue: Callable[[str], None], *,
                 interval: float = PICKUP_SECONDS) -> None:
        self.store = store
        self.enqueue = enqueue
        self.interval = interval

    def take_once(self) -> list[str]:
        taken = self.store.take_pickups()
        for run_id in taken:
            # A wake-up that fails here is the reaper's: the run has work in its inbox.
            log.info("run %r: picked up at a detached command's request", run_id)
            self.enqueue(run_id)
        return taken

    def round(self) -> None:
        self.take_once()


class WorkerLifecycle(Middleware):
    """Starts the reaper when a worker process boots; on shutdown, stops it and asks running
    sessions to release their runs after the current step."""

    def __init__(self, wakeups: WakeUps, reaper_factory: Callable[[], Reaper] | None) -> None:
        self.wakeups = wakeups
        self.reaper_factory = reaper_factory
        self._stop: threading.Event | None = None

    def after_worker_boot(self, broker: dramatiq.Broker, worker: Any) -> None:
        if self.reaper_factory is not None:
            _, self._stop = self.reaper_factory().start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: Any) -> None:
        if self._stop is not None:
            self._stop.set()
        self.wakeups.stop_sessions()
