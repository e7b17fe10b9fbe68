"""Which revisions a verify job checks, decided from the event payload alone (pure).

The payload at ``GITHUB_EVENT_PATH`` is the webhook payload of the event that started the
workflow. Only the fields read here are modelled; unknown ones are ignored. The ``base`` and
``head`` inputs override what the event says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from app.action.env import ActionError, ActionInputs
from github.webhook_payloads import PullRequestEvent

# A push that created its branch has no "before": git's null sha.
NULL_SHA = "0" * 40
VERIFY_EVENTS = ("pull_request", "pull_request_target", "push", "merge_group",
                 "workflow_dispatch")


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Repository(_Model):
    default_branch: str = "main"


class PushEvent(_Model):
    before: str
    after: str


class MergeGroup(_Model):
    base_sha: str
    head_sha: str


class MergeGroupEvent(_Model):
    merge_group: MergeGroup


@dataclass(frozen=True)
class Revisions:
    """What to verify: ``head`` against ``base`` (None: the merge base with the default
    branch, found in the checkout)."""

    base: str | None
    head: str | None
    read_only_token: bool = False  # a fork's pull_request: GitHub gives it a read-only token
    pull_request: int | None = None


def read_payload(path: Path) -> dict[str, Any]:
    """The event payload; ``ActionError`` naming the file when it is unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ActionError(f"GITHUB_EVENT_PATH={str(path)!r} cannot be read as JSON ({exc});"
                          " the runner writes the event payload there") from None
    if not isinstance(data, dict):
        raise ActionError(f"GITHUB_EVENT_PATH={str(path)!r} does not hold a JSON object")
    return data


def revisions_for(event_name: str, payload: dict[str, Any], inputs: ActionInputs, *,
                  sha: str | None) -> Revisions:
    """The revisions a verify job checks for ``event_name`` (see the module docstring)."""
    try:
        found = _from_event(event_name, payload, sha)
        if found.base is None and isinstance(payload.get("repository"), dict):
            # actions/checkout leaves the default branch as a remote branch, not a local one.
            branch = Repository.model_validate(payload["repository"]).default_branch
            found = Revisions(f"origin/{branch}", found.head, found.read_only_token,
                              found.pull_request)
    except ValidationError as exc:
        raise ActionError(f"the {event_name} payload lacks what verify mode reads"
                          f" ({exc.error_count()} problems, e.g. {exc.errors()[0]['loc']})"
                          ) from None
    return Revisions(inputs.base or found.base, inputs.head or found.head,
                     found.read_only_token, found.pull_request)


def _from_event(event_name: str, payload: dict[str, Any], sha: str | None) -> Revisions:
    if event_name in {"pull_request", "pull_request_target"}:
        event = PullRequestEvent.model_validate(payload)
        pull = event.pull_request
        head_repo = pull.head.repo.full_name if pull.head.repo else None
        fork = head_repo != event.repository.full_name
        return Revisions(pull.base.sha, pull.head.sha, fork and event_name == "pull_request",
                         pull.number)
    if event_name == "push":
        push = PushEvent.model_validate(payload)
        return Revisions(None if push.before == NULL_SHA else push.before, push.after)
    if event_name == "merge_group":
        group = MergeGroupEvent.model_validate(payload).merge_group
        return Revisions(group.base_sha, group.head_sha)
    if event_name == "workflow_dispatch":
        return Revisions(None, sha)
    raise ActionError(f"verify mode runs on {', '.join(VERIFY_EVENTS)}; this job's event is"
                      f" {event_name!r}: change the workflow's `on:` or give the `base` and"
                      " `head` inputs with workflow_dispatch")
