"""Pull requests: create (with GitHub's refusals), find by head, read, update, review comments.

Heads and bases come from git: creating needs both branches in the bare repository and at
least one commit between them, and an open pull request's ``head.sha``/``base.sha`` follow
pushes to its branches, as on GitHub. ``draft`` cannot change here (GitHub ignores it in
PATCH); only the GraphQL ``markPullRequestReadyForReview`` mutation clears it.
"""

from __future__ import annotations

from ..clock import parse_iso8601
from ..errors import InvalidRequest, custom_error, invalid_field, not_found, validation_failed
from ..gitdata import commits_between, diff_stats, find_ref
from ..render.pulls import PullDetails, render_pull, render_review_comment
from ..state import PullRequest, Repo, make_node_id, open_issue
from .base import Reply, Request, Route, paginate, render_repo_live


def sync_pull(repo: Repo, pull: PullRequest) -> None:
    """Refresh an open pull request's head and base shas from its branches, if they exist."""
    if pull.state != "open":
        return
    head = find_ref(repo.git_dir, f"refs/heads/{pull.head_ref}")
    base = find_ref(repo.git_dir, f"refs/heads/{pull.base_ref}")
    if head is not None:
        pull.head_sha = head.sha
    if base is not None:
        pull.base_sha = base.sha


def _pull(request: Request) -> tuple[Repo, PullRequest]:
    repo = request.the_repo()
    pull = repo.pulls.get(request.params["pull_number"])
    if pull is None:
        raise not_found()
    sync_pull(repo, pull)
    return repo, pull


def _render(request: Request, repo: Repo, pull: PullRequest, *, full: bool) -> dict[str, object]:
    details = None
    if full:
        additions, deletions, files = diff_stats(repo.git_dir, pull.base_sha, pull.head_sha)
        details = PullDetails(
            commits=commits_between(repo.git_dir, pull.base_sha, pull.head_sha),
            additions=additions,
            deletions=deletions,
            changed_files=files,
            comments=sum(1 for c in repo.comments.values() if c.issue_number == pull.number),
            review_comments=sum(
                1 for c in repo.review_comments.values() if c.pull_number == pull.number
            ),
        )
    return render_pull(
        repo,
        pull,
        repo.issues[pull.number],
        request.links,
        repo_shape=render_repo_live(request, repo),
        details=details,
    )


def _head_filter(repo: Repo, head: str | None) -> tuple[str, str] | None:
    """``OWNER:BRANCH`` as a filter; GitHub silently ignores a bare branch name here."""
    if not head or ":" not in head:
        return None
    owner, _, branch = head.partition(":")
    return owner.lower(), branch


def list_pulls(request: Request) -> Reply:
    repo = request.the_repo()
    state = request.params.get("state", "open")
    head = _head_filter(repo, request.params.get("head"))
    base = request.params.get("base")
    pulls = []
    for pull in repo.pulls.values():
        sync_pull(repo, pull)
        if state != "all" and pull.state != state:
            continue
        if head is not None and (repo.owner.login.lower(), pull.head_ref) != head:
            continue
        if base is not None and pull.base_ref != base:
            continue
        pulls.append(pull)
    sort = request.params.get("sort", "created")
    key = (lambda p: p.updated_at) if sort in {"updated", "long-running"} else (lambda p: p.id)
    descending = request.params.get("direction", "desc" if sort == "created" else "asc") == "desc"
    pulls.sort(key=key, reverse=descending)
    page, headers = paginate(request, pulls)
    return Reply(200, [_render(request, repo, p, full=False) for p in page], headers)


