"""The agent port: what the engine hands an agent backend and what it gets back.

Backends (``command.py`` first) implement ``Agent.run``; they raise ``TransientFailure`` or
``DeterministicFailure`` from ``runner.errors`` when a step did not complete, so the engine
classifies by type.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runner.usage import USAGE_FILE


@dataclass(frozen=True)
class AgentTask:
    """One agent step; the engine writes ``prompt_file`` before calling ``Agent.run``."""

    run_id: str
    phase: str  # research | specify | implement | repair | subagent
    step: str  # e.g. "research.1", "repair.2"
    worktree: Path  # cwd of the agent
    prompt: str  # full prompt text
    prompt_file: Path  # where the prompt was written
    output_dir: Path  # the folder the agent may write outside its worktree; holds ``output``
    output: Path  # absolute path of the artifact the phase must write (RATCHET_OUTPUT)
    log_file: Path  # the agent's combined stdout and stderr (written by the runner, not bound)
    timeout: float  # seconds; the whole process group is killed at the timeout
    readable: tuple[Path, ...] = ()  # extra paths the sandbox shows read-only (repo objects)
    # Seconds without output and without a worktree change before the agent is ended (None:
    # never); ``timeout`` still bounds the whole run.
    idle_timeout: float | None = None
    # Variables the phase adds to the agent's environment (a subagent's name and focus, where
    # a plan or a note goes); they never replace the runner's own RATCHET_* protocol.
    env: Mapping[str, str] = field(default_factory=dict)
    # False: the sandbox shows the worktree read-only (a research subagent reads a tree that
    # other agents read at the same time); only ``output_dir`` is writable.
    worktree_writable: bool = True
    # Hosts the repository lets its agents reach (`agent.network.allow`), within the operator's
    # bound (runner/network.py).
    network_allow: tuple[str, ...] = ()
    # Dollars the run's budget has left (None: no dollar limit): a CLI that can cap its own
    # spending is given it (``Preset.budget_option``).
    cost_left: float | None = None

    @property
    def usage_file(self) -> Path:
        """Where the agent may report its usage (RATCHET_USAGE): in its output folder."""
        return self.output_dir / USAGE_FILE


@dataclass(frozen=True)
class AgentResult:
    """A completed agent step: the output file exists, is non-empty and hashes to this."""

    exit_code: int
    duration_s: float
    output_sha256: str  # of the output file's bytes
    log_tail: str  # last ~4 KiB of the log, for evidence
    usage: Mapping[str, Any] = field(default_factory=dict)  # runner/usage.py's record
    log_bytes: int = 0  # what the agent printed in all
    log_omitted_bytes: int = 0  # what of it its capped log left out
    network_blocked: tuple[str, ...] = ()  # connections the egress proxy refused, a sentence each


class Agent(Protocol):
    """Runs one step to completion, or raises a ``StepFailure`` saying why it did not."""

    def run(self, task: AgentTask, *, cancel: threading.Event | None = None) -> AgentResult:
        """Run ``task``; stop early (``TransientFailure``) once ``cancel`` is set."""
        ...
