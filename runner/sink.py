"""The local sink: the effect executor for runs without a forge, with a forge's meaning.

Records are files in the run's outbox folder, named like a forge's ids (a new name per
created object), so a duplicate would show as a second file. Upserts find their record
first: the ``tracking`` comment by its name marker, a pull request by branch, a check run by
``external_id``; they update it in place and remember every effect key applied to it. The push
is the runner's replay (``runner/push.py``, GitHub's too): it fast-forwards a branch of the
target repository with ``--force-with-lease`` from the head the run last decided, and a git
failure is classified as it is on GitHub. Text is rendered from the payload's data with the
edge's vocabulary, so a local run shows what a forge run would post.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

from plumbing.files import write_atomic
from runner.checkruns import render_check_run
from runner.effects import EffectRequest
from runner.errors import DeterministicFailure
from runner.names import EffectKind
from runner.push import replay_push
from runner.render import (
    Vocabulary,
    key_marker,
    name_marker,
    render_pull_request,
    render_reply,
    render_tracking,
)
from runner.worktrees import Worktrees

# Folder of each kind of record in the outbox.
FOLDERS = {
    EffectKind.COMMENT: "comments", EffectKind.REPLY: "comments",
    EffectKind.REACTION: "reactions", EffectKind.PULL_REQUEST: "pull-requests",
    EffectKind.CHECK_RUN: "check-runs",
}
# UTF-8 bytes of a check run's summary and text shown (GitHub's limit in characters): a local
# run shows what a GitHub run would post.
CHECK_RUN_TEXT_LIMIT = 65_535


class LocalSink:
    """``EffectExecutor`` writing into ``outbox`` and pushing from ``worktree``'s git dir."""

    def __init__(self, outbox: Path, worktrees: Worktrees, worktree: Path | None,
                 words: Vocabulary) -> None:
        self.outbox = outbox
        self.worktrees = worktrees
        self.worktree = worktree
        self.words = words

    # -- the port ------------------------------------------------------------------------------

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        kind = request.kind
        if kind is EffectKind.PUSH:
            return self._push(request)
        if kind is EffectKind.COMMENT:
            return self._upsert_comment(request)
        if kind is EffectKind.REPLY:
            body = render_reply(request.payload, self.words)
            return self._create(request, f"{key_marker(request.key)}\n{body}", ".md")
        if kind is EffectKind.REACTION:
            return self._create(request, _json({"key": request.key, **request.payload}), ".json")
        if kind is EffectKind.PULL_REQUEST:
            return self._upsert_record(request, "branch", self._pull_request(request))
        if kind is EffectKind.CHECK_RUN:
            return self._upsert_record(request, "external_id", self._check_run(request))
        raise DeterministicFailure(f"effect {request.key}: no local executor for {kind!r}")

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        payload = request.payload
        if request.kind is EffectKind.PUSH:
            head = self.worktrees.remote_branch(payload["remote"], payload["branch"])
            if head != payload["commit"]:
                return None
            return {"branch": payload["branch"], "commit": head}
        if request.kind is EffectKind.COMMENT:
            found = self._record_with(FOLDERS[request.kind], name_marker(self._name(request)))
            if found is not None and key_marker(request.key) in found[1]:
                return self._identity(found[0])
            return None
        if request.kind in {EffectKind.REPLY}:
            found = self._record_with(FOLDERS[request.kind], key_marker(request.key))
            return None if found is None else self._identity(found[0])
        found = self._record_with(FOLDERS[request.kind], json.dumps(request.key))
        return None if found is None else self._identity(found[0])

    # -- records -------------------------------------------------------------------------------

    def records(self, kind: EffectKind) -> list[Path]:
        """Every record of ``kind``'s folder, oldest first (a duplicate would be one more)."""
        folder = self.outbox / FOLDERS[kind]
        return sorted(folder.iterdir()) if folder.is_dir() else []

    def _create(self, request: EffectRequest, text: str, suffix: str) -> dict[str, Any]:
        # Like a POST to a forge, every create makes a new record: a duplicate would show.
        folder = self.outbox / FOLDERS[request.kind]
        path = folder / f"{time.time_ns()}-{secrets.token_hex(4)}{suffix}"
        write_atomic(path, text.encode())
        return self._identity(path)

    def _record_with(self, folder: str, needle: str) -> tuple[Path, str] | None:
        directory = self.outbox / folder
        if not directory.is_dir():
            return None
        for path in sorted(directory.iterdir()):
            text = path.read_text()
            if needle in text:
                return path, text
        return None

    def _identity(self, path: Path) -> dict[str, Any]:
        return {"path": str(path.relative_to(self.outbox))}

    @staticmethod
    def _name(request: EffectRequest) -> str:
        return f"{request.run_id}/{request.payload['name']}"

    def _upsert_comment(self, request: EffectRequest) -> dict[str, Any]:
        name = self._name(request)
        body = render_tracking(request.payload["view"], self.words)
        text = f"{name_marker(name)}\n{key_marker(request.key)}\n{body}"
        found = self._record_with(FOLDERS[request.kind], name_marker(name))
        if found is None:
            return self._create(request, text, ".md")
        write_atomic(found[0], text.encode())  # edited in place, like a PATCH
        return self._identity(found[0])

    def _upsert_record(self, request: EffectRequest, identity: str,
                       record: dict[str, Any]) -> dict[str, Any]:
        needle = f'"{identity}": {json.dumps(record[identity])}'
        found = self._record_with(FOLDERS[request.kind], needle)
        if found is None:
            return self._create(request, _json({**record, "keys": [request.key]}), ".json")
        existing = json.loads(found[1])
        keys = [*existing.get("keys", []), request.key]
        write_atomic(found[0], _json({**existing, **record, "keys": keys}).encode())
        return self._identity(found[0])

    def _pull_request(self, request: EffectRequest) -> dict[str, Any]:
        payload = request.payload
        return {"branch": payload["branch"], "base": payload["base"], "title": payload["title"],
                "draft": payload["draft"], "body": render_pull_request(payload, self.words)}

    def _check_run(self, request: EffectRequest) -> dict[str, Any]:
        payload = request.payload
        shown = render_check_run(payload, self.words, limit=CHECK_RUN_TEXT_LIMIT)
        output: dict[str, Any] = {"title": shown.title, "summary": shown.summary}
        if shown.text:
            output["text"] = shown.text
        if shown.annotations:
            output["annotations"] = [dict(a) for a in shown.annotations]
        return {"name": payload["name"], "head_sha": payload["head_sha"],
                "external_id": payload["external_id"], "status": "completed",
                "conclusion": payload["conclusion"], "output": output}

    def _push(self, request: EffectRequest) -> dict[str, Any]:
        return replay_push(request, worktrees=self.worktrees, worktree=self.worktree)


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"
