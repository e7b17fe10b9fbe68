"""Markdown that text it holds cannot break: code spans and fenced blocks around text Ratchet
did not write (a path, a log, a test's message). Pure.

A code span or a fence ends at the first run of as many backticks as opened it, so each is
opened with one backtick more than the longest run inside (a fence with at least three).
"""

from __future__ import annotations

import re

_BACKTICK_RUN = re.compile(r"`+")


def longest_backtick_run(text: str) -> int:
    """The length of the longest run of backticks in ``text`` (0 for none)."""
    return max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)


def code_span(text: str) -> str:
    """An inline code span around ``text`` that its own backticks cannot end; a space pads
    text that begins or ends with a backtick, as CommonMark strips one on each side."""
    ticks = "`" * (longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fenced(text: str, language: str = "") -> str:
    """A fenced code block around ``text`` that no backtick run inside it can close."""
    fence = "`" * max(3, longest_backtick_run(text) + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{language}\n{body}{fence}"
