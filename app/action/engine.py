"""The engine of a run-mode job: the App's GitHub parts, authenticated with the job's token.

``app/github.py``'s ``GitHubRuns`` (idempotent comments, replies, reactions, pushes, pull
requests, check runs; the collaborator permission API; git's credential helper) with a client
of a plain token (``TokenCredentials``: no App, no installation). Every run in a job's ledger
came from this repository on GitHub, so there is no local sink here. The repository, the remote
and the token are the job's own, whatever the ledger's runs record (``JobRuns``), and a signal
counts only when this job's delivery recorded it (``evidence.DeliveredOnly``).

Agents and checks get only allowlisted variables of the job's environment (PATH, the locale,
what RATCHET_AGENT_ENV and RATCHET_CHECK_ENV name), which ``env.scrub_environment`` has already
rid of the token and the runner's credentials, and everything persisted or sent is redacted of
them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from app.action.evidence import DeliveredOnly
from app.github import GitHubRuns, bot_login
from app.settings import Settings
from github.client import GitHubClient
from github.credentials import TokenCredentials
from github.gitauth import git_credentials
from github.repository import RepoTarget
from runner.engine import Engine
from runner.ledger.records import Run, SignalFor
from runner.ledger.store import Store
from runner.redact import SECRET_NAME, Redactor
from runner.session import OnChange
from runner.worktrees import RemoteAccess, Worktrees

# The author of everything an Actions GITHUB_TOKEN writes on GitHub.
ACTIONS_BOT = "github-actions[bot]"


@dataclass(frozen=True)
class JobGitHub:
    """This job's repository on GitHub and the token it acts with."""

    owner: str
    repo: str
    clone_url: str
    token: str
    api_url: str
    graphql_url: str | None
    details_url: str  # this workflow run's page

    @property
    def target(self) -> RepoTarget:
        return RepoTarget(self.owner, self.repo, None)

    def client(self, settings: Settings) -> GitHubClient:
        credentials = TokenCredentials.from_values(token=self.token, api_url=self.api_url,
                                                   graphql_url=self.graphql_url)
        return GitHubClient(credentials, mutation_interval=settings.github_mutation_interval)

    def access(self) -> RemoteAccess:
        config, env = git_credentials(self.token, remote_url=self.clone_url)
        return RemoteAccess(config, env)


def job_bot_login(settings: Settings) -> str:
    """Who the job's token writes as: an App's bot when ``RATCHET_GITHUB_APP_SLUG`` names the
    App whose token was given, else the Actions bot."""
    return bot_login(settings) or ACTIONS_BOT


class JobRuns(GitHubRuns):
    """``GitHubRuns`` bound to the job's repository: API calls and git's credential go to
    the job's own ``owner/repo`` and remote, never to what a run in the ledger names (the
    job refuses such a run before driving it; this keeps the token home regardless)."""

    def __init__(self, store: Store, worktrees: Worktrees, client: GitHubClient,
                 github: JobGitHub, *, bot_login: str | None,
                 allowed_bots: frozenset[str]) -> None:
        super().__init__(store, worktrees, client, bot_login=bot_login,
                         allowed_bots=allowed_bots, details_url=lambda run: github.details_url)
        self.github = github

    def target(self, run: Run) -> RepoTarget:
        return self.github.target

    def access(self, run: Run) -> RemoteAccess:
        return self.github.access()


def job_engine(store: Store, settings: Settings, github: JobGitHub, client: GitHubClient, *,
               secrets: list[str], on_change: OnChange, delivery: str,
               asked: SignalFor | None) -> Engine:
    """The engine for runs kept in this job's ledger (see the module docstring); ``asked``
    is the signal this job's event carries, recorded as ``delivery``."""
    engine_settings = replace(
        settings.engine_settings(),
        # The environment's secret-named values (an agent's API key) and the job's token.
        redact=Redactor([*secrets, github.token, *(
            v for k, v in os.environ.items() if SECRET_NAME.search(k))]),
    )
    worktrees = Worktrees(engine_settings.home / "work")
    runs = JobRuns(store, worktrees, client, github, bot_login=job_bot_login(settings),
                   allowed_bots=settings.allowed_bot_logins)
    return Engine(store, engine_settings, executor_for=runs.executor, worktrees=worktrees,
                  on_change=on_change, access_for=runs.access,
                  authorizer=DeliveredOnly(runs.authorizer, delivery, asked))
