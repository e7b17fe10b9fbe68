"""The pages: every run the viewer may read, and one run's page (with its check logs and
artifacts as plain text, exactly as the ledger stored them)."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.dashboard import pages
from app.dashboard.access import Permission
from app.dashboard.context import Context, PageError, page
from app.dashboard.diagram import draw
from app.dashboard.guard import viewer_of
from app.dashboard.reads import RunList, load_list, load_run, read_log
from app.dashboard.words import WEB_WORDS
from runner.errors import CorruptArtifact, UnknownRun
from runner.render import say_next_action
from runner.workflow import State

PLAIN_TEXT = "text/plain; charset=utf-8"  # never HTML: a log is shown, not interpreted
ACTIONS = ("approve", "approve_diff", "request_changes", "retry", "verify_again", "cancel")


class Pages:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def routes(self) -> list[Route]:
        ctx = self.ctx
        return [
            Route("/", page(ctx, self.runs), name="dashboard_runs"),
            Route("/runs/{run_id}", page(ctx, self.run), name="dashboard_run"),
            Route("/runs/{run_id}/logs/{sha256}", page(ctx, self.log), name="dashboard_log"),
            Route("/runs/{run_id}/artifacts/{path:path}", page(ctx, self.artifact),
                  name="dashboard_artifact"),
        ]

    async def runs(self, request: Request) -> Response:
        ctx, query = self.ctx, request.query_params
        state = query.get("state") or None
        try:
            listing = await asyncio.to_thread(
                load_list, ctx.store, ctx.gate, viewer_of(request),
                state=State(state) if state in State.__members__.values() else None,
                repo=query.get("repo") or None, before=query.get("before") or None,
                after=query.get("after") or None, web_url=ctx.config.web_url)
        except UnknownRun:
            raise PageError(400, "this page starts at a run that does not exist; go back to"
                                 " the newest runs") from None
        return ctx.render(request, "runs.html", {
            "listing": listing, "states": list(State),
            "links": _page_links(request.scope.get("root_path", ""), listing),
        }, live="/live")

    async def run(self, request: Request) -> Response:
        ctx = self.ctx
        run, permission = await ctx.visible_run(request, request.path_params["run_id"])
        detail = await asyncio.to_thread(load_run, ctx.store, run, now=ctx.clock(),
                                         web_url=ctx.config.web_url)
        return ctx.render(request, "run.html", {
            "d": detail,
            "diagram": draw(detail.path, run.state),
            "next_action": say_next_action(detail.status.next_action.to_dict(), run.id,
                                           WEB_WORDS),
            "actions": pages.actions(run, spec_sha256=detail.spec_sha256,
                                     completed_steps=detail.status.completed_steps,
                                     can_write=permission >= Permission.WRITE),
            "can_write": permission >= Permission.WRITE,
            "effect_counts": Counter(row.effect.status.value for row in detail.effects),
            # One-time ids: a form sent twice (a double click, a resubmit) is one signal.
            "nonces": {name: secrets.token_hex(16) for name in ACTIONS},
        }, live=f"/runs/{run.id}/live")

    async def log(self, request: Request) -> Response:
        run, _ = await self.ctx.visible_run(request, request.path_params["run_id"])
        data = await asyncio.to_thread(read_log, self.ctx.store, run.id,
                                       request.path_params["sha256"])
        if data is None:
            raise PageError(404, f"run {run.id} has no check log with that hash")
        return Response(data, media_type=PLAIN_TEXT)

    async def artifact(self, request: Request) -> Response:
        run, _ = await self.ctx.visible_run(request, request.path_params["run_id"])
        path = request.path_params["path"]
        try:
            data = await asyncio.to_thread(self.ctx.store.read_artifact, run.id, path)
        except CorruptArtifact as exc:
            raise PageError(409, str(exc)) from None
        if data is None:
            raise PageError(404, f"run {run.id} has no artifact {path}")
        return Response(data, media_type=PLAIN_TEXT)


def _page_links(root: str, listing: RunList) -> dict[str, str | None]:
    """Links to the newest page and the pages beside this one, keeping the filters."""
    kept = {"state": listing.state.value if listing.state else None, "repo": listing.repo}
    base = {name: value for name, value in kept.items() if value}

    def href(**cursor: str) -> str:
        query = urlencode({**base, **cursor})
        return f"{root}/?{query}" if query else f"{root}/"

    return {"newest": href(),
            "newer": href(after=listing.newer) if listing.newer else None,
            "older": href(before=listing.older) if listing.older else None}
