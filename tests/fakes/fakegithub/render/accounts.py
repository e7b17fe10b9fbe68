"""Users, bots, the App (``integration``) and its installations."""

from __future__ import annotations

from typing import Any

from ..clock import iso8601
from ..state import App, Installation, User
from .links import Links


def render_user(user: User, links: Links) -> dict[str, Any]:
    """``simple-user``: what GitHub embeds wherever an account appears."""
    api = links.user_api(user)
    return {
        "login": user.login,
        "id": user.id,
        "node_id": user.node_id,
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user.id}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": links.user_web(user),
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": user.type,
        "user_view_type": "public",
        "site_admin": False,
    }


def client_id_of(app: App) -> str:
    """The App's OAuth client id (GitHub's ``Iv23li...`` shape)."""
    return f"Iv23li{app.id:014d}"


def render_app(app: App, links: Links) -> dict[str, Any]:
    """``integration``: ``GET /app``, a check run's ``app``, ``performed_via_github_app``."""
    return {
        "id": app.id,
        "slug": app.slug,
        "node_id": app.bot.node_id.replace("BOT_", "A_", 1),
        "client_id": client_id_of(app),
        "owner": render_user(app.owner, links),
        "name": app.name,
        "description": "",
        "external_url": f"{links.web}/apps/{app.slug}",
        "html_url": f"{links.web}/apps/{app.slug}",
        "created_at": iso8601(app.created_at),
        "updated_at": iso8601(app.created_at),
        "permissions": dict(app.permissions),
        "events": list(app.events),
    }


def render_installation(installation: Installation, app: App, links: Links) -> dict[str, Any]:
    """``installation``: ``GET /repos/{owner}/{repo}/installation``."""
    account = installation.account
    settings = (
        f"{links.web}/organizations/{account.login}/settings/installations/{installation.id}"
        if account.type == "Organization"
        else f"{links.web}/settings/installations/{installation.id}"
    )
    return {
        "id": installation.id,
        "account": render_user(account, links),
        "repository_selection": "all" if installation.repositories is None else "selected",
        "access_tokens_url": f"{links.api}/app/installations/{installation.id}/access_tokens",
        "repositories_url": f"{links.api}/installation/repositories",
        "html_url": settings,
        "app_id": app.id,
        "app_slug": app.slug,
        "client_id": client_id_of(app),
        "target_id": account.id,
        "target_type": account.type,
        "permissions": dict(installation.permissions),
        "events": list(app.events),
        "created_at": iso8601(installation.created_at),
        "updated_at": iso8601(installation.created_at),
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }
