"""What every handler of the dashboard shares: the ledger, the gate, the templates, the
broadcaster, how to wake a run, and the two answers every page may give instead of itself
(a run it may not see: 404, the same as no run; GitHub unable to say who may see it: 503)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.templating import Jinja2Templates

from app.dashboard.access import AccessUnknown, Gate, Permission, Viewer, ViewerKind
from app.dashboard.config import DashboardConfig
from app.dashboard.guard import VIEWER, viewer_of
from app.dashboard.live import Broadcaster
from app.dashboard.sessions import CSRF_FIELD, csrf_token
from runner.errors import LedgerUnavailable, UnknownRun
from runner.ledger.records import Run
from runner.ledger.store import Store

Handler = Callable[[Request], Awaitable[Response]]


class PageError(Exception):
    """An answer instead of the page: ``status`` with a message saying what to do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Context:
    store: Store
    config: DashboardConfig
    gate: Gate
    templates: Jinja2Templates
    broadcaster: Broadcaster
    wake: Callable[[str], None]
    clock: Callable[[], float] = time.time

    def render(self, request: Request, name: str, values: dict[str, Any], *,
               status: int = 200, live: str | None = None) -> Response:
        viewer = getattr(request.state, VIEWER, None)
        context = {
            "viewer": viewer, "root": request.scope.get("root_path", ""), "now": self.clock(),
            "csrf_field": CSRF_FIELD, "csrf": csrf_token(request), "live_url": live,
            "signed_in": isinstance(viewer, Viewer) and viewer.kind is ViewerKind.GITHUB,
            **values,
        }
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    async def permission(self, viewer: Viewer, repo: str) -> Permission:
        return await asyncio.to_thread(self.gate.permission, viewer, repo)

    async def visible_run(self, request: Request, run_id: str) -> tuple[Run, Permission]:
        """The run and what the viewer may do with it; 404 alike for an unknown run and one
        the viewer may not read (so a page does not tell which runs exist)."""
        try:
            run = await asyncio.to_thread(self.store.get_run, run_id)
        except UnknownRun:
            raise PageError(404, f"no run {run_id} that you can see") from None
        permission = await self.permission(viewer_of(request), run.repo)
        if permission < Permission.READ:
            raise PageError(404, f"no run {run_id} that you can see")
        return run, permission


def page(ctx: Context, handler: Handler) -> Handler:
    """``handler`` with ``PageError`` and an unavailable ledger answered as a page."""

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except PageError as exc:
            return ctx.render(request, "error.html", {"status": exc.status,
                                                      "message": exc.message},
                              status=exc.status)
        except (LedgerUnavailable, AccessUnknown) as exc:
            return ctx.render(request, "error.html", {
                "status": 503, "message": f"{exc}; reload in a minute"}, status=503)

    return answer


def api(handler: Handler) -> Handler:
    """``handler`` with ``PageError`` and an unavailable ledger answered as JSON."""

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except PageError as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        except (LedgerUnavailable, AccessUnknown) as exc:
            return JSONResponse({"error": f"{exc}; try again in a minute"}, status_code=503)

    return answer
