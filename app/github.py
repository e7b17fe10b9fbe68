"""GitHub wiring from settings: the App's credentials, the webhook's routing, the bot's login."""

from __future__ import annotations

import logging

from app.settings import Settings, SettingsError
from app.webhooks import WebhookConfig
from github.credentials import AppCredentials, GitHubSettingsError
from github.routing import RouteSettings

log = logging.getLogger(__name__)


def app_credentials(settings: Settings) -> AppCredentials | None:
    """The App's credentials, or None when no App is configured (local runs only)."""
    if settings.github_app_id is None:
        return None
    try:
        return AppCredentials.from_values(
            app_id=str(settings.github_app_id), private_key=settings.github_private_key,
            private_key_file=(str(settings.github_private_key_file)
                              if settings.github_private_key_file else None),
            api_url=settings.github_api_url, graphql_url=settings.github_graphql_url,
        )
    except GitHubSettingsError as exc:
        raise SettingsError(f"invalid settings: {exc}") from None


def webhook_config(settings: Settings) -> WebhookConfig:
    slug = settings.github_app_slug
    return WebhookConfig(
        secret=settings.webhook_secret,
        insecure=settings.insecure_dev_webhooks,
        routing=RouteSettings(
            app_id=settings.github_app_id,
            bot_login=f"{slug}[bot]" if slug else None,
            trigger_labels=settings.trigger_labels,
            allowed_bots=settings.allowed_bot_logins,
        ),
        agent_command=settings.agent_command,
    )
