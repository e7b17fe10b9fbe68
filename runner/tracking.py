"""The tracking comment's edits: one ``comment`` effect per change of state, upserted by name.

Each edit is its own effect (key ``<run>:<step>:tracking.<state>``), recorded in the
transaction that changes the state, so the comment's edit history is in the ledger and a
replayed transition never edits twice.
"""

from __future__ import annotations

from dataclasses import replace

from runner.effects import EffectRequest, effect_key
from runner.ledger.records import Run
from runner.names import EffectKind
from runner.views import tracking_view
from runner.workflow import State

TRACKING = "tracking"


def tracking_edit(run: Run, *, state: State, step: str, reason: str | None,
                  completed: list[str], spec_sha256: str | None, at: float) -> EffectRequest:
    """The edit showing ``run`` as it is once it enters ``state`` at ``step``."""
    after = replace(run, state=state, step=step, reason=reason)
    view = tracking_view(after, completed, spec_sha256=spec_sha256,
                         branch=str(run.params.get("branch") or f"ratchet/{run.id}"), at=at)
    return EffectRequest(effect_key(run.id, step, f"{TRACKING}.{state.value}"), run.id, step,
                         EffectKind.COMMENT, {"name": TRACKING, "view": view})
