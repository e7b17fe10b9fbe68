"""Path globs as the ecosystems write them: workspace member lists and `verify.ignore`.

Pure. One dialect for all of them, the common core of pnpm's and npm's (minimatch), Cargo's,
uv's and gitignore's patterns: `*` and `?` stay inside one path segment, `**` spans any number
of segments (none included; a trailing one at least one), `[...]` is a character class, and a
leading `./` or a trailing `/` is only decoration.

The patterns come from the repository under review, so matching must not backtrack: a
`**/**/**/x` member glob compiled to a regular expression tried every split of a deep path
(minutes to hours). Here a pattern is compiled once to a list of segment matchers, consecutive
`**` collapsed, and matched with the greedy wildcard algorithm at two levels: `**` over path
segments, `*` over the characters of one segment. Each level returns to its last star only,
so a match costs at most (pattern length x path length) steps, whatever the pattern.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from posixpath import normpath
from typing import Any


class Wild(Enum):
    """`STAR`: `*` in a segment, `**` over segments; `ANY`: `?`, one character."""

    STAR = "*"
    ANY = "?"


STAR, ANY = Wild.STAR, Wild.ANY
# One item of a segment pattern: a wildcard, a literal character or a character class.
_Item = Wild | str | re.Pattern[str]
# A segment pattern: its items, or the segment itself when it has no wildcard (compared at
# once: member globs like `packages/*` are matched against every manifest folder).
_Segment = str | tuple[_Item, ...]
# `*` alone: any one segment.
_ANY_SEGMENT = (STAR,)


@dataclass(frozen=True)
class Glob:
    """A compiled pattern: per path segment, `STAR` (`**`) or the items of one segment."""

    segments: tuple[Wild | _Segment, ...]
    valid: bool = True  # False: a class like [z-a], which the ecosystems' tools reject

    def matches(self, path: str) -> bool:
        """True when the normalized relative `path` is one the pattern names."""
        return self.valid and _wildcard(self.segments, path.split("/"), _segment_matches)

    def covers(self, path: str) -> bool:
        """True when the pattern names `path` or a folder above it (gitignore's reading)."""
        return self.valid and _wildcard((*self.segments, STAR), path.split("/"),
                                        _segment_matches)


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> Glob:
    """The matcher of exactly the relative paths `pattern` names."""
    text = pattern.strip()
    while text.startswith("./"):
        text = text[2:]
    text = text.rstrip("/") or "."
    segments: list[Wild | _Segment] = []
    try:
        for segment in text.split("/"):
            if segment != "**":
                segments.append(_segment(segment))
            elif not segments or segments[-1] is not STAR:  # `**/**` is `**`
                segments.append(STAR)
    except re.error:  # a class like [z-a]: the ecosystem's tool rejects it; it matches nothing
        return Glob((), valid=False)
    if len(segments) > 1 and segments[-1] is STAR:
        # A trailing `**` names what is inside the folder before it, not the folder itself.
        segments[-1:] = [(STAR,), STAR]
    return Glob(tuple(segments))


def _segment(segment: str) -> _Segment:
    items: list[_Item] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            if not items or items[-1] is not STAR:  # `**` inside a segment is `*`
                items.append(STAR)
        elif char == "?":
            items.append(ANY)
        elif char == "[" and (end := segment.find("]", index + 1)) != -1:
            body = segment[index + 1 : end]
            negate = body.startswith(("!", "^"))
            body = body[1:] if negate else body
            escaped = body.replace("\\", "\\\\")
            # One character, one class: matching it never backtracks.
            items.append(re.compile("[" + ("^" if negate else "") + escaped + "]"))
            index = end
        else:
            items.append(char)
        index += 1
    literal = "".join(item for item in items if isinstance(item, str))
    return literal if len(literal) == len(items) else tuple(items)


def _segment_matches(pattern: _Segment, segment: str) -> bool:
    if isinstance(pattern, str):
        return pattern == segment
    if pattern == _ANY_SEGMENT:
        return True
    return _wildcard(pattern, segment, _item_matches)


def _item_matches(item: _Item, char: str) -> bool:
    if isinstance(item, re.Pattern):
        return item.fullmatch(char) is not None
    return item is ANY or item == char


def _wildcard(pattern: Sequence[Any], text: Sequence[str], one: Callable[[Any, str], bool]
              ) -> bool:
    """Whether `pattern` matches all of `text`: `STAR` matches any run of elements, every other
    item exactly one element for which `one` holds.

    Greedy, returning to the last star only: a later star can take over whatever an earlier
    one would have taken, so no other split needs trying, and each element is compared with
    each item at most once per star.
    """
    at = position = 0
    star, resume = -1, 0  # the last star seen, and where its run ends so far
    while position < len(text):
        if at < len(pattern) and pattern[at] is STAR:
            star, resume = at, position
            at += 1
        elif at < len(pattern) and one(pattern[at], text[position]):
            at += 1
            position += 1
        elif star >= 0:
            resume += 1
            at, position = star + 1, resume
        else:
            return False
    while at < len(pattern) and pattern[at] is STAR:
        at += 1
    return at == len(pattern)


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
        if not any(compile_glob(p).matches(path) for p in self.include):
            return False
        return not any(compile_glob(p).matches(path) for p in self.exclude)


def ignore_matches(pattern: str, path: str) -> bool:
    """True when a `verify.ignore` pattern covers `path` (gitignore's reading of a pattern).

    A pattern without a slash (other than a trailing one) matches a name at any depth; any
    other pattern is anchored at the repository root. A pattern that matches a folder covers
    everything below it.
    """
    body = pattern.strip()
    anchored = "/" in body.rstrip("/")
    return compile_glob(body if anchored else f"**/{body}").covers(path)
