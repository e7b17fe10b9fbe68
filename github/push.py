"""The run's branch on GitHub: fast-forwarded from the head the run last decided, never forced.

A push effect names the commit and the recipe that rebuilds it (tree, parent, message, date),
so any host can push it: the commit is rebuilt in the run's git dir (the parent fetched from
the remote when this host lacks it) and must hash to the decided sha. The push uses
``--force-with-lease`` against ``expect`` (the head the run last decided; None: the branch must
not exist): if someone else moved the branch, git refuses and the effect stops as an
``AuthorityFailure``; a person decides, the run never forces over their work.

git authenticates with the installation token through a credential helper that reads it from
the git call's environment (``github.gitauth``). A lookup reads the branch through REST
(``GET git/ref/heads/<branch>``): the effect landed when the branch is at the commit.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from runner.effects import EffectRequest
from runner.errors import (
    AmbiguousFailure,
    AuthorityFailure,
    DeterministicFailure,
    TransientFailure,
)
from runner.redact import Redactor
from runner.workspace import GitCommandFailed, PushRejected, RemoteAccess, Workspaces

from .errors import NotFound
from .gitauth import git_credentials
from .repository import RepoAPI

log = logging.getLogger(__name__)

# GitHub's single-ref endpoint; the branch is appended percent-encoded (its "/" kept).
BRANCH_REF = "/repos/{owner}/{repo}/git/ref/heads/"
# What git prints for a ref the remote refused by rule (a protected branch, a pre-receive hook).
REMOTE_REJECTED = b"[remote rejected]"


class BranchPushes:
    """Pushes of one run's commits from ``worktree`` (its git dir) to the repository."""

    def __init__(self, api: RepoAPI, workspaces: Workspaces, worktree: Path | None) -> None:
        self.api = api
        self.workspaces = workspaces
        self.worktree = worktree

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        if self.worktree is None:
            raise DeterministicFailure(
                f"effect {request.key}: no worktree to push from; the run's workspace must be"
                " checked out before its push is sent"
            )
        payload = request.payload
        remote, branch = payload["remote"], payload["branch"]
        token = self.api.token()
        config, env = git_credentials(token, remote_url=remote)
        access = RemoteAccess(config, env)
        redact = Redactor([token])
        commit = self._rebuild(request, access, redact)
        try:
            self.workspaces.push(
                self.worktree,
                remote=remote,
                commit=commit,
                branch=branch,
                expect=payload.get("expect"),
                access=access,
            )
        except PushRejected as exc:
            raise AuthorityFailure(
                f"branch {branch} moved under the run (someone else pushed): {redact(str(exc))};"
                " the run never forces over it. Decide what to keep, then retry or cancel it",
                evidence={"branch": branch, "expected": exc.expected, "actual": exc.actual},
            ) from exc
        except GitCommandFailed as exc:
            raise _push_failure(request, branch, exc, redact) from exc
        return {"branch": branch, "commit": commit}

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        payload = request.payload
        try:
            ref = self.api.get(BRANCH_REF + quote(payload["branch"], safe="/"))
        except NotFound:
            return None  # the branch does not exist
        head = (ref.get("object") or {}).get("sha")
        if head != payload["commit"]:
            return None
        return {"branch": payload["branch"], "commit": head}

    def _rebuild(self, request: EffectRequest, access: RemoteAccess, redact: Redactor) -> str:
        """The decided commit, rebuilt from its recipe in the run's git dir."""
        assert self.worktree is not None
        payload, recipe = request.payload, request.payload["recipe"]
        try:
            if not self.workspaces.has_commit(self.worktree, recipe["parent"]):
                # Decided on another host: the parent was pushed from there.
                self.workspaces.fetch_branch(
                    self.worktree, remote=payload["remote"], branch=payload["branch"], access=access
                )
        except GitCommandFailed as exc:
            raise TransientFailure(
                f"effect {request.key}: could not fetch {payload['branch']} for the parent"
                f" {recipe['parent']}: {redact(str(exc.stderr))[:500]};"
                " retry with backoff",
                evidence={"branch": payload["branch"], "parent": recipe["parent"]},
            ) from exc
        try:
            commit = self.workspaces.commit(
                self.worktree,
                tree=recipe["tree"],
                parent=recipe["parent"],
                message=recipe["message"],
                when=datetime.fromtimestamp(recipe["date"], tz=UTC),
            )
        except GitCommandFailed as exc:
            raise DeterministicFailure(
                f"effect {request.key}: the commit's tree {recipe['tree']} or parent"
                f" {recipe['parent']} is not in the run's git dir; redo the step that decided it",
                evidence={"tree": recipe["tree"], "parent": recipe["parent"]},
            ) from exc
        if commit != payload["commit"]:
            raise DeterministicFailure(
                f"effect {request.key}: the commit rebuilt from its recipe is {commit}, the"
                f" decision named {payload['commit']}; the checkpoint or the tree is wrong"
            )
        return commit


def _push_failure(
    request: EffectRequest, branch: str, exc: GitCommandFailed, redact: Redactor
) -> AuthorityFailure | AmbiguousFailure:
    """A refused ref is a rule (a person decides); anything else may have half-happened."""
    output = f"{exc.stdout.decode(errors='replace')}\n{exc.stderr}"  # stderr is text already
    said = redact(output).strip()[-500:]
    evidence = {"branch": branch, "git": said}
    if REMOTE_REJECTED in exc.stdout:
        return AuthorityFailure(
            f"GitHub refused the push of {branch} ({said}); a branch rule or hook protects it:"
            " lift the rule or choose another branch, then retry the run",
            evidence=evidence,
        )
    return AmbiguousFailure(
        f"effect {request.key}: git push of {branch} failed ({said}); the branch may or may"
        " not have moved: it is read before the push is sent again",
        evidence=evidence,
    )
