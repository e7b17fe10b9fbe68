"""Decide which failure a GitHub answer (or a lost one) is: pure functions, no I/O.

The transport calls these with what it sent (an ``Attempt``) and what came back; they return
the ``github.errors`` failure to raise, with a message that says what to do next and evidence
scrubbed of every credential the attempt used (and of anything shaped like a GitHub token).

| answer                                         | failure            | class         |
|------------------------------------------------|--------------------|---------------|
| 5xx                                            | GitHubUnavailable  | transient     |
| no answer, request not sent or only reading    | GitHubUnavailable  | transient     |
| no answer after a mutating request was sent    | OutcomeUnknown     | ambiguous     |
| 403/429 rate limit, wait beyond the bound      | RateLimited        | transient     |
| 400, 422, GraphQL document errors              | InvalidRequest     | deterministic |
| 404, 410, GraphQL NOT_FOUND                    | NotFound           | deterministic |
| 401                                            | BadCredentials     | deterministic |
| 403 (not a rate limit), GraphQL FORBIDDEN      | Forbidden          | authority     |
| other 3xx/4xx                                  | GitHubRejected     | deterministic |
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from runner.redact import Redactor

from .errors import (
    BadCredentials,
    Forbidden,
    GitHubFailure,
    GitHubRejected,
    GitHubUnavailable,
    InvalidRequest,
    NotFound,
    OutcomeUnknown,
    RateLimited,
)
from .ratelimit import RateLimitHit

# Characters of a non-JSON error body kept in a message (an HTML error page says little more).
BODY_EXCERPT = 300


@dataclass(frozen=True)
class Attempt:
    """One request, as failures describe it; ``secrets`` are masked wherever text is kept."""

    method: str
    url: str
    mutating: bool
    who: str  # "installation 77", "the App", "the configured token"
    graphql: bool = False
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def call(self) -> str:
        """``POST /repos/o/r/issues/1/comments`` or ``GraphQL mutation``, for messages."""
        if self.graphql:
            return "GraphQL mutation" if self.mutating else "GraphQL query"
        return f"{self.method} {urlsplit(self.url).path}"

    def scrub(self, value: Any) -> Any:
        """``value`` with every secret of this attempt and every token-shaped string masked."""
        redact = Redactor(self.secrets)
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, Mapping):
            return {str(k): self.scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub(v) for v in value]
        return value

    def evidence(self, **details: Any) -> dict[str, Any]:
        base = {
            "method": self.method,
            "path": urlsplit(self.url).path,
            "credentials": self.who,
            "mutating": self.mutating,
        }
        found = {k: v for k, v in details.items() if v is not None}
        return dict(self.scrub({**base, **found}))


def failure_for_response(
    attempt: Attempt, status: int, headers: Mapping[str, str], body: bytes
) -> GitHubFailure | None:
    """The failure an answer means, or None when it is a success.

    ``headers`` must have lower-case keys. Rate limits are recognised before this is called
    (``ratelimit.rate_limit_hit``); a 403 reaching here is a refusal.
    """
    if 200 <= status < 300:
        return _graphql_failure(attempt, headers, body) if attempt.graphql else None
    if status == 304:
        return None
    message, extra = _details(body)
    evidence = attempt.evidence(
        status=status, message=message, request_id=headers.get("x-github-request-id"), **extra
    )
    said = attempt.scrub(f"{status} {message}" if message else str(status))
    call = attempt.call
    if status >= 500:
        return GitHubUnavailable(
            f"GitHub failed on {call} ({said}); this is GitHub's side: retry with backoff "
            "(an effect is looked up before it is sent again)",
            evidence=evidence,
        )
    if status == 401:
        return BadCredentials(
            f"GitHub refused the credentials of {attempt.who} for {call} ({said}); check "
            "RATCHET_GITHUB_APP_ID and the private key (or the token) and that the App is "
            "not suspended",
            evidence=evidence,
        )
    if status == 403:
        return Forbidden(
            f"GitHub forbids {call} to {attempt.who} ({said}); grant the App the permission "
            "this needs in its settings (or lift the rule protecting the resource), then "
            "retry the run",
            evidence=evidence,
        )
    if status in (404, 410):
        return NotFound(
            f"GitHub has no {call} for {attempt.who} ({said}); check the owner, repository "
            "and number, and that the App is installed on that repository",
            evidence=evidence,
        )
    if status in (400, 422):
        return InvalidRequest(
            f"GitHub refused {call} as invalid ({said}); sending it again gets the same "
            "answer: fix what the request asks for",
            evidence=evidence,
        )
    return GitHubRejected(
        f"GitHub refused {call} ({said}); sending it again gets the same answer",
        evidence=evidence,
    )


def failure_for_transport(attempt: Attempt, exc: BaseException, *, sent: bool) -> GitHubFailure:
    """The failure of a request that got no answer (connection refused, reset, timeout).

    ``sent`` says whether the request's headers left this host: a mutating request that was
    sent may have been applied; anything else changed nothing.
    """
    reason = attempt.scrub(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    evidence = attempt.evidence(error=reason, sent=sent)
    if attempt.mutating and sent:
        return OutcomeUnknown(
            f"{attempt.call} was sent to GitHub and no answer came back ({reason}); it may "
            "have been applied: look the effect up before sending it again",
            evidence=evidence,
        )
    done = "it changed nothing" if not attempt.mutating else "it was never sent"
    return GitHubUnavailable(
        f"{attempt.call} got no answer from GitHub ({reason}); {done}: retry with backoff",
        evidence=evidence,
    )


def failure_for_unexpected(attempt: Attempt, status: int, exc: Exception) -> GitHubFailure:
    """An answer with a success status that could not be read (not JSON, no data).

    A read is retried; after a write nobody knows what happened, so it is reconciled.
    """
    reason = attempt.scrub(str(exc))[:BODY_EXCERPT]
    evidence = attempt.evidence(status=status, error=reason)
    if attempt.mutating:
        return OutcomeUnknown(
            f"GitHub answered {attempt.call} with {status} and an unreadable body ({reason}); "
            "it may have been applied: look the effect up before sending it again",
            evidence=evidence,
        )
    return GitHubUnavailable(
        f"GitHub answered {attempt.call} with {status} and an unreadable body ({reason}); "
        "retry with backoff",
        evidence=evidence,
    )


def utc_text(epoch: float) -> str:
    """An epoch second as GitHub writes times: ``2024-01-01T00:00:00Z``."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rate_limited(attempt: Attempt, hit: RateLimitHit, *, now: float) -> RateLimited:
    """The failure for a rate limit the client will not wait out."""
    when = utc_text(hit.retry_at)
    wait = max(hit.retry_at - now, 0.0)
    return RateLimited(
        f"GitHub's {hit.limit} rate limit holds {attempt.who} until {when} ({wait:.0f} s from "
        f"now; seen on {attempt.call}); back off and retry after then",
        retry_at=hit.retry_at,
        limit=hit.limit,
        evidence=attempt.evidence(limit=hit.limit, retry_at=when, wait_seconds=round(wait, 1)),
    )


