"""Canonical JSON and sha256: the byte forms every checkpoint hash and effect key is built on."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no optional whitespace: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """The sha256 of a value's canonical JSON."""
    return sha256_hex(canonical_json(value))
