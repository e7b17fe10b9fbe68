"""The tracking comment's edits: one ``comment`` effect per change of state, upserted by name.

Each edit is its own effect (key ``<run>:<step>:tracking.<state>``), recorded in the
transaction that changes the state, so the comment's edit history is in the ledger and a
replayed transition never edits twice.

The edit a change makes is a pure function of the run, the change and a ``TrackingSnapshot``
of what the ledger held before it (``edit_for_change``); ``read_snapshot`` is the one read,
done once per commit by the session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from runner.budget import budget_stop
from runner.canonical import sha256_hex
from runner.effects import EffectRequest, effect_key
from runner.errors import CorruptRecord
from runner.ledger.records import Change, Event, NewRun, Run
from runner.ledger.store import Store
from runner.names import EffectKind, EventType, StepId
from runner.status import PREPARED_STEP
from runner.subagents import subagent_rows
from runner.views import agent_did_not_start, tracking_view, usage_view
from runner.workflow import PULL_REQUEST_WORKFLOW, State, is_stopped

TRACKING = "tracking"


@dataclass(frozen=True)
class TrackingSnapshot:
    """What the ledger held before a change that the change's edit shows (``read_snapshot``)."""

    at: float  # when the change is written: the edit's time, and its events'
    completed: tuple[str, ...] = ()  # steps with a checkpoint, in order
    events: tuple[Event, ...] = ()  # the run's events
    spec: bytes | None = None  # the recorded spec, read when the change enters the approval wait
    prepared: Mapping[str, Any] | None = None  # the queued step's record (config and budget)
    edited: bool = False  # the edit for entering the change's state at its step was recorded


def needs_edit(run: Run, change: Change) -> bool:
    """Whether ``change`` edits the tracking comment: it changes the state of a run that has
    one (a pull request's verification has none)."""
    return change.state is not run.state and run.workflow != PULL_REQUEST_WORKFLOW


def read_snapshot(store: Store, run: Run, change: Change, *, at: float,
                  completed: Sequence[str] | None = None) -> TrackingSnapshot:
    """The snapshot ``change``'s edit needs, read once; ``completed``: the completed steps when
    the caller holds them (read otherwise). What ``change`` itself carries (the spec, the
    queued step's record) is not read."""
    if completed is None:
        completed = store.completed_steps(run.id)
    spec = None
    if change.state is State.AWAITING_APPROVAL and not change.artifacts.get("spec.md"):
        spec = store.read_artifact(run.id, "spec.md")
    events = store.events(run.id)
    prepared = None
    if not _prepares(run, change):
        try:
            checkpoint = store.checkpoint(run.id, PREPARED_STEP)
        except CorruptRecord:
            checkpoint = None
        prepared = dict(checkpoint.result) if checkpoint is not None else None
    edited = store.get_effect(tracking_key(run.id, change.step, change.state)) is not None
    return TrackingSnapshot(at=at, completed=tuple(completed), events=tuple(events), spec=spec,
                            prepared=prepared, edited=edited)


def edit_for_change(run: Run, change: Change, snapshot: TrackingSnapshot) -> EffectRequest:
    """The edit showing ``run`` once ``change`` is written, from ``snapshot`` (what the ledger
    held before it) and what the change carries: its checkpoint, spec, events; pure."""
    completed = [*snapshot.completed, *([change.checkpoint.step] if change.checkpoint else [])]
    spec = None
    if change.state is State.AWAITING_APPROVAL:  # the spec may be in this very change
        spec = change.artifacts.get("spec.md") or snapshot.spec
    failure = next((str(e.data["class"]) for e in change.events
                    if e.type is EventType.STEP_FAILED and "class" in e.data), None)
    events = [*snapshot.events, *_pending_events(run, change, snapshot.at)]
    checkpoint = change.checkpoint
    prepared = (dict(checkpoint.result) if checkpoint is not None and _prepares(run, change)
                else snapshot.prepared)
    usage = usage_view(events, prepared, now=snapshot.at, steps=False)
    stop = budget_stop(events) if change.state is State.NEEDS_HUMAN else None
    # A stopped step taken up again enters its state under the same step id: its edit is a new
    # one (keyed by the run's version, unique per change), not the first replayed.
    return tracking_edit(run, state=change.state, step=change.step, reason=change.reason,
                         completed=completed, spec_sha256=sha256_hex(spec) if spec else None,
                         at=snapshot.at, failure=failure if is_stopped(change.state) else None,
                         usage=usage, budget_stop=stop, subagents=subagent_rows(events),
                         limited=tuple(str(note) for note in (prepared or {}).get("limited", ())),
                         again=run.version if snapshot.edited else None,
                         agent_did_not_start=change.state is State.FAILED
                         and agent_did_not_start(events))


