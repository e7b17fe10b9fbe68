"""Where the parts meet: the engine every command, worker and service uses, built once from
settings (the local sink speaking the command line's words; the local authorizer)."""

from __future__ import annotations

from pathlib import Path

from app.settings import Settings
from app.words import CLI_WORDS
from runner.effects import EffectExecutor
from runner.engine import Engine
from runner.ledger.records import Run
from runner.ledger.store import Store
from runner.session import OnChange
from runner.sink import LocalSink
from runner.workspace import Workspaces


def build_engine(store: Store, settings: Settings, *, on_change: OnChange | None = None) -> Engine:
    engine_settings = settings.engine_settings()
    workspaces = Workspaces(engine_settings.home / "work")

    def local_sink(run: Run, worktree: Path | None) -> EffectExecutor:
        outbox = run.params.get("outbox") or engine_settings.run_dir(run.id) / "outbox"
        return LocalSink(Path(outbox), workspaces, worktree, CLI_WORDS)

    return Engine(store, engine_settings, executor_for=local_sink, workspaces=workspaces,
                  on_change=on_change)
