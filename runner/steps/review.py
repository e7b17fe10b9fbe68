"""The run's branch and its review: commits the runner decides, and the effects that show them.

The run's branch only moves forward: each commit's parent is the head the run last decided,
and each push is a fast-forward from it (``--force-with-lease`` against that head), so someone
else's push is never forced over. Commits are deterministic (author, dates and message come
from the run), so a replayed decision names the same sha and an executor on another host can
rebuild the commit from its recipe before pushing.

After specify: an empty commit on the base carrying the spec's hash, a draft pull request whose
body is the spec, and a ``ratchet/spec`` check run asking for approval. After each
verification: the candidate commit and a ``ratchet/verify`` check run on it (``verify.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from runner.checkruns import SPEC_CHECK, CheckRunId
from runner.effects import EffectRequest
from runner.names import EffectKind
from runner.neutralise import strip_controls
from runner.results import branch_head, pushed_head, pushed_ref
from runner.steps.base import StepInput, StepServices


@dataclass(frozen=True)
class Review:
    commit: str
    effects: tuple[EffectRequest, ...]


def push_commit(inp: StepInput, services: StepServices, *, tree: str, message: str,
                ref: str | None = None) -> tuple[str, EffectRequest]:
    """Decide the next commit of the run (on the last one it decided) and the push that
    fast-forwards ``ref`` to it: the run's branch, or (None) the review ref a change waits on
    until its diff is approved (``runner/protected.py``)."""
    history = list(inp.history)
    previous = branch_head(history)
    parent = previous or inp.base
    date = inp.run.created_at
    target = ref or inp.branch
    if previous and not services.worktrees.has_commit(inp.worktree, previous):
        # Another host decided (and pushed) the head: its commits come from the remote.
        services.worktrees.fetch_branch(inp.worktree, remote=inp.remote,
                                         branch=pushed_ref(history) or inp.branch,
                                         access=services.access)
    commit = services.worktrees.commit(
        inp.worktree, tree=tree, parent=parent, message=message,
        when=datetime.fromtimestamp(date, tz=UTC),
    )
    push = inp.effect(EffectKind.PUSH, "push", {
        "remote": inp.remote, "branch": target, "commit": commit,
        "expect": pushed_head(history, None if ref is None else target),
        "recipe": {"tree": tree, "parent": parent, "message": message, "date": date},
    })
    return commit, push


def trailers(inp: StepInput, spec_sha256: str) -> str:
    return f"Ratchet-Run: {inp.run.id}\nRatchet-Spec: {spec_sha256}\nRatchet-Step: {inp.run.step}\n"


def open_review(inp: StepInput, services: StepServices, *, spec_text: str,
                spec_sha256: str) -> Review:
    """The spec's review: a commit on the base naming it, a draft pull request, a check run."""
    message = f"Specification: {strip_controls(inp.run.title)}\n\n{trailers(inp, spec_sha256)}"
    commit, push = push_commit(inp, services, tree=inp.tree, message=message)
    pull = inp.effect(EffectKind.PULL_REQUEST, "pull-request", pull_request_payload(
        inp, spec_text=spec_text, spec_sha256=spec_sha256, draft=True))
    check = inp.effect(EffectKind.CHECK_RUN, "spec-check", {
        "run": inp.run.id, "name": SPEC_CHECK, "head_sha": commit,
        # The spec's hash in the id: its "Approve spec" button approves exactly this spec.
        "external_id": str(CheckRunId.for_spec(inp.run.id, commit, spec_sha256)),
        "conclusion": "action_required",
        "review": {"spec_sha256": spec_sha256},
        "actions": [{"identifier": "approve", "label": "Approve spec",
                     "description": f"Approve spec {spec_sha256[:12]}"}],
    })
    return Review(commit, (push, pull, check))


def pull_request_payload(inp: StepInput, *, spec_text: str, spec_sha256: str, draft: bool,
                         summary: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "run": inp.run.id, "branch": inp.branch,
        "base": inp.run.origin.base_branch or inp.base,
        "title": strip_controls(inp.run.title),
        "draft": draft, "spec": {"sha256": spec_sha256, "text": spec_text},
    }
    if summary:
        payload["summary"] = summary
    return payload
