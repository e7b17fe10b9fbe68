"""Settings, read once at start-up from ``RATCHET_*`` environment variables into one object."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from runner.engine import EngineSettings
from runner.faults import CrashPoints
from runner.redact import Redactor

# Variables that configure Ratchet itself: none of them reaches an agent's environment.
_PREFIX = "RATCHET_"


def default_home() -> Path:
    state = os.environ.get("XDG_STATE_HOME")
    return (Path(state) if state else Path.home() / ".local" / "state") / "ratchet"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=_PREFIX, extra="ignore")

    home: Path = Field(default_factory=default_home)
    store_url: str | None = None  # sqlite:///PATH or postgresql://...; default $home/ratchet.db
    broker_url: str | None = None  # redis:// or amqp://; unset: in-process StubBroker
    queue: str = "ratchet"  # Dramatiq queue name and Redis key namespace
    shutdown_seconds: float = Field(600.0, gt=0)  # SIGTERM: how long a worker may finish
    threads: int = Field(4, ge=1)  # in-process worker threads of `ratchet serve`
    agent_command: str | None = None
    lease_seconds: float = Field(30.0, gt=0)
    reap_seconds: float = Field(5.0, gt=0)
    agent_timeout: float = Field(3600.0, gt=0)
    approval_timeout: float = Field(7 * 24 * 3600.0, gt=0)
    max_attempts: int = Field(5, ge=1)
    crash_at: str | None = None  # failure-injection tests only (runner/faults.py)

    @property
    def ledger_url(self) -> str:
        return self.store_url or str(self.home / "ratchet.db")

    def engine_settings(self) -> EngineSettings:
        return EngineSettings(
            home=self.home,
            lease_seconds=self.lease_seconds,
            agent_timeout=self.agent_timeout,
            approval_timeout=self.approval_timeout,
            max_attempts=self.max_attempts,
            child_env=child_environment(os.environ),
            redact=Redactor.from_environment(os.environ),
            default_agent_command=self.agent_command,
            crash=CrashPoints(self.crash_at),
        )


class SettingsError(Exception):
    """A RATCHET_* variable has a value that cannot be used; the message names it."""


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            f"{_PREFIX}{'_'.join(str(p) for p in err['loc']).upper()}: {err['msg']}"
            for err in exc.errors()
        )
        raise SettingsError(f"invalid settings: {problems}") from None


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of agents and checks: ours without Ratchet's own (possibly secret)
    settings."""
    return {k: v for k, v in environ.items() if not k.startswith(_PREFIX)}
