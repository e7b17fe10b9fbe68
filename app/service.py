"""The HTTP service: one Starlette app built in one factory, served by uvicorn.

On embedded defaults (no RATCHET_BROKER_URL) the service also runs Dramatiq's in-process
worker on a StubBroker and the reaper, so `ratchet serve` alone executes runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from app.doctor.checks import Role
from app.doctor.startup import StartupChecks, check_at_start, check_public_url_later
from app.github import webhook_config
from app.metrics import registry_for
from app.settings import Settings
from app.wakeups import Pickups, Reaper, WakeUps
from app.webhooks import WebhookReceiver, answer_expired_signals
from runner.ledger import Store, open_store

if TYPE_CHECKING:
    from app.dashboard import Dashboard

log = logging.getLogger(__name__)
# Seconds open connections (live pages' event streams) get to finish when the service stops.
GRACEFUL_SHUTDOWN_SECONDS = 5


def create_app(store: Store, *, broker_ping: Callable[[], None] | None = None,
               lifespan: Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]
               | None = None, webhooks: WebhookReceiver | None = None,
               dashboard: Dashboard | None = None,
               startup: StartupChecks | None = None) -> Starlette:
    """The service's routes; ``startup``: what the checks at start found, which ``/readyz``
    reports beside its live probes of the ledger and the broker (503 while a fatal one
    stands)."""
    registry = registry_for(store)

    async def healthz(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> JSONResponse:
        checks: dict[str, str] = {}
        for name, probe in (("ledger", store.ping), ("broker", broker_ping)):
            if probe is None:
                checks[name] = "in-process"
                continue
            try:
                await asyncio.to_thread(probe)
                checks[name] = "ok"
            except Exception as exc:
                checks[name] = f"unavailable: {exc}"
        ready = all(v in {"ok", "in-process"} for v in checks.values())
        body: dict[str, object] = dict(checks)
        if startup is not None:
            failing = startup.fatal()
            body.update(checks=startup.summary(), failing=failing)
            ready = ready and not failing
        return JSONResponse(body, status_code=200 if ready else 503)

    async def list_runs(request: Request) -> JSONResponse:
        try:
            limit = min(max(int(request.query_params.get("limit", "100")), 1), 1000)
        except ValueError:
            return JSONResponse({"error": "limit must be an integer"}, status_code=400)
        runs = await asyncio.to_thread(store.list_runs, limit=limit)
        return JSONResponse([
            {"run_id": r.id, "state": r.state.value, "step": r.step, "attempt": r.attempt,
             "title": r.title, "repo": r.repo, "created_at": r.created_at,
             "updated_at": r.updated_at, "reason": r.reason}
            for r in runs
        ])

    async def metrics(request: Request) -> Response:
        body = await asyncio.to_thread(generate_latest, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    routes = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/api/runs", list_runs),
        Route("/metrics", metrics),
    ]
    if webhooks is not None:
        routes.append(Route("/webhooks/github", webhooks.receive, methods=["POST"]))
    if dashboard is None:
        return Starlette(routes=routes, lifespan=lifespan)
    # The dashboard's routes come first: its /api/runs answers only what the caller may read.
    return Starlette(routes=[*dashboard.routes, *routes], middleware=dashboard.middleware,
                     lifespan=lifespan)


def serve(settings: Settings, *, host: str, port: int) -> None:
    import uvicorn
    from dramatiq import Worker

    from app.dashboard import dashboard_config, dashboard_for_service
    from app.worker import build_wakeups

    # Refuses an unprotected public address, and insecure switches off loopback.
    config = dashboard_config(settings, host=host, port=port)
    startup = check_at_start(settings, Role.SERVE)
    stopping = threading.Event()
    store = open_store(settings.ledger_url)
    wakeups = build_wakeups(settings, reaper=False)
    try:
        dashboard = dashboard_for_service(store, settings, config, wake=wakeups.enqueue)
    except BaseException:
        store.close()
        raise

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        worker = None
        stop_pickups = threading.Event()
        if not settings.broker_url:
            worker = Worker(wakeups.broker, worker_threads=settings.threads,
                            worker_timeout=100)
            worker.start()
            # A detached command reaches this worker through the ledger: no broker carries it.
            _, stop_pickups = Pickups(store, wakeups.enqueue).start()
        _, stop_reaper = Reaper(store, wakeups.enqueue, interval=settings.reap_seconds).start()
        if receiver.config.triggers is not None:  # an App: it answers signals left waiting
            threading.Thread(target=answer_expired_signals,
                             args=(receiver.config.triggers, stop_reaper), daemon=True,
                             name="ratchet-expired-signals").start()
        log.info("serving on %s:%d (%s)", host, port,
                 "in-process worker" if worker else f"broker {settings.queue!r}")
        if config.link is not None:
            config.link.announce(config.link.url)
        check_public_url_later(startup, settings, Role.SERVE, wait=stopping.wait)
        try:
            yield
        finally:
            stopping.set()
            stop_pickups.set()
            stop_reaper.set()
            if worker is not None:
                wakeups.stop_sessions()
                worker.stop()

    receiver = WebhookReceiver(store, webhook_config(settings, store), wakeups.enqueue)
    app = create_app(store, broker_ping=_broker_ping(wakeups), lifespan=lifespan,
                     webhooks=receiver, dashboard=dashboard, startup=startup)
    try:
        # Forwarded headers are the dashboard's to trust (app/dashboard/proxies.py), never
        # uvicorn's (it believes any loopback peer).
        uvicorn.run(app, host=host, port=port, log_level="info", proxy_headers=False,
                    timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
    finally:
        store.close()


def _broker_ping(wakeups: WakeUps) -> Callable[[], None] | None:
    client = getattr(wakeups.broker, "client", None)  # RedisBroker
    if client is None:
        return None

    def ping() -> None:
        client.ping()

    return ping
