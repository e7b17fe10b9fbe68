"""The GitHub App manifest for GitHub's manifest flow: what the App asks for, nothing more.

https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest
"""

from __future__ import annotations

from typing import Any

from github.routing import PERMISSION_EVENTS

# The least the App needs: push its branch, comment and react, open pull requests, post check
# runs, read the repository; and read an organization's members, whose webhooks say when
# someone's access changed (GitHub sends them only to an App that may read members).
PERMISSIONS = {
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "checks": "write",
    "metadata": "read",
    "members": "read",
}
# The events it acts on (github/routing.py), and those that drop its cached permissions.
ROUTED_EVENTS = ["issues", "issue_comment", "pull_request", "pull_request_review", "check_run"]
EVENTS = [*ROUTED_EVENTS, *PERMISSION_EVENTS]


# Where the dashboard's sign-in with GitHub comes back (app/dashboard/signin.py).
SIGN_IN_CALLBACK = "/auth/callback"


def app_manifest(public_url: str, *, name: str = "Ratchet",
                 redirect_url: str | None = None) -> dict[str, Any]:
    """The manifest of an App whose webhook is ``<public_url>/webhooks/github`` and whose
    sign-in comes back to ``<public_url>/auth/callback``; GitHub sends the browser that
    creates it to ``redirect_url`` with the code that fetches its credentials."""
    base = public_url.rstrip("/")
    if not base.startswith(("https://", "http://")):
        raise ValueError(f"{public_url!r} is not an http(s) URL; give the service's public URL")
    manifest: dict[str, Any] = {
        "name": name,
        "url": base,
        "hook_attributes": {"url": f"{base}/webhooks/github", "active": True},
        "callback_urls": [f"{base}{SIGN_IN_CALLBACK}"],
        "request_oauth_on_install": False,
        "public": False,
        "default_permissions": dict(PERMISSIONS),
        "default_events": list(EVENTS),
        "description": "Durable coding-agent runs: a spec you approve, verified evidence.",
    }
    if redirect_url is not None:
        manifest["redirect_url"] = redirect_url
    return manifest
