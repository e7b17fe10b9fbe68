"""Keep secrets out of the ledger: logs, evidence, artifacts and effect payloads are redacted.

Known secret values (environment variables named like secrets, passwords inside service URLs)
and well-known token shapes are replaced before anything is persisted or sent. Logs and
artifacts are redacted as bytes: what surrounds a secret (a byte that is not UTF-8, binary
content) never keeps it from being masked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

MASK = "***"
MASK_BYTES = MASK.encode()
MIN_SECRET_LENGTH = 6  # shorter values would mask ordinary words
# Names of environment variables whose values are secrets.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PRIVATE_KEY|API_KEY|CREDENTIAL|AUTH",
                         re.IGNORECASE)
# Token shapes worth masking even when their value was never configured here.
TOKEN_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}"
    r"|sk-(?:ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|xox[baprs]-[A-Za-z0-9-]{10,})\b"
)
TOKEN_SHAPES_BYTES = re.compile(TOKEN_SHAPES.pattern.encode())


class Redactor:
    def __init__(self, values: Iterable[str] = ()) -> None:
        unique = {v for v in values if len(v) >= MIN_SECRET_LENGTH}
        self._values = sorted(unique, key=len, reverse=True)  # longest first: no partial masks
        self._encoded = sorted({v.encode(errors="surrogateescape") for v in unique},
                               key=len, reverse=True)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], *,
                         urls: Iterable[str | None] = ()) -> Redactor:
        """Mask the values of secret-named variables and the passwords inside ``urls``
        (service URLs the caller knows hold one)."""
        values = [v for k, v in environ.items() if SECRET_NAME.search(k)]
        for url in urls:
            password = urlsplit(url or "").password
            if password:
                values.append(password)
        return cls(values)

    def __call__(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, MASK)
        return TOKEN_SHAPES.sub(MASK, text)

    def bytes(self, data: bytes) -> bytes:
        """Redact raw content, text or not: every other byte is kept as it is."""
        for value in self._encoded:
            if value in data:
                data = data.replace(value, MASK_BYTES)
        return TOKEN_SHAPES_BYTES.sub(MASK_BYTES, data)

    def value(self, value: Any) -> Any:
        """Redact every string in a JSON-like value (nested dicts and lists)."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value


NO_REDACTION = Redactor()
