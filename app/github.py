"""GitHub wiring from settings: the App's credentials, the webhook's routing, the bot's login,
and the parts a run that came from GitHub is carried out with (``GitHubRuns``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from app.settings import Settings, SettingsError
from app.webhooks import WebhookConfig
from github.client import GitHubClient
from github.credentials import PRIVATE_KEY_VAR, AppCredentials, GitHubSettingsError
from github.effects import GitHubExecutor
from github.gitauth import git_credentials
from github.permissions import GitHubAuthorizer, Permissions
from github.repository import RepoTarget
from github.routing import PERMISSION_EVENTS, RouteSettings
from github.triggers import TriggerGate
from github.words import GITHUB_WORDS
from runner.ledger.records import Run
from runner.ledger.store import Store
from runner.origin import GitHubOrigin
from runner.worktrees import RemoteAccess, Worktrees

log = logging.getLogger(__name__)


def app_credentials(settings: Settings) -> AppCredentials | None:
    """The App's credentials, or None when no App is configured (local runs only)."""
    if settings.github_app_id is None:
        return None
    saved = settings.key_from_credentials_file()
    try:
        return AppCredentials.from_values(
            app_id=str(settings.github_app_id), private_key=settings.github_private_key,
            private_key_file=(str(settings.github_private_key_file)
                              if settings.github_private_key_file else None),
            api_url=settings.github_api_url, graphql_url=settings.github_graphql_url,
            # A key from the credentials file is fixed there, not in a variable.
            private_key_source=(f"the private key in {saved}" if saved is not None
                                else PRIVATE_KEY_VAR),
        )
    except GitHubSettingsError as exc:
        raise SettingsError(f"invalid settings: {exc}") from None


def webhook_config(settings: Settings, store: Store | None = None) -> WebhookConfig:
    """The webhook's settings; with ``store`` and an App, the label's sender is checked
    (``github/triggers.py``)."""
    return WebhookConfig(
        secret=settings.webhook_secret,
        insecure=settings.insecure_dev_webhooks,
        routing=RouteSettings(
            app_id=settings.github_app_id,
            bot_login=bot_login(settings),
            trigger_labels=settings.trigger_labels,
            allowed_bots=settings.allowed_bot_logins,
        ),
        agent_command=settings.agent_command,
        triggers=trigger_gate(settings, store) if store is not None else None,
    )


def trigger_gate(settings: Settings, store: Store) -> TriggerGate | None:
    """Who may start a run with the label, asked of GitHub through the App (None without
    one)."""
    credentials = app_credentials(settings)
    if credentials is None:
        return None
    client = GitHubClient(credentials, mutation_interval=settings.github_mutation_interval)
    permissions = Permissions(client, changes=lambda: store.count_deliveries(PERMISSION_EVENTS))
    return TriggerGate(client, permissions, store, role=settings.trigger_permission,
                       allowed_bots=settings.allowed_bot_logins,
                       per_installation=client.per_installation)


def bot_login(settings: Settings) -> str | None:
    """The App's bot user, ``<slug>[bot]``: the author of every comment Ratchet posts."""
    return f"{settings.github_app_slug}[bot]" if settings.github_app_slug else None


class GitHubRuns:
    """Runs that came from GitHub: their effects go to GitHub through the App's installation,
    git fetches and pushes with an installation token, and who may signal them is asked of
    GitHub. One client per process, shared by every run (its token cache and its spacing of
    writes are per installation)."""

    def __init__(self, store: Store, worktrees: Worktrees, client: GitHubClient, *,
                 bot_login: str | None, allowed_bots: frozenset[str],
                 details_url: Callable[[Run], str | None],
                 artifacts_url: Callable[[Run], str | None] = lambda run: None) -> None:
        """``details_url``: a run's page (a check run links it); ``artifacts_url``: where its
        artifacts are served file by file (the dashboard's), None where they are not (an
        Actions workflow run keeps them zipped: a file link there would be a 404)."""
        self.store = store
        self.worktrees = worktrees
        self.client = client
        self.bot_login = bot_login
        self.details_url = details_url
        self.artifacts_url = artifacts_url
        self.authorizer = GitHubAuthorizer(
            client, locate=self.target, bot_login=bot_login, allowed_bots=allowed_bots,
            changes=lambda: store.count_deliveries(PERMISSION_EVENTS))

    @classmethod
    def from_settings(cls, settings: Settings, store: Store,
                      worktrees: Worktrees) -> GitHubRuns | None:
        """The App's runs; None when no App is configured: runs from GitHub then cannot be
        carried out."""
        credentials = app_credentials(settings)
        if credentials is None:
            return None
        public = settings.public_url.rstrip("/") if settings.public_url else None
        return cls(store, worktrees,
                   GitHubClient(credentials, mutation_interval=settings.github_mutation_interval),
                   bot_login=bot_login(settings), allowed_bots=settings.allowed_bot_logins,
                   details_url=lambda run: f"{public}/runs/{run.id}" if public else None,
                   artifacts_url=lambda run: (f"{public}/runs/{run.id}/artifacts" if public
                                              else None))

    def target(self, run: Run) -> RepoTarget:
        """The run's repository, through the installation its delivery named (a plain
        token's client acts through none)."""
        origin = _github_origin(run)
        return RepoTarget(origin.owner, origin.repo,
                          origin.installation if self.client.per_installation else None)

    def executor(self, run: Run, worktree: Path | None) -> GitHubExecutor:
        target = self.target(run)
        return GitHubExecutor(
            self.client, owner=target.owner, repo=target.repo,
            installation=target.installation, issue=run.issue or run.pr or 0,
            worktrees=self.worktrees, worktree=worktree, words=GITHUB_WORDS,
            ledger=lambda: self.store.effects(run.id),
            details_url=self.details_url(run),
            artifacts_url=self.artifacts_url(run),
            bot_login=self.bot_login,
        )

    def access(self, run: Run) -> RemoteAccess:
        """Git's credential for the run's clone URL: a fresh installation token (cached by the
        client until shortly before it expires; a plain token as it is), handed to that git
        call only."""
        token = self.client.installation_token(self.target(run).installation)
        config, env = git_credentials(token, remote_url=_github_origin(run).clone_url)
        return RemoteAccess(config, env)


def _github_origin(run: Run) -> GitHubOrigin:
    """Where on GitHub ``run`` came from; ValueError for a run started on a host (the engine
    sends only GitHub's runs here)."""
    if not isinstance(run.origin, GitHubOrigin):
        raise ValueError(f"run {run.id} was not started from GitHub; it has no repository there")
    return run.origin
