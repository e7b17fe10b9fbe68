"""The App's own endpoints (JWT): who am I, where am I installed, mint an installation token;
and the manifest flow's code exchange, which needs no credentials (the code is one)."""

from __future__ import annotations

import secrets
import string

from ..clock import iso8601
from ..errors import ApiError, not_found
from ..render.accounts import render_app, render_installation
from ..state import ACCESS_LEVELS, App, AuthKind, Token
from .base import Reply, Request, Route, render_repo_live

INSTALLATION_TOKEN_LIFETIME = 3600  # seconds, as GitHub's installation tokens
_TOKEN_ALPHABET = string.ascii_letters + string.digits


def _app(request: Request) -> App:
    if request.principal.app is None:
        raise AssertionError("app endpoint reached without a verified JWT")
    return request.principal.app


def get_authenticated(request: Request) -> Reply:
    return Reply(200, render_app(_app(request), request.links))


def get_repo_installation(request: Request) -> Reply:
    app = _app(request)
    repo = request.world.repo(request.params["owner"], request.params["repo"])
    installation = request.world.installation_for(app.id, repo) if repo is not None else None
    if installation is None:
        raise not_found()
    return Reply(200, render_installation(installation, app, request.links))


def create_installation_access_token(request: Request) -> Reply:
    """Mint a ``ghs_`` token for the installation, optionally narrowed by the body."""
    app = _app(request)
    world = request.world
    installation = world.installations.get(request.params["installation_id"])
    if installation is None or installation.app_id != app.id:
        raise not_found()
    body = request.body or {}
    covered = [
        repo
        for repo in world.repos.values()
        if (installation.repositories is None and repo.owner.id == installation.account.id)
        or (installation.repositories is not None and repo.key in installation.repositories)
    ]
    names = {n.lower() for n in body.get("repositories", [])}
    ids = set(body.get("repository_ids", []))
    narrowed = None
    if names or ids:
        narrowed = [r for r in covered if r.name.lower() in names or r.id in ids]
        if len(narrowed) < len(names) + len(ids):
            raise ApiError(
                422,
                "There is at least one repository that does not exist or is not accessible "
                "to the parent installation.",
            )
    permissions = dict(installation.permissions)
    for resource, level in body.get("permissions", {}).items():
        granted = ACCESS_LEVELS.get(installation.permissions.get(resource, ""), 0)
        if ACCESS_LEVELS.get(level, 0) > granted:
            raise ApiError(422, "The permissions requested are not granted to this installation.")
    if body.get("permissions"):
        permissions = dict(body["permissions"])
    value = "ghs_" + "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(36))
    expires_at = request.now + INSTALLATION_TOKEN_LIFETIME
    world.tokens[value] = Token(
        value=value,
        kind=AuthKind.INSTALLATION,
        actor=app.bot,
        permissions=permissions,
        repositories=frozenset(r.key for r in narrowed) if narrowed is not None else None,
        expires_at=expires_at,
        app=app,
        installation_id=installation.id,
    )
    reply: dict[str, object] = {
        "token": value,
        "expires_at": iso8601(expires_at),
        "permissions": permissions,
        "repository_selection": "all" if installation.repositories is None else "selected",
    }
    if narrowed is not None:
        reply["repository_selection"] = "selected"
        reply["repositories"] = [render_repo_live(request, repo) for repo in narrowed]
    return Reply(201, reply)


def create_from_manifest(request: Request) -> Reply:
    """The App a manifest created (``manifests.py``) with its private key, webhook secret and
    OAuth client: once per code, within the hour; otherwise 404, as for a code never issued."""
    code = request.world.manifest_codes.get(request.params["code"])
    if code is None or code.used or code.expires_at <= request.now:
        raise not_found()
    code.used = True
    return Reply(201, {**render_app(code.app, request.links), "pem": code.pem,
                       "webhook_secret": code.webhook_secret,
                       "client_id": code.client.client_id,
                       "client_secret": code.client.client_secret})


ROUTES = (
    Route("apps/get-authenticated", get_authenticated, app_endpoint=True),
    Route("apps/get-repo-installation", get_repo_installation, app_endpoint=True),
    Route(
        "apps/create-installation-access-token",
        create_installation_access_token,
        app_endpoint=True,
    ),
    Route("apps/create-from-manifest", create_from_manifest, anonymous=True),
)
