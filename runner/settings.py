"""The engine's settings: one frozen object built once (``app/settings.py`` reads ``RATCHET_*``
into it) and passed through whole, to the engine, each lease session and each step.

A knob is read where it is used (``parts.settings.lease_seconds``,
``services.settings.sandbox``), never copied field by field into the objects between: adding
one is a field here and the line in ``app/settings.py`` that fills it.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.agents.command import MAX_LOG_BYTES, MAX_OUTPUT_BYTES
from runner.budget import Budget
from runner.ceilings import Ceilings
from runner.decisions import Limits
from runner.faults import NO_CRASH, CrashPoints
from runner.network import NetworkSettings
from runner.prices import DEFAULT_PRICES, Price
from runner.redact import NO_REDACTION, Redactor
from runner.sandbox import Sandbox


@dataclass(frozen=True)
class EngineSettings:
    home: Path  # work/ (mirrors, worktrees, git dirs), scratch/, runs/ (run directories)
    lease_seconds: float = 30.0
    agent_timeout: float = 3600.0
    approval_timeout: float | None = 7 * 24 * 3600.0
    max_attempts: int = 5  # per step, for transient failures
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    # The runner's environment (None: this process's). Agents and checks never inherit it:
    # they get PATH and the locale, plus the names allowed here (runner/agents/command.py,
    # verification/execute.py).
    host_env: Mapping[str, str] | None = None
    agent_env: tuple[str, ...] = ()  # variables every agent gets (RATCHET_AGENT_ENV)
    check_env: tuple[str, ...] = ()  # variables checks may get if asked (RATCHET_CHECK_ENV)
    agent_home_seed: tuple[Path, ...] = ()  # copied into each agent's fresh HOME
    # Dollars per million tokens by model, for CLIs that report no cost (RATCHET_AGENT_PRICES).
    agent_prices: Mapping[str, Price] = field(default_factory=lambda: DEFAULT_PRICES)
    redact: Redactor = NO_REDACTION
    default_agent_command: str | None = None
    default_agent: str | None = None  # a preset of runner/agents/presets.py
    budget: Budget = field(default_factory=Budget)  # limits a repository's config leaves unset
    crash: CrashPoints = NO_CRASH
    sandbox: Sandbox = field(default_factory=Sandbox)  # where agents and checks run
    network: NetworkSettings = field(default_factory=NetworkSettings)  # where they may connect
    max_output_bytes: int = MAX_OUTPUT_BYTES
    max_log_bytes: int = MAX_LOG_BYTES  # an agent's or a check's log on disk
    # Ceilings on what a repository's config asks for (runner/ceilings.py); None: none.
    check_concurrency: int | None = None
    check_timeout: float | None = None
    subagent_concurrency: int | None = None
    max_file_bytes: int | None = None
    max_change_bytes: int | None = None
    max_changed_files: int | None = None
    owner: str = field(
        default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
    )

    @property
    def ceilings(self) -> Ceilings:
        """The service's limits a repository's config may lower, never raise."""
        return Ceilings(budget=self.budget, check_concurrency=self.check_concurrency,
                        check_timeout=self.check_timeout,
                        subagent_concurrency=self.subagent_concurrency,
                        max_file_bytes=self.max_file_bytes,
                        max_change_bytes=self.max_change_bytes,
                        max_changed_files=self.max_changed_files)

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self.host_env is None else self.host_env

    @property
    def limits(self) -> Limits:
        """How far the runner retries on its own (``runner/decisions.py``)."""
        return Limits(self.max_attempts, self.backoff_base, self.backoff_max)

    def run_dir(self, run_id: str) -> Path:
        return self.home / "runs" / run_id

    def scratch(self, run_id: str) -> Path:
        """The run's scratch folder (one sub-folder per lease epoch)."""
        return self.home / "scratch" / run_id
