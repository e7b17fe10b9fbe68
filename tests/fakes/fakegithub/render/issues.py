"""Issues, issue comments, reactions and labels."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..clock import iso8601
from ..state import Issue, IssueComment, Label, Reaction, Repo, User
from .accounts import render_app, render_user
from .links import Links

# The reaction contents GitHub accepts, in the order its rollups list them.
REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket")


def author_association(repo: Repo, user: User) -> str:
    """OWNER for the repository owner, COLLABORATOR for anyone with a role, else NONE."""
    if user.login.lower() == repo.owner.login.lower():
        return "OWNER"
    if user.login.lower() in repo.roles:
        return "COLLABORATOR"
    return "NONE"


def render_label(repo: Repo, label: Label, links: Links) -> dict[str, Any]:
    return {
        "id": label.id,
        "node_id": label.node_id,
        "url": links.repo_api(repo, f"/labels/{quote(label.name, safe='')}"),
        "name": label.name,
        "color": label.color,
        "default": label.default,
        "description": label.description,
    }


def render_reaction(reaction: Reaction, links: Links) -> dict[str, Any]:
    return {
        "id": reaction.id,
        "node_id": reaction.node_id,
        "user": render_user(reaction.user, links),
        "content": reaction.content,
        "created_at": iso8601(reaction.created_at),
    }


def render_rollup(url: str, reactions: list[Reaction]) -> dict[str, Any]:
    counts = {content: 0 for content in REACTION_CONTENTS}
    for reaction in reactions:
        counts[reaction.content] += 1
    return {"url": f"{url}/reactions", "total_count": len(reactions), **counts}


def _issue_web_path(repo: Repo, number: int) -> str:
    kind = "pull" if number in repo.pulls else "issues"
    return f"/{kind}/{number}"


def render_comment(repo: Repo, comment: IssueComment, links: Links) -> dict[str, Any]:
    """``issue-comment``; ``performed_via_github_app`` names the App that posted it, if any."""
    url = links.repo_api(repo, f"/issues/comments/{comment.id}")
    web_path = _issue_web_path(repo, comment.issue_number)
    return {
        "id": comment.id,
        "node_id": comment.node_id,
        "url": url,
        "html_url": links.repo_web(repo, f"{web_path}#issuecomment-{comment.id}"),
        "body": comment.body,
        "user": render_user(comment.user, links),
        "created_at": iso8601(comment.created_at),
        "updated_at": iso8601(comment.updated_at),
        "issue_url": links.repo_api(repo, f"/issues/{comment.issue_number}"),
        "author_association": author_association(repo, comment.user),
        "performed_via_github_app": (
            render_app(comment.app, links) if comment.app is not None else None
        ),
        "reactions": render_rollup(url, comment.reactions),
    }


def render_issue(repo: Repo, issue: Issue, links: Links) -> dict[str, Any]:
    """``issue``; a pull request's issue carries ``pull_request`` links and ``draft``."""
    url = links.repo_api(repo, f"/issues/{issue.number}")
    labels = [repo.labels[name.lower()] for name in issue.labels]
    comments = sum(1 for c in repo.comments.values() if c.issue_number == issue.number)
    shape: dict[str, Any] = {
        "id": issue.id,
        "node_id": issue.node_id,
        "url": url,
        "repository_url": links.repo_api(repo),
        "labels_url": f"{url}/labels{{/name}}",
        "comments_url": f"{url}/comments",
        "events_url": f"{url}/events",
        "timeline_url": f"{url}/timeline",
        "html_url": links.repo_web(repo, _issue_web_path(repo, issue.number)),
        "number": issue.number,
        "state": issue.state,
        "state_reason": "completed" if issue.state == "closed" else None,
        "title": issue.title,
        "body": issue.body,
        "user": render_user(issue.user, links),
        "labels": [render_label(repo, label, links) for label in labels],
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "locked": False,
        "active_lock_reason": None,
        "comments": comments,
        "closed_at": iso8601(issue.closed_at) if issue.closed_at is not None else None,
        "created_at": iso8601(issue.created_at),
        "updated_at": iso8601(issue.updated_at),
        "author_association": author_association(repo, issue.user),
        "performed_via_github_app": None,
        "reactions": render_rollup(url, []),
    }
    pull = repo.pulls.get(issue.number)
    if pull is not None:
        shape["draft"] = pull.draft
        shape["pull_request"] = {
            "url": links.repo_api(repo, f"/pulls/{issue.number}"),
            "html_url": links.repo_web(repo, f"/pull/{issue.number}"),
            "diff_url": links.repo_web(repo, f"/pull/{issue.number}.diff"),
            "patch_url": links.repo_web(repo, f"/pull/{issue.number}.patch"),
            "merged_at": None,
        }
    return shape
