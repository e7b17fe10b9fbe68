"""The engine: runs a run's steps under its lease until it waits or ends.

One lease session: acquire the run's lease (waiting out a dead holder's), reconcile (rebuild the
worktree from the last checkpoint and prove it by hash, salvage an interrupted step's leftovers
or adopt its finished agent result, ask the remote about unconfirmed effects), then execute
steps, committing each completed step and the move to the next in one fenced transaction.
Failures are classified by type (``runner.errors``): transient ones are retried with bounded
exponential backoff under a new lease, deterministic ones fail the run, authority ones stop it
for a human. A refused write means another worker owns the run: this one stops at once.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import random
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.agents.base import Agent, AgentResult, AgentTask
from runner.agents.command import MAX_OUTPUT_BYTES, CommandAgent, parse_template, read_output
from runner.agents.prompt import output_path
from runner.canonical import digest, sha256_hex
from runner.effects import EffectExecutor, Effects
from runner.errors import (
    AmbiguousFailure,
    AuthorityFailure,
    CorruptArtifact,
    CorruptCheckpoint,
    CorruptRecord,
    DeterministicFailure,
    LedgerError,
    LedgerUnavailable,
    PolicyViolation,
    RatchetError,
    StaleWrite,
    StepFailure,
    TransientFailure,
    WorkspaceError,
    WorkspaceMismatch,
)
from runner.faults import NO_CRASH, CrashPoints
from runner.lease import Heartbeat
from runner.ledger.records import Change, Checkpoint, Lease, NewEvent, NewRun, Run
from runner.ledger.store import Store
from runner.redact import NO_REDACTION, Redactor
from runner.sandbox import Sandbox
from runner.sink import LocalSink
from runner.steps import (
    STARTED_EVENTS,
    STEPS,
    StepContext,
    StepResult,
    read_journal,
    read_patch,
)
from runner.workflow import (
    PROFILES,
    Outcome,
    State,
    is_end,
    is_runnable,
    is_wait,
    transition,
)
from runner.workspace import Workspaces
from verification.config import CONFIG_PATH, ConfigError, parse_repository_config
from verification.files import printable_path, write_atomic

log = logging.getLogger(__name__)

END_EVENTS = {
    State.DONE: "RUN_COMPLETED",
    State.FAILED: "RUN_FAILED",
    State.NEEDS_HUMAN: "NEEDS_HUMAN",
    State.CANCELLED: "RUN_CANCELLED",
}
MIN_HASH_PREFIX = 6  # shorter prefixes of the spec hash are too easy to match by accident
LEDGER_PATIENCE = 60.0  # seconds a foreground command waits out a ledger outage
MAX_SCRUBBED_LOG_BYTES = 64 << 20  # an ended run's larger agent logs are removed, not redacted


@dataclass(frozen=True)
class EngineSettings:
    home: Path  # RATCHET_HOME: work/ (mirrors, worktrees), scratch/, runs/ (run directories)
    lease_seconds: float = 30.0
    agent_timeout: float = 3600.0
    approval_timeout: float | None = 7 * 24 * 3600.0
    max_attempts: int = 5  # per step, for transient failures
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    child_env: Mapping[str, str] | None = None  # environment of agents and checks
    redact: Redactor = NO_REDACTION
    default_agent_command: str | None = None
    crash: CrashPoints = NO_CRASH
    sandbox: Sandbox = field(default_factory=Sandbox)  # where agents and checks run
    max_output_bytes: int = MAX_OUTPUT_BYTES
    owner: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
    )

    def run_dir(self, run_id: str) -> Path:
        return self.home / "runs" / run_id


class OrphanedLease(RatchetError):
    """A foreground session lost the ledger mid-step; its lease is still recorded."""

    def __init__(self, lease: Lease, cause: LedgerUnavailable) -> None:
        super().__init__(str(cause))
        self.lease = lease
        self.cause = cause


class SpecHashMismatch(RatchetError):
    """An approval named a spec hash that is not the current spec's."""


class RunNotWaiting(RatchetError):
    """A signal (approve, request changes) arrived for a run that is not waiting for one."""


OnChange = Callable[[Run, Run], None]


