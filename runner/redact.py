"""Keep secrets out of the ledger: logs, evidence, artifacts and effect payloads are redacted.

Known secret values (environment variables named like secrets, passwords inside service URLs)
and well-known token shapes are replaced before anything is persisted or sent. Logs and
artifacts are redacted as bytes: what surrounds a secret (a byte that is not UTF-8, binary
content) never keeps it from being masked. So are a known value's usual encodings
(``encoded_forms``: base64, hex, percent-encoding), which a process prints to get a value past
a mask that catches only the plain one. This is defence in depth: agents and checks never get
the runner's secrets, and any encoding this does not know (a second base64, a cipher) passes.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

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


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def encoded_forms(value: bytes) -> set[bytes]:
    """How ``value`` reads once encoded: hex in either case, percent-encoded, and base64 and
    its URL-safe alphabet at each of the three alignments it can have inside a longer encoded
    stream (``base64 <<< "KEY=$KEY"``). Of base64, only the characters that depend on
    ``value`` alone are kept: what precedes and follows it changes the edges, never those."""
    forms = {value.hex().encode(), value.hex().upper().encode(),
             quote(value, safe="").encode(), quote_plus(value, safe="").encode()}
    for shift in range(3):  # value starts 0, 1 or 2 bytes into a 3-byte group
        encoded = base64.b64encode(bytes(shift) + value)
        first = -(-8 * shift // 6)  # the first character of value's bits only
        last = (8 * (shift + len(value)) - 6) // 6  # the last one
        fragment = encoded[first:last + 1]
        forms |= {fragment, fragment.translate(_URLSAFE)}
    forms.discard(value)
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


class Redactor:
    def __init__(self, values: Iterable[str] = ()) -> None:
        unique = {v for v in values if len(v) >= MIN_SECRET_LENGTH}
        raw = {v.encode(errors="surrogateescape") for v in unique}
        forms = {form for value in raw for form in encoded_forms(value)} - raw
        # Longest first: no partial masks. Plain values before their encodings.
        self._encoded = [*sorted(raw, key=len, reverse=True),
                         *sorted(forms, key=len, reverse=True)]
        self._values = [*sorted(unique, key=len, reverse=True),
                        *(form.decode("ascii") for form in sorted(forms, key=len, reverse=True))]

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], *,
                         urls: Iterable[str | None] = (),
                         secrets: Iterable[str] = ()) -> Redactor:
        """Mask the values of secret-named variables, the passwords inside ``urls`` (service
        URLs the caller knows hold one) and the caller's other ``secrets`` (a key file's)."""
        values = [v for k, v in environ.items() if SECRET_NAME.search(k)]
        values += secrets
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
