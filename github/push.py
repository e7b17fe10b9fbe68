"""The run's branch on GitHub: fast-forwarded from the head the run last decided, never forced.

The push itself is the runner's replay (``runner/push.py``): the decided commit rebuilt from
its recipe in the run's git dir, pushed with ``--force-with-lease`` against the head the run
last decided, each git failure classified there, the same way for a local run. This module
adds GitHub's side: git authenticates with the installation token through a credential helper
that reads it from the git call's environment (``github.gitauth``), and the token is masked in
whatever a failure says. A lookup reads the branch through REST (``GET git/ref/heads/<branch>``,
or ``git/ref/ratchet/review/<run>`` for a review ref): the effect landed when it is at the
commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from runner.effects import EffectRequest
from runner.push import replay_push
from runner.redact import Redactor
from runner.worktrees import RemoteAccess, Worktrees, full_ref

from .errors import NotFound
from .gitauth import git_credentials
from .repository import RepoAPI

# GitHub's single-ref endpoint; the ref without "refs/" is appended percent-encoded ("/" kept).
REF = "/repos/{owner}/{repo}/git/ref/"


class BranchPushes:
    """Pushes of one run's commits from ``worktree`` (its git dir) to the repository."""

    def __init__(self, api: RepoAPI, worktrees: Worktrees, worktree: Path | None) -> None:
        self.api = api
        self.worktrees = worktrees
        self.worktree = worktree

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        token = self.api.token()
        config, env = git_credentials(token, remote_url=request.payload["remote"])
        return replay_push(
            request,
            worktrees=self.worktrees,
            worktree=self.worktree,
            access=RemoteAccess(config, env),
            redact=Redactor([token]),
        )

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        payload = request.payload
        try:
            ref = self.api.get(REF + quote(full_ref(payload["branch"]).removeprefix("refs/"),
                                           safe="/"))
        except NotFound:
            return None  # the branch does not exist
        head = (ref.get("object") or {}).get("sha")
        if head != payload["commit"]:
            return None
        return {"branch": payload["branch"], "commit": head}
