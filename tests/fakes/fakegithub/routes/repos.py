"""Repository metadata, a user's permission on it, and git refs and branches read live.

Permission of someone who is not a collaborator (GitHub's description documents only 200 and
404): an account GitHub does not know is 404; an existing account without a role reads as
``read`` on a public repository (anyone may read it) and ``none`` on a private one.
"""

from __future__ import annotations

from typing import Any

from ..errors import ApiError, not_found
from ..gitdata import find_ref, list_refs, read_commit
from ..render.accounts import render_user
from ..render.git import render_branch, render_ref
from ..state import ROLE_PERMISSION, Repo
from .base import Reply, Request, Route, render_repo_live

# The role flags GitHub reports for each role (a collaborator's ``permissions`` object).
_ROLE_FLAGS = {
    "admin": {"admin": True, "maintain": True, "push": True, "triage": True, "pull": True},
    "maintain": {"admin": False, "maintain": True, "push": True, "triage": True, "pull": True},
    "write": {"admin": False, "maintain": False, "push": True, "triage": True, "pull": True},
    "triage": {"admin": False, "maintain": False, "push": False, "triage": True, "pull": True},
    "read": {"admin": False, "maintain": False, "push": False, "triage": False, "pull": True},
    "none": {"admin": False, "maintain": False, "push": False, "triage": False, "pull": False},
}


def get_repo(request: Request) -> Reply:
    return Reply(200, render_repo_live(request, request.the_repo()))


def _role_of(repo: Repo, login: str) -> str:
    if login.lower() == repo.owner.login.lower() and repo.owner.type == "User":
        return "admin"
    granted = repo.roles.get(login.lower())
    if granted is not None:
        return granted[1]
    return "none" if repo.private else "read"


def get_permission(request: Request) -> Reply:
    repo, world = request.the_repo(), request.world
    login = request.params["username"]
    if login.lower() in world.missing_users:
        raise not_found()
    role = _role_of(repo, login)
    user: dict[str, Any] = render_user(world.user(login), request.links)
    user.update(permissions=_ROLE_FLAGS[role], role_name=role)
    permission = ROLE_PERMISSION.get(role, "none")
    return Reply(200, {"permission": permission, "role_name": role, "user": user})


def _require_content(repo: Repo) -> None:
    if not list_refs(repo.git_dir):
        raise ApiError(409, "Git Repository is empty.")


def get_ref(request: Request) -> Reply:
    repo = request.the_repo()
    _require_content(repo)
    ref = find_ref(repo.git_dir, f"refs/{request.params['ref']}")
    if ref is None:
        raise not_found()
    return Reply(200, render_ref(repo, ref, request.links))


def list_matching_refs(request: Request) -> Reply:
    """Refs whose name starts with ``refs/{ref}`` (a string prefix: ``heads/fea`` finds
    ``heads/feature``), sorted by name; unpaginated, as GitHub serves it."""
    repo = request.the_repo()
    _require_content(repo)
    prefix = f"refs/{request.params['ref']}"
    refs = [ref for ref in list_refs(repo.git_dir) if ref.name.startswith(prefix)]
    return Reply(200, [render_ref(repo, ref, request.links) for ref in refs])


def get_branch(request: Request) -> Reply:
    repo = request.the_repo()
    name = request.params["branch"]
    ref = find_ref(repo.git_dir, f"refs/heads/{name}")
    if ref is None:
        raise ApiError(404, "Branch not found")
    commit = read_commit(repo.git_dir, ref.sha)
    return Reply(200, render_branch(repo, name, commit, request.links))


_METADATA = (("metadata", "read"),)
_CONTENTS = (("contents", "read"),)

ROUTES = (
    Route("repos/get", get_repo, permissions=_METADATA),
    Route("repos/get-collaborator-permission-level", get_permission, permissions=_METADATA),
    Route("git/get-ref", get_ref, permissions=_CONTENTS),
    Route("git/list-matching-refs", list_matching_refs, permissions=_CONTENTS),
    Route("repos/get-branch", get_branch, permissions=_CONTENTS),
)
