"""Whether a version satisfies an npm version range, as node-semver decides it.

Pure. npm and yarn link a workspace member into a package that depends on it by a plain range
(`"@acme/utils": "^1.2.0"`) only when the member's version satisfies that range; otherwise
they install the published package and the member's changes do not reach it. Ranges follow
https://github.com/npm/node-semver#ranges: `||` alternatives of space-separated comparators,
`^`, `~`, `>`, `>=`, `<`, `<=`, `=`, x-ranges (`1.x`, `1.2.*`, `*`) and hyphen ranges
(`1.2 - 2.3.4`). A prerelease version satisfies a set only if one of its comparators names a
prerelease of the same major.minor.patch (node-semver's rule). Anything else (a tag, a URL, a
git or `npm:` specifier) is no range: nothing satisfies it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?")
_PARTIAL = re.compile(r"v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?"
                      r"(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?")
_COMPARATOR = re.compile(r"(\^|~>?|[<>]=?|=)?\s*([^\s^~<>=]\S*)")


@dataclass(frozen=True, order=True)
class Version:
    """A semantic version; orders as semver does (a prerelease before its release)."""

    release: tuple[int, int, int]
    final: bool  # no prerelease: sorts after every prerelease of the same release
    prerelease: tuple[tuple[int, int | str], ...]  # numeric identifiers sort first

    @classmethod
    def parse(cls, text: str) -> Version | None:
        match = _VERSION.fullmatch(text.strip())
        if match is None:
            return None
        major, minor, patch, pre = match.groups()
        return cls.of(int(major), int(minor), int(patch), pre)

    @classmethod
    def of(cls, major: int, minor: int, patch: int, pre: str | None = None) -> Version:
        identifiers = tuple((0, int(p)) if p.isdigit() else (1, p)
                            for p in (pre.split(".") if pre else ()))
        return cls((major, minor, patch), not pre, identifiers)


_Comparator = tuple[str, Version]


def satisfies(version: str, spec: str) -> bool:
    """True when `version` satisfies the npm range `spec`."""
    parsed = Version.parse(version)
    if parsed is None:
        return False
    for alternative in spec.split("||"):
        comparators = _comparators(alternative.strip())
        if comparators is not None and _within(parsed, comparators):
            return True
    return False


def _within(version: Version, comparators: list[_Comparator]) -> bool:
    if not all(_compare(version, op, bound) for op, bound in comparators):
        return False
    if version.final:
        return True
    return any(not bound.final and bound.release == version.release for _, bound in comparators)


def _compare(version: Version, op: str, bound: Version) -> bool:
    return {"<": version < bound, "<=": version <= bound, ">": version > bound,
            ">=": version >= bound, "=": version == bound}[op]


def _comparators(text: str) -> list[_Comparator] | None:
    """The comparators of one `||` alternative; None when it is no range."""
    if text in ("", "*", "x", "X"):
        return []
    hyphen = re.fullmatch(r"(\S+)\s+-\s+(\S+)", text)
    if hyphen is not None:
        low, high = _partial(hyphen[1]), _partial(hyphen[2])
        if low is None or high is None:
            return None
        return [*_desugar(">=", low), *_desugar("<=", high)]
    found: list[_Comparator] = []
    for match in _COMPARATOR.finditer(text):
        partial = _partial(match[2])
        if partial is None:
            return None
        found += _desugar(match[1] or "", partial)
    return found


_Partial = tuple[int | None, int | None, int | None, str | None]


def _partial(text: str) -> _Partial | None:
    match = _PARTIAL.fullmatch(text)
    if match is None:
        return None
    numbers = [None if part is None or not part.isdigit() else int(part)
               for part in match.groups()[:3]]
    for at in range(1, 3):  # 1.x.3 is 1.x
        if numbers[at - 1] is None:
            numbers[at] = None
    return numbers[0], numbers[1], numbers[2], match[4]


def _desugar(op: str, partial: _Partial) -> list[_Comparator]:
    """One comparator of a partial version as plain comparators (node-semver's desugaring)."""
    major, minor, patch, pre = partial
    if major is None:
        return [] if op in ("", "=", ">=", "<=") else [("<", Version.of(0, 0, 0, "0"))]
    low = Version.of(major, minor or 0, patch or 0, pre)
    if minor is None:
        upper = Version.of(major + 1, 0, 0, "0")
    elif patch is None:
        upper = Version.of(major, minor + 1, 0, "0")
    else:
        upper = None
    if op == "^":
        if major > 0 or minor is None:
            upper = Version.of(major + 1, 0, 0, "0")
        elif minor > 0 or patch is None:
            upper = Version.of(0, minor + 1, 0, "0")
        else:
            upper = Version.of(0, 0, patch + 1, "0")
        return [(">=", low), ("<", upper)]
    if op in ("~", "~>"):
        upper = Version.of(major, (minor or 0) + 1, 0, "0") if minor is not None else upper
        return [(">=", low), ("<", upper)] if upper is not None else [(">=", low)]
    if op in ("", "="):
        return [("=", low)] if upper is None else [(">=", low), ("<", upper)]
    if op == ">":
        return [(">", low)] if upper is None else [(">=", upper)]
    if op == "<=":
        return [("<=", low)] if upper is None else [("<", upper)]
    if op == "<":
        return [("<", Version.of(major, minor or 0, patch or 0, pre or "0")
                 if upper is not None and pre is None else low)]
    return [(">=", low)]
