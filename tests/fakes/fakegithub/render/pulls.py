"""Pull requests (``pull-request``, ``pull-request-simple``, ``pull-request-minimal``) and their
review comments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..clock import iso8601
from ..state import Issue, PullRequest, Repo, ReviewComment
from .accounts import render_user
from .issues import author_association, render_label, render_rollup
from .links import Links


@dataclass(frozen=True)
class PullDetails:
    """What only ``GET /pulls/{n}`` reports, computed from git and the comment lists."""

    commits: int
    additions: int
    deletions: int
    changed_files: int
    comments: int
    review_comments: int


def _branch(
    repo: Repo, pull: PullRequest, links: Links, repo_shape: dict[str, Any], *, head: bool
) -> dict[str, Any]:
    ref, sha = (pull.head_ref, pull.head_sha) if head else (pull.base_ref, pull.base_sha)
    return {
        "label": f"{repo.owner.login}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": render_user(repo.owner, links),
        "repo": repo_shape,
    }


def render_pull(
    repo: Repo,
    pull: PullRequest,
    issue: Issue,
    links: Links,
    *,
    repo_shape: dict[str, Any],
    details: PullDetails | None = None,
) -> dict[str, Any]:
    """``pull-request-simple`` (lists), or ``pull-request`` when ``details`` are given."""
    api = links.repo_api(repo, f"/pulls/{pull.number}")
    issue_api = links.repo_api(repo, f"/issues/{pull.number}")
    web = links.repo_web(repo, f"/pull/{pull.number}")
    statuses = links.repo_api(repo, f"/statuses/{pull.head_sha}")
    shape: dict[str, Any] = {
        "url": api,
        "id": pull.id,
        "node_id": pull.node_id,
        "html_url": web,
        "diff_url": f"{web}.diff",
        "patch_url": f"{web}.patch",
        "issue_url": issue_api,
        "commits_url": f"{api}/commits",
        "review_comments_url": f"{api}/comments",
        "review_comment_url": links.repo_api(repo, "/pulls/comments{/number}"),
        "comments_url": f"{issue_api}/comments",
        "statuses_url": statuses,
        "number": pull.number,
        "state": pull.state,
        "locked": False,
        "title": pull.title,
        "user": render_user(pull.user, links),
        "body": pull.body,
        "labels": [render_label(repo, repo.labels[n.lower()], links) for n in issue.labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": iso8601(pull.created_at),
        "updated_at": iso8601(pull.updated_at),
        "closed_at": iso8601(pull.closed_at) if pull.closed_at is not None else None,
        "merged_at": None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _branch(repo, pull, links, repo_shape, head=True),
        "base": _branch(repo, pull, links, repo_shape, head=False),
        "_links": {
            "self": {"href": api},
            "html": {"href": web},
            "issue": {"href": issue_api},
            "comments": {"href": f"{issue_api}/comments"},
            "review_comments": {"href": f"{api}/comments"},
            "review_comment": {"href": links.repo_api(repo, "/pulls/comments{/number}")},
            "commits": {"href": f"{api}/commits"},
            "statuses": {"href": statuses},
        },
        "author_association": author_association(repo, pull.user),
        "auto_merge": None,
        "draft": pull.draft,
    }
    if details is not None:
        shape.update(
            merged=False,
            mergeable=None,  # GitHub computes it in the background and says null at first
            rebaseable=None,
            mergeable_state="draft" if pull.draft else "unknown",
            merged_by=None,
            comments=details.comments,
            review_comments=details.review_comments,
            maintainer_can_modify=pull.maintainer_can_modify,
            commits=details.commits,
            additions=details.additions,
            deletions=details.deletions,
            changed_files=details.changed_files,
        )
    return shape


def render_pull_minimal(repo: Repo, pull: PullRequest, links: Links) -> dict[str, Any]:
    """``pull-request-minimal``: a check run's ``pull_requests`` entries."""
    repo_ref = {"id": repo.id, "url": links.repo_api(repo), "name": repo.name}
    return {
        "id": pull.id,
        "number": pull.number,
        "url": links.repo_api(repo, f"/pulls/{pull.number}"),
        "head": {"ref": pull.head_ref, "sha": pull.head_sha, "repo": repo_ref},
        "base": {"ref": pull.base_ref, "sha": pull.base_sha, "repo": repo_ref},
    }


def render_review_comment(repo: Repo, comment: ReviewComment, links: Links) -> dict[str, Any]:
    """``pull-request-review-comment``."""
    url = links.repo_api(repo, f"/pulls/comments/{comment.id}")
    html = links.repo_web(repo, f"/pull/{comment.pull_number}#discussion_r{comment.id}")
    pull_url = links.repo_api(repo, f"/pulls/{comment.pull_number}")
    shape: dict[str, Any] = {
        "url": url,
        "pull_request_review_id": comment.review_id,
        "id": comment.id,
        "node_id": comment.node_id,
        "diff_hunk": comment.diff_hunk,
        "path": comment.path,
        "commit_id": comment.commit_id,
        "original_commit_id": comment.commit_id,
        "user": render_user(comment.user, links),
        "body": comment.body,
        "created_at": iso8601(comment.created_at),
        "updated_at": iso8601(comment.updated_at),
        "html_url": html,
        "pull_request_url": pull_url,
        "author_association": author_association(repo, comment.user),
        "_links": {
            "self": {"href": url},
            "html": {"href": html},
            "pull_request": {"href": pull_url},
        },
        "start_line": None,
        "original_start_line": None,
        "start_side": None,
        "line": comment.line,
        "original_line": comment.line,
        "side": comment.side,
        "subject_type": "line" if comment.line is not None else "file",
        "reactions": render_rollup(url, []),
    }
    if comment.line is not None:
        # The line's index in the diff hunk; the fake's hunks are one line per commented line.
        shape["position"] = shape["original_position"] = comment.line
    if comment.in_reply_to_id is not None:
        shape["in_reply_to_id"] = comment.in_reply_to_id
    return shape
