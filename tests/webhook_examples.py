"""Every webhook payload GitHub documents (``@octokit/webhooks-examples``, see
``tests/data/README.md``): the real formats tests deliver, fill in and route."""

from __future__ import annotations

import copy
import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).parent / "data" / "github-webhook-examples.json.gz"


@cache
def _documented() -> tuple[tuple[str, dict[str, Any]], ...]:
    with gzip.open(EXAMPLES) as packed:
        events = json.loads(packed.read())
    return tuple((event["name"], example) for event in events for example in event["examples"])


def documented() -> list[tuple[str, dict[str, Any]]]:
    """(event name, payload) for every documented example, each a fresh copy."""
    return [(name, copy.deepcopy(payload)) for name, payload in _documented()]


def event_names() -> set[str]:
    return {name for name, _ in _documented()}


def example(event: str, action: str | None) -> dict[str, Any]:
    """The first documented payload of ``event.action`` (a fresh copy to fill in)."""
    for name, payload in _documented():
        if name == event and payload.get("action") == action:
            return copy.deepcopy(payload)
    raise KeyError(f"GitHub documents no {event}.{action} payload")
