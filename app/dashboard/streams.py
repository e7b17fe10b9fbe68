"""Server-Sent Events for live pages: ``/live`` (the runs the viewer may read) and
``/runs/{id}/live`` (one run). Each stream is a subscription to the shared ``Broadcaster``;
no stream reads the ledger on its own while it is open."""

from __future__ import annotations

import asyncio
import logging

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from app.dashboard.access import AccessUnknown, Viewer
from app.dashboard.context import Context, api
from app.dashboard.guard import viewer_of
from app.dashboard.live import Changes, sse_stream

log = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}  # nginx: no buffering


class Streams:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def routes(self) -> list[Route]:
        return [
            Route("/live", api(self.runs), name="dashboard_live"),
            Route("/runs/{run_id}/live", api(self.run), name="dashboard_run_live"),
        ]

    async def runs(self, request: Request) -> Response:
        viewer = viewer_of(request)

        async def relevant(changes: Changes) -> list[str]:
            return await self._readable(viewer, changes)

        subscription = await self.ctx.broadcaster.subscribe()
        return StreamingResponse(sse_stream(subscription, relevant),
                                 media_type="text/event-stream", headers=SSE_HEADERS)

    async def run(self, request: Request) -> Response:
        run, _ = await self.ctx.visible_run(request, request.path_params["run_id"])

        async def relevant(changes: Changes) -> list[str]:
            return [run.id] if run.id in changes else []

        subscription = await self.ctx.broadcaster.subscribe()
        return StreamingResponse(sse_stream(subscription, relevant),
                                 media_type="text/event-stream", headers=SSE_HEADERS)

    async def _readable(self, viewer: Viewer, changes: Changes) -> list[str]:
        gate = self.ctx.gate
        if gate.sees_all(viewer):
            return list(changes)
        repos = {mark.repo for mark in changes.values()}
        try:
            readable = set(await asyncio.to_thread(gate.readable, viewer, repos) or ())
        except AccessUnknown as exc:  # say nothing now; the next change asks again
            log.warning("live list of %r: %s", viewer.login, exc)
            return []
        return [run_id for run_id, mark in changes.items() if mark.repo in readable]
