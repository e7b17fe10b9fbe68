"""Issues, issue comments, comment reactions and issue labels.

Pull requests are issues too (one number sequence): comments on a pull request's conversation
go through these endpoints, and a token with ``pull_requests`` permission may use them there.
"""

from __future__ import annotations

from ..clock import parse_iso8601
from ..errors import ApiError, not_found
from ..render.issues import render_comment, render_issue, render_label, render_reaction
from ..state import Issue, IssueComment, Reaction, Repo, ensure_label, make_node_id
from .base import Reply, Request, Route, paginate


def _issue(request: Request) -> Issue:
    issue = request.the_repo().issues.get(request.params["issue_number"])
    if issue is None:
        raise not_found()
    return issue


def _comment(request: Request) -> IssueComment:
    comment = request.the_repo().comments.get(request.params["comment_id"])
    if comment is None:
        raise not_found()
    return comment


def get_issue(request: Request) -> Reply:
    return Reply(200, render_issue(request.the_repo(), _issue(request), request.links))


def list_comments(request: Request) -> Reply:
    repo, issue = request.the_repo(), _issue(request)
    since = parse_iso8601(request.params["since"]) if "since" in request.params else None
    comments = [
        c
        for c in sorted(repo.comments.values(), key=lambda c: c.id)
        if c.issue_number == issue.number and (since is None or c.updated_at >= since)
    ]
    page, headers = paginate(request, comments)
    return Reply(200, [render_comment(repo, c, request.links) for c in page], headers)


def create_comment(request: Request) -> Reply:
    repo, issue = request.the_repo(), _issue(request)
    comment_id = request.world.next_id()
    comment = IssueComment(
        id=comment_id,
        node_id=make_node_id("IC", comment_id),
        issue_number=issue.number,
        body=request.body["body"],
        user=request.actor(),
        created_at=request.now,
        updated_at=request.now,
        app=request.acting_app(),
    )
    repo.comments[comment.id] = comment
    issue.updated_at = request.now
    shape = render_comment(repo, comment, request.links)
    return Reply(201, shape, {"location": shape["url"]})


def get_comment(request: Request) -> Reply:
    return Reply(200, render_comment(request.the_repo(), _comment(request), request.links))


def update_comment(request: Request) -> Reply:
    comment = _comment(request)
    comment.body = request.body["body"]
    comment.updated_at = request.now
    return Reply(200, render_comment(request.the_repo(), comment, request.links))


def list_reactions(request: Request) -> Reply:
    comment = _comment(request)
    wanted = request.params.get("content")
    reactions = [r for r in comment.reactions if wanted is None or r.content == wanted]
    page, headers = paginate(request, reactions)
    return Reply(200, [render_reaction(r, request.links) for r in page], headers)


def create_reaction(request: Request) -> Reply:
    """201 with a new reaction; 200 with the existing one when this user already reacted so."""
    comment = _comment(request)
    user = request.actor()
    content = request.body["content"]
    for reaction in comment.reactions:
        if reaction.user.id == user.id and reaction.content == content:
            return Reply(200, render_reaction(reaction, request.links))
    reaction_id = request.world.next_id()
    reaction = Reaction(reaction_id, make_node_id("REA", reaction_id), content, user, request.now)
    comment.reactions.append(reaction)
    return Reply(201, render_reaction(reaction, request.links))


def _label_reply(request: Request, repo: Repo, issue: Issue) -> Reply:
    labels = [repo.labels[name.lower()] for name in issue.labels]
    return Reply(200, [render_label(repo, label, request.links) for label in labels])


def add_labels(request: Request) -> Reply:
    """Add labels, creating unknown ones in the repository as GitHub does."""
    repo, issue = request.the_repo(), _issue(request)
    for item in (request.body or {}).get("labels", []):
        name = item if isinstance(item, str) else item["name"]
        label = ensure_label(request.world, repo, name)
        if label.name.lower() not in {n.lower() for n in issue.labels}:
            issue.labels.append(label.name)
    issue.updated_at = request.now
    return _label_reply(request, repo, issue)


def remove_label(request: Request) -> Reply:
    repo, issue = request.the_repo(), _issue(request)
    name = request.params["name"].lower()
    if name not in {n.lower() for n in issue.labels}:
        raise ApiError(404, "Label does not exist")
    issue.labels = [n for n in issue.labels if n.lower() != name]
    issue.updated_at = request.now
    return _label_reply(request, repo, issue)


_READ = (("issues", "read"), ("pull_requests", "read"))
_WRITE = (("issues", "write"), ("pull_requests", "write"))

ROUTES = (
    Route("issues/get", get_issue, permissions=_READ),
    Route("issues/list-comments", list_comments, permissions=_READ),
    Route("issues/create-comment", create_comment, permissions=_WRITE),
    Route("issues/get-comment", get_comment, permissions=_READ),
    Route("issues/update-comment", update_comment, permissions=_WRITE),
    Route("reactions/list-for-issue-comment", list_reactions, permissions=_READ),
    Route("reactions/create-for-issue-comment", create_reaction, permissions=_WRITE),
    Route("issues/add-labels", add_labels, permissions=_WRITE),
    Route("issues/remove-label", remove_label, permissions=_WRITE),
)
