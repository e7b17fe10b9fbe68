"""One lease on one run: reconcile, then send the outbox, answer the inbox and run steps until
the run waits, ends, or has a retry scheduled.

Reconcile rebuilds the worktree from the last checkpoint (proved by hash), takes over a dead
holder's leftovers on this host, and wires the outbox. Then, in a loop: every intended effect
is sent (``runner/effects.py``); one pending signal is answered (``runner/signals.py``
decides, ``runner/inbox.py`` builds the answer); a wait past its deadline times out; a
runnable state's step runs (``runner/steps/``). A failure becomes a change built by
``runner/failures.py``. The session does the reading (ledger, authorizer) and the writing;
what to write is decided by those pure modules. Every state change goes through ``_commit``:
one fenced transaction holding the change, its events, its checkpoint and artifacts, its
outbox (the tracking comment's edit among them, ``runner/tracking.py``) and the signal it
answers. A refused write means another worker owns the run: the session stops.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner import changes, failures, inbox
from runner.agents.base import Agent
from runner.budget import allowance, budget_of, budget_stop
from runner.canonical import digest, sha256_hex
from runner.decisions import attempts_exhausted, provider_retries
from runner.effects import EffectExecutor, Outbox
from runner.errors import (
    AmbiguousFailure,
    AuthorityFailure,
    BudgetExhausted,
    CorruptRecord,
    LedgerError,
    StaleWrite,
    StepFailure,
    TransientFailure,
    WorktreeError,
    WorktreeMismatch,
)
from runner.lease import Heartbeat
from runner.ledger.records import Change, Checkpoint, EffectStatus, Lease, NewEvent, Run
from runner.ledger.store import Store
from runner.names import EffectKind, EventType, SignalKind, SignalStatus
from runner.recovery import Leftovers, Recovery
from runner.results import diff_to_approve, last_tree, prepared_result, repository_config
from runner.scratch import remove_scratch, scrub_scratch
from runner.settings import EngineSettings
from runner.signals import (
    Authorization,
    Authorizer,
    decide_signal,
    has_tree,
    recorded_before_spec,
)
from runner.status import read_status
from runner.steps import STEPS, StepInput, StepResult, StepServices
from runner.steps.base import read_patch
from runner.tracking import edit_for_change, needs_edit, read_snapshot
from runner.workflow import BOOKKEEPING_EFFECTS, PROFILES, State, is_end, is_runnable, is_stopped
from runner.worktrees import RemoteAccess, Worktrees

log = logging.getLogger(__name__)

OnChange = Callable[[Run, Run], None]


@dataclass(frozen=True)
class SessionParts:
    """What every session of an engine shares (built once by ``runner/engine.py``)."""

    store: Store
    worktrees: Worktrees
    settings: EngineSettings  # read where used; steps get the same object
    agent_for: Callable[[Run], Agent]
    executor_for: Callable[[Run, Path | None], EffectExecutor]
    access_for: Callable[[Run], RemoteAccess]  # how git reaches the run's remote
    authorizer: Authorizer
    on_change: OnChange
    stopping: Callable[[], bool] = field(default=lambda: False)


class Session:
    """One lease on one run (see the module docstring)."""

    def __init__(self, parts: SessionParts, lease: Lease) -> None:
        self.parts = parts
        self.store = parts.store
        self.settings = parts.settings
        self.run_id = lease.run_id
        self.heartbeat = Heartbeat(parts.store, lease, ttl=parts.settings.lease_seconds,
                                   interrupt=self._cancel_waiting)
        self.worktree: Path | None = None
        self.outbox: Outbox | None = None
        self.leftovers: dict[str, Leftovers] = {}

    @property
    def lease(self) -> Lease:
        return self.heartbeat.lease

    def execute(self) -> Run:
        try:
            with self.heartbeat:
                return self._execute()
        finally:
            try:
                self.store.release_lease(self.heartbeat.lease)
            except LedgerError as exc:  # it expires on its own; never mask the real outcome
                log.warning("run %r: could not release the lease: %s", self.run_id, exc)

    def _execute(self) -> Run:
        run = self.store.get_run(self.run_id)
        if attempts_exhausted(run, self.settings.limits,
                              uncharged=provider_retries(self.store.events(run.id), run.step)):
            return self._commit(run, failures.exhausted(run))
        failed = self._prepare(run)
        if failed is not None:
            return failed
        while True:
            self._check_lease()
            run = self.store.get_run(self.run_id)
            if self._outbox_pending(run) and not self._flush(run):
                run = self.store.get_run(self.run_id)
                break
            run = self.store.get_run(self.run_id)
            try:
                answered = self._answer_signal(run)
            except CorruptRecord as exc:
                if is_stopped(run.state):
                    self._refuse_all(run, exc)
                    continue
                return self._distrust(run, exc)
            if answered is not None:
                if answered.ready_at is not None and answered.ready_at > time.time():
                    run = answered
                    break  # the forge could not be asked: back off, the signal waits
                continue
            if (run.state is State.AWAITING_APPROVAL and run.deadline is not None
                    and run.deadline <= time.time()):
                self._commit(run, inbox.time_out(run))
                continue
            if not is_runnable(run.state) or self.parts.stopping():
                break
            if run.ready_at is not None and run.ready_at > time.time():
                break  # a retry is scheduled: the queue or the reaper wakes it
            if self.worktree is None:  # a signal made a waiting run runnable
                failed = self._prepare(run)
                if failed is not None:
                    run = failed
                    break
            self._step(run)
        if run.state is State.DONE and not self._outbox_pending(run):
            self.parts.worktrees.remove_run(run.id)
            remove_scratch(self.settings.scratch(run.id))
        elif is_end(run.state) or is_stopped(run.state):
            scrub_scratch(self.settings.scratch(run.id), self.settings.redact)
        return run

    # --- reconcile -----------------------------------------------------------------------

    def _prepare(self, run: Run) -> Run | None:
        """Reconcile; when that fails, the run as the failure left it."""
        try:
            self._reconcile(run)
        except (CorruptRecord, WorktreeMismatch) as exc:
            return self._distrust(run, exc)
        except WorktreeError as exc:
            return self._fail(run, failures.workspace_failure(exc))
        except StepFailure as failure:  # the forge gave git no credential (an outage, removed)
            return self._fail(run, failure)
        return None

    def _reconcile(self, run: Run) -> None:
        """Rebuild the worktree from the last checkpoint and take over what a dead holder left."""
        worktrees = self.parts.worktrees
        needs_tree = is_runnable(run.state) or any(
            e.kind is EffectKind.PUSH for e in self._pending_effects(run))
        if needs_tree and run.base_revision is None:
            run = self._resolve_base(run)
        if needs_tree and run.base_revision is not None:
            history = self.store.checkpoints(run.id)  # CorruptCheckpoint: never use bad history
            self.worktree = worktrees.checkout(run.id, self.lease.epoch, run.repo,
                                                run.base_revision,
                                                access=self.parts.access_for(run))
            record = last_tree(history)
            if record is not None:
                patch = read_patch(self.store, run.id, record.patch)
                worktrees.restore(self.worktree, run.base_revision, patch, record.tree)
                recovery = Recovery(self.store, worktrees, self.settings.home,
                                    self.settings.max_output_bytes,
                                    repository_config(history).limits)
                self.leftovers[run.step] = recovery.take_over(
                    run, self.lease, worktree=self.worktree, scratch=self._scratch(run),
                    base=run.base_revision, tree=record.tree)
        executor = self.parts.executor_for(run, self.worktree)
        self.outbox = Outbox(self.store, lambda: self.heartbeat.lease, executor,
                             crash=self.settings.crash)

    def _resolve_base(self, run: Run) -> Run:
        """A run created from a forge event names its base branch, not a commit (no forge
        call happens while a webhook is answered): fetch it and record the commit once."""
        branch = run.origin.base_branch or "HEAD"
        base = self.parts.worktrees.resolve(run.repo, branch,
                                             access=self.parts.access_for(run))
        return self._commit(run, changes.unchanged(run, base_revision=base, events=(NewEvent(
            EventType.WORKSPACE_PREPARED, step=run.step, revision=base,
            data={"base_branch": branch}),)))

    # --- the outbox ----------------------------------------------------------------------

    def _pending_effects(self, run: Run) -> list[Any]:
        return [e for e in self.store.effects(run.id) if e.status is EffectStatus.INTENDED]

    def _outbox_pending(self, run: Run) -> bool:
        return bool(self._pending_effects(run))

    def _flush(self, run: Run) -> bool:
        """Send the outbox; on a failure decide what it means for the run. True when empty."""
        assert self.outbox is not None
        try:
            self.outbox.flush(run.id)
            return True
        except (StaleWrite, LedgerError):
            raise
        except StepFailure as failure:
            self._check_lease()
            log.warning("run %r: an effect failed (%s): %s", run.id, failure.failure_class,
                        failure)
            run = self.store.get_run(run.id)
            failed = self.outbox.failed
            if failed is not None and failures.gives_up_effect(run, failure):
                # A failure that sending again cannot fix decides nothing more for a settled
                # run; give the effect up, say why.
                self.store.fail_effect(self.heartbeat.lease, failed.key, str(failure))
                return True
            self._fail(run, failure, during="effect")
            return False

    # --- the inbox -----------------------------------------------------------------------

    def _cancel_waiting(self) -> bool:
        return any(s.kind is SignalKind.CANCEL
                   for s in self.store.signals(self.run_id, status=SignalStatus.PENDING))

    def _answer_signal(self, run: Run) -> Run | None:
        """Answer the oldest pending signal, if any: read what the answer needs, ask the
        authorizer, then commit what ``runner/signals.py`` decides and ``runner/inbox.py``
        builds."""
        pending = self.store.signals(run.id, status=SignalStatus.PENDING)
        if not pending:
            return None
        signal = pending[0]
        history = self.store.checkpoints(run.id)  # CorruptRecord: the caller stops the run
        spec = self.store.read_artifact(run.id, "spec.md")
        spec_sha = sha256_hex(spec) if spec is not None else None
        try:
            authorization = self.parts.authorizer.authorize(run, signal)
        except (TransientFailure, AmbiguousFailure) as failure:
            self._check_lease()
            now = time.time()
            deferred = inbox.defer(run, self.settings.limits, now=now)
            log.warning("run %r: signal %r from %r waits %.1fs, its author's access is"
                        " unknown: %s", run.id, signal.id, signal.author,
                        (deferred.ready_at or now) - now, self.settings.redact(str(failure)))
            return self._commit(run, deferred)
        except StepFailure as failure:
            authorization = Authorization(False, str(failure))
        stop = (budget_stop(self.store.events(run.id))
                if signal.kind is SignalKind.BUDGET and run.state is State.NEEDS_HUMAN else None)
        before_spec = (signal.kind is SignalKind.APPROVE
                       and run.state is State.AWAITING_APPROVAL
                       and recorded_before_spec(self.store.events(run.id), signal.id))
        diff = diff_to_approve(history)
        diff_sha = diff.sha256 if diff is not None else None
        verdict = decide_signal(
            run, signal, authorization=authorization, spec_sha256=spec_sha,
            has_tree=has_tree(c.step for c in history),
            budget_stop=stop, before_spec=before_spec, diff_sha256=diff_sha,
        )
        log.info("run %r: signal %r from %r %s", run.id, signal.id, signal.author,
                 verdict.reason)
        now = time.time()
        status = (read_status(self.store, run.id, now=now, answering=signal.id)
                  if inbox.needs_status(signal, verdict) else None)
        quiet = not verdict.accepted and inbox.replied_lately(
            self.store.events(run.id), signal, now=now)
        return self._commit(run, inbox.answer(
            run, signal, verdict, spec_sha256=spec_sha, history=history, status=status,
            approval_timeout=self.settings.approval_timeout, now=now, replied_lately=quiet,
            diff_sha256=diff_sha),
            completed=[c.step for c in history])

    def _refuse_all(self, run: Run, error: CorruptRecord) -> None:
        """A stopped run whose history is corrupt can answer no signal but cancel: refuse the
        others as ended (nothing can be retried on untrusted history)."""
        for signal in self.store.signals(run.id, status=SignalStatus.PENDING):
            run = self.store.get_run(run.id)
            self._commit(run, inbox.answer_untrusted(run, signal, error))
            if signal.kind is SignalKind.CANCEL:
                return

    # --- steps ---------------------------------------------------------------------------

    def _step(self, run: Run) -> Run:
        phase = State(run.state)
        history = self.store.checkpoints(run.id)
        inp = self._input(run, history)
        step_input = {
            "revision": inp.tree or run.base_revision,
            "contract": digest({"phase": phase.value, "title": run.title, "body": run.body}),
            "profile": PROFILES[phase].to_dict(),
        }
        services = self._services(run)
        if PROFILES[phase].agent:
            try:
                services = self._within_budget(run, history, services)
            except BudgetExhausted as exhaustion:
                return self._fail(run, exhaustion)
        try:
            result = STEPS[phase](inp, services)
            self._check_effects(phase, result)
        except (StaleWrite, LedgerError) as exc:
            if isinstance(exc, CorruptRecord):
                return self._distrust(run, exc)
            raise  # nothing can be recorded: the caller stops, or retries the whole session
        except StepFailure as failure:
            if self.heartbeat.stop_work.is_set() and not self.heartbeat.lost.is_set():
                return run  # a cancel is waiting in the inbox: answer it instead
            return self._fail(run, failure)
        except WorktreeMismatch as exc:
            return self._distrust(run, exc)
        except WorktreeError as exc:
            return self._fail(run, failures.workspace_failure(exc))
        except Exception as exc:  # a bug: bounded by the same attempts as a transient failure
            log.exception("run %r step %r: unexpected error", run.id, run.step)
            return self._fail(run, TransientFailure(f"internal error in {run.step}: {exc!r}"))
        return self._complete(run, history, step_input, result)

    def _complete(self, run: Run, history: list[Checkpoint], step_input: dict[str, Any],
                  result: StepResult) -> Run:
        new = self._commit(run, changes.completion(
            run, result, step_input=step_input, history=history,
            approval_timeout=self.settings.approval_timeout, now=time.time(),
        ), completed=[c.step for c in history])
        self.settings.crash.reached("after_commit", run.step)
        return new

    def _check_effects(self, phase: State, result: StepResult) -> None:
        allowed = PROFILES[phase].effects | BOOKKEEPING_EFFECTS
        for effect in result.effects:
            if effect.kind not in allowed:
                raise AuthorityFailure(
                    f"a {phase.value} step may not decide a {effect.kind.value} effect"
                    f" (its profile allows {sorted(k.value for k in allowed)})"
                )

    def _within_budget(self, run: Run, history: list[Checkpoint],
                       services: StepServices) -> StepServices:
        """Check the budget before an agent step: ``BudgetExhausted`` once a limit is reached;
        otherwise the services, their agent timeout cut to the time the budget has left."""
        events = self.store.events(run.id)
        budget = budget_of(prepared_result(history), events,
                           defaults=self.settings.budget)
        allowed = allowance(budget, events, now=time.time(), timeout=services.agent_timeout)
        if allowed.exhaustion is not None:
            raise BudgetExhausted(allowed.exhaustion.reason,
                                  exhaustion=allowed.exhaustion.to_dict())
        return replace(services, agent_timeout=allowed.seconds, budget_bound=allowed.bound,
                       cost_left=allowed.cost_left, cost_bound=allowed.cost_bound)

    def _input(self, run: Run, history: list[Checkpoint]) -> StepInput:
        assert self.worktree is not None, "a runnable run has a worktree"
        record = last_tree(history)
        leftovers = self.leftovers.pop(run.step, Leftovers())
        return StepInput(
            run=run, history=tuple(history), worktree=self.worktree, scratch=self._scratch(run),
            tree=record.tree if record else "", patch_sha=record.patch if record else None,
            config=repository_config(history), adopted=leftovers.adopted,
            salvage=leftovers.salvage,
        )

    def _services(self, run: Run) -> StepServices:
        agent_for = self.parts.agent_for
        return StepServices(
            store=self.store, worktrees=self.parts.worktrees, settings=self.settings,
            agent=lambda: agent_for(run), agent_timeout=self.settings.agent_timeout,
            lease=lambda: self.heartbeat.lease, cancel=self.heartbeat.stop_work,
            access=self.parts.access_for(run),
        )

    def _scratch(self, run: Run) -> Path:
        folder = self.settings.scratch(run.id) / str(self.lease.epoch)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # --- failures ------------------------------------------------------------------------

    def _fail(self, run: Run, failure: StepFailure, *, during: str = "step") -> Run:
        self._check_lease()
        log.warning("run %r %s %r failed (%s): %s", run.id, during, run.step,
                    failure.failure_class, failure)
        uncharged = provider_retries(self.store.events(run.id), run.step)
        return self._commit(run, failures.fail(run, failure, during=during,
                                               limits=self.settings.limits,
                                               redact=self.settings.redact, now=time.time(),
                                               uncharged=uncharged))

    def _distrust(self, run: Run, error: CorruptRecord | WorktreeMismatch) -> Run:
        """Corrupt history is never used: stop for a human, naming what is corrupt."""
        return self._commit(run, failures.distrust(run, error))

    def _check_lease(self) -> None:
        if self.heartbeat.lost.is_set():
            raise self._lost()

    def _lost(self) -> StaleWrite:
        """Why this session may no longer write: cancelled, or taken over."""
        run = self.store.get_run(self.run_id)
        if run.state is State.CANCELLED:
            scrub_scratch(self.settings.scratch(run.id), self.settings.redact)
            return StaleWrite(f"run {run.id} was cancelled ({run.reason}); stopping")
        return StaleWrite(f"run {run.id}: lease lost to another worker; stopping")

    # --- the one write -------------------------------------------------------------------

    def _commit(self, run: Run, change: Change, *,
                completed: Sequence[str] | None = None) -> Run:
        """Write ``change`` fenced by the lease; a change of state also edits the tracking
        comment (its edit recorded in the same transaction, from a snapshot of the ledger read
        once here; ``completed``: the steps completed before the change, when the caller
        holds them). Effect payloads are redacted."""
        redact = self.settings.redact
        effects = [replace(e, payload=redact.value(dict(e.payload))) for e in change.effects]
        if needs_edit(run, change):
            snapshot = read_snapshot(self.store, run, change, at=time.time(),
                                     completed=completed)
            effects.append(edit_for_change(run, change, snapshot).intent())
        new = self.store.apply(self.heartbeat.lease, replace(change, effects=tuple(effects)))
        self.parts.on_change(run, new)
        return new
