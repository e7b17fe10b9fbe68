"""Primary rate-limit budgets and the ``x-ratelimit-*`` headers GitHub puts on every response.

Each caller (installation, configured token, App JWT, anonymous) spends from an hourly budget
per resource (``core`` for REST, ``graphql``); clients such as gidgethub read the headers into
``RateLimit`` after every call. A spent budget answers like GitHub's primary limit; tests that
want the limit without a thousand requests inject ``primary_rate_limit()`` instead.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .errors import ApiError

WINDOW = 3600  # seconds: GitHub's primary limits are hourly

# Hourly budgets GitHub documents for each kind of caller.
LIMITS = {"installation": 5000, "token": 1000, "app": 5000, "anonymous": 60}

RATE_LIMIT_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"


@dataclass
class Budget:
    limit: int
    used: int
    reset: int  # epoch seconds when the window restarts
    resource: str

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)

    def headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-reset": str(self.reset),
            "x-ratelimit-used": str(self.used),
            "x-ratelimit-resource": self.resource,
        }


class RateLimits:
    """Budgets by (caller, resource), reset hourly on the fake's clock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._budgets: dict[tuple[str, str], Budget] = {}

    def spend(self, caller: str, resource: str, *, now: float) -> Budget:
        """Count one request; raises the primary-limit ApiError when the budget is spent."""
        with self._lock:
            budget = self._current(caller, resource, now)
            if budget.remaining == 0:
                raise primary_limit_error(budget, caller=caller)
            budget.used += 1
            return Budget(budget.limit, budget.used, budget.reset, resource)

    def peek(self, caller: str, resource: str, *, now: float) -> Budget:
        with self._lock:
            budget = self._current(caller, resource, now)
            return Budget(budget.limit, budget.used, budget.reset, resource)

    def _current(self, caller: str, resource: str, now: float) -> Budget:
        budget = self._budgets.get((caller, resource))
        if budget is None or now >= budget.reset:
            kind = caller.partition(":")[0]
            budget = Budget(LIMITS.get(kind, 5000), 0, int(now) + WINDOW, resource)
            self._budgets[(caller, resource)] = budget
        return budget


def primary_limit_error(budget: Budget, *, caller: str, status: int = 403) -> ApiError:
    """GitHub's primary-limit answer: remaining 0 and the reset time in the headers."""
    kind, _, ident = caller.partition(":")
    who = {"installation": f"installation ID {ident}", "app": f"app ID {ident}"}.get(kind, "you")
    spent = Budget(budget.limit, budget.limit, budget.reset, budget.resource)
    return ApiError(
        status,
        f"API rate limit exceeded for {who}. If you reach out to GitHub Support for help, "
        "please include the request ID.",
        headers=spent.headers(),
        documentation_url=RATE_LIMIT_DOCS,
    )


def secondary_limit_error(*, retry_after: int, status: int = 403) -> ApiError:
    """GitHub's secondary-limit answer: ``retry-after``, and remaining budget left untouched."""
    return ApiError(
        status,
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
        "again. If you reach out to GitHub Support for help, please include the request ID.",
        headers={"retry-after": str(retry_after)},
        documentation_url=f"{RATE_LIMIT_DOCS}#about-secondary-rate-limits",
    )
