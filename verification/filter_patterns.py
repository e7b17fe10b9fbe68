"""GitHub Actions filter patterns (`paths`, `paths-ignore`, `branches`), as GitHub reads them.

Pure. GitHub's "filter pattern cheat sheet" is not the glob dialect of `globs.py`: `**`
matches any characters, slashes included, even inside a name (`'**.js'` is every `.js` file),
and `**/` also matches no folder at all (`docs/**/*.md` names `docs/a.md`); `*` matches any
characters but `/`; `?` makes the character before it optional (`*.jsx?` names `a.js` and
`a.jsx`) and `+` repeats it; `[...]` is one character of a set or range; `\\` escapes. In a
list, a pattern starting with `!` excludes what the positive patterns before it matched, and a
later positive pattern includes again: the last pattern matching a path decides.

The patterns come from the repository under review: a pattern compiles to states of a
non-deterministic automaton that is simulated over the path, a set of states per character,
so matching costs at most (pattern length x path length) steps whatever the pattern
(a backtracking regular expression could take hours on `**a**a**a**b`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

# Item kinds: one character of a set, `*` (no slash), `**` (anything), `**/` (folders or none).
_CHAR, _STAR, _ANY, _FOLDERS = "char", "star", "any", "folders"


@dataclass(frozen=True)
class _Item:
    """One element of a compiled pattern; `chars` for a `_CHAR` item (None: any character),
    `negated` for a `[!...]` set; `optional` (`?`) and `repeated` (`+`) quantify it."""

    kind: str
    chars: frozenset[str] | None = None
    negated: bool = False
    optional: bool = False
    repeated: bool = False

    def accepts(self, char: str) -> bool:
        if self.kind == _STAR:
            return char != "/"
        if self.kind in (_ANY, _FOLDERS):
            return True
        assert self.chars is not None
        return (char in self.chars) != self.negated


@dataclass(frozen=True)
class FilterPattern:
    """A compiled pattern, and whether it excludes (`!`)."""

    items: tuple[_Item, ...]
    negative: bool

    def matches(self, path: str) -> bool:
        return _simulate(self.items, path)


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> FilterPattern:
    """Compile one filter pattern (a leading `!` makes it negative)."""
    negative = pattern.startswith("!")
    text = pattern[1:] if negative else pattern
    items: list[_Item] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "*":
            if text.startswith("**/", index):
                items.append(_Item(_FOLDERS))
                index += 3
                continue
            if text.startswith("**", index):
                items.append(_Item(_ANY))
                index += 2
                continue
            items.append(_Item(_STAR))
        elif char in "?+" and items and items[-1].kind == _CHAR:
            last = items[-1]
            items[-1] = _Item(_CHAR, last.chars, last.negated, optional=last.optional or (
                char == "?"), repeated=last.repeated or char == "+")
        elif char in "?+":
            pass  # nothing before it to quantify: GitHub drops it
        elif char == "[" and (end := text.find("]", index + 1)) != -1:
            body = text[index + 1:end]
            negated = body.startswith(("!", "^"))
            items.append(_Item(_CHAR, _set(body[1:] if negated else body), negated))
            index = end
        elif char == "\\" and index + 1 < len(text):
            index += 1
            items.append(_Item(_CHAR, frozenset(text[index])))
        else:
            items.append(_Item(_CHAR, frozenset(char)))
        index += 1
    return FilterPattern(tuple(items), negative)


def _set(body: str) -> frozenset[str]:
    chars: set[str] = set()
    index = 0
    while index < len(body):
        if index + 2 < len(body) and body[index + 1] == "-":
            low, high = body[index], body[index + 2]
            chars.update(chr(c) for c in range(ord(low), ord(high) + 1))
            index += 3
        else:
            chars.add(body[index])
            index += 1
    return frozenset(chars)


# A state: (item index, inside) where `inside` marks being within a `**/` item's folders.
_State = tuple[int, bool]


def _closure(items: Sequence[_Item], states: Iterable[_State]) -> set[_State]:
    """The states reachable without reading a character: past optional items and stars."""
    found: set[_State] = set()
    pending = list(states)
    while pending:
        state = pending.pop()
        if state in found:
            continue
        found.add(state)
        index, inside = state
        if index < len(items) and not inside:
            item = items[index]
            if item.kind in (_STAR, _ANY, _FOLDERS) or item.optional:
                pending.append((index + 1, False))
    return found


def _simulate(items: Sequence[_Item], path: str) -> bool:
    states = _closure(items, [(0, False)])
    for char in path:
        following: list[_State] = []
        for index, _ in states:
            if index >= len(items):
                continue
            item = items[index]
            if item.kind in (_STAR, _ANY):
                if item.accepts(char):
                    following.append((index, False))
            elif item.kind == _FOLDERS:  # `**/`: any characters, ending at a slash
                following.append((index, True))
                if char == "/":
                    following.append((index + 1, False))
            elif item.accepts(char):
                following.append((index + 1, False))
                if item.repeated:
                    following.append((index, False))
        if not following:
            return False
        states = _closure(items, following)
    return any(index >= len(items) and not inside for index, inside in states)


def admits(patterns: Sequence[str], path: str) -> bool:
    """Whether `path` is included by a `paths` (or `branches`) list: the last pattern that
    matches it decides, `!` patterns excluding."""
    included = False
    for pattern in patterns:
        compiled = compile_pattern(pattern)
        if compiled.negative == included and compiled.matches(path):
            included = not compiled.negative
    return included
