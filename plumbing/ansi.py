"""Terminal escape sequences in text a tool printed: what colours and moves a terminal's
cursor, which a reader of a log (or a parser of it) must not see as text. Pure."""

from __future__ import annotations

import re

# ANSI escape sequences: CSI (ESC [ or the C1 CSI), OSC (ended by BEL or ST), two-byte escapes.
ANSI_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
)


def strip_ansi(text: str) -> str:
    """``text`` without its escape sequences (colours, cursor moves, hyperlinks)."""
    return ANSI_ESCAPE.sub("", text)
