"""The session cookie and cross-site request forgery (CSRF) protection.

The session is Starlette's ``SessionMiddleware``: a cookie signed with the session secret and
a timestamp (itsdangerous), ``HttpOnly``, ``SameSite=Lax``, ``Secure`` when the service is
reached over HTTPS; a forged or expired cookie reads as no session. It holds only who signed
in (a GitHub login, or the operator after the one-time link: kept apart, so one never reads
as the other), the sign-in ``state`` while GitHub is asked, and the CSRF secret: never a
GitHub token.

A state-changing request must pass two checks: the browser's own word that it comes from
this site (``Sec-Fetch-Site``, else ``Origin``), and a form field equal to the session's CSRF
secret, which a page of another site can neither read nor guess.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping

from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import HTTPConnection

from app.dashboard.config import DashboardConfig

SESSION_COOKIE = "ratchet_session"
# Seconds a sign-in lasts (GitHub's own user tokens expire after 8 hours too).
SESSION_MAX_AGE = 8 * 3600
CSRF_FIELD = "csrf_token"
_LOGIN, _OPERATOR, _CSRF, _STATE, _NEXT = "login", "operator", "csrf", "oauth_state", "next"
# What a browser says about a request's origin that makes it ours (Fetch Metadata).
_SAME_SITE = frozenset({"same-origin", "none"})  # "none": typed or bookmarked by the user


def session_middleware(config: DashboardConfig) -> Middleware:
    return Middleware(
        SessionMiddleware, secret_key=config.session_secret, session_cookie=SESSION_COOKIE,
        max_age=SESSION_MAX_AGE, same_site="lax", https_only=config.secure_cookies,
    )


def signed_in_login(conn: HTTPConnection) -> str | None:
    """The GitHub login this session signed in as."""
    login = conn.session.get(_LOGIN)
    return login if isinstance(login, str) and login else None


def signed_in_operator(conn: HTTPConnection) -> str | None:
    """The operator this session was opened for by the one-time link."""
    operator = conn.session.get(_OPERATOR)
    return operator if isinstance(operator, str) and operator else None


def sign_in(conn: HTTPConnection, login: str, *, operator: bool = False) -> str:
    """Start a fresh session for ``login`` (a GitHub login, or with ``operator`` this host's
    operator; nothing of the anonymous session survives it); returns where the user wanted
    to go."""
    wanted = conn.session.get(_NEXT)
    conn.session.clear()
    conn.session.update({_OPERATOR if operator else _LOGIN: login,
                         _CSRF: secrets.token_urlsafe(32)})
    return wanted if isinstance(wanted, str) and is_local_path(wanted) else "/"


def sign_out(conn: HTTPConnection) -> None:
    conn.session.clear()


def begin_sign_in(conn: HTTPConnection, *, wanted: str) -> str:
    """A one-time ``state`` for GitHub to send back, remembered with where to go after."""
    state = secrets.token_urlsafe(24)
    conn.session[_STATE] = state
    conn.session[_NEXT] = wanted if is_local_path(wanted) else "/"
    return state


def take_state(conn: HTTPConnection, returned: str | None) -> bool:
    """Whether GitHub sent back the ``state`` this session started with (used up either
    way, so a state works once)."""
    expected = conn.session.pop(_STATE, None)
    return bool(isinstance(expected, str) and returned
                and hmac.compare_digest(expected.encode(), returned.encode()))


def csrf_token(conn: HTTPConnection) -> str:
    """The session's CSRF secret, created for an anonymous session on first use."""
    token = conn.session.get(_CSRF)
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        conn.session[_CSRF] = token
    return token


def csrf_valid(conn: HTTPConnection, submitted: object) -> bool:
    token = conn.session.get(_CSRF)
    return (isinstance(token, str) and isinstance(submitted, str) and bool(token)
            and hmac.compare_digest(token.encode(), submitted.encode()))


def cross_site_reason(headers: Mapping[str, str], *, origin: str) -> str | None:
    """Why a state-changing request is not from this site (``origin``, e.g.
    ``https://ratchet.example.com``), or None when the browser vouches it is, or says
    nothing (a client that is not a browser cannot carry a user's cookie to us anyway)."""
    site = headers.get("sec-fetch-site")
    if site is not None:  # set by the browser itself; a page's script cannot forge it
        return None if site in _SAME_SITE else (
            f"the browser says this request comes from a {site} page")
    sent = headers.get("origin")
    if sent is not None and sent.rstrip("/") != origin.rstrip("/"):
        return f"the request comes from {sent}, not from {origin}"
    return None


def is_local_path(path: str) -> bool:
    """A path on this site (``/runs/x``), never ``//evil.example`` or a full URL."""
    return path.startswith("/") and not path.startswith(("//", "/\\"))
