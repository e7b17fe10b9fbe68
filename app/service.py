"""The HTTP service: one Starlette app built in one factory, served by uvicorn."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from app.settings import Settings
from runner.ledger import Store, open_store


def create_app(store: Store) -> Starlette:
    async def healthz(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def list_runs(request: Request) -> JSONResponse:
        try:
            limit = min(max(int(request.query_params.get("limit", "100")), 1), 1000)
        except ValueError:
            return JSONResponse({"error": "limit must be an integer"}, status_code=400)
        runs = store.list_runs(limit=limit)
        return JSONResponse([
            {"run_id": r.id, "state": r.state.value, "step": r.step, "attempt": r.attempt,
             "title": r.title, "repo": r.repo, "created_at": r.created_at,
             "updated_at": r.updated_at, "reason": r.reason}
            for r in runs
        ])

    return Starlette(routes=[
        Route("/healthz", healthz),
        Route("/api/runs", list_runs),
    ])


def serve(settings: Settings, *, host: str, port: int) -> None:
    import uvicorn

    store = open_store(settings.ledger_url)
    try:
        uvicorn.run(create_app(store), host=host, port=port, log_level="info")
    finally:
        store.close()