def tracking_edit(run: Run, *, state: State, step: str, reason: str | None,
                  completed: list[str], spec_sha256: str | None, at: float,
                  failure: str | None = None, usage: Mapping[str, Any] | None = None,
                  budget_stop: Mapping[str, Any] | None = None,
                  subagents: Sequence[Mapping[str, Any]] = (),
                  limited: Sequence[str] = (),
                  again: int | None = None,
                  agent_did_not_start: bool = False) -> EffectRequest:
    """The edit showing ``run`` as it is once it enters ``state`` at ``step``; ``failure`` is
    the class of the failure that stopped it (transient, deterministic, ...), if one did;
    ``usage`` what its agents spent of its budget; ``budget_stop`` the exhaustion, if the
    budget stopped it; ``subagents`` its research subagents; ``limited`` what its repository's
    config asked above the service's ceilings (``runner/ceilings.py``). ``again`` tells apart
    an edit for a step the run enters again under the same id (a stopped step taken up again):
    its key gets that suffix; ``agent_did_not_start`` says the failure was the agent command not
    starting."""
    after = replace(run, state=state, step=step, reason=reason)
    view = tracking_view(after, completed, spec_sha256=spec_sha256,
                         branch=run.branch, at=at,
                         failure=failure, usage=usage, budget_stop=budget_stop,
                         subagents=subagents, limited=limited,
                         agent_did_not_start=agent_did_not_start)
    return EffectRequest(tracking_key(run.id, step, state, again), run.id, step,
                         EffectKind.COMMENT, {"name": TRACKING, "view": view})


def tracking_key(run_id: str, step: str, state: State, again: int | None = None) -> str:
    """The key of the edit made on entering ``state`` at ``step``."""
    name = f"{TRACKING}.{state.value}" + (f".{again}" if again is not None else "")
    return effect_key(run_id, step, name)


def with_first_edit(new: NewRun, *, at: float) -> NewRun:
    """``new`` carrying its tracking comment's first edit, recorded with the run."""
    run = Run(
        id=new.id, repo=new.repo, title=new.title, body=new.body, workflow=new.workflow,
        issue=new.issue, pr=new.pr, state=State.QUEUED, step=new.step, attempt=1, version=1,
        lease_owner=None, lease_epoch=0, lease_expires_at=None,
        base_revision=new.base_revision, head_revision=None, ready_at=None, deadline=None,
        reason=None, origin=new.origin, created_at=at, updated_at=at,
    )
    edit = tracking_edit(run, state=State.QUEUED, step=new.step, reason=None, completed=[],
                         spec_sha256=None, at=at)
    return replace(new, effects=(*new.effects, edit.intent()))


def _prepares(run: Run, change: Change) -> bool:
    """Whether ``change`` records the queued step (its checkpoint holds config and budget)."""
    return (change.checkpoint is not None and change.checkpoint.step == run.step
            and StepId.parse(run.step).state == State.QUEUED)


def _pending_events(run: Run, change: Change, at: float) -> list[Event]:
    """``change``'s events as the ledger will record them (for views of the run after it)."""
    return [Event(run.id, 0, str(e.type), at, e.step, e.attempt, 0, e.revision, None,
                  dict(e.data)) for e in change.events]
