"""``/api/*``: the runs a caller may read, as JSON (a session or the API token, see the
guard). ``GET /api/runs`` keeps the service's original answer (newest first, ``limit`` up to
1000) and adds ``state``, ``repo`` and ``before`` filters, and each run's ``usage`` (what its
agents spent, as ``status.usage.total`` of its own answer); ``GET /api/runs/{id}`` is the run's
status, the four answers of ``ratchet status``."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.dashboard.context import Context, PageError, api
from app.dashboard.guard import viewer_of
from app.dashboard.reads import list_usage, repositories_for
from app.dashboard.words import WEB_WORDS
from runner.errors import UnknownRun
from runner.ledger.records import Run
from runner.render import say_next_action
from runner.status import read_status
from runner.usage import UsageTotals
from runner.workflow import State

MAX_LIMIT = 1000


class Api:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def routes(self) -> list[Route]:
        return [
            Route("/api/runs", api(self.runs), name="api_runs"),
            Route("/api/runs/{run_id}", api(self.run), name="api_run"),
        ]

    async def runs(self, request: Request) -> Response:
        query, ctx = request.query_params, self.ctx
        try:
            limit = min(max(int(query.get("limit", "100")), 1), MAX_LIMIT)
        except ValueError:
            raise PageError(400, "limit must be an integer") from None
        state = query.get("state")
        if state is not None and state not in State.__members__.values():
            raise PageError(400, f"state must be one of {', '.join(s.value for s in State)}")
        viewer = viewer_of(request)

        def read() -> tuple[list[Run], dict[str, UsageTotals]]:
            repos = None
            if not ctx.gate.sees_all(viewer):
                repos = list(repositories_for(ctx.store, ctx.gate, viewer))
            wanted = query.get("repo")
            if wanted is not None:
                repos = [wanted] if repos is None or wanted in repos else []
            runs = ctx.store.runs_page(limit=limit, states=None if state is None
                                       else [State(state)], repos=repos,
                                       before=query.get("before"))
            return runs, list_usage(ctx.store, [run.id for run in runs])[0]

        try:
            runs, usage = await asyncio.to_thread(read)
        except UnknownRun:
            raise PageError(400, "before names no run") from None
        return JSONResponse([{**_summary(run),
                              "usage": usage.get(run.id, UsageTotals()).to_dict()}
                             for run in runs])

    async def run(self, request: Request) -> Response:
        run, _ = await self.ctx.visible_run(request, request.path_params["run_id"])
        status = await asyncio.to_thread(read_status, self.ctx.store, run.id,
                                         now=self.ctx.clock())
        data = status.to_dict()
        data["next_action"]["text"] = say_next_action(status.next_action.to_dict(), run.id,
                                                      WEB_WORDS)
        return JSONResponse({**_summary(run), "status": data})


def _summary(run: Run) -> dict[str, object]:
    return {"run_id": run.id, "state": run.state.value, "step": run.step,
            "attempt": run.attempt, "title": run.title, "repo": run.repo,
            "created_at": run.created_at, "updated_at": run.updated_at, "reason": run.reason}
