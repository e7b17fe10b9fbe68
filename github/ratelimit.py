"""Recognise GitHub's rate-limit answers and say until when they hold (pure, no I/O).

GitHub documents two limits (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-
the-rest-api): the primary hourly budget, answered 403 or 429 with ``x-ratelimit-remaining: 0``
and the epoch second it resets in ``x-ratelimit-reset``; and secondary limits (too many
concurrent or content-creating requests), answered 403 or 429 with ``retry-after`` seconds, or
without it, in which case GitHub asks to wait at least a minute. GraphQL reports a spent budget
as HTTP 200 with an error of type ``RATE_LIMITED``. gidgethub never waits on any of these.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

# Seconds to wait on a secondary limit that names no retry-after (GitHub: "at least one minute").
SECONDARY_DEFAULT_WAIT = 60.0
# Seconds added to x-ratelimit-reset: it is a whole second, and GitHub's clock is not ours.
RESET_SLACK = 0.5

_LIMIT_STATUSES = frozenset({403, 429})


@dataclass(frozen=True)
class RateLimitHit:
    """A rate-limited answer: which limit, and the epoch second it lifts."""

    limit: str  # "primary" or "secondary"
    retry_at: float


def rate_limit_hit(
    status: int, headers: Mapping[str, str], body: bytes, *, now: float
) -> RateLimitHit | None:
    """The rate limit this answer reports, or None when it is not a rate limit.

    ``headers`` must have lower-case keys; ``now`` is epoch seconds on the caller's clock.
    """
    if status == 200:
        return _graphql_limit(headers, body, now=now)
    if status not in _LIMIT_STATUSES:
        return None
    retry_after = _number(headers.get("retry-after"))
    if retry_after is not None:
        return RateLimitHit("secondary", now + max(retry_after, 0.0))
    if headers.get("x-ratelimit-remaining") == "0":
        return RateLimitHit("primary", _reset(headers, now))
    if status == 429 or b"secondary rate limit" in body.lower():
        return RateLimitHit("secondary", now + SECONDARY_DEFAULT_WAIT)
    return None


def _graphql_limit(headers: Mapping[str, str], body: bytes, *, now: float) -> RateLimitHit | None:
    if b"RATE_LIMITED" not in body:  # cheap test before parsing every 200
        return None
    try:
        errors = json.loads(body).get("errors") or []
    except (ValueError, AttributeError):
        return None
    if any(isinstance(e, dict) and e.get("type") == "RATE_LIMITED" for e in errors):
        return RateLimitHit("primary", _reset(headers, now))
    return None


def _reset(headers: Mapping[str, str], now: float) -> float:
    reset = _number(headers.get("x-ratelimit-reset"))
    if reset is None:
        return now + SECONDARY_DEFAULT_WAIT
    return max(reset + RESET_SLACK, now)


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None
