"""Typed checkpoint results: what each kind of step recorded, read back by name, not by key.

A checkpoint stores its result as canonical JSON (``Checkpoint.result``); these models are the
only way the runner reads it. Unknown fields are ignored, so a newer runner's records stay
readable by an older one; missing required fields raise ``ValidationError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from runner.config import RepositoryConfig
from runner.ledger.records import Checkpoint
from runner.names import StepId

R = TypeVar("R", bound="StepRecord")


class StepRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    outcome: str

    @classmethod
    def of(cls: type[R], checkpoint: Checkpoint) -> R:
        return cls.model_validate(checkpoint.result)


class TreeRecord(StepRecord):
    """A step after which the worktree is known: its tree hash and the patch from the base."""

    tree: str
    patch: str | None = None  # artifact sha256 of the patch; None: the base tree itself
    commit: str | None = None  # the run's branch head decided by this step (pushed after it)


class PreparedRecord(TreeRecord):
    """The queued step: the repository config read at the base, and the base tree."""

    config: dict[str, Any]
    base: str
    budget: dict[str, Any] | None = None  # the run's budget, fixed here (runner/budget.py)
    limited: list[str] = []  # what the config asked above the service's ceilings, lowered


class FailingTestRecord(BaseModel):
    """A failing test a verification named: where, and its message (cut)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    file: str | None = None
    line: int | None = None
    message: str = ""


class FailingCheckRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    command: str
    status: str
    exit_code: int | None
    log_tail: str
    tests: list[FailingTestRecord] = []  # recorded since failing tests are named


class VerifyRecord(TreeRecord):
    """Verification of a tree: the plan's hash, the conclusion, each check's result."""

    plan: str
    conclusion: str
    results: list[dict[str, Any]]
    failing: list[FailingCheckRecord]
    sandbox: str = "bwrap"


class DiffRecord(BaseModel):
    """A verified change that waits for a person to approve its diff (``runner/protected.py``):
    its hash, the protected paths it touches, and the ref its commit waits on when it is held
    for review before the push (None: it was pushed to the run's branch)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    sha256: str
    base_tree: str
    tree: str
    paths: list[str] = []
    ref: str | None = None
    recipe: dict[str, Any] | None = None  # the commit's (runner/push.py), to push it from ref


def diff_to_approve(history: Sequence[Checkpoint]) -> DiffRecord | None:
    """The diff the latest verification asks a person to approve (None: none asked)."""
    for checkpoint in reversed(history):
        if StepId.parse(checkpoint.step).state == "verify":
            diff = checkpoint.result.get("diff")
            return DiffRecord.model_validate(diff) if diff else None
    return None


def approved_diff(history: Sequence[Checkpoint]) -> str | None:
    """The hash of the diff a person approved last (None: none was)."""
    for checkpoint in reversed(history):
        if checkpoint.result.get("diff_approved"):
            return str(checkpoint.result["diff_approved"])
    return None


def prepared_result(history: Sequence[Checkpoint]) -> dict[str, Any] | None:
    """The queued step's record: the config and the budget read at the base."""
    for checkpoint in history:
        if "config" in checkpoint.result:
            return dict(checkpoint.result)
    return None


def repository_config(history: Sequence[Checkpoint]) -> RepositoryConfig:
    """The repository config the queued step read at the base (defaults before it ran)."""
    for checkpoint in history:
        if "config" in checkpoint.result:
            return RepositoryConfig.model_validate(PreparedRecord.of(checkpoint).config)
    return RepositoryConfig()


def last_tree(history: list[Checkpoint]) -> TreeRecord | None:
    """The most recent checkpoint that recorded the worktree's tree."""
    for checkpoint in reversed(history):
        if "tree" in checkpoint.result:
            return TreeRecord.of(checkpoint)
    return None


def branch_head(history: list[Checkpoint]) -> str | None:
    """The run's head as last decided (the commit of the latest step that made one), on its
    branch or on the review ref (``pushed_head`` says which)."""
    for checkpoint in reversed(history):
        commit = checkpoint.result.get("commit")
        if commit:
            return str(commit)
    return None


def pushed_ref(history: list[Checkpoint]) -> str | None:
    """The ref the latest commit was pushed to when it was not the run's branch (a review ref,
    ``runner/protected.py``); None: the branch."""
    for checkpoint in reversed(history):
        if checkpoint.result.get("commit"):
            return checkpoint.result.get("ref")
    return None


def pushed_head(history: list[Checkpoint], ref: str | None) -> str | None:
    """The latest commit pushed to ``ref`` (None: the run's branch), what its next push leases
    against."""
    for checkpoint in reversed(history):
        commit = checkpoint.result.get("commit")
        if commit and checkpoint.result.get("ref") == ref:
            return str(commit)
    return None