def create_pull(request: Request) -> Reply:
    repo = request.the_repo()
    body = request.body
    if "issue" in body:
        raise InvalidRequest(["The fake GitHub does not convert issues into pull requests."])
    if not body.get("title"):
        raise validation_failed(invalid_field("Issue", "title", "missing_field"))
    owner, _, head_ref = body["head"].rpartition(":")
    if owner and owner.lower() != repo.owner.login.lower():
        raise validation_failed(invalid_field("PullRequest", "head"))
    head = find_ref(repo.git_dir, f"refs/heads/{head_ref}")
    base = find_ref(repo.git_dir, f"refs/heads/{body['base']}")
    if head is None:
        raise validation_failed(invalid_field("PullRequest", "head"))
    if base is None:
        raise validation_failed(invalid_field("PullRequest", "base"))
    for other in repo.pulls.values():
        if other.state == "open" and other.head_ref == head_ref and other.base_ref == body["base"]:
            label = f"{repo.owner.login}:{head_ref}"
            raise validation_failed(
                custom_error("PullRequest", f"A pull request already exists for {label}.")
            )
    if commits_between(repo.git_dir, base.sha, head.sha) == 0:
        raise validation_failed(
            custom_error("PullRequest", f"No commits between {body['base']} and {head_ref}")
        )
    user = request.actor()
    issue = open_issue(
        request.world, repo, title=body["title"], body=body.get("body"), user=user, now=request.now
    )
    number, pull_id = issue.number, request.world.next_id()
    pull = PullRequest(
        id=pull_id,
        node_id=make_node_id("PR", pull_id),
        number=number,
        title=body["title"],
        body=body.get("body"),
        user=user,
        head_ref=head_ref,
        head_sha=head.sha,
        base_ref=body["base"],
        base_sha=base.sha,
        draft=bool(body.get("draft", False)),
        created_at=request.now,
        updated_at=request.now,
        maintainer_can_modify=bool(body.get("maintainer_can_modify", False)),
    )
    repo.pulls[number] = pull
    shape = _render(request, repo, pull, full=True)
    return Reply(201, shape, {"location": str(shape["url"])})


def get_pull(request: Request) -> Reply:
    repo, pull = _pull(request)
    return Reply(200, _render(request, repo, pull, full=True))


def update_pull(request: Request) -> Reply:
    repo, pull = _pull(request)
    body = request.body or {}
    issue = repo.issues[pull.number]
    if "base" in body:
        if find_ref(repo.git_dir, f"refs/heads/{body['base']}") is None:
            raise validation_failed(invalid_field("PullRequest", "base"))
        pull.base_ref = body["base"]
    if "title" in body:
        pull.title = issue.title = body["title"]
    if "body" in body:
        pull.body = issue.body = body["body"]
    if "maintainer_can_modify" in body:
        pull.maintainer_can_modify = bool(body["maintainer_can_modify"])
    if body.get("state") in {"open", "closed"} and body["state"] != pull.state:
        closed = body["state"] == "closed"
        pull.state = issue.state = body["state"]
        pull.closed_at = issue.closed_at = request.now if closed else None
    pull.updated_at = issue.updated_at = request.now
    sync_pull(repo, pull)
    return Reply(200, _render(request, repo, pull, full=True))


def list_review_comments(request: Request) -> Reply:
    repo, pull = _pull(request)
    since = parse_iso8601(request.params["since"]) if "since" in request.params else None
    comments = [
        c
        for c in repo.review_comments.values()
        if c.pull_number == pull.number and (since is None or c.updated_at >= since)
    ]
    by_updated = request.params.get("sort") == "updated"
    comments.sort(key=(lambda c: c.updated_at) if by_updated else (lambda c: c.id))
    if request.params.get("direction") == "desc":
        comments.reverse()
    page, headers = paginate(request, comments)
    return Reply(200, [render_review_comment(repo, c, request.links) for c in page], headers)


_READ = (("pull_requests", "read"),)
_WRITE = (("pull_requests", "write"),)

ROUTES = (
    Route("pulls/list", list_pulls, permissions=_READ),
    Route("pulls/create", create_pull, permissions=_WRITE),
    Route("pulls/get", get_pull, permissions=_READ),
    Route("pulls/update", update_pull, permissions=_WRITE),
    Route("pulls/list-review-comments", list_review_comments, permissions=_READ),
)
