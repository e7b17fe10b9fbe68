"""What a webhook delivery means for Ratchet, decided from the payload alone (pure).

``route`` returns an intent; the webhook endpoint records it in one ledger transaction. Events
the App caused (its bot user, ``performed_via_github_app`` this App, its own check runs),
edited comments and other bots (unless allowed) are ignored here, so the bot never triggers
itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from github.commands import CommandError, checked_feedback, parse_command
from github.webhook_payloads import (
    Account,
    CheckRunEvent,
    IssueCommentEvent,
    IssuesEvent,
    PullRequestEvent,
    PullRequestReviewEvent,
    WebhookEvent,
)
from runner.checkruns import VERIFY_CHECK, CheckRunId
from runner.ledger.records import SignalFor
from runner.names import GITHUB_ORIGIN, VERBS, SignalKind
from runner.origin import is_run_branch
from runner.signal_payloads import Approve, ApproveDiff, Cancel, CommentRef, RequestChanges

# Webhook events that say someone's access to a repository may have changed (a collaborator
# added, removed or edited; an organization's members or base permission; a team's members or
# repositories): recorded like every delivery, and every cached permission is asked again
# (``github/permissions.py``).
PERMISSION_EVENTS = ("member", "membership", "organization", "team")


@dataclass(frozen=True)
class RouteSettings:
    app_id: int | None  # this App's id: its own actions are ignored
    bot_login: str | None  # this App's bot user (``<slug>[bot]``)
    trigger_labels: frozenset[str] = frozenset({"ratchet"})
    allowed_bots: frozenset[str] = frozenset()


@dataclass(frozen=True)
class StartRun:
    """A labeled issue: start a run for it (unless one is active)."""

    owner: str
    repo: str
    installation: int | None
    clone_url: str
    default_branch: str
    issue: int
    title: str
    body: str
    label: str
    author: str


@dataclass(frozen=True)
class VerifyPullRequest:
    """A pull request head to verify and report on, nothing else: a fork's head, a person's
    push to a run's branch, or a head whose ``ratchet/verify`` check was re-requested."""

    owner: str
    repo: str
    installation: int | None
    clone_url: str
    number: int
    title: str
    head_sha: str
    base_sha: str
    source: str  # why, in a few words, for the ledger and logs
    author: str


@dataclass(frozen=True)
class Reply:
    """A command in a comment that reaches no run (a mistyped verb, a missing argument): its
    author is answered with ``text`` (``github/triggers.py`` decides whether now)."""

    owner: str
    repo: str
    installation: int | None
    clone_url: str
    number: int
    author: str
    text: str


@dataclass(frozen=True)
class Ignore:
    reason: str
    reply: Reply | None = None  # the answer its author gets, when one is owed


# A signal is the ledger's own record: a signal for the active run of an issue or pull request
# (``repo`` is the run's, its clone URL), or for the run an event names.
Intent = StartRun | VerifyPullRequest | SignalFor | Ignore


def route(name: str, event: WebhookEvent | None, settings: RouteSettings) -> Intent:
    """The intent of delivery ``name`` (the X-GitHub-Event header) with payload ``event``."""
    if event is None:
        if name in PERMISSION_EVENTS:
            return Ignore(f"{name}: someone's access may have changed; cached permissions are"
                          " asked again")
        return Ignore(f"{name} events are not used")
    if _from_this_app(event.sender, settings):
        return Ignore("sent by this App")
    if _other_bot(event.sender, settings):
        return Ignore(f"sent by another bot ({event.sender.login})")
    if isinstance(event, IssuesEvent):
        return _issues(event, settings)
    if isinstance(event, IssueCommentEvent):
        return _comment(event, settings)
    if isinstance(event, CheckRunEvent):
        return _check_run(event, settings)
    if isinstance(event, PullRequestEvent):
        return _pull_request(event)
    if isinstance(event, PullRequestReviewEvent):
        return _review(event)
    return Ignore(f"{name} events are not used")  # pragma: no cover - MODELS lists the five


def _issues(event: IssuesEvent, settings: RouteSettings) -> Intent:
    issue, repo = event.issue, event.repository
    if issue.is_pull_request:
        return Ignore("a pull request's issue event")
    label = event.label.name if event.label else None
    if event.action == "labeled" and label in settings.trigger_labels:
        owner, name = repo.slug
        return StartRun(
            owner=owner, repo=name, installation=event.installation.id if event.installation
            else None, clone_url=repo.clone_url, default_branch=repo.default_branch,
            issue=issue.number, title=issue.title, body=issue.body or "", label=label,
            author=event.sender.login,
        )
    if event.action == "unlabeled" and label in settings.trigger_labels:
        return _cancel(event, f"the {label} label was removed")
    if event.action == "closed":
        return _cancel(event, "the issue was closed")
    return Ignore(f"issues.{event.action} does not start or stop a run")


