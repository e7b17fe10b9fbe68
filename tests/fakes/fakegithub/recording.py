"""Every request the fake received, what it answered, and what was wrong with it.

Tests assert on effects through these records (``fake.calls(method="POST", path_pattern=...)``)
and assert that the client never sent what GitHub would refuse
(``fake.validation_failures == []``). A request is recorded when it arrives and completed when
answered, so a dropped or delayed request is visible too.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .paths import PathPattern
from .state import AuthKind


@dataclass
class Call:
    """One request and its outcome."""

    seq: int
    method: str
    path: str  # as the client sent it, without the query
    query: dict[str, str]
    body: Any  # parsed JSON; None when empty; the raw text when it was not JSON
    template: str | None = None  # the documented path template, None for an unknown route
    operation_id: str | None = None  # e.g. "issues/create-comment", or "graphql"
    auth: AuthKind = AuthKind.ANONYMOUS
    actor: str | None = None  # login of the authenticated user or bot; the App's slug for a JWT
    status: int | None = None  # None while in flight, and when the connection was dropped
    fault: str | None = None
    response: Any = None  # the body sent, or that would have been sent before a drop
    problems: list[str] = field(default_factory=list)  # why the request failed validation


@dataclass(frozen=True)
class ValidationFailure:
    """A request GitHub would refuse as malformed: bad JSON, body, query or path parameter."""

    call: Call
    problems: tuple[str, ...]


class Recorder:
    """Thread-safe store of calls, validation failures and response-shape mismatches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._failures: list[ValidationFailure] = []
        self._mismatches: list[tuple[Call, tuple[str, ...]]] = []

    def start(self, method: str, path: str, query: dict[str, str], body: Any) -> Call:
        with self._lock:
            call = Call(len(self._calls) + 1, method, path, query, body)
            self._calls.append(call)
            return call

    def fail_validation(self, call: Call, problems: list[str]) -> None:
        with self._lock:
            call.problems = list(problems)
            self._failures.append(ValidationFailure(call, tuple(problems)))

    def mismatch(self, call: Call, problems: list[str]) -> None:
        with self._lock:
            self._mismatches.append((call, tuple(problems)))

    def calls(
        self,
        *,
        method: str | None = None,
        path_pattern: str | None = None,
        status: int | None = None,
        operation_id: str | None = None,
    ) -> list[Call]:
        """Recorded calls in arrival order, filtered by every criterion given."""
        pattern = PathPattern(path_pattern) if path_pattern is not None else None
        with self._lock:
            found = list(self._calls)
        return [
            call
            for call in found
            if (method is None or call.method == method.upper())
            and (pattern is None or pattern.matches(template=call.template, path=call.path))
            and (status is None or call.status == status)
            and (operation_id is None or call.operation_id == operation_id)
        ]

    @property
    def validation_failures(self) -> list[ValidationFailure]:
        with self._lock:
            return list(self._failures)

    @property
    def response_mismatches(self) -> list[tuple[Call, tuple[str, ...]]]:
        with self._lock:
            return list(self._mismatches)

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()
            self._failures.clear()
            self._mismatches.clear()
