"""GitHub's answers as Ratchet's failure classes: the engine decides by type, never by message.

Each class is a ``StepFailure`` of exactly one class of DESIGN.md (transient, deterministic,
ambiguous, authority) and carries what happened in ``evidence`` (method, path, status, GitHub's
message and request id, the installation), already scrubbed of credentials:

    GitHubFailure
    ├── GitHubUnavailable (transient)      5xx, connection lost before a write was sent
    │   └── RateLimited (transient)        primary or secondary rate limit; ``retry_at``
    ├── OutcomeUnknown (ambiguous)         a write was sent and its answer was lost
    ├── GitHubRejected (deterministic)     4xx: the same request gets the same answer
    │   ├── InvalidRequest                 400, 422, GraphQL document errors
    │   ├── NotFound                       404, 410, GraphQL NOT_FOUND
    │   │   └── NotInstalled               the App is not installed on the repository
    │   └── BadCredentials                 401: wrong App id, key or token
    └── Forbidden (authority)              403 that is not a rate limit

``GitHubSettingsError`` is not a step failure: it is raised at start-up for a bad setting.
"""

from __future__ import annotations

from typing import Any

from runner.errors import (
    AmbiguousFailure,
    AuthorityFailure,
    DeterministicFailure,
    RatchetError,
    StepFailure,
    TransientFailure,
)


class GitHubSettingsError(RatchetError, ValueError):
    """A GitHub setting is missing or unusable; the message names the variable to fix."""


class GitHubFailure(StepFailure):
    """A GitHub call failed; ``evidence`` says which call and what GitHub answered."""

    @property
    def status(self) -> int | None:
        """The HTTP status GitHub answered, or None when no answer arrived."""
        status = self.evidence.get("status")
        return status if isinstance(status, int) else None


class GitHubUnavailable(GitHubFailure, TransientFailure):
    """GitHub failed or could not be reached, and nothing was applied: retry with backoff.

    A 5xx is classed here even after a write: the effect protocol looks an effect up before it
    sends it again, so a retry never duplicates what a 5xx may have let through.
    """


class RateLimited(GitHubUnavailable):
    """GitHub's rate limit holds this installation (or token) until ``retry_at``.

    Raised instead of waiting when the wait is longer than the client's bound, so the runner
    can give up the lease and come back later instead of holding a worker thread.
    """

    def __init__(
        self,
        message: str,
        *,
        retry_at: float,
        limit: str,
        evidence: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, evidence=evidence)
        self.retry_at = retry_at  # epoch seconds
        self.limit = limit  # "primary" or "secondary"


class OutcomeUnknown(GitHubFailure, AmbiguousFailure):
    """A mutating request was sent and no answer came back: it may or may not have happened.

    Look the effect up (marker, head branch, ``external_id``) before sending it again.
    """


class GitHubRejected(GitHubFailure, DeterministicFailure):
    """GitHub refused the request (4xx); sending it again gets the same answer."""


class InvalidRequest(GitHubRejected):
    """400 or 422: the request is malformed or breaks a rule (e.g. a duplicate pull request)."""


class NotFound(GitHubRejected):
    """404 or 410: no such resource, or one the credentials may not see."""


class NotInstalled(NotFound):
    """The App has no installation covering the repository."""


class BadCredentials(GitHubRejected):
    """401: GitHub does not accept the App's JWT or the token (a configuration problem)."""


class Forbidden(GitHubFailure, AuthorityFailure):
    """403 (not a rate limit): the App or token lacks a permission, or a rule protects the
    resource; a person must grant it or decide otherwise."""
