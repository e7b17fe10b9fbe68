"""Check runs and their annotations."""

from __future__ import annotations

from typing import Any

from ..clock import iso8601
from ..state import CheckRun, PullRequest, Repo
from .accounts import render_app
from .links import Links
from .pulls import render_pull_minimal


def render_check_run(
    repo: Repo, run: CheckRun, links: Links, *, pulls: list[PullRequest]
) -> dict[str, Any]:
    """``check-run``; ``pulls`` are the open pull requests whose head is the run's commit."""
    url = links.repo_api(repo, f"/check-runs/{run.id}")
    return {
        "id": run.id,
        "head_sha": run.head_sha,
        "node_id": run.node_id,
        "external_id": run.external_id,
        "url": url,
        "html_url": links.repo_web(repo, f"/runs/{run.id}"),
        "details_url": run.details_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": iso8601(run.started_at) if run.started_at is not None else None,
        "completed_at": iso8601(run.completed_at) if run.completed_at is not None else None,
        "output": {
            "title": run.output_title,
            "summary": run.output_summary,
            "text": run.output_text,
            "annotations_count": len(run.annotations),
            "annotations_url": f"{url}/annotations",
        },
        "name": run.name,
        "check_suite": {"id": run.check_suite_id},
        "app": render_app(run.app, links),
        "pull_requests": [render_pull_minimal(repo, pull, links) for pull in pulls],
    }


def render_annotation(
    repo: Repo, run: CheckRun, annotation: dict[str, Any], links: Links
) -> dict[str, Any]:
    """``check-annotation``: what was posted, with GitHub's defaults and ``blob_href``."""
    return {
        "path": annotation["path"],
        "blob_href": links.repo_web(repo, f"/blob/{run.head_sha}/{annotation['path']}"),
        "start_line": annotation["start_line"],
        "end_line": annotation["end_line"],
        "start_column": annotation.get("start_column"),
        "end_column": annotation.get("end_column"),
        "annotation_level": annotation["annotation_level"],
        "title": annotation.get("title", ""),
        "message": annotation["message"],
        "raw_details": annotation.get("raw_details", ""),
    }
