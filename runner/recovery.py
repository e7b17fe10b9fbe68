"""Recovering a dead holder's leftovers on this host: adopt its finished agent result, or
salvage its partial work as a patch the retried step's prompt points at.

Only an agent step's worktree is worth keeping (a runner step leaves caches, not changes), and
only one that was working on the same step. What it left is inspected before anything hashes
it: a worktree with a file no step may leave is neither adopted nor salvaged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from plumbing.files import UnsafePath, printable_path, read_beneath, write_atomic
from runner.agents.base import AgentResult, AgentTask
from runner.agents.command import read_output
from runner.agents.prompt import output_path
from runner.canonical import sha256_hex
from runner.errors import StepFailure, WorktreeError
from runner.ledger.records import Lease, NewEvent, Run
from runner.ledger.store import Store
from runner.names import EventType
from runner.steps.base import read_journal
from runner.subagents import MAX_PLAN_BYTES, PLAN_FILE, recorded_plan
from runner.workflow import PROFILES, State, is_runnable
from runner.worktrees import ChangeLimits, Worktrees

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Leftovers:
    adopted: AgentResult | None = None  # the finished agent result taken over
    salvage: str | None = None  # artifact path of an interrupted attempt's changes


@dataclass(frozen=True)
class Recovery:
    """Looks at this run's earlier worktree on this host, under the current lease."""

    store: Store
    worktrees: Worktrees
    home: Path  # Ratchet's home folder (scratch lives under it)
    max_output_bytes: int
    limits: ChangeLimits  # the repository config's: what a step may leave

    def take_over(self, run: Run, lease: Lease, *, worktree: Path, scratch: Path, base: str,
                  tree: str) -> Leftovers:
        previous = self.worktrees.previous_worktrees(run.id, lease.epoch)
        if not previous or not is_runnable(run.state) or not PROFILES[run.state].agent:
            return Leftovers()
        old = previous[0]
        old_scratch = self.home / "scratch" / run.id / old.name / run.step
        if not old_scratch.is_dir():
            return Leftovers()  # that worktree was working on an earlier step
        if recorded_plan(self.store.events(run.id), run.step) is not None:
            return Leftovers()  # its agent's result is in the ledger: only subagents are left
        findings = self.worktrees.inspect(old, self.limits)
        if findings:
            # Hashing it would read what no step may leave.
            self.store.append(lease, events=[NewEvent(
                EventType.SALVAGE_REFUSED, step=run.step, attempt=run.attempt,
                data={"from_epoch": old.name,
                      "findings": [f"{f.kind}: {printable_path(f.path)}" for f in findings[:20]]},
            )])
            return Leftovers()
        journal = read_journal(old_scratch)
        if journal is not None and journal.exit_code == 0 and self._adopt(
                run, lease, old, old_scratch, journal, worktree=worktree, scratch=scratch,
                base=base):
            return Leftovers(adopted=journal)
        leftovers = self.worktrees.diff(old, tree)
        if not leftovers:
            return Leftovers()
        path = f"salvage/{run.step}.{old.name}.patch"
        self.store.append(lease, artifacts={path: leftovers}, events=[NewEvent(
            EventType.SALVAGE_SAVED, step=run.step, attempt=run.attempt,
            data={"path": path, "from_epoch": old.name, "bytes": len(leftovers)},
        )])
        log.info("run %r: saved an interrupted step's changes as %r", run.id, path)
        return Leftovers(salvage=path)

    def _adopt(self, run: Run, lease: Lease, old: Path, old_scratch: Path,
               journal: AgentResult, *, worktree: Path, scratch: Path, base: str) -> bool:
        """Take a finished agent step's output and worktree instead of running it again."""
        phase = State(run.state)
        relative = output_path(phase.value, run.step_id.n if phase is State.REPAIR else None)
        old_task = AgentTask(
            run_id=run.id, phase=phase.value, step=run.step, worktree=old, prompt="",
            prompt_file=old_scratch / "prompt.md", output_dir=old_scratch / "out",
            output=old_scratch / "out" / relative, log_file=old_scratch / "adopted.log",
            timeout=0,
        )
        try:
            content = read_output(old_task, limit=self.max_output_bytes)
        except StepFailure:
            return False
        if sha256_hex(content) != journal.output_sha256:
            return False
        write_atomic(scratch / run.step / "out" / relative, content)
        if phase is State.RESEARCH:  # its subagent plan is part of its result
            try:
                plan = read_beneath(old_scratch / "out", PLAN_FILE, limit=MAX_PLAN_BYTES)
                write_atomic(scratch / run.step / "out" / PLAN_FILE, plan)
            except UnsafePath as exc:
                if exc.reason != "missing":
                    return False
        try:
            snapshot = self.worktrees.snapshot(old, base)
            self.worktrees.restore(worktree, base, snapshot.patch, snapshot.tree)
        except WorktreeError as exc:
            log.warning("run %r: cannot adopt %r's worktree: %s", run.id, old.name, exc)
            return False
        self.store.append(lease, events=[NewEvent(
            EventType.AGENT_RESULT_ADOPTED, step=run.step, attempt=run.attempt,
            data={"from_epoch": old.name, "output_sha256": journal.output_sha256},
        )])
        return True
