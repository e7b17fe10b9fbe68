"""Path globs as the ecosystems write them: workspace member lists and `verify.ignore`.

Pure. One dialect for all of them, the common core of pnpm's and npm's (minimatch), Cargo's,
uv's and gitignore's patterns: `*` and `?` stay inside one path segment, `**` spans any number
of segments (none included), `[...]` is a character class, and a leading `./` or a trailing
`/` is only decoration. Patterns are compiled once to a regular expression, so matching a
thousand folders against a handful of patterns stays linear.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from posixpath import normpath


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regular expression matching exactly the relative paths `pattern` names."""
    text = pattern.strip()
    while text.startswith("./"):
        text = text[2:]
    text = text.rstrip("/") or "."
    parts: list[str] = []
    segments = text.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            # Any number of whole segments, none included.
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        parts.append(_segment(segment) + ("" if last else "/"))
    try:
        return re.compile("".join(parts) + r"\Z")
    except re.error:  # a class like [z-a]: the ecosystem's tool rejects it; it matches nothing
        return re.compile(r"(?!)")


def _segment(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = segment.find("]", index + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = segment[index + 1 : end]
                negate = body.startswith(("!", "^"))
                body = body[1:] if negate else body
                escaped = body.replace("\\", "\\\\")
                out.append("[" + ("^" if negate else "") + escaped + "]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


@dataclass(frozen=True)
class GlobSet:
    """Include patterns minus exclude patterns (pnpm's `!pattern`, Cargo's and uv's `exclude`)."""

    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()

    @classmethod
    def from_patterns(cls, patterns: Iterable[str], exclude: Iterable[str] = ()) -> GlobSet:
        """Split `!`-prefixed patterns (pnpm, npm) into excludes."""
        include, excluded = [], list(exclude)
        for pattern in patterns:
            if pattern.startswith("!"):
                excluded.append(pattern[1:])
            elif pattern.strip():
                include.append(pattern)
        return cls(tuple(include), tuple(excluded))

    def matches(self, relative: str) -> bool:
        """True when the folder `relative` (to the declaring folder) is included, not excluded."""
        path = normpath(relative)
        if not any(compile_glob(p).match(path) for p in self.include):
            return False
        return not any(compile_glob(p).match(path) for p in self.exclude)


def ignore_matches(pattern: str, path: str) -> bool:
    """True when a `verify.ignore` pattern covers `path` (gitignore's reading of a pattern).

    A pattern without a slash (other than a trailing one) matches a name at any depth; any
    other pattern is anchored at the repository root. A pattern that matches a folder covers
    everything below it.
    """
    body = pattern.strip()
    anchored = "/" in body.rstrip("/")
    regex = compile_glob(body if anchored else f"**/{body}")
    candidate = path
    while candidate:
        if regex.match(candidate):
            return True
        candidate = candidate.rpartition("/")[0]
    return False
