"""GitHub's OAuth web flow for an App's client, and ``GET /user`` for the tokens it hands out.

These are github.com's pages (``/login/oauth/...``) rather than REST operations, so they are
not in the OpenAPI subset the pipeline validates against; and ``GET /user`` is not in the
subset either. They are served here, before the pipeline, recorded like every other call
(operation ids ``oauth/authorize``, ``oauth/access-token`` and GitHub's own
``users/get-authenticated``), so ``fake.calls(...)`` and ``fake.assert_clean()`` see them.

GitHub's rules, as documented
(https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app):

- ``GET /login/oauth/authorize?client_id&redirect_uri&state``: an unknown client is a 404
  page. A ``redirect_uri`` whose host and port differ from the client's callback URL, or whose
  path is not under the callback's path, sends the browser to the callback URL with
  ``error=redirect_uri_mismatch``. Someone signed in (``sign_in_browser``) who approves
  (``deny`` unset) is sent to ``redirect_uri?code&state``; a denial gives
  ``error=access_denied``; nobody signed in gets GitHub's sign-in page (200, HTML).
- ``POST /login/oauth/access_token`` (form or JSON body, or query): a code works once, for
  10 minutes, for the client and redirect URI it was issued to. GitHub answers 200 even when
  it refuses, with ``error`` (``incorrect_client_credentials``, ``bad_verification_code``,
  ``redirect_uri_mismatch``); JSON when the request accepts it, a form otherwise.
- ``GET /user`` with the user token: the user; a bad or expired token: 401.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from .auth import read_credential
from .clock import iso8601
from .errors import REST_DOCS, ApiError
from .pipeline import Outcome, RawRequest
from .recording import Recorder
from .render.accounts import render_user
from .render.links import Links
from .state import AuthKind, OAuthClient, Token, User, World

AUTHORIZE, ACCESS_TOKEN, USER = "/login/oauth/authorize", "/login/oauth/access_token", "/user"
CODE_LIFETIME = 600  # seconds a code may be traded for a token
TOKEN_LIFETIME = 8 * 3600  # seconds a user token lasts (GitHub's expiring user tokens)
_OAUTH_DOCS = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"


@dataclass
class _Grant:
    client_id: str
    redirect_uri: str
    user: User
    expires_at: float
    used: bool = False


class OAuthWeb:
    """The web flow's state and its three endpoints (see the module docstring)."""

    def __init__(self, world: World, recorder: Recorder) -> None:
        self.world = world
        self.recorder = recorder
        self._grants: dict[str, _Grant] = {}
        self._browser: str | None = None
        self._deny = False

    # -- seeding ---------------------------------------------------------------------------

    def add_client(self, *, client_id: str, client_secret: str, callback_url: str) -> None:
        """An App's OAuth client, sending users back under ``callback_url``."""
        with self.world.lock:
            self.world.oauth_clients[client_id] = OAuthClient(client_id, client_secret,
                                                              callback_url)

    def sign_in_browser(self, login: str | None, *, deny: bool = False) -> None:
        """Who github.com thinks the browser is (None: nobody), and whether they deny the
        App when asked."""
        with self.world.lock:
            if login is not None:
                self.world.user(login)
            self._browser, self._deny = login, deny

    @property
    def browser(self) -> str | None:
        """Who github.com thinks the browser is (None: nobody signed in)."""
        return self._browser

    # -- serving ---------------------------------------------------------------------------

    def handle(self, raw: RawRequest, *, links: Links) -> Outcome | None:
        """The answer to a web-flow request, or None for any other request."""
        split = urlsplit(raw.target)
        route = {("GET", AUTHORIZE): ("oauth/authorize", self._authorize),
                 ("POST", ACCESS_TOKEN): ("oauth/access-token", self._access_token),
                 ("GET", USER): ("users/get-authenticated", self._user)}.get(
                     (raw.method, split.path))
        if route is None:
            return None
        operation, handler = route
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        call = self.recorder.start(raw.method, split.path, query, form_fields(raw))
        call.operation_id = call.template = operation
        with self.world.lock:
            outcome = handler(raw, query, links)
        call.status = outcome.status
        call.response = outcome.body.decode(errors="replace")
        return outcome

    def _authorize(self, raw: RawRequest, query: dict[str, str], links: Links) -> Outcome:
        client = self.world.oauth_clients.get(query.get("client_id", ""))
        if client is None:
            return html_page(404, "<h1>404</h1><p>This is not the web page you are looking"
                                  " for.</p>")
        redirect = query.get("redirect_uri") or client.callback_url
        state = query.get("state", "")
        if not _under(redirect, client.callback_url):
            return redirect_to(client.callback_url, error="redirect_uri_mismatch",
                             error_description="The redirect_uri MUST match the registered"
                             " callback URL for this application.", state=state)
        if self._browser is None:
            return html_page(200, "<h1>Sign in to GitHub</h1><form><input name=login></form>")
        if self._deny:
            return redirect_to(redirect, error="access_denied",
                             error_description="The user has denied your application access.",
                             state=state)
        code = secrets.token_hex(10)
        self._grants[code] = _Grant(client.client_id, redirect, self.world.user(self._browser),
                                    self.world.clock.now() + CODE_LIFETIME)
        return redirect_to(redirect, code=code, state=state)

    def _access_token(self, raw: RawRequest, query: dict[str, str], links: Links) -> Outcome:
        given = {**query, **form_fields(raw)}
        wants_json = "application/json" in raw.headers.get("accept", "")
        client = self.world.oauth_clients.get(str(given.get("client_id", "")))
        if client is None or given.get("client_secret") != client.client_secret:
            return _oauth_error(wants_json, "incorrect_client_credentials",
                                "The client_id and/or client_secret passed are incorrect.")
        grant = self._grants.get(str(given.get("code", "")))
        now = self.world.clock.now()
        if (grant is None or grant.used or grant.expires_at <= now
                or grant.client_id != client.client_id):
            return _oauth_error(wants_json, "bad_verification_code",
                                "The code passed is incorrect or expired.")
        if given.get("redirect_uri") and given["redirect_uri"] != grant.redirect_uri:
            return _oauth_error(wants_json, "redirect_uri_mismatch",
                                "The redirect_uri MUST match the registered callback URL for"
                                " this application.")
        grant.used = True
        token = "ghu_" + secrets.token_hex(18)
        # A user token reaches no repository through this fake: the dashboard asks what a
        # user may do with the App's installation token, never with the user's.
        self.world.tokens[token] = Token(token, AuthKind.TOKEN, grant.user, {}, frozenset(),
                                         now + TOKEN_LIFETIME)
        answer = {"access_token": token, "expires_in": TOKEN_LIFETIME,
                  "refresh_token": "ghr_" + secrets.token_hex(30),
                  "refresh_token_expires_in": 15_897_600, "scope": "", "token_type": "bearer"}
        return _answer(wants_json, answer)

    def _user(self, raw: RawRequest, query: dict[str, str], links: Links) -> Outcome:
        try:
            credential = read_credential(raw.headers)
        except ApiError as error:
            return _json(error.status, error.body(default_docs=REST_DOCS))
        if credential is None:
            return _json(401, ApiError(401, "Requires authentication").body(
                default_docs=REST_DOCS))
        token = self.world.tokens.get(credential)
        if token is None or (token.expires_at is not None
                             and token.expires_at <= self.world.clock.now()):
            return _json(401, ApiError(401, "Bad credentials").body(default_docs=REST_DOCS))
        user = render_user(token.actor, links)
        user.update(name=token.actor.login.title(), company=None, blog="", location=None,
                    email=None, hireable=None, bio=None, twitter_username=None,
                    public_repos=0, public_gists=0, followers=0, following=0,
                    created_at=iso8601(0), updated_at=iso8601(0))
        return _json(200, user)


