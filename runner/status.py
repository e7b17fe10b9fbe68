"""The four answers ``ratchet status`` gives from the ledger alone.

``describe`` and ``next_action`` are pure; ``read_status`` gathers their inputs from a store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from runner.canonical import sha256_hex
from runner.errors import CorruptArtifact
from runner.ledger.records import Effect, EffectStatus, Run
from runner.ledger.store import Store
from runner.workflow import State, is_runnable


@dataclass(frozen=True)
class RunStatus:
    run_id: str
    state: str
    step: str
    attempt: int
    completed_steps: list[str]
    effects: list[dict[str, Any]]
    next_action: str
    reason: str | None
    lease: dict[str, Any] | None
    head_revision: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "state": self.state, "step": self.step,
            "attempt": self.attempt, "completed_steps": self.completed_steps,
            "effects": self.effects, "next_action": self.next_action, "reason": self.reason,
            "lease": self.lease, "head_revision": self.head_revision,
        }

    def render(self) -> str:
        lines = [
            f"run {self.run_id}: {self.state} (step {self.step}, attempt {self.attempt})",
            f"completed: {', '.join(self.completed_steps) or 'nothing yet'}",
        ]
        if self.reason:
            lines.append(f"reason: {self.reason}")
        lines.append("effects:" if self.effects else "effects: none")
        lines += [f"  {e['key']} {e['kind']} {e['status']}" for e in self.effects]
        lines.append(f"next: {self.next_action}")
        return "\n".join(lines)


def describe(
    run: Run, completed: list[str], effects: list[Effect], *, spec_sha256: str | None,
    now: float,
) -> RunStatus:
    lease = None
    if run.lease_owner is not None:
        lease = {"owner": run.lease_owner, "epoch": run.lease_epoch,
                 "expires_at": run.lease_expires_at, "live": run.lease_live(now)}
    return RunStatus(
        run_id=run.id, state=run.state.value, step=run.step, attempt=run.attempt,
        completed_steps=completed, effects=[e.to_dict() for e in effects],
        next_action=next_action(run, effects, spec_sha256=spec_sha256, now=now),
        reason=run.reason, lease=lease, head_revision=run.head_revision,
    )


def next_action(run: Run, effects: list[Effect], *, spec_sha256: str | None, now: float) -> str:
    """The safest next action, as a sentence a person (or a script) can follow."""
    rid = run.id
    if run.state is State.DONE:
        return f"none: the run is done (published {run.head_revision or 'its branch'})"
    if run.state is State.FAILED:
        return f"none can fix it in place: {run.reason}"
    if run.state is State.NEEDS_HUMAN:
        return f"a human must decide: {run.reason}"
    if run.state is State.CANCELLED:
        return "none: the run was cancelled"
    if run.state is State.AWAITING_APPROVAL:
        short = (spec_sha256 or "")[:12]
        return (f"review spec.md, then `ratchet approve-spec {rid} --hash {short}` or"
                f" `ratchet request-changes {rid} --message TEXT`")
    assert is_runnable(run.state)
    pending = [e for e in effects if e.status is EffectStatus.INTENDED]
    settle = (f"; it first reconciles {len(pending)} unconfirmed effect(s) with the remote"
              if pending else "")
    if run.lease_live(now):
        return (f"wait: {run.lease_owner} holds the lease on {run.step} (renewed by heartbeat;"
                f" if that worker died, `ratchet resume {rid}` takes over once it expires)")
    if run.ready_at is not None and run.ready_at > now:
        return (f"wait: a retry of {run.step} is scheduled in {run.ready_at - now:.0f}s;"
                f" `ratchet resume {rid}` runs it then{settle}")
    return f"`ratchet resume {rid}`: continues from {run.step}{settle}"


def read_status(store: Store, run_id: str, *, now: float) -> RunStatus:
    """The run's status from the ledger (``UnknownRun`` names an id it does not hold).

    A corrupt spec does not hide the rest: the status says so in place of its hash.
    """
    run = store.get_run(run_id)
    try:
        spec = store.read_artifact(run_id, "spec.md")
    except CorruptArtifact as exc:
        status = describe(run, store.completed_steps(run_id), store.effects(run_id),
                          spec_sha256=None, now=now)
        return replace(status, next_action=f"{status.next_action} (but {exc})")
    return describe(run, store.completed_steps(run_id), store.effects(run_id),
                    spec_sha256=sha256_hex(spec) if spec is not None else None, now=now)
