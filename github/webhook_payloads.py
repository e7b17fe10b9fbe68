"""Webhook payloads, parsed once into typed models (only the fields Ratchet reads).

GitHub adds fields and actions all the time: unknown fields are ignored, and an event Ratchet
does not handle parses to ``None`` (the router ignores it). A payload of a handled event that
lacks a field Ratchet needs is refused with ``ValidationError``, which the webhook answers as
ignored with the reason, never as a server error.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Account(_Model):
    login: str
    id: int
    type: str = "User"  # "User", "Bot", "Organization"


class App(_Model):
    id: int
    slug: str | None = None


class Installation(_Model):
    id: int


class Repository(_Model):
    id: int
    name: str
    full_name: str
    owner: Account
    clone_url: str
    default_branch: str = "main"
    private: bool = False

    @property
    def slug(self) -> tuple[str, str]:
        owner, _, name = self.full_name.partition("/")
        return owner, name


class Label(_Model):
    name: str


class Issue(_Model):
    number: int
    title: str
    body: str | None = None
    state: str = "open"
    user: Account
    labels: list[Label] = Field(default_factory=list)
    pull_request: dict[str, Any] | None = None  # present when the issue is a pull request

    @property
    def is_pull_request(self) -> bool:
        return self.pull_request is not None


class Comment(_Model):
    id: int
    body: str | None = None
    user: Account
    performed_via_github_app: App | None = None


class Ref(_Model):
    ref: str
    sha: str
    repo: Repository | None = None  # None when the fork was deleted


class PullRequest(_Model):
    number: int
    title: str
    body: str | None = None
    state: str = "open"
    draft: bool = False
    user: Account
    head: Ref
    base: Ref


class Commit(_Model):
    ref: str
    sha: str


class LinkedPull(_Model):
    """A pull request as a check run lists it: its number, head and base commits."""

    number: int
    head: Commit
    base: Commit


class CheckRun(_Model):
    id: int
    name: str
    head_sha: str
    external_id: str | None = None
    app: App | None = None
    pull_requests: list[LinkedPull] = Field(default_factory=list)


class RequestedAction(_Model):
    identifier: str


class _Event(_Model):
    action: str | None = None
    sender: Account
    repository: Repository
    installation: Installation | None = None


class IssuesEvent(_Event):
    issue: Issue
    label: Label | None = None


class IssueCommentEvent(_Event):
    issue: Issue
    comment: Comment


class PullRequestEvent(_Event):
    pull_request: PullRequest


class CheckRunEvent(_Event):
    check_run: CheckRun
    requested_action: RequestedAction | None = None


class Review(_Model):
    id: int
    body: str | None = None
    state: str  # "approved", "changes_requested", "commented", "dismissed"
    user: Account
    commit_id: str | None = None


class PullRequestReviewEvent(_Event):
    review: Review
    pull_request: PullRequest


WebhookEvent = (
    IssuesEvent | IssueCommentEvent | PullRequestEvent | CheckRunEvent | PullRequestReviewEvent
)

# The events Ratchet acts on, by the X-GitHub-Event header.
MODELS: dict[str, type[_Event]] = {
    "issues": IssuesEvent,
    "issue_comment": IssueCommentEvent,
    "pull_request": PullRequestEvent,
    "check_run": CheckRunEvent,
    "pull_request_review": PullRequestReviewEvent,
}


def parse_event(name: str, data: Any) -> WebhookEvent | None:
    """The payload of event ``name`` as its model; None for an event Ratchet ignores.

    Raises ``pydantic.ValidationError`` when a handled event lacks what Ratchet reads.
    """
    model = MODELS.get(name)
    if model is None:
        return None
    return model.model_validate(data)  # type: ignore[return-value]