def _details(body: bytes) -> tuple[str, dict[str, Any]]:
    """GitHub's error ``message`` and the documented extras, or an excerpt of a non-JSON body."""
    try:
        data = json.loads(body) if body else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        return body.decode("utf-8", "replace").strip()[:BODY_EXCERPT], {}
    if not isinstance(data, dict):
        return "", {}
    extra = {k: data[k] for k in ("errors", "documentation_url") if data.get(k)}
    message = str(data.get("message") or "")
    reasons = [_reason(e) for e in data.get("errors") or [] if isinstance(e, dict | str)]
    return (f"{message}: {'; '.join(reasons)}" if reasons else message), extra


def _reason(error: dict[str, Any] | str) -> str:
    """One entry of a 422's ``errors``: its own message, or what GitHub's codes mean."""
    if isinstance(error, str):
        return error
    if error.get("message"):
        return str(error["message"])
    where = ".".join(str(error[k]) for k in ("resource", "field") if error.get(k))
    return f"{where} {error.get('code', 'invalid')}".strip()


def _graphql_failure(
    attempt: Attempt, headers: Mapping[str, str], body: bytes
) -> GitHubFailure | None:
    """GraphQL answers 200 with an ``errors`` list when a query or mutation failed."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None  # gidgethub reports the unreadable body; see failure_for_unexpected
    errors = data.get("errors") if isinstance(data, dict) else None
    if not errors:
        return None
    kinds = {e.get("type") for e in errors if isinstance(e, dict)}
    said = attempt.scrub("; ".join(str(e.get("message", e)) for e in errors if isinstance(e, dict)))
    evidence = attempt.evidence(
        status=200,
        message=said,
        errors=errors,
        request_id=headers.get("x-github-request-id"),
    )
    if "FORBIDDEN" in kinds:
        return Forbidden(
            f"GitHub forbids the {attempt.call} to {attempt.who} ({said}); grant the App the "
            "permission this needs, then retry the run",
            evidence=evidence,
        )
    if "NOT_FOUND" in kinds:
        return NotFound(
            f"GitHub could not resolve what the {attempt.call} names ({said}); check the node "
            "ids and that the App is installed on that repository",
            evidence=evidence,
        )
    return InvalidRequest(
        f"GitHub refused the {attempt.call} ({said}); fix the document or its variables",
        evidence=evidence,
    )
