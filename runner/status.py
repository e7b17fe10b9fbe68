"""The four answers of a run's status, read from the ledger alone (``runner/views.py``
turns records into them; the edge turns them into words), with what its agents spent."""

from __future__ import annotations

from runner.budget import budget_stop
from runner.canonical import sha256_hex
from runner.errors import CorruptArtifact, CorruptRecord
from runner.ledger.store import Store
from runner.subagents import subagent_rows
from runner.views import RunStatus, agent_did_not_start, describe, usage_view
from runner.workflow import State

# The queued step's id: its checkpoint holds the config and the budget read at the base.
PREPARED_STEP = f"{State.QUEUED.value}.1"


def read_status(store: Store, run_id: str, *, now: float,
                answering: str | None = None) -> RunStatus:
    """The run's status (``UnknownRun`` names an id the ledger does not hold; ``answering``:
    the status request it answers, see ``describe``).

    A corrupt spec or checkpoint does not hide the rest: the status names it among its
    problems.
    """
    run = store.get_run(run_id)
    problems = []
    spec_sha = None
    try:
        spec = store.read_artifact(run_id, "spec.md")
        spec_sha = sha256_hex(spec) if spec is not None else None
    except CorruptArtifact as exc:
        problems.append(str(exc))
    prepared = None
    try:
        checkpoint = store.checkpoint(run_id, PREPARED_STEP)
        prepared = checkpoint.result if checkpoint is not None else None
    except CorruptRecord as exc:
        problems.append(str(exc))
    events = store.events(run_id)
    stop = budget_stop(events) if run.state is State.NEEDS_HUMAN else None
    return describe(run, store.completed_steps(run_id), store.effects(run_id),
                    store.signals(run_id), spec_sha256=spec_sha, now=now, problems=problems,
                    usage=usage_view(events, prepared, now=now), budget_stop=stop,
                    subagents=subagent_rows(events), answering=answering,
                    agent_did_not_start=run.state is State.FAILED
                    and agent_did_not_start(events))

