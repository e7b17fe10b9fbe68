"""Sign-in with GitHub: the OAuth web flow of the GitHub App's client, then who signed in.

https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app

1. the browser goes to ``<web>/login/oauth/authorize?client_id&redirect_uri&state``;
2. GitHub sends it back to ``redirect_uri?code&state`` (the caller checks ``state``);
3. ``POST <web>/login/oauth/access_token`` trades the code for a user token (GitHub answers
   200 with an ``error`` field when it refuses, so the body decides, not the status);
4. ``GET <api>/user`` with that token says who it is. The token is then dropped: what a user
   may see is asked with the App's own installation token.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from app.dashboard.config import OAuthApp

log = logging.getLogger(__name__)

# Seconds one call to GitHub may take during sign-in.
TIMEOUT = 10.0
_API_VERSION = "2022-11-28"


class SignInError(Exception):
    """GitHub refused or failed the sign-in; the message says why and what to try."""


class _TokenAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")  # GitHub adds fields (expiry, refresh token)

    access_token: str | None = None
    error: str | None = None
    error_description: str | None = None


class GitHubUser(BaseModel):
    model_config = ConfigDict(extra="ignore")

    login: str
    id: int


def authorize_url(app: OAuthApp, *, redirect_uri: str, state: str) -> str:
    """Where the browser goes to sign in (a GitHub App's client asks for no scopes)."""
    query = urlencode({"client_id": app.client_id, "redirect_uri": redirect_uri,
                       "state": state, "allow_signup": "false"})
    return f"{app.web_url}/login/oauth/authorize?{query}"


async def signed_in_user(app: OAuthApp, *, code: str, redirect_uri: str,
                         http: httpx.AsyncClient | None = None) -> GitHubUser:
    """Who GitHub says signed in with ``code``; raises ``SignInError`` otherwise."""
    own = http is None
    client = http or httpx.AsyncClient(timeout=TIMEOUT)
    try:
        token = await _exchange(app, client, code=code, redirect_uri=redirect_uri)
        return await _user(app, client, token)
    except httpx.HTTPError as exc:
        raise SignInError(f"GitHub could not be reached to finish signing in ({exc});"
                          " try again") from exc
    finally:
        if own:
            await client.aclose()


async def _exchange(app: OAuthApp, client: httpx.AsyncClient, *, code: str,
                    redirect_uri: str) -> str:
    response = await client.post(
        f"{app.web_url}/login/oauth/access_token",
        data={"client_id": app.client_id, "client_secret": app.client_secret, "code": code,
              "redirect_uri": redirect_uri},
        headers={"Accept": "application/json"},
    )
    try:
        answer = _TokenAnswer.model_validate_json(response.content)
    except ValidationError as exc:
        raise SignInError(f"GitHub answered the code exchange with {response.status_code}"
                          " and no token; try again") from exc
    if answer.error or not answer.access_token:
        log.info("GitHub refused a sign-in code: %r", answer.error)
        raise SignInError(f"GitHub refused the sign-in ({answer.error or 'no token'}:"
                          f" {answer.error_description or 'no reason given'}); sign in again")
    return answer.access_token


async def _user(app: OAuthApp, client: httpx.AsyncClient, token: str) -> GitHubUser:
    response = await client.get(
        f"{app.api_url}/user",
        headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                 "X-GitHub-Api-Version": _API_VERSION},
    )
    if response.status_code != 200:
        raise SignInError(f"GitHub did not say who signed in (GET /user answered"
                          f" {response.status_code}); sign in again")
    try:
        return GitHubUser.model_validate_json(response.content)
    except ValidationError as exc:
        raise SignInError("GitHub's answer to GET /user has no login; sign in again") from exc
