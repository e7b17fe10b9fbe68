"""What a step receives and returns: a frozen input, the services it may use, its result.

A step reads its ``StepInput`` (the run, its checkpointed history and tree, its worktree),
does its work through ``StepServices`` (the ledger for reading, git, the agent, the sandbox)
and returns a ``StepResult``: the outcome the workflow table maps, the checkpoint's record,
events, artifacts, and the effects it decided (sent after the session commits them). A new
tree flows back only through the record (its ``tree`` and ``patch``, read by the next step's
input). A step that did not complete raises a ``StepFailure`` subclass.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plumbing.files import write_atomic
from runner.agents.base import Agent, AgentResult
from runner.config import RepositoryConfig
from runner.effects import EffectRequest, effect_key
from runner.errors import CorruptArtifact
from runner.ledger.records import Checkpoint, Lease, NewEvent, Run
from runner.ledger.store import Store
from runner.names import EffectKind, StepId
from runner.settings import EngineSettings
from runner.workflow import Outcome
from runner.worktrees import NO_ACCESS, RemoteAccess, Worktrees

JOURNAL = "result.json"  # the agent's exit, written by the runner once the agent has exited


@dataclass(frozen=True)
class StepServices:
    """What steps may use, fixed for a lease session."""

    store: Store  # for reading history and artifacts, and appending check results
    worktrees: Worktrees
    settings: EngineSettings  # the engine's, whole: a step reads the knobs it uses
    agent: Callable[[], Agent]
    agent_timeout: float  # this step's: the setting, cut to the time the budget has left
    lease: Callable[[], Lease]  # the current (renewed) lease
    cancel: threading.Event  # set when the lease is lost or a cancel arrives
    access: RemoteAccess = NO_ACCESS  # how git reaches the run's remote
    # The run's budget when it is what bounds ``agent_timeout`` (an agent stopped then has
    # spent it: an authority stop, not a timeout to retry); runner/budget.py.
    budget_bound: Mapping[str, Any] | None = None
    # Dollars the run's budget has left before this step (None: no dollar limit), for a CLI
    # that caps its own spending, and the limit as ``bound_data`` (an agent that spent it all
    # stopped at the budget: an authority stop, not a failure).
    cost_left: float | None = None
    cost_bound: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class StepInput:
    """One step's starting point, as the ledger and the rebuilt worktree say."""

    run: Run
    history: tuple[Checkpoint, ...]
    worktree: Path
    scratch: Path  # this lease epoch's scratch folder for the run
    tree: str  # the checkpointed worktree tree hash
    patch_sha: str | None  # artifact of the checkpointed patch against the base
    config: RepositoryConfig  # read at the base revision by the queued step
    adopted: AgentResult | None = None  # a dead holder's finished agent result for this step
    salvage: str | None = None  # an interrupted attempt's changes, saved as this artifact

    @property
    def step(self) -> StepId:
        return self.run.step_id

    @property
    def base(self) -> str:
        assert self.run.base_revision, "run has no base revision"
        return self.run.base_revision

    @property
    def diff_base(self) -> str:
        """What the change is measured against: the base, or a pull request's base commit
        (its run's base revision is the head it verifies)."""
        return self.run.origin.diff_base or self.base

    @property
    def branch(self) -> str:
        return self.run.branch

    @property
    def remote(self) -> str:
        """Where the run's branch is fetched from and pushed to: its repository."""
        return self.run.repo

    def latest(self, state: str) -> Checkpoint | None:
        for checkpoint in reversed(self.history):
            if StepId.parse(checkpoint.step).state == state:
                return checkpoint
        return None

    def count(self, state: str) -> int:
        return sum(1 for c in self.history if StepId.parse(c.step).state == state)

    def effect(self, kind: EffectKind, name: str, payload: Mapping[str, Any]) -> EffectRequest:
        """An effect of this step, keyed ``<run>:<step>:<name>``."""
        key = effect_key(self.run.id, self.run.step, name)
        return EffectRequest(key, self.run.id, self.run.step, kind, payload)


@dataclass(frozen=True)
class StepResult:
    outcome: Outcome
    record: Mapping[str, Any] = field(default_factory=dict)  # the checkpoint's result
    events: tuple[NewEvent, ...] = ()
    artifacts: Mapping[str, bytes] = field(default_factory=dict)
    effects: tuple[EffectRequest, ...] = ()
    reason: str | None = None
    head_revision: str | None = None


def redacted_usage(services: StepServices, usage: Mapping[str, Any]) -> dict[str, Any]:
    """Agent-written values are evidence: redacted before they are stored."""
    redact = services.settings.redact
    return json.loads(redact(json.dumps(dict(usage), sort_keys=True, default=str)))


def read_patch(store: Store, run_id: str, patch_sha: str | None) -> bytes:
    """The checkpointed patch by its hash; a corrupt one names the run and what it is."""
    if not patch_sha:
        return b""
    try:
        return store.get_artifact(patch_sha)
    except CorruptArtifact as exc:
        raise exc.about(run_id, "implementation/patch.diff") from None


def restore_tree(services: StepServices, inp: StepInput) -> None:
    """Rebuild the worktree at the checkpointed tree, ignored files removed too."""
    patch = read_patch(services.store, inp.run.id, inp.patch_sha)
    services.worktrees.restore(inp.worktree, inp.base, patch, inp.tree)


def ensure_tree(services: StepServices, inp: StepInput) -> None:
    """Put the worktree back at the checkpointed tree if anything drifted (e.g. caches). What
    git must not read or no step may leave (a check's FIFO, a 6 GB file) is never hashed to
    find out: it is removed unread by the rebuild."""
    worktrees = services.worktrees
    if (worktrees.inspect(inp.worktree, inp.config.limits)
            or worktrees.tree_of(inp.worktree) != inp.tree):
        restore_tree(services, inp)


def artifact_text(services: StepServices, run_id: str, path: str) -> str | None:
    data = services.store.read_artifact(run_id, path)
    return None if data is None else data.decode(errors="replace")


def write_journal(folder: Path, result: AgentResult) -> None:
    """Record the agent's exit durably, so a crash before the checkpoint does not rerun it."""
    write_atomic(folder / JOURNAL, json.dumps({
        "exit_code": result.exit_code, "duration_s": result.duration_s,
        "output_sha256": result.output_sha256, "log_tail": result.log_tail,
        "usage": dict(result.usage), "log_bytes": result.log_bytes,
        "log_omitted_bytes": result.log_omitted_bytes,
        "network_blocked": list(result.network_blocked),
    }).encode())


def read_journal(folder: Path) -> AgentResult | None:
    """The journal of a finished agent; its usage comes with it, so a step adopted after a
    crash records what its agent spent, once."""
    try:
        data = json.loads((folder / JOURNAL).read_text())
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return AgentResult(data["exit_code"], data["duration_s"], data["output_sha256"],
                           data["log_tail"], usage, int(data.get("log_bytes", 0)),
                           int(data.get("log_omitted_bytes", 0)),
                           tuple(str(s) for s in data.get("network_blocked") or ()))
    except (OSError, ValueError, KeyError, AttributeError):
        return None


def scratch_of(inp: StepInput) -> Path:
    folder = inp.scratch / inp.run.step
    folder.mkdir(parents=True, exist_ok=True)
    return folder

