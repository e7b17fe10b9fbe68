"""Wiring Dramatiq to settings: the wake-ups, `ratchet worker`, and enqueueing detached runs."""

from __future__ import annotations

import contextlib
import logging

from dramatiq.errors import DramatiqError
from redis.exceptions import RedisError

from app.compose import build_engine
from app.settings import Settings
from app.wakeups import Reaper, WakeUps, WorkerLifecycle, make_broker
from runner.ledger import Store, open_store

log = logging.getLogger(__name__)

EXIT_NOT_READY = 1  # a check at start failed fatally: the worker would fail every run it took


def build_wakeups(settings: Settings, *, reaper: bool) -> WakeUps:
    """The broker of RATCHET_BROKER_URL with the ``advance_run`` actor declared on it.

    With ``reaper``, every worker process that boots on this broker also runs a reaper.
    """
    broker = make_broker(settings.broker_url, namespace=settings.queue)
    wakeups = WakeUps(
        broker,
        lambda: build_engine(open_store(settings.ledger_url), settings),
        queue=settings.queue,
    )

    def make_reaper() -> Reaper:
        return Reaper(open_store(settings.ledger_url), wakeups.enqueue,
                      interval=settings.reap_seconds)

    broker.add_middleware(WorkerLifecycle(wakeups, make_reaper if reaper else None))
    return wakeups


def run_worker(settings: Settings, *, processes: int, threads: int) -> int:
    """Dramatiq's own worker CLI on the broker module ``app.tasks``, once the checks at start
    (``app/doctor/startup.py``) found nothing fatal; each result is logged."""
    from dramatiq.cli import main as dramatiq_main
    from dramatiq.cli import make_argument_parser

    # The checks (and the GitHub client they use) load only here: `run --detach` imports
    # this module to enqueue.
    from app.doctor.checks import Role
    from app.doctor.startup import check_at_start

    if not settings.broker_url:
        raise SystemExit(
            "ratchet worker needs RATCHET_BROKER_URL (redis://... or amqp://...); without a"
            " broker, `ratchet serve` runs the in-process worker itself"
        )
    if check_at_start(settings, Role.WORKER).fatal():
        log.error("ratchet worker is not starting: a check above failed, and every run it took"
                  " would fail; fix it (`ratchet doctor` checks again), then start the worker")
        return EXIT_NOT_READY
    args = make_argument_parser().parse_args([
        "app.tasks:broker", "--processes", str(processes), "--threads", str(threads),
        "--queues", settings.queue, "--worker-shutdown-timeout",
        str(int(settings.shutdown_seconds * 1000)), "--skip-logging",
    ])
    return int(dramatiq_main(args) or 0)


def enqueue_run(settings: Settings, run_id: str, *, store: Store | None = None) -> str:
    """Send a wake-up for ``run_id`` (without a broker, a pickup in the ledger, ``store`` or
    the settings', that ``ratchet serve`` takes); returns a sentence saying who will run it."""
    if not settings.broker_url:
        if store is not None:
            store.request_pickup(run_id)
        else:
            with contextlib.closing(open_store(settings.ledger_url)) as own:
                own.request_pickup(run_id)
        return (f"run {run_id} is queued in the ledger: a running `ratchet serve` on this"
                f" ledger picks it up within seconds, or `ratchet resume {run_id}` runs it here")
    wakeups = build_wakeups(settings, reaper=False)
    try:
        wakeups.enqueue(run_id)
    except (DramatiqError, RedisError, OSError) as exc:
        # The ledger already holds the run; a worker's reaper wakes it once the broker is back.
        log.warning("run %r: broker unreachable: %s", run_id, exc)
        return (f"run {run_id} is recorded but the broker is unreachable ({exc}); a worker's"
                " reaper will wake it once the broker is back")
    return f"run {run_id} enqueued on {settings.queue!r}; a `ratchet worker` will run it"