class Engine:
    def __init__(
        self,
        store: Store,
        settings: EngineSettings,
        *,
        workspaces: Workspaces | None = None,
        on_change: OnChange | None = None,
        agent_for: Callable[[Run], Agent] | None = None,
        executor_for: Callable[[Run, Path | None], EffectExecutor] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.workspaces = workspaces or Workspaces(settings.home / "work")
        self.on_change = on_change or (lambda old, new: None)
        self.agent_for = agent_for or self._command_agent
        self.executor_for = executor_for or self._local_sink
        # Set on a worker's graceful shutdown: sessions stop after the step they are in.
        self.stopping = threading.Event()
        self._sessions = itertools.count(1)

    # --- creating and signalling runs ----------------------------------------------------

    def create_local_run(
        self, repo: Path, *, title: str, body: str = "", agent_command: str | None = None
    ) -> Run:
        """A run for a local git repository, based at its current HEAD."""
        repo_url = str(repo.resolve())
        command = agent_command or self.settings.default_agent_command
        if not command:
            raise RatchetError(
                "no agent command: give one (the run's agent command template), for example"
                " 'claude -p {prompt}'"
            )
        try:
            parse_template(command)
        except ValueError as exc:
            raise RatchetError(str(exc)) from None
        base = self.workspaces.resolve(repo_url)
        self._check_config(repo_url, base)
        run_id = f"r-{time.strftime('%Y%m%d')}-{secrets.token_hex(4)}"
        # The run's remote side is fixed here, so every worker on every host uses the same one.
        outbox = str(self.settings.run_dir(run_id) / "outbox")
        run = self.store.create_run(
            NewRun(id=run_id, repo=repo_url, title=title, body=body, base_revision=base,
                   params={"agent_command": command, "remote": repo_url, "outbox": outbox},
                   event_data={"title": title})
        )
        log.info("run %r created for %r at %r", run.id, repo_url, base)
        return run

    def _check_config(self, repo_url: str, base: str) -> None:
        """Refuse a run whose repository config at ``base`` is unusable, before it exists."""
        data = self.workspaces.read_file(repo_url, base, CONFIG_PATH)
        if data is None:
            return
        try:
            parse_repository_config(data)
        except ConfigError as exc:
            raise RatchetError(
                f"the repository config at {base[:12]} is invalid: {exc}; fix it on the base"
                " branch, then start the run"
            ) from None

    def approve(self, run_id: str, *, hash_prefix: str, by: str) -> Run:
        """Approve the current spec, bound to its sha256; a stale or wrong hash is refused."""
        run = self._waiting(run_id)
        spec = self.store.read_artifact(run_id, "spec.md")
        if spec is None:
            raise RunNotWaiting(f"run {run_id} has no spec.md to approve")
        spec_sha = sha256_hex(spec)
        prefix = hash_prefix.strip().lower()
        if len(prefix) < MIN_HASH_PREFIX or not spec_sha.startswith(prefix):
            raise SpecHashMismatch(
                f"run {run_id}: {hash_prefix!r} does not match the current spec, whose"
                f" sha256 is {spec_sha}; review spec.md and approve that hash (at least"
                f" {MIN_HASH_PREFIX} characters)"
            )
        wait_step = run.step
        checkpoint = Checkpoint(run_id, wait_step, run.attempt, {"spec": spec_sha},
                                {"approved": spec_sha, "by": by})
        return self._signal(run, Outcome.APPROVED, checkpoint, [
            NewEvent("SPEC_APPROVED", step=wait_step, data={"sha256": spec_sha, "by": by}),
        ], artifacts={"approved-spec.sha256": f"{spec_sha}\n".encode()})

    def request_changes(self, run_id: str, *, message: str, by: str) -> Run:
        """Send the spec back to the specify step with the reviewer's feedback in its prompt."""
        if not message.strip():
            raise RatchetError("a change request needs a message saying what to change")
        run = self._waiting(run_id)
        spec_sha = sha256_hex(self.store.read_artifact(run_id, "spec.md") or b"")
        checkpoint = Checkpoint(run_id, run.step, run.attempt, {"spec": spec_sha},
                                {"changes_requested": message, "by": by})
        return self._signal(run, Outcome.CHANGES_REQUESTED, checkpoint, [
            NewEvent("CHANGES_REQUESTED", step=run.step,
                     data={"message": message, "by": by, "spec": spec_sha}),
        ])

    def _waiting(self, run_id: str) -> Run:
        run = self.store.get_run(run_id)
        if run.state is not State.AWAITING_APPROVAL:
            raise RunNotWaiting(
                f"run {run_id} is {run.state.value}, not awaiting approval; `ratchet status"
                f" {run_id}` says what it needs"
            )
        return run

    def _signal(
        self, run: Run, outcome: Outcome, checkpoint: Checkpoint | None,
        events: list[NewEvent], artifacts: Mapping[str, bytes] | None = None,
        reason: str | None = None,
    ) -> Run:
        target = transition(run.state, outcome)
        steps = self.store.completed_steps(run.id) + ([checkpoint.step] if checkpoint else [])
        step = _next_step(target, steps)
        events = [*events, _entry_event(target, step, reason)]
        new = self.store.signal(run.id, Change(
            version=run.version, state=target, step=step, events=tuple(events),
            checkpoint=checkpoint, artifacts=dict(artifacts or {}), reason=reason,
        ))
        self.on_change(run, new)
        return new

    # --- advancing -----------------------------------------------------------------------

    def advance(self, run_id: str, *, wait: bool = True) -> Run:
        """Run steps until the run waits or ends.

        With ``wait``, wait out another holder's lease, transient backoff and a brief ledger
        outage (up to ``LEDGER_PATIENCE`` seconds) in the foreground; without it (a queue
        worker, which Dramatiq retries), return or raise as soon as either is in the way.
        Raises ``StaleWrite`` if this process lost the run to another worker mid-step.
        """
        if not wait:
            return self._advance(run_id, wait=False)
        give_up = time.monotonic() + LEDGER_PATIENCE
        delay = 0.5
        orphan: Lease | None = None
        while True:
            try:
                if orphan is not None:
                    # Our own session ended with the ledger: release its lease now that the
                    # ledger answers, rather than wait for it to expire.
                    self.store.release_lease(orphan)
                    orphan = None
                return self._advance(run_id, wait=True)
            except (LedgerUnavailable, OrphanedLease) as error:
                cause = error.cause if isinstance(error, OrphanedLease) else error
                if isinstance(error, OrphanedLease):
                    orphan = error.lease
                if time.monotonic() + delay > give_up:
                    raise cause from None
                log.warning("run %r: ledger unavailable, retrying in %.1fs: %s", run_id,
                            delay, cause)
                time.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _advance(self, run_id: str, *, wait: bool) -> Run:
        announced = False
        while True:
            run = self.store.get_run(run_id)
            now = time.time()
            if is_end(run.state):
                return run
            if is_wait(run.state):
                if run.deadline is not None and run.deadline <= now:
                    self._time_out(run)
                    continue
                return run
            if run.ready_at is not None and run.ready_at > now:
                if not wait:
                    return run
                time.sleep(min(run.ready_at - now, 5.0))
                continue
            # A fresh owner per session: two threads of one process never share a lease.
            owner = f"{self.settings.owner}/{next(self._sessions)}"
            lease = self.store.acquire_lease(run_id, owner, ttl=self.settings.lease_seconds)
            if lease is None:
                if not wait:
                    return run
                remaining = (run.lease_expires_at or now) - now
                if not announced:
                    announced = True
                    log.warning("run %r is held by %r (lease renewed by its heartbeat); waiting"
                                " for it to finish or for its lease to expire", run_id,
                                run.lease_owner)
                time.sleep(min(max(remaining, 0.05), 1.0))
                continue
            session = Session(self, lease)
            try:
                run = session.execute()
            except LedgerUnavailable as exc:
                if not wait:
                    raise  # Dramatiq retries the message; the lease expires meanwhile
                raise OrphanedLease(session.heartbeat.lease, exc) from exc
            if is_runnable(run.state) and (not wait or self.stopping.is_set()):
                # A retry is scheduled or this worker is stopping: the queue or reaper wakes it.
                return self.store.get_run(run_id)

    def _time_out(self, run: Run) -> None:
        reason = ("the spec was neither approved nor sent back before the approval timeout"
                  " (RATCHET_APPROVAL_TIMEOUT); review it and start a new run")
        # Someone may signal first (StaleWrite): the caller's loop rereads the run either way.
        with contextlib.suppress(StaleWrite):
            self._signal(run, Outcome.TIMED_OUT, None,
                         [NewEvent("APPROVAL_TIMED_OUT", step=run.step)], reason=reason)

    # --- defaults ------------------------------------------------------------------------

    def _command_agent(self, run: Run) -> Agent:
        command = run.params.get("agent_command") or self.settings.default_agent_command
        if not command:
            raise DeterministicFailure(
                f"run {run.id} has no agent command: pass --agent-command or set"
                " RATCHET_AGENT_COMMAND, then `ratchet resume` it"
            )
        return CommandAgent(command, env=self.settings.child_env, sandbox=self.settings.sandbox,
                            max_output_bytes=self.settings.max_output_bytes)

    def _local_sink(self, run: Run, worktree: Path | None) -> EffectExecutor:
        outbox = run.params.get("outbox") or self.settings.run_dir(run.id) / "outbox"
        return LocalSink(Path(outbox), self.workspaces, worktree)


class Session:
    """One lease on one run: reconcile, then steps until a wait, an end or a scheduled retry."""

    def __init__(self, engine: Engine, lease: Lease) -> None:
        self.engine = engine
        self.store = engine.store
        self.settings = engine.settings
        self.lease = lease
        self.heartbeat = Heartbeat(self.store, lease, ttl=self.settings.lease_seconds)

    def execute(self) -> Run:
        try:
            with self.heartbeat:
                return self._execute()
        finally:
            try:
                self.store.release_lease(self.heartbeat.lease)
            except LedgerError as exc:  # it expires on its own; never mask the real outcome
                log.warning("run %r: could not release the lease: %s", self.lease.run_id, exc)

    def _execute(self) -> Run:
        run = self.store.get_run(self.lease.run_id)
        if run.attempt > self.settings.max_attempts:
            # Each takeover counts an attempt: a step that kills its worker every time (OOM,
            # segfault) must not be redelivered forever.
            return self._stop(run, Outcome.FAILED, (
                f"{run.step} was taken up {run.attempt} times without completing (its worker"
                " died each time); fix the cause and start a new run"),
                [NewEvent("STEP_FAILED", step=run.step, attempt=run.attempt,
                          data={"class": "attempts_exhausted"})])
        try:
            ctx = self._reconcile(run)
        except (CorruptRecord, WorkspaceMismatch) as exc:
            return self._distrust(run, exc)
        except StepFailure as failure:
            return self._fail(run, failure)
        while is_runnable(run.state):
            if self.heartbeat.lost.is_set():
                raise self._lost()
            ctx.run = run
            run = self._step(ctx)
            if is_runnable(run.state) and run.ready_at is not None:
                break  # a retry is scheduled under a new lease
            if self.engine.stopping.is_set():
                log.info("run %r: worker stopping; releasing the lease after %r", run.id,
                         ctx.history[-1].step if ctx.history else run.step)
                break
        if run.state is State.DONE:
            self.engine.workspaces.remove_run(run.id)
            shutil.rmtree(self.settings.home / "scratch" / run.id, ignore_errors=True)
        elif is_end(run.state):
            scrub_scratch(self.settings.home / "scratch" / run.id, self.settings.redact)
        return run

    # --- reconcile -----------------------------------------------------------------------

    def _reconcile(self, run: Run) -> StepContext:
        """Rebuild the worktree from the last checkpoint and settle unconfirmed effects."""
        history = self.store.checkpoints(run.id)  # CorruptCheckpoint: never use bad history
        ws = self.engine.workspaces
        assert run.base_revision is not None
        worktree = ws.checkout(run.id, self.lease.epoch, run.repo, run.base_revision)
        tree = patch_sha = None
        for checkpoint in reversed(history):
            if "tree" in checkpoint.result:
                tree, patch_sha = checkpoint.result["tree"], checkpoint.result.get("patch")
                break
        scratch = self.settings.home / "scratch" / run.id / str(self.lease.epoch)
        scratch.mkdir(parents=True, exist_ok=True)
        executor = self.engine.executor_for(run, worktree)
        effects = Effects(self.store, self.lease, executor, crash=self.settings.crash)
        ctx = StepContext(
            run=run, store=self.store, workspaces=ws, effects=effects,
            lease=lambda: self.heartbeat.lease, cancel=self.heartbeat.lost, worktree=worktree,
            scratch=scratch, history=history, tree=tree, patch_sha=patch_sha,
            agent=lambda: self.engine.agent_for(run), agent_timeout=self.settings.agent_timeout,
            crash=self.settings.crash, outbox_remote=str(run.params.get("remote", run.repo)),
            redact=self.settings.redact, child_env=self.settings.child_env,
            sandbox=self.settings.sandbox, max_output_bytes=self.settings.max_output_bytes,
        )
        if tree is not None:
            patch = read_patch(self.store, run.id, patch_sha)
            ws.restore(worktree, run.base_revision, patch, tree)
            self._take_over_previous(ctx)
        reconciled = effects.reconcile(run.id)
        if reconciled:
            log.info("run %r: reconciled effects %r", run.id, [e.key for e in reconciled])
        return ctx

    def _take_over_previous(self, ctx: StepContext) -> None:
        """Adopt a finished agent result left by a dead holder, or salvage its partial work."""
        run, ws = ctx.run, self.engine.workspaces
        previous = ws.previous_worktrees(run.id, self.lease.epoch)
        # Only an agent's work is worth keeping: a runner step leaves caches, not changes.
        if not previous or not is_runnable(run.state) or not PROFILES[run.state].agent:
            return
        old = previous[0]
        old_scratch = self.settings.home / "scratch" / run.id / old.name / run.step
        if not old_scratch.is_dir():
            return  # that worktree was working on an earlier step: nothing of this one's in it
        limit = ctx.config().limits.max_file_bytes
        findings = ws.inspect(old, max_file_bytes=limit)
        if findings:
            # Neither adopted nor salvaged: hashing it would read what no step may leave.
            self.store.append(self.heartbeat.lease, events=[
                NewEvent("SALVAGE_REFUSED", step=run.step, attempt=run.attempt,
                         data={"from_epoch": old.name,
                               "findings": [f"{f.kind}: {printable_path(f.path)}"
                                            for f in findings[:20]]}),
            ])
            return
        journal = read_journal(old_scratch)
        if journal is not None and journal.exit_code == 0 and self._adopt(ctx, old, old_scratch,
                                                                          journal):
            return
        assert ctx.tree is not None
        leftovers = ws.diff(old, ctx.tree)
        if not leftovers:
            return
        path = f"salvage/{run.step}.{old.name}.patch"
        self.store.append(self.heartbeat.lease, artifacts={path: leftovers}, events=[
            NewEvent("SALVAGE_SAVED", step=run.step, attempt=run.attempt,
                     data={"path": path, "from_epoch": old.name, "bytes": len(leftovers)}),
        ])
        ctx.salvage[run.step] = path
        log.info("run %r: saved an interrupted step's changes as %r", run.id, path)

    def _adopt(self, ctx: StepContext, old: Path, old_scratch: Path,
               journal: AgentResult) -> bool:
        """Take a finished agent step's output and worktree instead of running it again."""
        step = ctx.run.step
        phase = State(ctx.run.state)
        repair_number = int(step.split(".")[1]) if phase is State.REPAIR else None
        relative = output_path(phase.value, repair_number)
        old_task = _output_task(ctx, old_scratch, relative)
        try:
            content = read_output(old_task, limit=self.settings.max_output_bytes)
        except StepFailure:
            return False
        if sha256_hex(content) != journal.output_sha256:
            return False
        new_output = ctx.scratch / step / "out" / relative
        write_atomic(new_output, content)
        try:
            snapshot = self.engine.workspaces.snapshot(old, ctx.base)
            self.engine.workspaces.restore(ctx.worktree, ctx.base, snapshot.patch, snapshot.tree)
        except WorkspaceError as exc:
            log.warning("run %r: cannot adopt %r's worktree: %s", ctx.run.id, old.name, exc)
            return False
        ctx.adopted[step] = journal
        self.store.append(self.heartbeat.lease, events=[
            NewEvent("AGENT_RESULT_ADOPTED", step=step, attempt=ctx.run.attempt,
                     data={"from_epoch": old.name, "output_sha256": journal.output_sha256}),
        ])
        return True

    # --- steps ---------------------------------------------------------------------------

    def _step(self, ctx: StepContext) -> Run:
        run = ctx.run
        phase = State(run.state)
        step_input = {
            "revision": ctx.tree or run.base_revision,
            "contract": digest({"phase": phase.value, "title": run.title, "body": run.body}),
            "profile": PROFILES[phase].to_dict(),
        }
        try:
            result = STEPS[phase](ctx)
        except (StaleWrite, LedgerUnavailable):
            raise  # nothing can be recorded: the caller stops, or retries the whole session
        except CorruptRecord as exc:
            return self._distrust(run, exc)
        except StepFailure as failure:
            return self._fail(run, failure)
        except WorkspaceError as exc:
            return self._fail(run, TransientFailure(f"workspace: {exc}"))
        except Exception as exc:  # a bug: bounded by the same attempts as a transient failure
            log.exception("run %r step %r: unexpected error", run.id, run.step)
            return self._fail(run, TransientFailure(f"internal error in {run.step}: {exc!r}"))
        return self._complete(ctx, step_input, result)

    def _complete(
        self, ctx: StepContext, step_input: dict[str, Any], result: StepResult
    ) -> Run:
        run = ctx.run
        target = transition(run.state, result.outcome)
        checkpoint = Checkpoint(run.id, run.step, run.attempt, step_input,
                                {**result.data, "outcome": result.outcome.value})
        next_step = _next_step(target, [c.step for c in ctx.history] + [run.step])
        deadline = None
        if is_wait(target) and self.settings.approval_timeout is not None:
            deadline = time.time() + self.settings.approval_timeout
        events = [*result.events, _entry_event(target, next_step, result.reason)]
        new = self.store.apply(self.heartbeat.lease, Change(
            version=run.version, state=target, step=next_step, attempt=1,
            events=tuple(events), checkpoint=checkpoint, artifacts=result.artifacts,
            deadline=deadline, reason=result.reason, head_revision=result.head_revision,
            release_lease=not is_runnable(target),
        ))
        ctx.history.append(checkpoint.sealed())
        self.engine.on_change(run, new)
        self.settings.crash.reached("after_commit", run.step)
        return new

    # --- failures ------------------------------------------------------------------------

    def _lost(self) -> StaleWrite:
        """Why this session may no longer write: cancelled, or taken over."""
        run = self.store.get_run(self.lease.run_id)
        if run.state is State.CANCELLED:
            scrub_scratch(self.settings.home / "scratch" / run.id, self.settings.redact)
            return StaleWrite(f"run {run.id} was cancelled ({run.reason}); stopping")
        return StaleWrite(f"run {run.id}: lease lost to another worker; stopping")

    def _fail(self, run: Run, failure: StepFailure) -> Run:
        if self.heartbeat.lost.is_set():
            raise self._lost() from failure
        log.warning("run %r step %r failed (%s): %s", run.id, run.step, failure.failure_class,
                    failure)
        redact = self.settings.redact
        record = json.loads(redact(json.dumps(
            {"class": failure.failure_class, "error": str(failure), "evidence": failure.evidence},
            sort_keys=True, default=str)))
        artifacts = {
            f"evidence/{run.step}.{run.attempt}.json":
                json.dumps(record, indent=2, sort_keys=True).encode(),
            **{path: redact.bytes(data) for path, data in failure.artifacts.items()},
        }
        events = [NewEvent("STEP_FAILED", step=run.step, attempt=run.attempt, data=record)]
        if isinstance(failure, AuthorityFailure):
            if isinstance(failure, PolicyViolation):
                events.append(NewEvent("POLICY_VIOLATION", step=run.step, attempt=run.attempt,
                                       data={"reason": str(failure)}))
            return self._stop(run, Outcome.NEEDS_HUMAN, record["error"], events, artifacts)
        if isinstance(failure, TransientFailure | AmbiguousFailure):
            if run.attempt >= self.settings.max_attempts:
                reason = (f"{run.step} failed {run.attempt} times, last: {record['error']}; fix"
                          " the cause and start a new run")
                return self._stop(run, Outcome.FAILED, reason, events, artifacts)
            delay = _backoff(run.attempt, self.settings.backoff_base, self.settings.backoff_max)
            events.append(NewEvent("STEP_RETRY_SCHEDULED", step=run.step, attempt=run.attempt,
                                   data={"delay_s": round(delay, 3), "error": record["error"]}))
            new = self.store.apply(self.heartbeat.lease, Change(
                version=run.version, state=run.state, step=run.step, attempt=run.attempt,
                events=tuple(events), artifacts=artifacts, ready_at=time.time() + delay,
                release_lease=True,
            ))
            self.engine.on_change(run, new)
            return new
        return self._stop(run, Outcome.FAILED, record["error"], events, artifacts)

    def _distrust(self, run: Run, error: CorruptRecord | WorkspaceMismatch) -> Run:
        """Corrupt history is never used: stop for a human, naming what is corrupt."""
        if isinstance(error, CorruptArtifact):
            event = NewEvent("ARTIFACT_CORRUPT", step=run.step, data={
                "path": error.path, "sha256": error.sha256, "actual": error.actual,
                "error": str(error)})
        else:
            event = NewEvent("CHECKPOINT_CORRUPT", step=run.step, data={"error": str(error)})
        return self._stop(run, Outcome.NEEDS_HUMAN, f"history cannot be trusted: {error}",
                          [event])

    def _stop(
        self, run: Run, outcome: Outcome, reason: str, events: list[NewEvent],
        artifacts: Mapping[str, bytes] | None = None,
    ) -> Run:
        target = transition(run.state, outcome)
        events = [*events, _entry_event(target, run.step, reason)]
        new = self.store.apply(self.heartbeat.lease, Change(
            version=run.version, state=target, step=run.step, attempt=run.attempt,
            events=tuple(events), artifacts=dict(artifacts or {}), reason=reason,
            release_lease=True,
        ))
        self.engine.on_change(run, new)
        return new


def _entry_event(state: State, step: str, reason: str | None) -> NewEvent:
    """The event recording entry into ``state``: a step started, a wait begun, an end."""
    if state in END_EVENTS:
        return NewEvent(END_EVENTS[state], step=step, data={"reason": reason} if reason else {})
    if is_wait(state):
        return NewEvent("AWAITING_APPROVAL", step=step)
    return NewEvent(STARTED_EVENTS[state], step=step, attempt=1)


def _next_step(state: State, steps: list[str]) -> str:
    """Step ids are ``<state>.<n>``: the n-th time the run enters that state."""
    n = sum(1 for s in steps if s.split(".")[0] == state.value) + 1
    return f"{state.value}.{n}"


def scrub_scratch(folder: Path, redact: Redactor) -> None:
    """An ended run's scratch keeps only its agent logs, redacted (their tails are already
    evidence): outputs, prompts and journals are removed; a log too large to redact too."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_symlink() or not path.is_file():
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.rmdir()  # empty folders only
            else:
                path.unlink(missing_ok=True)
            continue
        if path.suffix != ".log" or path.stat().st_size > MAX_SCRUBBED_LOG_BYTES:
            path.unlink(missing_ok=True)
            continue
        data = path.read_bytes()
        if (clean := redact.bytes(data)) != data:
            write_atomic(path, clean)


def _output_task(ctx: StepContext, folder: Path, relative: str) -> AgentTask:
    """The output half of an agent task whose scratch is ``folder`` (to read what it left)."""
    return AgentTask(
        run_id=ctx.run.id, phase=ctx.run.state.value, step=ctx.run.step, worktree=ctx.worktree,
        prompt="", prompt_file=folder / "prompt.md", output_dir=folder / "out",
        output=folder / "out" / relative, log_file=folder / "adopted.log", timeout=0,
    )


def _backoff(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with full jitter, bounded by ``cap``."""
    return random.uniform(base / 2, min(cap, base * 2 ** (attempt - 1)))


__all__ = [
    "CorruptCheckpoint",
    "Engine",
    "EngineSettings",
    "RunNotWaiting",
    "Session",
    "SpecHashMismatch",
]