def form_fields(raw: RawRequest) -> dict[str, str]:
    if not raw.body:
        return {}
    text = raw.body.decode(errors="replace")
    if "json" in raw.headers.get("content-type", ""):
        try:
            value = json.loads(text)
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
    return dict(parse_qsl(text, keep_blank_values=True))


def _under(redirect: str, callback: str) -> bool:
    """GitHub's rule: same scheme, host and port; the path under the callback's path."""
    given, registered = urlsplit(redirect), urlsplit(callback)
    if (given.scheme, given.netloc) != (registered.scheme, registered.netloc):
        return False
    base = registered.path.rstrip("/")
    return given.path == base or given.path.startswith(base + "/") or not base


def redirect_to(location: str, **params: str) -> Outcome:
    separator = "&" if urlsplit(location).query else "?"
    return Outcome(302, {"location": f"{location}{separator}{urlencode(params)}",
                         "content-type": "text/html; charset=utf-8"}, b"")


def html_page(status: int, body: str) -> Outcome:
    return Outcome(status, {"content-type": "text/html; charset=utf-8"}, body.encode())


def _json(status: int, body: Any) -> Outcome:
    return Outcome(status, {"content-type": "application/json; charset=utf-8"},
                   json.dumps(body).encode())


def _answer(wants_json: bool, body: dict[str, Any]) -> Outcome:
    if wants_json:
        return _json(200, body)
    return Outcome(200, {"content-type": "application/x-www-form-urlencoded; charset=utf-8"},
                   urlencode(body).encode())


def _oauth_error(wants_json: bool, error: str, description: str) -> Outcome:
    return _answer(wants_json, {"error": error, "error_description": description,
                                "error_uri": f"{_OAUTH_DOCS}#{error.replace('_', '-')}"})


__all__ = ["ACCESS_TOKEN", "AUTHORIZE", "USER", "OAuthClient", "OAuthWeb", "form_fields",
           "html_page", "redirect_to"]
