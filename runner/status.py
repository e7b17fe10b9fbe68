"""The four answers of a run's status, read from the ledger alone (``runner/views.py``
turns records into them; the edge turns them into words)."""

from __future__ import annotations

from runner.canonical import sha256_hex
from runner.errors import CorruptArtifact
from runner.ledger.store import Store
from runner.views import RunStatus, describe


def read_status(store: Store, run_id: str, *, now: float) -> RunStatus:
    """The run's status (``UnknownRun`` names an id the ledger does not hold).

    A corrupt spec does not hide the rest: the status names it among its problems.
    """
    run = store.get_run(run_id)
    problems = []
    spec_sha = None
    try:
        spec = store.read_artifact(run_id, "spec.md")
        spec_sha = sha256_hex(spec) if spec is not None else None
    except CorruptArtifact as exc:
        problems.append(str(exc))
    return describe(run, store.completed_steps(run_id), store.effects(run_id),
                    store.signals(run_id), spec_sha256=spec_sha, now=now, problems=problems)
