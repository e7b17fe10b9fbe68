"""Issue comments a run posts: its tracking comment, replies to signals, reactions to commands.

- The tracking comment (``comment`` effects, upserted by name): one comment per run, created by
  the first edit and PATCHed in place by every later one. Its id comes from the ledger (the
  first edit's confirmed identity), so an edit is one call. Its body starts with the hidden
  name marker (``<!-- ratchet:name=<run>/tracking -->``) and the key marker of the edit it
  shows, so a lookup tells both which comment is the run's and whether this edit landed.
- A reply (``reply``): a new comment on the issue or pull request where the signal was typed,
  carrying the effect's key marker; found by listing that conversation.
- A reaction (``reaction``): POST on the signal's comment, which GitHub makes idempotent (200
  with the existing reaction); found by listing the comment's reactions of that content.

Lookups only trust comments and reactions by Ratchet's own bot (``bot_login``, or any bot when
it is not known), so a person pasting a marker into a comment cannot fake a landed effect.
"""

from __future__ import annotations

import logging
from typing import Any

from runner.effects import EffectRequest
from runner.names import EffectKind
from runner.render import Vocabulary, key_marker, name_marker, render_reply, render_tracking
from verification.evidence import fit

from .errors import NotFound
from .ledgerview import ConfirmedEffects
from .repository import RepoAPI

log = logging.getLogger(__name__)

# Characters GitHub accepts in a comment or pull request body.
BODY_LIMIT = 65_536

ISSUE_COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
ISSUE_COMMENTS_PAGES = "/repos/{owner}/{repo}/issues/{issue_number}/comments{?per_page}"
COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
REACTIONS = "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"
REACTIONS_PAGES = "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions{?content,per_page}"


def marked_body(markers: list[str], text: str) -> str:
    """``text`` under hidden ``markers``, cut to GitHub's body limit (markers always kept)."""
    head = "".join(f"{marker}\n" for marker in markers)
    return head + fit(text, BODY_LIMIT - len(head.encode()))


def by_bot(user: dict[str, Any] | None, bot_login: str | None) -> bool:
    """Whether ``user`` (a GitHub user object) is Ratchet's bot, or any bot if it is unknown."""
    if not user:
        return False
    if bot_login is not None:
        return str(user.get("login", "")).lower() == bot_login.lower()
    return user.get("type") == "Bot"


def _comment_identity(comment: dict[str, Any], issue: int) -> dict[str, Any]:
    return {"comment_id": comment["id"], "issue": issue, "url": comment.get("html_url")}


class TrackingComments:
    """The run's one tracking comment on issue ``issue``, created once, then edited."""

    def __init__(
        self,
        api: RepoAPI,
        words: Vocabulary,
        *,
        issue: int,
        history: ConfirmedEffects,
        bot_login: str | None,
        artifacts_url: str | None = None,
    ) -> None:
        self.api = api
        self.words = words
        self.issue = issue
        self.history = history
        self.bot_login = bot_login
        self.artifacts_url = artifacts_url  # the dashboard's artifacts of the run, if public
        self._seen: dict[str, int] = {}  # name -> comment id a lookup found, not yet recorded

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        name = _name(request)
        body = marked_body(
            [name_marker(name), key_marker(request.key)],
            render_tracking(request.payload["view"], self.words, self._links(),
                            artifacts_url=self.artifacts_url),
        )
        known = self._known_id(request)
        if known is not None:
            try:
                edited = self.api.patch(COMMENT, {"body": body}, comment_id=known)
                return _comment_identity(edited, self.issue)
            except NotFound:
                log.warning(
                    "run %r: tracking comment %r was deleted; posting a new one",
                    request.run_id,
                    known,
                )
        created = self.api.post(ISSUE_COMMENTS, {"body": body}, issue_number=self.issue)
        return _comment_identity(created, self.issue)

    def _links(self) -> list[tuple[str, str]]:
        """The run's pull request and newest check run of each name, as the ledger knows
        them (confirmed effects), so a reader goes from the issue to the evidence."""
        links = []
        pull = self.history.latest(EffectKind.PULL_REQUEST)
        if pull and pull.get("url"):
            links.append((f"pull request #{pull['number']}", str(pull["url"])))
        newest: dict[str, str] = {}
        for effect in self.history.of(EffectKind.CHECK_RUN):
            resource = effect.resource or {}
            if resource.get("url"):
                newest[str(effect.payload.get("name"))] = str(resource["url"])
        links += sorted(newest.items())
        return links

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        known = self._known_id(request)
        if known is not None:
            try:
                comment = self.api.get(COMMENT, comment_id=known)
            except NotFound:
                return None  # deleted: ``apply`` posts a new one
            return self._landed(comment, request)
        name = _name(request)
        marker = name_marker(name)
        for comment in self.api.getiter(ISSUE_COMMENTS_PAGES, issue_number=self.issue):
            if by_bot(comment.get("user"), self.bot_login) and marker in (comment["body"] or ""):
                self._seen[name] = comment["id"]
                return self._landed(comment, request)
        return None

    def _landed(self, comment: dict[str, Any], request: EffectRequest) -> dict[str, Any] | None:
        """The comment's identity if it shows this edit (its key marker), else None."""
        if key_marker(request.key) in (comment.get("body") or ""):
            return _comment_identity(comment, self.issue)
        return None

    def _known_id(self, request: EffectRequest) -> int | None:
        """The comment's id: from the ledger, else from a lookup this executor made."""
        recorded = self.history.latest(EffectKind.COMMENT, name=request.payload["name"])
        if recorded is not None and isinstance(recorded.get("comment_id"), int):
            return int(recorded["comment_id"])
        return self._seen.get(_name(request))


