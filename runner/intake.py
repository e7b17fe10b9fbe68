"""What callers hand the ledger: new runs, signals for a run's inbox, a local cancel.

Nothing here executes a run. A new run is validated before it exists (its agent command
template, its repository config at the base), so a usage error is refused where it is made;
its first tracking edit is recorded with it. A signal is recorded (once per source id) and
answered by the worker holding the run. A cancel by the local user is applied at once, fencing
out whoever holds the run.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.agents.command import parse_template
from runner.agents.presets import preset
from runner.config import read_repository_config
from runner.errors import RatchetError
from runner.ledger.records import NewRun, NewSignal, Run, Signal
from runner.ledger.store import Store
from runner.names import LOCAL_ORIGIN, SignalKind
from runner.origin import AgentChoice, LocalOrigin, Origin, new_run_id, run_branch
from runner.signal_payloads import Cancel, SignalPayload
from runner.tracking import tracking_edit, with_first_edit
from runner.workflow import PULL_REQUEST_WORKFLOW, State
from runner.worktrees import Worktrees
from verification.config import ConfigError

log = logging.getLogger(__name__)

def new_run(origin: Origin, *, repo: str, title: str, body: str = "",
            workflow: str = "issue", issue: int | None = None, pr: int | None = None,
            base_revision: str | None = None, event_data: Mapping[str, Any] | None = None,
            runs_root: Path | None = None) -> NewRun:
    """A new run with a fresh id (``new_run_id``) and, unless it verifies a pull request
    (it pushes nothing), its branch named (``run_branch``: per ``issue``); a local run's outbox
    is ``runs_root/<run>/outbox`` when ``runs_root`` is given (fixed here, so every worker on
    every host uses the same one)."""
    run_id = new_run_id()
    named: dict[str, Any] = {}
    if workflow != PULL_REQUEST_WORKFLOW:
        named["branch"] = run_branch(run_id, issue=issue)
    if runs_root is not None and isinstance(origin, LocalOrigin):
        named["outbox"] = str(runs_root / run_id / "outbox")
    return NewRun(id=run_id, repo=repo, title=title, body=body, workflow=workflow, issue=issue,
                  pr=pr, base_revision=base_revision, origin=origin.model_copy(update=named),
                  event_data=dict(event_data or {}))


def create_local_run(
    store: Store, worktrees: Worktrees, repo: Path, *, title: str, body: str,
    agent_command: str | None, runs_root: Path, agent: str | None = None,
    agent_path: str | None = None,
) -> Run:
    """A run for a local git repository, based at its current HEAD; its local outbox is
    ``runs_root/<run>/outbox``. Its agent is ``agent_command`` (a template) or ``agent``, a
    preset whose program must be on ``agent_path`` (the agents' PATH).

    Raises ``RatchetError`` for an agent command that is missing or cannot be parsed, for an
    unknown preset or one whose CLI is not installed (with the install hint), and for a
    repository config at the base that cannot be used: no run is created then.
    """
    repo_url = str(repo.resolve())
    chosen = check_agent(agent_command, agent, path=agent_path)
    base = worktrees.resolve(repo_url)
    check_config(worktrees, repo_url, base)
    origin = LocalOrigin(agent=chosen, base_branch=worktrees.head_branch(repo_url) or base)
    now = time.time()
    run = store.create_run(with_first_edit(new_run(
        origin, repo=repo_url, title=title, body=body, base_revision=base,
        event_data={"title": title}, runs_root=runs_root,
    ), at=now), now=now)
    log.info("run %r created for %r at %r", run.id, repo_url, base)
    return run


def check_agent(agent_command: str | None, agent: str | None, *,
                path: str | None) -> AgentChoice:
    """The run's agent, checked before the run exists: a template that parses, or a known
    preset whose program is installed."""
    if agent_command and agent:
        raise RatchetError("give an agent command template or a preset, not both")
    if agent:
        try:
            chosen = preset(agent)
        except ValueError as exc:
            raise RatchetError(str(exc)) from None
        if shutil.which(chosen.program, path=path) is None:
            raise RatchetError(chosen.install_hint)
        return AgentChoice(preset=chosen.name)
    if not agent_command:
        raise RatchetError(
            "no agent command: give one (the run's agent command template), for example"
            " 'claude -p {prompt}', or a preset (claude, codex, aider, goose, opencode)"
        )
    try:
        parse_template(agent_command)
    except ValueError as exc:
        raise RatchetError(str(exc)) from None
    return AgentChoice(command=agent_command)


def check_config(worktrees: Worktrees, repo_url: str, base: str) -> None:
    """Refuse a run whose repository config at ``base`` is unusable, before it exists."""
    try:
        read_repository_config(worktrees.mirror(repo_url), base)
    except ConfigError as exc:
        raise RatchetError(
            f"the repository config at {base[:12]} is invalid: {exc}; fix it on the base"
            " branch, then start the run"
        ) from None


def local_signal(run_id: str, kind: SignalKind, *, author: str,
                 payload: SignalPayload | None = None) -> NewSignal:
    """A signal from this host's user, with a fresh source id (``payload``: the kind's)."""
    return NewSignal(id=f"cli:{secrets.token_hex(8)}", run_id=run_id, kind=kind,
                     author=author, origin=LOCAL_ORIGIN, payload=payload or SignalPayload())


def send_signal(store: Store, signal: NewSignal) -> Signal:
    """Put ``signal`` in its run's inbox (once per source id); the holder answers it."""
    recorded, created = store.add_signal(signal)
    if not created:
        log.info("signal %r was recorded before; not recorded again", signal.id)
    return recorded


def cancel_now(store: Store, run_id: str, *, reason: str, author: str) -> Run:
    """The local user's cancel: applied at once, whoever holds the run (a fencing takeover),
    recorded as an accepted signal with the tracking comment's edit."""
    run = store.get_run(run_id)
    signal = local_signal(run_id, SignalKind.CANCEL, author=author,
                          payload=Cancel(reason=reason))
    tracking = tracking_edit(run, state=State.CANCELLED, step=run.step, reason=reason,
                             completed=store.completed_steps(run_id), spec_sha256=None,
                             at=time.time())
    return store.cancel(run_id, reason=reason, signal=signal, effects=(tracking.intent(),))
