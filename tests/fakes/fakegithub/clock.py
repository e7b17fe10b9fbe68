"""The fake's clock: wall time plus an offset a test can advance.

Tokens expire, JWTs age and rate-limit windows reset against this clock, so a test can make an
installation token expire (``fake.advance_clock(3601)``) without sleeping for an hour.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime


class Clock:
    """Seconds since the epoch, shifted by ``advance``; thread-safe."""

    def __init__(self) -> None:
        self._offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._offset += seconds


def iso8601(timestamp: float) -> str:
    """GitHub's timestamp format: UTC, whole seconds, a ``Z`` suffix."""
    return datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso8601(text: str) -> float | None:
    """Parse a client-supplied ISO 8601 timestamp (``Z`` or an offset), or None if malformed."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