class Replies:
    """One new comment per refused signal, where the signal was typed (else on ``issue``)."""

    def __init__(
        self, api: RepoAPI, words: Vocabulary, *, issue: int, bot_login: str | None
    ) -> None:
        self.api = api
        self.words = words
        self.issue = issue
        self.bot_login = bot_login

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        issue = self._issue(request)
        body = marked_body([key_marker(request.key)], render_reply(request.payload, self.words))
        created = self.api.post(ISSUE_COMMENTS, {"body": body}, issue_number=issue)
        return _comment_identity(created, issue)

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        issue = self._issue(request)
        marker = key_marker(request.key)
        for comment in self.api.getiter(ISSUE_COMMENTS_PAGES, issue_number=issue):
            if by_bot(comment.get("user"), self.bot_login) and marker in (comment["body"] or ""):
                return _comment_identity(comment, issue)
        return None

    def _issue(self, request: EffectRequest) -> int:
        where = request.payload.get("in_reply_to") or {}
        issue = where.get("issue") if isinstance(where, dict) else None
        return int(issue) if isinstance(issue, int) and issue > 0 else self.issue


class Reactions:
    """A reaction (``eyes``: seen and accepted) on the comment that carried a signal."""

    def __init__(self, api: RepoAPI, *, bot_login: str | None) -> None:
        self.api = api
        self.bot_login = bot_login

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        comment_id, content = _reaction_target(request)
        try:
            # 201 when new, 200 with the existing one: sending it twice never adds a second.
            reaction = self.api.post(REACTIONS, {"content": content}, comment_id=comment_id)
        except NotFound:
            return _gone(request, comment_id, content)
        return {"reaction_id": reaction["id"], "comment_id": comment_id, "content": content}

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        comment_id, content = _reaction_target(request)
        try:
            reactions = self.api.getiter(REACTIONS_PAGES, comment_id=comment_id, content=content)
        except NotFound:
            return _gone(request, comment_id, content)
        for reaction in reactions:
            if by_bot(reaction.get("user"), self.bot_login):
                return {"reaction_id": reaction["id"], "comment_id": comment_id, "content": content}
        return None


def _reaction_target(request: EffectRequest) -> tuple[int, str]:
    comment = request.payload.get("comment") or {}
    return int(comment["id"]), str(request.payload.get("content") or "eyes")


def _gone(request: EffectRequest, comment_id: int, content: str) -> dict[str, Any]:
    """A deleted comment needs no acknowledgement: the effect is done, with nothing on GitHub."""
    log.info(
        "run %r: comment %r is gone; no %r reaction to add", request.run_id, comment_id, content
    )
    return {"comment_id": comment_id, "content": content, "absent": "the comment was deleted"}


def _name(request: EffectRequest) -> str:
    return f"{request.run_id}/{request.payload['name']}"