def _pull_request(event: PullRequestEvent) -> Intent:
    """A fork's pull request gets verification only: its head, in the sandbox, no token. So
    does a person's push to a run's branch: the run never forces over it, the head is verified
    and reported."""
    pull, repo = event.pull_request, event.repository
    if event.action not in {"opened", "synchronize", "reopened"}:
        return Ignore(f"pull_request.{event.action} is not used")
    head_repo = pull.head.repo.full_name if pull.head.repo else None
    if head_repo == repo.full_name:
        # A person's push to a run's branch (``runner/origin.py`` names them) is verified.
        if event.action == "synchronize" and is_run_branch(pull.head.ref):
            source = f"a push by {event.sender.login} to {pull.head.ref}"
        else:
            return Ignore("a pull request from a branch of this repository (its CI verifies it)")
    else:
        source = f"the fork {head_repo or '(deleted)'}"
    owner, name = repo.slug
    return VerifyPullRequest(
        owner=owner, repo=name, installation=event.installation.id if event.installation
        else None, clone_url=repo.clone_url, number=pull.number, title=pull.title,
        head_sha=pull.head.sha, base_sha=pull.base.sha, source=source,
        author=event.sender.login,
    )


def _comment(event: IssueCommentEvent, settings: RouteSettings) -> Intent:
    if event.action != "created":
        return Ignore(f"issue_comment.{event.action}: only new comments carry commands")
    comment = event.comment
    via = comment.performed_via_github_app
    if via is not None and settings.app_id is not None and via.id == settings.app_id:
        return Ignore("a comment this App wrote")
    try:
        command = parse_command(comment.body)
    except CommandError as exc:
        return Ignore(str(exc), reply_to(event, f"{exc}."))
    if command is None:
        return Ignore("no /ratchet command")
    payload = command.payload(comment=CommentRef(id=comment.id, issue=event.issue.number))
    return SignalFor(event.repository.clone_url, event.issue.number, command.kind,
                     comment.user.login, GITHUB_ORIGIN, payload,
                     pull_request=event.issue.is_pull_request)


def reply_to(event: IssueCommentEvent, text: str) -> Reply:
    """``text`` as the reply to the author of ``event``'s comment."""
    owner, name = event.repository.slug
    return Reply(owner=owner, repo=name, installation=event.installation.id
                 if event.installation else None, clone_url=event.repository.clone_url,
                 number=event.issue.number, author=event.comment.user.login, text=text)


def _cancel(event: IssuesEvent, reason: str) -> SignalFor:
    return SignalFor(event.repository.clone_url, event.issue.number, SignalKind.CANCEL,
                     event.sender.login, GITHUB_ORIGIN, Cancel(reason=reason))


def _review(event: PullRequestReviewEvent) -> Intent:
    """GitHub's own "Request changes" review on a run's pull request sends the spec back with
    the review's text, as ``/ratchet request-changes <text>`` does (who may is checked later,
    like any signal; a pull request without an active run ignores it)."""
    review = event.review
    if event.action != "submitted" or review.state.lower() != "changes_requested":
        return Ignore(f"pull_request_review.{event.action} ({review.state}) is not used")
    if not (review.body or "").strip():
        return Ignore("a review requesting changes without text: say what to change")
    try:
        message = checked_feedback(review.body or "")
    except CommandError as exc:
        return Ignore(str(exc))
    return SignalFor(event.repository.clone_url, event.pull_request.number,
                     SignalKind.REQUEST_CHANGES, review.user.login, GITHUB_ORIGIN,
                     RequestChanges(message=message, review=review.id), pull_request=True)


def _check_run(event: CheckRunEvent, settings: RouteSettings) -> Intent:
    check = event.check_run
    if settings.app_id is not None and (check.app is None or check.app.id != settings.app_id):
        return Ignore("another app's check run")
    if event.action == "requested_action" and event.requested_action is not None:
        named = CheckRunId.parse(check.external_id or "")
        identifier = event.requested_action.identifier
        kind = VERBS.get(identifier)
        if kind not in {SignalKind.APPROVE, SignalKind.APPROVE_DIFF} or named is None:
            return Ignore(f"unknown action {identifier!r}")
        # The button approves exactly the spec, or the verified diff, its check run names.
        payload = (Approve(hash=named.spec, check_run=check.id) if kind is SignalKind.APPROVE
                   else ApproveDiff(hash=named.spec, check_run=check.id))
        return SignalFor(event.repository.clone_url, 0, kind, event.sender.login,
                         GITHUB_ORIGIN, payload, run_id=named.run_id)
    if event.action == "rerequested":
        return _rerequested(event)
    return Ignore(f"check_run.{event.action} is not used")


def _rerequested(event: CheckRunEvent) -> Intent:
    """Re-run a ``ratchet/verify`` check: verify that head again and report it in a new check
    run (GitHub shows the newest of a name on a commit); the run it came from is untouched."""
    check = event.check_run
    if check.name != VERIFY_CHECK:
        return Ignore(f"{check.name} is not re-run (approve a spec with its button or a command)")
    if not check.pull_requests:
        return Ignore(f"the re-run {VERIFY_CHECK} check is on no open pull request")
    pull = check.pull_requests[0]
    owner, name = event.repository.slug
    return VerifyPullRequest(
        owner=owner, repo=name, installation=event.installation.id if event.installation
        else None, clone_url=event.repository.clone_url, number=pull.number,
        title=f"Re-run of {VERIFY_CHECK} on {check.head_sha[:12]}", head_sha=check.head_sha,
        base_sha=pull.base.sha, source=f"a re-run requested by {event.sender.login}",
        author=event.sender.login,
    )


def _from_this_app(sender: Account, settings: RouteSettings) -> bool:
    return settings.bot_login is not None and sender.login == settings.bot_login


def _other_bot(sender: Account, settings: RouteSettings) -> bool:
    is_bot = sender.type == "Bot" or sender.login.endswith("[bot]")
    return is_bot and sender.login not in settings.allowed_bots
