"""The dashboard's door: who is asking (``Viewer``), and what is refused before any handler.

For the dashboard's paths (pages, ``/live`` streams, ``/api/*``); the service's own endpoints
(health, metrics, the webhook, which checks its own signature) pass untouched.

- An open dashboard answers only requests addressed to a loopback host name, so a web page
  cannot reach it through a name of its own that resolves to 127.0.0.1 (DNS rebinding).
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
from app.dashboard.sessions import cross_site_reason, signed_in_login

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
        if config.access is Access.OPEN and not is_loopback(host):
            return PlainTextResponse(
                "this dashboard is open without sign-in and so answers only loopback host"
                " names (127.0.0.1, localhost); configure sign-in with GitHub to serve it"
                " under another name", status_code=403)
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

    def _identify(self, conn: HTTPConnection) -> tuple[Viewer | None, Response | None]:
        config, path = self.config, conn.url.path
        if config.access is Access.OPEN:
            return Viewer(ViewerKind.OPERATOR, config.operator), None
        api = path.startswith("/api/")
        bearer = _bearer(conn.headers)
        if api and bearer is not None:
            if config.api_token and hmac.compare_digest(bearer.encode(),
                                                        config.api_token.encode()):
                return Viewer(ViewerKind.TOKEN, "api-token"), None
            return None, _unauthorized("the bearer token is not this service's API token")
        login = signed_in_login(conn) if config.access is Access.GITHUB else None
        if login is not None:
            return Viewer(ViewerKind.GITHUB, login), None
        if api:
            return None, _unauthorized("sign in with GitHub, or send Authorization: Bearer"
                                       " <RATCHET_API_TOKEN>")
        if conn.scope["method"] in _SAFE_METHODS and not path.endswith("/live"):
            wanted = path + (f"?{conn.url.query}" if conn.url.query else "")
            return None, RedirectResponse(f"/login?next={quote(wanted, safe='')}",
                                          status_code=303)
        return None, PlainTextResponse("sign in first", status_code=401)


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
