"""The GitHub App: its private key parses, GitHub (RATCHET_GITHUB_API_URL) accepts a JWT signed
with it (``GET /app``), its slug is the one configured, and the webhook secret is set.

The credentials are read exactly as the service reads them (``app.github.app_credentials``:
variables, or the credentials file ``ratchet github-app create`` wrote, which lines name);
nothing of the key or the secret is ever printed. GitHub refusing the JWT (401: the key is
not the App's; 404: no App has that id) is fatal; GitHub not answering is a failure but not a
fatal one: an outage passes, and a service need not stop for it.
"""

from __future__ import annotations

import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from app.doctor.findings import Check, Finding, fail, ok, skip, warn
from app.github import app_credentials
from app.settings import Settings, SettingsError
from github.client import GitHubClient
from github.credentials import load_private_key
from github.errors import BadCredentials, GitHubFailure, GitHubSettingsError, NotFound

# Seconds GitHub gets to answer ``GET /app``: a start-up check must not hold a service long.
GITHUB_TIMEOUT_S = 10.0
NOT_CONFIGURED = "not configured (local runs only)"


class AuthenticatedApp(BaseModel):
    """GitHub's ``GET /app`` answer: the App the JWT speaks for (other fields ignored)."""

    model_config = ConfigDict(extra="ignore")

    id: int
    slug: str | None = None
    name: str = ""


def github_app_finding(settings: Settings) -> Finding:
    if settings.github_app_id is None:
        return skip(Check.GITHUB_APP, NOT_CONFIGURED)
    from_file = settings.key_from_credentials_file()
    again = "register it again with `ratchet github-app create --force`"
    try:
        credentials = app_credentials(settings)
    except SettingsError as exc:  # the key does not parse, cannot be read, or is missing
        if from_file is not None and not _parses(settings.github_private_key or ""):
            return fail(Check.GITHUB_APP, f"the private key in {from_file} is not an"
                                          f" unencrypted RSA PEM key: {again}")
        return fail(Check.GITHUB_APP, str(exc).removeprefix("invalid settings: "))
    assert credentials is not None  # an App id is set
    api = credentials.api_url
    client = GitHubClient(credentials, request_timeout=GITHUB_TIMEOUT_S,
                          call_timeout=2 * GITHUB_TIMEOUT_S, max_rate_limit_wait=0)
    try:
        answer = AuthenticatedApp.model_validate(client.get("/app", installation=None))
    except BadCredentials as exc:
        if from_file is not None:
            return fail(Check.GITHUB_APP, f"{api} refused the App's JWT ({_said(exc)}): the"
                                          f" private key in {from_file} is not App"
                                          f" {credentials.app_id}'s; generate one on the App's"
                                          " settings page and point"
                                          f" RATCHET_GITHUB_PRIVATE_KEY_FILE at it, or {again}")
        return fail(Check.GITHUB_APP, f"{api} refused the App's JWT ({_said(exc)}): the private"
                                      f" key is not App {credentials.app_id}'s; generate one on"
                                      " the App's settings page and point"
                                      " RATCHET_GITHUB_PRIVATE_KEY_FILE at it")
    except NotFound as exc:
        if from_file is not None:
            return fail(Check.GITHUB_APP, f"{api} knows no App {credentials.app_id}"
                                          f" ({_said(exc)}), the App of {from_file}: if it was"
                                          f" deleted, {again}")
        return fail(Check.GITHUB_APP, f"{api} knows no App {credentials.app_id} ({_said(exc)}):"
                                      " set RATCHET_GITHUB_APP_ID to the 'App ID' on the App's"
                                      " settings page (or RATCHET_GITHUB_API_URL to its"
                                      " GitHub's API)")
    except GitHubFailure as exc:
        return fail(Check.GITHUB_APP, f"{api} did not accept or answer GET /app ({exc})",
                    fatal=exc.status is not None and exc.status < 500)
    except ValidationError:
        return fail(Check.GITHUB_APP, f"{api} answered GET /app with no App in it: is"
                                      " RATCHET_GITHUB_API_URL a GitHub API root?")
    accepted = (f"{api} accepts the App's JWT: App {answer.slug or answer.name!r}"
                f" (id {answer.id})" + (f", credentials from {from_file}" if from_file else ""))
    if settings.github_app_slug is None and answer.slug:
        return warn(Check.GITHUB_APP, f"{accepted}; set RATCHET_GITHUB_APP_SLUG={answer.slug}"
                                      " so Ratchet knows its own bot's comments")
    if answer.slug and settings.github_app_slug != answer.slug:
        return fail(Check.GITHUB_APP, f"{accepted}, but RATCHET_GITHUB_APP_SLUG is"
                                      f" {settings.github_app_slug!r}: set it to {answer.slug}"
                                      " (its bot is the author of Ratchet's comments)")
    exposed = _readable_by_others(from_file) if from_file is not None else None
    if exposed is not None:
        return warn(Check.GITHUB_APP, f"{accepted}; but {from_file} is readable by others (mode"
                                      f" {exposed:o}), and it holds the App's key: chmod 600"
                                      f" {from_file}")
    return ok(Check.GITHUB_APP, accepted)


def webhook_secret_finding(settings: Settings) -> Finding:
    """The webhook secret is set (its value is never shown); without it every delivery is
    refused."""
    if settings.github_app_id is None:
        return skip(Check.WEBHOOK_SECRET, NOT_CONFIGURED)
    if settings.webhook_secret:
        return ok(Check.WEBHOOK_SECRET, "set: deliveries without its signature are refused")
    if settings.insecure_dev_webhooks:
        return warn(Check.WEBHOOK_SECRET, "not set, and RATCHET_INSECURE_DEV_WEBHOOKS accepts"
                                          " unsigned deliveries: local development only")
    return fail(Check.WEBHOOK_SECRET, "not set, so every delivery is refused (503): set"
                                      " RATCHET_WEBHOOK_SECRET to the App's webhook secret")


def _readable_by_others(path: Path) -> int | None:
    """The file's mode when its group or anyone else may read it (or write it), else None."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    return mode if mode & 0o077 else None


def _parses(pem: str) -> bool:
    try:
        load_private_key(pem)
    except GitHubSettingsError:
        return False
    return True


def _said(exc: GitHubFailure) -> str:
    """GitHub's status and message, as it answered."""
    message = exc.evidence.get("message")
    return f"{exc.status} {message}" if message else str(exc.status)
