"""Check runs: create, update, read, list for a ref, and their annotations.

GitHub's rules kept here: only an App's token creates check runs (an App installation token or
an Actions ``GITHUB_TOKEN``, with ``checks: write``); ``head_sha`` must be a full sha of a commit
in the repository; ``completed`` needs a ``conclusion`` and a ``conclusion`` completes the run;
annotations accumulate across updates (at most 50 per request and summary/text at most 65,535
characters are schema rules, refused before a handler runs); only the creating App may update.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..clock import parse_iso8601
from ..errors import ApiError, InvalidRequest, forbidden_for_integration, not_found
from ..gitdata import resolve_commit
from ..render.checks import render_annotation, render_check_run
from ..state import App, CheckRun, Repo, make_node_id
from .base import Reply, Request, Route, paginate
from .pulls import sync_pull

_FULL_SHA = re.compile(r"^[0-9a-f]{40}$")


def _app(request: Request) -> App:
    app = request.acting_app()
    if app is None:
        raise ApiError(403, "You must authenticate via a GitHub App.")
    return app


def _run(request: Request) -> tuple[Repo, CheckRun]:
    repo = request.the_repo()
    run = repo.check_runs.get(request.params["check_run_id"])
    if run is None:
        raise not_found()
    return repo, run


def _render(request: Request, repo: Repo, run: CheckRun) -> dict[str, Any]:
    pulls = []
    for pull in repo.pulls.values():
        sync_pull(repo, pull)
        if pull.state == "open" and pull.head_sha == run.head_sha:
            pulls.append(pull)
    return render_check_run(repo, run, request.links, pulls=pulls)


def _timestamp(body: dict[str, Any], key: str) -> float | None:
    if key not in body:
        return None
    parsed = parse_iso8601(body[key])
    if parsed is None:
        raise InvalidRequest([f"For 'properties/{key}', {body[key]!r} is not a date-time."])
    return parsed


def _apply(request: Request, run: CheckRun, body: dict[str, Any]) -> None:
    """Apply the fields shared by create and update to ``run``."""
    for key in ("name", "external_id", "details_url"):
        if key in body:
            setattr(run, key, body[key])
    started = _timestamp(body, "started_at")
    if started is not None:
        run.started_at = started
    if "status" in body:
        run.status = body["status"]
    if "conclusion" in body:
        run.conclusion = body["conclusion"]
        run.status = "completed"  # "Providing conclusion will automatically set status"
    if run.status == "completed" and run.conclusion is None:
        raise InvalidRequest(['"conclusion" wasn\'t supplied.'])
    completed = _timestamp(body, "completed_at")
    if run.status == "completed" and run.completed_at is None:
        run.completed_at = completed if completed is not None else request.now
    output = body.get("output")
    if output is not None:
        run.output_title = output.get("title", run.output_title)
        run.output_summary = output.get("summary", run.output_summary)
        run.output_text = output.get("text", run.output_text)
        run.annotations.extend(output.get("annotations", []))
    if "actions" in body:
        run.actions = list(body["actions"])


def create_check_run(request: Request) -> Reply:
    repo, app, body = request.the_repo(), _app(request), request.body
    head_sha = body["head_sha"]
    if not _FULL_SHA.match(head_sha) or resolve_commit(repo.git_dir, head_sha) != head_sha:
        raise ApiError(422, f"No commit found for SHA: {head_sha}")
    suite = repo.check_suites.setdefault((app.id, head_sha), request.world.next_id())
    run_id = request.world.next_id()
    run = CheckRun(
        id=run_id,
        node_id=make_node_id("CR", run_id),
        head_sha=head_sha,
        name=body["name"],
        status="queued",
        conclusion=None,
        started_at=request.now,
        completed_at=None,
        external_id="",
        details_url=f"{request.links.web}/apps/{app.slug}",
        app=app,
        check_suite_id=suite,
    )
    _apply(request, run, body)
    repo.check_runs[run.id] = run
    shape = _render(request, repo, run)
    return Reply(201, shape, {"location": shape["url"]})


def update_check_run(request: Request) -> Reply:
    repo, run = _run(request)
    app = _app(request)
    if run.app.id != app.id:
        raise forbidden_for_integration()
    updated = replace(run, annotations=list(run.annotations), actions=list(run.actions))
    _apply(request, updated, request.body)  # on a copy: a refused update changes nothing
    repo.check_runs[run.id] = updated
    return Reply(200, _render(request, repo, updated))


def get_check_run(request: Request) -> Reply:
    repo, run = _run(request)
    return Reply(200, _render(request, repo, run))


def list_annotations(request: Request) -> Reply:
    repo, run = _run(request)
    page, headers = paginate(request, run.annotations)
    return Reply(200, [render_annotation(repo, run, a, request.links) for a in page], headers)


def list_for_ref(request: Request) -> Reply:
    """Runs on the commit ``ref`` names, newest first; ``filter=latest`` keeps the newest run
    of each name per App."""
    repo = request.the_repo()
    ref = request.params["ref"]
    sha = resolve_commit(repo.git_dir, ref)
    if sha is None:
        raise ApiError(422, f"No commit found for SHA: {ref}")
    runs = sorted(
        (run for run in repo.check_runs.values() if run.head_sha == sha),
        key=lambda run: run.id,
        reverse=True,
    )
    if request.params.get("filter", "latest") == "latest":
        seen: set[tuple[int, str]] = set()
        latest = []
        for run in runs:
            if (run.app.id, run.name) not in seen:
                seen.add((run.app.id, run.name))
                latest.append(run)
        runs = latest
    for key, attribute in (("check_name", "name"), ("status", "status")):
        if key in request.params:
            runs = [run for run in runs if getattr(run, attribute) == request.params[key]]
    if "app_id" in request.params:
        runs = [run for run in runs if run.app.id == request.params["app_id"]]
    page, headers = paginate(request, runs)
    body = {"total_count": len(runs), "check_runs": [_render(request, repo, r) for r in page]}
    return Reply(200, body, headers)


_READ = (("checks", "read"),)
_WRITE = (("checks", "write"),)

ROUTES = (
    Route("checks/create", create_check_run, permissions=_WRITE),
    Route("checks/update", update_check_run, permissions=_WRITE),
    Route("checks/get", get_check_run, permissions=_READ),
    Route("checks/list-annotations", list_annotations, permissions=_READ),
    Route("checks/list-for-ref", list_for_ref, permissions=_READ),
)
