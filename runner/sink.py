"""The local sink: the effect executor for runs without GitHub.

Comments, pull-request records and check runs become files in the run directory's outbox; the
publish push goes to a local branch of the target repository. Every record carries the effect's
key (comments in a hidden ``<!-- ratchet:key=... -->`` marker, as on GitHub), so ``find``
answers for a response that was lost after the write.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from runner.effects import EffectRequest
from runner.errors import DeterministicFailure
from runner.workspace import Workspaces


def comment_marker(key: str) -> str:
    return f"<!-- ratchet:key={key} -->"


class LocalSink:
    """``EffectExecutor`` writing into ``outbox`` and pushing from ``worktree``."""

    def __init__(self, outbox: Path, workspaces: Workspaces, worktree: Path | None) -> None:
        self.outbox = outbox
        self.workspaces = workspaces
        self.worktree = worktree

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        payload = request.payload
        if request.kind == "push":
            if self.worktree is None:
                raise DeterministicFailure(f"effect {request.key}: no worktree to push from")
            self.workspaces.push(
                self.worktree, remote=payload["remote"], commit=payload["commit"],
                branch=payload["branch"], expect=payload.get("expect"),
            )
            return {"branch": payload["branch"], "commit": payload["commit"]}
        folder = self._folder(request)
        # Like a POST to GitHub, every apply creates a new record: a duplicate would show.
        path = folder / f"{time.time_ns()}-{secrets.token_hex(4)}{_suffix(request.kind)}"
        if request.kind == "comment":
            _write_atomic(path, f"{comment_marker(request.key)}\n{payload['body']}")
        else:
            _write_atomic(path, json.dumps({"key": request.key, **payload}, indent=2,
                                           sort_keys=True))
        return {"path": str(path.relative_to(self.outbox))}

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        payload = request.payload
        if request.kind == "push":
            head = self.workspaces.remote_branch(payload["remote"], payload["branch"])
            if head == payload["commit"]:
                return {"branch": payload["branch"], "commit": head}
            return None
        return next(iter(self.records(request.kind, request.key)), None)

    def records(self, kind: str, key: str) -> list[dict[str, Any]]:
        """Every record of ``kind`` carrying ``key`` (more than one would be a duplicate)."""
        folder = self.outbox / _FOLDERS.get(kind, kind)
        if not folder.is_dir():
            return []
        marker = comment_marker(key) if kind == "comment" else f'"key": {json.dumps(key)}'
        return [
            {"path": str(path.relative_to(self.outbox))}
            for path in sorted(folder.glob(f"*{_suffix(kind)}"))
            if marker in path.read_text()
        ]

    def _folder(self, request: EffectRequest) -> Path:
        if request.kind not in _FOLDERS:
            raise DeterministicFailure(
                f"effect {request.key}: the local sink has no executor for kind {request.kind!r}"
            )
        return self.outbox / _FOLDERS[request.kind]


_FOLDERS = {"comment": "comments", "pull_request": "pull-requests", "check_run": "check-runs"}


def _suffix(kind: str) -> str:
    return ".md" if kind == "comment" else ".json"


def _write_atomic(path: Path, text: str) -> None:
    """Write-then-rename with fsync: a crash leaves the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
