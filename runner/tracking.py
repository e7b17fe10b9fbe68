"""The tracking comment's edits: one ``comment`` effect per change of state, upserted by name.

Each edit is its own effect (key ``<run>:<step>:tracking.<state>``), recorded in the
transaction that changes the state, so the comment's edit history is in the ledger and a
replayed transition never edits twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from runner.effects import EffectRequest, effect_key
from runner.ledger.records import NewRun, Run
from runner.names import EffectKind
from runner.views import tracking_view
from runner.workflow import State

TRACKING = "tracking"


def tracking_edit(run: Run, *, state: State, step: str, reason: str | None,
                  completed: list[str], spec_sha256: str | None, at: float,
                  failure: str | None = None, usage: Mapping[str, Any] | None = None,
                  budget_stop: Mapping[str, Any] | None = None,
                  subagents: Sequence[Mapping[str, Any]] = (),
                  again: int | None = None) -> EffectRequest:
    """The edit showing ``run`` as it is once it enters ``state`` at ``step``; ``failure`` is
    the class of the failure that stopped it (transient, deterministic, ...), if one did;
    ``usage`` what its agents spent of its budget; ``budget_stop`` the exhaustion, if the
    budget stopped it; ``subagents`` its research subagents. ``again`` tells apart an edit
    for a step the run enters again under the same id (a stopped step taken up again): its
    key gets that suffix."""
    after = replace(run, state=state, step=step, reason=reason)
    view = tracking_view(after, completed, spec_sha256=spec_sha256,
                         branch=str(run.params.get("branch") or f"ratchet/{run.id}"), at=at,
                         failure=failure, usage=usage, budget_stop=budget_stop,
                         subagents=subagents)
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
        reason=None, params=dict(new.params), created_at=at, updated_at=at,
    )
    edit = tracking_edit(run, state=State.QUEUED, step=new.step, reason=None, completed=[],
                         spec_sha256=None, at=at)
    return replace(new, effects=(*new.effects, edit.intent()))
