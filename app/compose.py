"""Where the parts meet: the engine every command, worker and service uses, built once from
settings. A local run speaks the command line's words through the local sink and obeys the
local user; a run that came from GitHub is carried out on GitHub (``app/github.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.settings import Settings
from app.words import CLI_WORDS
from runner.effects import EffectExecutor, EffectRequest
from runner.engine import Engine
from runner.errors import AuthorityFailure
from runner.ledger.records import Run, Signal
from runner.ledger.store import Store
from runner.origin import GitHubOrigin
from runner.rundir import keep_live
from runner.session import OnChange
from runner.signals import Authorization, LocalAuthorizer
from runner.sink import LocalSink
from runner.worktrees import NO_ACCESS, RemoteAccess, Worktrees

if TYPE_CHECKING:
    from app.github import GitHubRuns

NO_APP = ("this run came from GitHub but this host has no GitHub App configured: set"
          " RATCHET_GITHUB_APP_ID and RATCHET_GITHUB_PRIVATE_KEY_FILE, restart, then retry the run")


def build_engine(store: Store, settings: Settings, *, on_change: OnChange | None = None) -> Engine:
    engine_settings = settings.engine_settings()
    worktrees = Worktrees(engine_settings.home / "work")
    github = _github_runs(settings, store, worktrees)

    def executor_for(run: Run, worktree: Path | None) -> EffectExecutor:
        origin = run.origin
        if isinstance(origin, GitHubOrigin):
            return github.executor(run, worktree) if github else Unreachable()
        outbox = origin.outbox or engine_settings.run_dir(run.id) / "outbox"
        return LocalSink(Path(outbox), worktrees, worktree, CLI_WORDS)

    def access_for(run: Run) -> RemoteAccess:
        if not isinstance(run.origin, GitHubOrigin):
            return NO_ACCESS
        if github is None:
            raise AuthorityFailure(NO_APP)
        return github.access(run)

    def project(run: Run) -> None:
        # The run directory of a run started here is live whoever drives it (this command,
        # `ratchet serve`, a worker); a GitHub run's is written on `ratchet export`.
        if not isinstance(run.origin, GitHubOrigin):
            keep_live(store, run, engine_settings.home / "runs")

    def changed(old: Run, new: Run) -> None:
        project(new)
        if on_change is not None:
            on_change(old, new)

    return Engine(store, engine_settings, executor_for=executor_for, worktrees=worktrees,
                  on_change=changed, on_settled=project, authorizer=RunAuthorizer(github),
                  access_for=access_for)


def _github_runs(settings: Settings, store: Store, worktrees: Worktrees) -> GitHubRuns | None:
    """The App's runs; None on a host without an App. The GitHub stack (aiohttp, JWT) loads
    only where an App is configured: every ``ratchet`` command starts here, most of them on
    local runs."""
    if settings.github_app_id is None:
        return None
    from app.github import GitHubRuns

    return GitHubRuns.from_settings(settings, store, worktrees)


@dataclass(frozen=True)
class RunAuthorizer:
    """Who may signal a run: GitHub answers for a run that came from GitHub, this host's user
    for a local one."""

    github: GitHubRuns | None
    local: LocalAuthorizer = field(default_factory=LocalAuthorizer)

    def authorize(self, run: Run, signal: Signal) -> Authorization:
        if not isinstance(run.origin, GitHubOrigin):
            return self.local.authorize(run, signal)
        if self.github is None:
            raise AuthorityFailure(NO_APP)
        return self.github.authorizer.authorize(run, signal)


class Unreachable:
    """The effects of a GitHub run on a host without the App: none can be sent; the run
    stops for a human who configures it."""

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        raise AuthorityFailure(NO_APP)

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        raise AuthorityFailure(NO_APP)
