"""The run's pull request, upserted by head branch: created once (draft), updated, made ready.

The first ``pull_request`` effect of a run creates the pull request (one POST; no lookup: the
ledger says none was made). Later ones update its title and body (one PATCH, the number read
from the ledger) and, when the payload is no longer a draft and GitHub says the pull request
still is, mark it ready through GraphQL's ``markPullRequestReadyForReview``: REST's PATCH
ignores ``draft`` (https://docs.github.com/graphql/reference/mutations#markpullrequestreadyforreview).

The body carries the effect's hidden key marker, so a lookup (``GET pulls?head=OWNER:BRANCH``)
tells whether this effect's edit landed (the publish step's edit, rewriting the body as
finished work, is one such effect: sent once, and a resume finds it landed); what a lookup saw
is kept for the ``apply`` that follows it, so a retry resends only what is missing.
"""

from __future__ import annotations

import logging
from typing import Any

from runner.effects import EffectRequest
from runner.names import EffectKind
from runner.render import Vocabulary, key_marker, render_pull_request

from .comments import marked_body
from .errors import InvalidRequest
from .ledgerview import ConfirmedEffects
from .repository import RepoAPI

log = logging.getLogger(__name__)

PULLS = "/repos/{owner}/{repo}/pulls"
PULLS_BY_HEAD = "/repos/{owner}/{repo}/pulls{?head,state,per_page}"
PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"
READY_FOR_REVIEW = """
mutation($id: ID!) {
  markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } }
}
"""
# How GitHub's 422 says the head branch already has an open pull request.
ALREADY_EXISTS = "A pull request already exists"


def _identity(pull: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": pull["number"],
        "node_id": pull["node_id"],
        "draft": bool(pull.get("draft")),
        "url": pull.get("html_url"),
    }


class PullRequests:
    """Pull requests of the run's branch in one repository."""

    def __init__(self, api: RepoAPI, words: Vocabulary, *, history: ConfirmedEffects,
                 artifacts_url: str | None = None) -> None:
        self.api = api
        self.words = words
        self.history = history
        self.artifacts_url = artifacts_url  # the dashboard's artifacts of the run, if public
        self._seen: dict[str, dict[str, Any]] = {}  # branch -> the pull request a lookup found

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        payload = request.payload
        body = self._body(request)
        pull = self._seen.pop(payload["branch"], None) or self.history.latest(
            EffectKind.PULL_REQUEST, branch=payload["branch"]
        )
        if pull is None:
            try:
                return _identity(self.api.post(PULLS, self._opening(request, body)))
            except InvalidRequest as exc:
                pull = self._adopt(request, exc)
        if key_marker(request.key) not in (pull.get("body") or ""):
            edit = {"title": payload["title"], "body": body}
            pull = self.api.patch(PULL, edit, pull_number=pull["number"])
        if not payload["draft"] and pull.get("draft"):
            self.api.graphql(READY_FOR_REVIEW, id=pull["node_id"])
            pull = {**pull, "draft": False}
        return _identity(pull)

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        payload = request.payload
        pull = self._lookup(payload["branch"])
        if pull is None:
            return None
        edited = key_marker(request.key) in (pull.get("body") or "")
        if edited and (payload["draft"] or not pull.get("draft")):
            return _identity(pull)
        self._seen[payload["branch"]] = pull  # for the apply that follows: what is missing
        return None

    def _lookup(self, branch: str) -> dict[str, Any] | None:
        """The branch's pull request: an open one first, else the newest closed one."""
        pulls = self.api.getiter(
            PULLS_BY_HEAD, head=f"{self.api.target.owner}:{branch}", state="all"
        )
        if not pulls:
            return None
        return max(pulls, key=lambda p: (p.get("state") == "open", p["number"]))

    def _opening(self, request: EffectRequest, body: str) -> dict[str, Any]:
        payload = request.payload
        return {
            "title": payload["title"],
            "head": payload["branch"],
            "base": payload["base"],
            "body": body,
            "draft": bool(payload["draft"]),
        }

    def _adopt(self, request: EffectRequest, refused: InvalidRequest) -> dict[str, Any]:
        """The open pull request GitHub says the branch already has (opened by hand, or by
        a send the ledger never heard back from); re-raises any other refusal."""
        # GitHub says so only in words (a 422 whose error has code "custom").
        found = self._lookup(request.payload["branch"]) if ALREADY_EXISTS in str(refused) else None
        if found is None:
            raise refused
        log.info(
            "run %r: adopting pull request #%r of %r",
            request.run_id,
            found["number"],
            request.payload["branch"],
        )
        return found

    def _body(self, request: EffectRequest) -> str:
        """The body rendered from the payload; a published one links the check run of its
        verification, as the ledger recorded it (the effect deciding it named its
        ``external_id``), and the run's artifacts where they are served."""
        verified = request.payload.get("verification") or {}
        check = (self.history.latest(EffectKind.CHECK_RUN, external_id=verified["check_run"])
                 if verified.get("check_run") else None)
        return marked_body([key_marker(request.key)], render_pull_request(
            request.payload, self.words, check_run_url=(check or {}).get("url"),
            artifacts_url=self.artifacts_url))
