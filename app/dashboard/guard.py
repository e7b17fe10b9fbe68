"""The dashboard's door: who is asking (``Viewer``), and what is refused before any handler.

For the dashboard's paths (pages, ``/live`` streams, ``/api/*``); the service's own endpoints
(health, metrics, the webhook, which checks its own signature) pass untouched.

- Without GitHub sign-in (``Access.LINK``) the dashboard answers only this host, directly:
  a request addressed to a name that is not loopback (DNS rebinding), from a peer that is not
  loopback, or carrying forwarded headers from a proxy not in ``RATCHET_TRUSTED_PROXIES`` is
  refused. Being on loopback grants nothing, though: every page, stream, API call and action
  needs the session the one-time link opened (``?token=`` on any page redeems it).
- A state-changing request from another site is refused (``sessions.cross_site_reason``).
- ``/api/*`` takes a signed-in session or ``Authorization: Bearer <RATCHET_API_TOKEN>``;
  without either: 401. A page without a session redirects to ``/login``.
"""

from __future__ import annotations

import hmac
from urllib.parse import quote

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.dashboard.access import Viewer, ViewerKind
from app.dashboard.config import Access, DashboardConfig, is_loopback
from app.dashboard.links import TOKEN_PARAM
from app.dashboard.proxies import UNTRUSTED_FORWARDING
from app.dashboard.sessions import (
    cross_site_reason,
    sign_in,
    signed_in_login,
    signed_in_operator,
)

VIEWER = "viewer"  # the key of the ``Viewer`` in ``request.state``
_PUBLIC = ("/login", "/auth/github", "/auth/callback", "/logout")  # before signing in
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def is_dashboard_path(path: str) -> bool:
    return (path in {"/", "/live", "/runs", *_PUBLIC} or path.startswith(("/runs/", "/api/",
                                                                         "/static/")))


def needs_viewer(path: str) -> bool:
    return is_dashboard_path(path) and path not in _PUBLIC and not path.startswith("/static/")


def viewer_of(conn: HTTPConnection) -> Viewer:
    """The viewer the guard let in (handlers behind the guard only)."""
    viewer = getattr(conn.state, VIEWER, None)
    if not isinstance(viewer, Viewer):  # pragma: no cover - a route outside the guard
        raise RuntimeError(f"{conn.url.path} is not behind the dashboard's guard")
    return viewer


class Guard:
    """ASGI middleware in front of the dashboard's paths (see the module docstring); it puts
    the ``Viewer`` in ``request.state`` or answers the request itself."""

    def __init__(self, app: ASGIApp, *, config: DashboardConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_dashboard_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        refusal = self._refuse(conn)
        if refusal is None and TOKEN_PARAM in conn.query_params:
            refusal = self._redeem(conn)
        if refusal is None and needs_viewer(conn.url.path):
            viewer, refusal = self._identify(conn)
            if viewer is not None:
                scope.setdefault("state", {})[VIEWER] = viewer
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refuse(self, conn: HTTPConnection) -> Response | None:
        config = self.config
        host = _host_name(conn.headers.get("host", ""))
        if config.access is Access.LINK:
            why = _not_this_host(conn, host)
            if why is not None:
                return PlainTextResponse(
                    f"refused: {why}; without GitHub sign-in this dashboard answers only this"
                    " host, directly; set RATCHET_GITHUB_CLIENT_ID and"
                    " RATCHET_GITHUB_CLIENT_SECRET to serve it elsewhere (and"
                    " RATCHET_TRUSTED_PROXIES to name its proxy)", status_code=403)
        if conn.scope["method"] not in _SAFE_METHODS:
            reason = cross_site_reason(conn.headers, origin=self.origin(conn))
            if reason is not None:
                return PlainTextResponse(f"refused: {reason}", status_code=403)
        return None

    def origin(self, conn: HTTPConnection) -> str:
        """Where this site is: the public URL's origin, else the request's own."""
        if self.config.public_url:
            scheme, _, rest = self.config.public_url.partition("://")
            return f"{scheme}://{rest.split('/', 1)[0]}"
        return f"{conn.url.scheme}://{conn.headers.get('host', conn.url.netloc)}"

    def _redeem(self, conn: HTTPConnection) -> Response | None:
        """``?token=``: the one-time link opens the operator's session, then the page again
        without the token (so it stays in no history or referrer)."""
        link = self.config.link
        if link is None or conn.scope["method"] not in _SAFE_METHODS:
            return None
        if not link.redeem(conn.query_params[TOKEN_PARAM]):
            return PlainTextResponse(
                "this sign-in link was used already or is not this service's; open the newest"
                " link `ratchet serve` printed in its log", status_code=403)
        sign_in(conn, self.config.operator, operator=True)
        query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}"
                         for k, v in conn.query_params.multi_items() if k != TOKEN_PARAM)
        return RedirectResponse(conn.url.path + (f"?{query}" if query else ""),
                                status_code=303)

    def _identify(self, conn: HTTPConnection) -> tuple[Viewer | None, Response | None]:
        config, path = self.config, conn.url.path
        api = path.startswith("/api/")
        bearer = _bearer(conn.headers)
        if api and bearer is not None:
            if config.api_token and hmac.compare_digest(bearer.encode(),
                                                        config.api_token.encode()):
                return Viewer(ViewerKind.TOKEN, "api-token"), None
            return None, _unauthorized("the bearer token is not this service's API token")
        if config.access is Access.LINK:
            operator = signed_in_operator(conn)
            if operator is not None:
                return Viewer(ViewerKind.OPERATOR, operator), None
        login = signed_in_login(conn) if config.access is Access.GITHUB else None
        if login is not None:
            return Viewer(ViewerKind.GITHUB, login), None
        if api:
            how = ("open the sign-in link `ratchet serve` printed" if config.access is
                   Access.LINK else "sign in with GitHub")
            return None, _unauthorized(f"{how}, or send Authorization: Bearer"
                                       " <RATCHET_API_TOKEN>")
        if conn.scope["method"] in _SAFE_METHODS and not path.endswith("/live"):
            wanted = path + (f"?{conn.url.query}" if conn.url.query else "")
            return None, RedirectResponse(f"/login?next={quote(wanted, safe='')}",
                                          status_code=303)
        return None, PlainTextResponse("sign in first", status_code=401)


def _not_this_host(conn: HTTPConnection, host: str) -> str | None:
    """Why a request did not come from this host directly, or None."""
    if not is_loopback(host):
        return f"the request is addressed to {host or 'no host'!r}, not a loopback name"
    forwarded = conn.scope.get("state", {}).get(UNTRUSTED_FORWARDING)
    if forwarded is not None:
        return f"the request came through a proxy ({forwarded} from an untrusted peer)"
    client = conn.client.host if conn.client else ""
    if not is_loopback(client):
        return f"the request comes from {client or 'an unknown peer'}, not from this host"
    return None


def _host_name(host: str) -> str:
    """The name in a Host header, without its port (``[::1]:8000`` -> ``[::1]``)."""
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0]


def _bearer(headers: Headers) -> str | None:
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _unauthorized(message: str) -> Response:
    return JSONResponse({"error": message}, status_code=401,
                        headers={"WWW-Authenticate": 'Bearer realm="ratchet"'})
