"""Which files of a Node package its test runner runs as tests, from its JSON jest config.

Pure. By naming convention a file below `__tests__/` or named `*.test.ts` / `*.spec.js` is a
test. Jest reads which files are (`testMatch` or `testRegex`, `roots`, `rootDir`,
`testPathIgnorePatterns`, https://jestjs.io/docs/configuration) from package.json's `jest`
key or `jest.config.json`: data, read here. A `jest.config.js` / `.ts`, a vitest config, a
jest preset or `projects` is code, or points at settings read elsewhere: never run, so the
convention stays and `Discovery.note` says why, for `--explain`.

Jest matches `testMatch` globs (micromatch, with extglobs) and its regular expressions against
absolute paths; here a path is the repository's, `/` first. The patterns come from the
repository under review: globs are expanded into plain ones matched without backtracking
(`globs`), and a regular expression that could backtrack for long (a repeat inside a repeat,
many unbounded repeats) is not used, leaving the convention.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from posixpath import normpath

from verification.globs import Glob, compile_glob
from verification.manifests import Manifests, mapping, strings

# Jest's defaults, as its documentation gives them.
DEFAULT_TEST_MATCH = ("**/__tests__/**/*.?([mc])[jt]s?(x)", "**/?(*.)+(spec|test).?([mc])[jt]s?(x)")
DEFAULT_IGNORES = ("/node_modules/",)
# vitest's configs, always code (`vitest.config.ts`, `vitest.workspace.mjs`).
_VITEST_CONFIGS = ("vitest.config.", "vitest.workspace.")
# The options that say which files are tests: without one, jest's defaults are the convention.
_DISCOVERY_KEYS = ("testMatch", "testRegex", "roots", "testPathIgnorePatterns", "rootDir")
# Bounds on what the repository's patterns may cost: expansions of one glob, unbounded
# repeats in one regular expression (each multiplies the steps a failing match may take).
MAX_EXPANSIONS = 64
MAX_REPEATS = 2
# Extglobs and braces nested in one another, at most (each level is a recursion).
MAX_NESTING = 16


class Unreadable(ValueError):
    """A jest setting planning does not read (a code config, an extglob it cannot expand, a
    regular expression that may backtrack): the naming convention decides."""


@dataclass(frozen=True)
class JestTests:
    """The files jest runs as tests in one package, from its JSON config (`source`)."""

    source: str
    roots: tuple[str, ...]  # repository paths, `/` first
    matches: tuple[Glob, ...]  # testMatch, relative to the repository
    excluded: tuple[Glob, ...]  # testMatch's `!` patterns
    regexes: tuple[re.Pattern[str], ...]  # testRegex, used instead of testMatch
    ignores: tuple[re.Pattern[str], ...]  # testPathIgnorePatterns

    def runs(self, path: str) -> bool:
        """Whether jest runs the repository file `path` as a test."""
        absolute = "/" + path
        if not any(absolute.startswith(root.rstrip("/") + "/") for root in self.roots):
            return False
        if self.regexes:
            if not any(regex.search(absolute) for regex in self.regexes):
                return False
        elif not any(glob.matches(path) for glob in self.matches) or any(
                glob.matches(path) for glob in self.excluded):
            return False
        return not any(regex.search(absolute) for regex in self.ignores)


@dataclass(frozen=True)
class Discovery:
    """How a package's test files are told: by its jest config (`jest`), else by name, with
    the reason when a config exists but is not read (`note`)."""

    jest: JestTests | None = None
    note: str = ""


def discover(workspace: str, names: set[str], manifests: Manifests) -> Discovery:
    """How the Node package at `workspace` (holding the watched files `names`) tells tests."""
    code = sorted(name for name in names if name.startswith(_VITEST_CONFIGS) or (
        name.startswith("jest.config.") and not name.endswith(".json")))
    if code:
        return Discovery(note=f"{code[0]} is code, not run: test files told by name")
    folder = "" if workspace == "." else workspace + "/"
    package = manifests.json(folder + "package.json")
    if "jest.config.json" in names:
        config, source = manifests.json(folder + "jest.config.json"), "jest.config.json"
    else:
        config, source = mapping(package.get("jest")), "package.json's jest key"
    if not any(key in config for key in _DISCOVERY_KEYS):
        return Discovery()
    scripts = [s for s in mapping(package.get("scripts")).values() if isinstance(s, str)]
    if any("vitest" in script or re.search(r"\bjest\b.*\s(?:--config|-c)\b", script)
           for script in scripts):
        return Discovery(note=f"a script runs vitest or another jest config than {source}: "
                              "test files told by name")
    if "preset" in config or "projects" in config:
        key = "preset" if "preset" in config else "projects"
        return Discovery(note=f"{source} sets {key}, read elsewhere: test files told by name")
    try:
        return Discovery(jest=_jest_tests(workspace, config, source))
    except Unreadable as exc:
        return Discovery(note=f"{source}: {exc}: test files told by name")


def _jest_tests(workspace: str, config: dict[str, object], source: str) -> JestTests:
    base = "" if workspace == "." else "/" + workspace
    root_dir = config.get("rootDir")
    if isinstance(root_dir, str):
        base = _absolute(root_dir, base).rstrip("/")

    def resolved(value: str) -> str:
        return value.replace("<rootDir>", base)

    roots = tuple(_absolute(resolved(r), base) for r in strings(config.get("roots"))) if (
        "roots" in config) else (base or "/",)
    matches: list[Glob] = []
    excluded: list[Glob] = []
    regexes: list[re.Pattern[str]] = []
    if "testRegex" in config:
        value = config["testRegex"]
        regexes = [_regex(p) for p in ([value] if isinstance(value, str) else strings(value))]
    else:
        for pattern in strings(config.get("testMatch")) if "testMatch" in config else list(
                DEFAULT_TEST_MATCH):
            negated = pattern.startswith("!")
            into = excluded if negated else matches
            into += [compile_glob(g) for g in _relative_globs(resolved(pattern.lstrip("!")),
                                                               negated=negated)]
    ignores = [_regex(resolved(p)) for p in (strings(config.get("testPathIgnorePatterns"))
                                             if "testPathIgnorePatterns" in config
                                             else DEFAULT_IGNORES)]
    return JestTests(source, roots, tuple(matches), tuple(excluded), tuple(regexes),
                     tuple(ignores))


def _absolute(path: str, base: str) -> str:
    """`path` as a repository path with `/` first, relative ones from `base`."""
    joined = normpath(path if path.startswith("/") else f"{base}/{path}")
    if joined.startswith("//"):
        joined = joined[1:]
    if not joined.startswith("/") or joined.startswith("/.."):
        raise Unreadable(f"{path!r} lies outside the repository")
    return joined


def _relative_globs(pattern: str, *, negated: bool) -> list[str]:
    """The plain globs `pattern` stands for, relative to the repository. Jest matches globs
    against absolute paths: one neither from `<rootDir>` (or `/`) nor starting with `**`
    matches nothing."""
    if pattern.startswith("/"):
        pattern = pattern.lstrip("/")
    elif not pattern.startswith("**"):
        return []
    return list(_expand(pattern, negated=negated))


def _expand(pattern: str, *, negated: bool, depth: int = 0) -> Iterator[str]:
    """Each plain glob of the extglobs and braces in `pattern`: `?(a|b)` is '', 'a' or 'b',
    `@(a|b)` and `{a,b}` 'a' or 'b'; `+(x)` and `*(x)` are taken once at most, which names
    fewer files (a test so missed checks dependents too). In an exclusion that would exclude
    fewer: not read, nor is `!(x)`."""
    if depth > MAX_NESTING:
        raise Unreadable(f"the glob {pattern!r} nests too deep")
    found = [""]
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char in "?*+@!" and pattern[at + 1 : at + 2] == "(":
            end = _closing(pattern, at + 1, "(", ")")
            if char == "!" or (negated and char in "*+"):
                raise Unreadable(f"the glob {pattern!r} is not read")
            options = [g for part in _split(pattern[at + 2 : end], "|")
                       for g in _expand(part, negated=negated, depth=depth + 1)]
            choices = ["", *options] if char in "?*" else options
            at = end + 1
        elif char == "{" and "," in pattern[at:]:
            end = _closing(pattern, at, "{", "}")
            choices = [g for part in _split(pattern[at + 1 : end], ",")
                       for g in _expand(part, negated=negated, depth=depth + 1)]
            at = end + 1
        elif char == "[" and (end := pattern.find("]", at + 1)) != -1:
            choices, at = [pattern[at : end + 1]], end + 1
        elif char == "\\":
            raise Unreadable(f"the glob {pattern!r} is not read")
        else:
            choices, at = [char], at + 1
        found = [prefix + choice for prefix in found for choice in choices]
        if len(found) > MAX_EXPANSIONS:
            raise Unreadable(f"the glob {pattern!r} stands for too many")
    yield from found


def _closing(text: str, start: int, opening: str, closing: str) -> int:
    """The index of the bracket closing the one at `start`."""
    depth = 0
    for at in range(start, len(text)):
        if text[at] == opening:
            depth += 1
        elif text[at] == closing:
            depth -= 1
            if depth == 0:
                return at
    raise Unreadable(f"the glob {text!r} has an unclosed {opening}")


def _split(text: str, separator: str) -> list[str]:
    """`text` split at `separator` outside brackets."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char in "({[") - (char in ")}]")
        if char == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _regex(pattern: str) -> re.Pattern[str]:
    """The repository's regular expression, when matching it cannot backtrack for long."""
    try:
        compiled = re.compile(pattern)
        parsed = re._parser.parse(pattern)  # type: ignore[attr-defined]
    except (re.error, RecursionError, OverflowError) as exc:
        raise Unreadable(f"the pattern {pattern!r} is not read") from exc
    try:
        wide = _repeats(parsed, nested=False)
    except Unreadable as exc:
        raise Unreadable(f"the pattern {pattern!r} may backtrack for long ({exc})") from exc
    if wide > MAX_REPEATS:
        raise Unreadable(f"the pattern {pattern!r} may backtrack for long ({wide} repeats)")
    return compiled


def _repeats(pattern: object, *, nested: bool) -> int:
    """How many repeats of more than one `pattern` holds (a parsed expression); `Unreadable`
    for a repeat holding another, or an alternation, or a back reference."""
    count = 0
    for op, value in pattern:  # type: ignore[attr-defined]
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = value
            wide = high != low and high > 1
            if nested and wide:
                raise Unreadable("a repeat inside a repeat")
            count += wide + _repeats(body, nested=nested or wide)
        elif name == "GROUPREF" or (nested and name == "BRANCH"):
            raise Unreadable("a back reference or an alternation inside a repeat")
        elif name == "BRANCH":
            count += sum(_repeats(branch, nested=nested) for branch in value[1])
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            count += _repeats(value[-1], nested=nested)
        elif name in ("ASSERT", "ASSERT_NOT"):
            count += _repeats(value[1], nested=nested)
        elif name == "GROUPREF_EXISTS":
            raise Unreadable("a conditional group")
    return count
