"""The engine: the one object callers hold. It composes the parts of the core and offers the
caller's verbs: create a run, signal it, cancel it, drive it in the foreground, wake it from
a queue.

Where things live: the settings passed through to every session and step
(``runner/settings.py``), run creation and signals (``runner/intake.py``), scheduling
(``runner/scheduler.py``), the lease session (``runner/session.py``), a dead holder's
leftovers (``runner/recovery.py``), the steps (``runner/steps/``), pure decisions
(``runner/decisions.py``, ``runner/signals.py``), the outbox (``runner/effects.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from runner.agents.base import Agent
from runner.agents.configured import agent_of
from runner.agents.presets import preset
from runner.effects import EffectExecutor
from runner.errors import AGENT_DID_NOT_START, DeterministicFailure
from runner.intake import cancel_now, create_local_run, local_signal, send_signal
from runner.ledger.records import NewSignal, Run, Signal
from runner.ledger.store import Store
from runner.names import SignalKind
from runner.scheduler import Scheduler
from runner.session import OnChange, SessionParts
from runner.settings import EngineSettings
from runner.signal_payloads import SignalPayload
from runner.signals import Authorizer, LocalAuthorizer
from runner.worktrees import NO_ACCESS, RemoteAccess, Worktrees

log = logging.getLogger(__name__)


ExecutorFor = Callable[[Run, Path | None], EffectExecutor]


class Engine:
    def __init__(
        self,
        store: Store,
        settings: EngineSettings,
        *,
        executor_for: ExecutorFor,
        worktrees: Worktrees | None = None,
        on_change: OnChange | None = None,
        on_settled: Callable[[Run], None] | None = None,
        agent_for: Callable[[Run], Agent] | None = None,
        authorizer: Authorizer | None = None,
        access_for: Callable[[Run], RemoteAccess] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.worktrees = worktrees or Worktrees(settings.home / "work")
        # Set on a worker's graceful shutdown: sessions stop after the step they are in.
        self.stopping = threading.Event()
        parts = SessionParts(
            store=store, worktrees=self.worktrees, settings=settings,
            agent_for=agent_for or self._command_agent, executor_for=executor_for,
            access_for=access_for or (lambda run: NO_ACCESS),
            authorizer=authorizer or LocalAuthorizer(),
            on_change=on_change or (lambda old, new: None), stopping=self.stopping.is_set,
        )
        self.scheduler = Scheduler(parts)
        # Told the run as a pass left it (effects sent): ``on_change`` hears each commit.
        self._on_settled = on_settled or (lambda run: None)

    # --- the caller's verbs --------------------------------------------------------------

    def create_local_run(
        self, repo: Path, *, title: str, body: str = "", agent_command: str | None = None,
        agent: str | None = None,
    ) -> Run:
        """A run of ``agent_command`` or of the preset ``agent`` (given, else the settings')."""
        if agent_command is None and agent is None:
            agent_command = self.settings.default_agent_command
            agent = None if agent_command else self.settings.default_agent
        return create_local_run(
            self.store, self.worktrees, repo, title=title, body=body,
            agent_command=agent_command, agent=agent, runs_root=self.settings.home / "runs",
            agent_path=self.settings.environ.get("PATH"),
        )

    def signal(self, run_id: str, kind: SignalKind, *, author: str,
               payload: SignalPayload | None = None) -> Signal:
        """The local user's signal, recorded in the run's inbox (answered by ``drive``)."""
        return send_signal(self.store, local_signal(run_id, kind, author=author,
                                                    payload=payload))

    def receive(self, signal: NewSignal) -> Signal:
        """A signal from elsewhere (a forge), recorded once per source id."""
        return send_signal(self.store, signal)

    def cancel(self, run_id: str, *, reason: str, by: str) -> Run:
        return cancel_now(self.store, run_id, reason=reason, author=by)

    def drive(self, run_id: str) -> Run:
        run = self.scheduler.drive(run_id)
        self._on_settled(run)
        return run

    def wake(self, run_id: str) -> Run:
        run = self.scheduler.wake(run_id)
        self._on_settled(run)
        return run

    # --- defaults ------------------------------------------------------------------------

    def _command_agent(self, run: Run) -> Agent:
        command, name = run.origin.agent.command, run.origin.agent.preset
        if not command and not name:
            command = self.settings.default_agent_command
            name = None if command else self.settings.default_agent
        if name:
            return agent_of(self.settings, preset=preset(name))
        if not command:
            raise DeterministicFailure(
                f"run {run.id} has no agent command; retry the run with one",
                evidence={"cause": AGENT_DID_NOT_START},
            )
        return agent_of(self.settings, command=command)
