"""A push effect replayed on any host: the decided commit rebuilt from its recipe, then pushed.

A push effect names the commit and the recipe that rebuilds it (tree, parent, message, date),
so any host can push it: the commit is rebuilt in the run's git dir (the parent fetched from
the remote when this host lacks it) and must hash to the decided sha. The push uses
``--force-with-lease`` against ``expect`` (the head the run last decided; None: the branch must
not exist): if someone else moved the branch, git refuses and the effect stops as an
``AuthorityFailure``; a person decides, the run never forces over their work.

Both executors send pushes through ``replay_push`` (the local sink, ``runner/sink.py``, and
GitHub's, ``github/push.py``, which adds the installation's credentials), so a git failure is
classified once: a parent that cannot be fetched is transient, a recipe that does not rebuild
the decided commit is deterministic, a ref the remote refused by rule is an authority decision,
and any other failed push is ambiguous (the branch may have moved: it is read before a resend).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.effects import EffectRequest
from runner.errors import (
    AmbiguousFailure,
    AuthorityFailure,
    DeterministicFailure,
    TransientFailure,
)
from runner.redact import NO_REDACTION, Redactor
from runner.worktrees import NO_ACCESS, GitCommandFailed, PushRejected, RemoteAccess, Worktrees

# What git prints for a ref the remote refused by rule (a protected branch, a pre-receive hook).
REMOTE_REJECTED = b"[remote rejected]"
# What GitHub says when an App without the `workflows` permission pushes a workflow change (to
# any ref, the review ref of a protected change included).
WORKFLOWS_PERMISSION = b"without `workflows` permission"


def replay_push(
    request: EffectRequest,
    *,
    worktrees: Worktrees,
    worktree: Path | None,
    access: RemoteAccess = NO_ACCESS,
    redact: Redactor = NO_REDACTION,
) -> dict[str, Any]:
    """Push the commit ``request`` decided from ``worktree``'s git dir; returns its identity.

    ``access`` authenticates git to the remote, ``redact`` masks its secrets in what a failure
    says. Raises the ``StepFailure`` the module docstring names for each way git fails.
    """
    if worktree is None:
        raise DeterministicFailure(
            f"effect {request.key}: no worktree to push from; the run's workspace must be"
            " checked out before its push is sent"
        )
    payload = request.payload
    branch = payload["branch"]
    commit = _rebuild(request, worktrees, worktree, access, redact)
    try:
        worktrees.push(
            worktree,
            remote=payload["remote"],
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
        raise classify_push_failure(request, exc, redact=redact) from exc
    return {"branch": branch, "commit": commit}


def classify_push_failure(
    request: EffectRequest, exc: GitCommandFailed, *, redact: Redactor = NO_REDACTION
) -> AuthorityFailure | AmbiguousFailure:
    """A refused ref is a rule (a person decides); anything else may have half-happened."""
    branch = request.payload["branch"]
    output = f"{exc.stdout.decode(errors='replace')}\n{exc.stderr}"  # stderr is text already
    said = redact(output).strip()[-500:]
    evidence = {"branch": branch, "git": said}
    if WORKFLOWS_PERMISSION in exc.stdout:
        return AuthorityFailure(
            f"the remote refused the push of {branch}: the change edits .github/workflows and"
            " the GitHub App lacks the workflows permission; grant it Workflows: write (and"
            " accept it on the installation) to let agents edit workflows, or cancel the run",
            evidence=evidence,
        )
    if REMOTE_REJECTED in exc.stdout:
        return AuthorityFailure(
            f"the remote refused the push of {branch} ({said}); a branch rule or hook protects"
            " it: lift the rule or choose another branch, then retry the run",
            evidence=evidence,
        )
    return AmbiguousFailure(
        f"effect {request.key}: git push of {branch} failed ({said}); the branch may or may"
        " not have moved: it is read before the push is sent again",
        evidence=evidence,
    )


def _rebuild(
    request: EffectRequest,
    worktrees: Worktrees,
    worktree: Path,
    access: RemoteAccess,
    redact: Redactor,
) -> str:
    """The decided commit, rebuilt from its recipe in the run's git dir."""
    payload, recipe = request.payload, request.payload["recipe"]
    try:
        if not worktrees.has_commit(worktree, recipe["parent"]):
            # Decided on another host: the parent was pushed from there.
            # A commit waiting on a review ref is pushed to the branch from there.
            worktrees.fetch_branch(worktree, remote=payload["remote"],
                                   branch=payload.get("fetch") or payload["branch"],
                                   access=access)
    except GitCommandFailed as exc:
        raise TransientFailure(
            f"effect {request.key}: could not fetch {payload['branch']} for the parent"
            f" {recipe['parent']}: {redact(str(exc.stderr))[:500]}; retry with backoff",
            evidence={"branch": payload["branch"], "parent": recipe["parent"]},
        ) from exc
    try:
        commit = worktrees.commit(
            worktree,
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
