"""Faults a test injects per method and path pattern, each firing a set number of times.

What each fault does to a matching request (faults are looked up after routing, before
authentication, so a fault fires whatever the credentials):

- ``http_502()``: answer 502 before doing anything; the effect is not applied.
- ``drop_after_apply()``: apply the effect, then close the connection without a response (a
  lost acknowledgement). The client sees a connection error (aiohttp ``ServerDisconnectedError``,
  httpx ``RemoteProtocolError``), never a valid response. Note that aiohttp silently retries an
  idempotent method (GET, PUT, DELETE) once on a reused connection, as it would against GitHub.
- ``delay(seconds)``: sleep, then handle the request: the effect lands after the sleep, so a
  client that times out first has still caused it. ``delay(seconds, after_apply=True)`` applies
  first and sleeps before answering instead.
- ``primary_rate_limit(reset_in=...)``: 403 with ``x-ratelimit-remaining: 0`` and a reset a few
  seconds ahead; not applied.
- ``secondary_rate_limit(retry_after=...)``: 403 with ``retry-after`` and the secondary-limit
  message; not applied.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import ClassVar

from .paths import PathPattern


@dataclass(frozen=True)
class Http502:
    """Answer 502 before applying."""

    name: ClassVar[str] = "http_502"


@dataclass(frozen=True)
class DropAfterApply:
    """Apply, then close the connection without answering."""

    name: ClassVar[str] = "drop_after_apply"


@dataclass(frozen=True)
class Delay:
    seconds: float
    after_apply: bool = False
    name: ClassVar[str] = "delay"


@dataclass(frozen=True)
class PrimaryRateLimit:
    reset_in: int = 3
    status: int = 403  # GitHub documents 403 or 429
    name: ClassVar[str] = "primary_rate_limit"


@dataclass(frozen=True)
class SecondaryRateLimit:
    retry_after: int = 1
    status: int = 403  # GitHub documents 403 or 429
    name: ClassVar[str] = "secondary_rate_limit"


Fault = Http502 | DropAfterApply | Delay | PrimaryRateLimit | SecondaryRateLimit


def http_502() -> Http502:
    return Http502()


def drop_after_apply() -> DropAfterApply:
    return DropAfterApply()


def delay(seconds: float, *, after_apply: bool = False) -> Delay:
    return Delay(seconds, after_apply=after_apply)


def primary_rate_limit(*, reset_in: int = 3, status: int = 403) -> PrimaryRateLimit:
    return PrimaryRateLimit(reset_in=reset_in, status=status)


def secondary_rate_limit(*, retry_after: int = 1, status: int = 403) -> SecondaryRateLimit:
    return SecondaryRateLimit(retry_after=retry_after, status=status)


@dataclass
class Injection:
    """One injected fault; ``fired`` counts the requests it has hit so far."""

    method: str  # upper case, or "*" for any
    pattern: PathPattern
    fault: Fault
    times: int
    fired: int = 0

    @property
    def remaining(self) -> int:
        return self.times - self.fired


class FaultTable:
    """Injected faults in injection order; the first live match fires."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._injections: list[Injection] = []

    def add(self, method: str, pattern: str, fault: Fault, *, times: int) -> Injection:
        if times < 1:
            raise ValueError(f"times must be at least 1, got {times!r}")
        injection = Injection(method.upper(), PathPattern(pattern), fault, times)
        with self._lock:
            self._injections.append(injection)
        return injection

    def take(self, method: str, *, template: str | None, path: str) -> Fault | None:
        """Consume one firing of the first live injection matching the request, if any."""
        with self._lock:
            for injection in self._injections:
                if injection.remaining <= 0 or injection.method not in {"*", method}:
                    continue
                if injection.pattern.matches(template=template, path=path):
                    injection.fired += 1
                    return injection.fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._injections.clear()
