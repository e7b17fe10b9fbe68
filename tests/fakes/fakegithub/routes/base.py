"""What every handler receives and returns, and the route record that wires one operation.

A handler is a function ``(Request) -> Reply`` that runs under the world's lock after the
pipeline has authenticated the caller, validated the request against the OpenAPI description,
resolved the repository (404 when absent or invisible) and checked the token's permissions. It
raises ``ApiError`` for GitHub's refusals and never touches HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

from ..auth import Principal
from ..errors import ApiError
from ..gitdata import default_branch
from ..render.links import Links
from ..render.repos import render_repo
from ..state import App, Repo, User, World

T = TypeVar("T")

DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100  # GitHub silently caps per_page at 100


@dataclass
class Request:
    world: World
    principal: Principal
    params: dict[str, Any]  # path and query parameters, coerced by their schemas
    query: list[tuple[str, str]]  # the raw query, in order, for Link headers
    body: Any
    links: Links
    now: float
    repo: Repo | None  # resolved from {owner}/{repo} when the path has them
    link_path: str  # the path Link headers point at (/repositories/{id}/... for repo routes)

    def the_repo(self) -> Repo:
        if self.repo is None:
            raise AssertionError("route without {owner}/{repo} asked for the repository")
        return self.repo

    def actor(self) -> User:
        """The user or bot a write is attributed to (routes that write require a token)."""
        if self.principal.actor is None:
            raise ApiError(401, "Requires authentication")
        return self.principal.actor

    def acting_app(self) -> App | None:
        """The App behind the caller's token: ``performed_via_github_app``, a check run's app."""
        return self.principal.app


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # recorded as a validation failure


Handler = Callable[[Request], Reply]


@dataclass(frozen=True)
class Route:
    """One operation: its handler and who may call it.

    ``app_endpoint``: authenticated by the App's JWT (``/app/...``), not by a token.
    ``permissions``: App permissions of which the token must hold at least one, each
    ``(resource, level)``; empty means any caller that can see the repository.
    ``unauthenticated``: GitHub's 401 message for a write without credentials.
    ``anonymous``: a write anyone may send without credentials (what it needs is in the path).
    """

    operation_id: str
    handler: Handler
    app_endpoint: bool = False
    permissions: tuple[tuple[str, str], ...] = ()
    unauthenticated: str = "Requires authentication"
    anonymous: bool = False


def paginate(request: Request, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
    """Slice ``items`` by ``page``/``per_page`` and build GitHub's ``Link`` header.

    GitHub lists ``next`` and ``last`` from the first page; ``prev``, ``next``, ``last`` and
    ``first`` from a middle page; ``prev`` and ``first`` from the last; nothing when a single
    page holds everything.
    """
    per_page = min(max(int(request.params.get("per_page") or DEFAULT_PER_PAGE), 1), MAX_PER_PAGE)
    page = max(int(request.params.get("page") or 1), 1)
    last = max((len(items) + per_page - 1) // per_page, 1)
    chunk = list(items[(page - 1) * per_page : page * per_page])
    if last == 1 and page == 1:
        return chunk, {}

    def url(number: int) -> str:
        query = [(k, v) for k, v in request.query if k != "page"] + [("page", str(number))]
        return f"{request.links.api}{request.link_path}?{urlencode(query)}"

    rels: list[tuple[int, str]] = []
    if page > 1:
        rels.append((page - 1, "prev"))
    if page < last:
        rels += [(page + 1, "next"), (last, "last")]
    if page > 1:
        rels.append((1, "first"))
    return chunk, {"link": ", ".join(f'<{url(n)}>; rel="{rel}"' for n, rel in rels)}


def render_repo_live(request: Request, repo: Repo) -> dict[str, Any]:
    """A repository object with its default branch read from git now and its open count."""
    open_issues = sum(1 for issue in repo.issues.values() if issue.state == "open")
    return render_repo(
        repo, request.links, default_branch=default_branch(repo.git_dir), open_issues=open_issues
    )
