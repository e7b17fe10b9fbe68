"""Which package.json scripts are checks, of which kind, and which of them to run.

Pure. Repositories spell the same check many ways (`typecheck`, `type-check`, `check-types`,
`tsc`; `format:check`, `format-check`, `prettier:check`; `test:unit`, `test-unit`), and some
names say nothing (`check`). A script is a check when its name is in `SCRIPT_NAMES`; its kind
comes from the name, or for a name of no kind (`check`) from the tools its body runs
(`tools`). Scripts call each other (`pnpm run test:unit`, `run-s lint:*`, `yarn eslint`), so
the tools of a script are those of the scripts it calls too, and a script another planned
script calls is not planned again: `test` running `test:unit` plans `test` only. A script that
rewrites files (`prettier --write`, `eslint --fix`) is a fixer, never a check; one that watches
(`jest --watch`) never ends. Among the test scripts one runs: the unit tests the repository
names (`test:unit`) unless `test` runs them, then `test`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache

from verification.commandline import Command, commands
from verification.tools import WATCHING, ToolUse, classify

# Script names that are checks, by kind, the preferred spelling first. `check` says nothing:
# its body decides (vuejs/core's `"check": "tsc --incremental --noEmit"` is a type check).
SCRIPT_NAMES: dict[str | None, tuple[str, ...]] = {
    "lint": ("lint", "lint:check", "lint-check", "lint:ci", "check:lint", "lint:all", "eslint",
             "eslint:check", "format:check", "format-check", "fmt:check", "fmt-check",
             "check-format", "check:format", "formatcheck", "prettier:check", "prettier-check",
             "check:prettier", "stylelint", "stylelint:check", "lint:style", "lint:css",
             "biome:check", "check:biome"),
    "typecheck": ("typecheck", "type-check", "typecheck:all", "check-types", "check:types",
                  "types:check", "types", "tsc", "check:ts", "ts:check", "ts-check",
                  "check-ts", "lint:types", "lint:ts", "type:check", "typescript"),
    "test": ("test:unit", "test-unit", "unit", "test:units", "test", "tests"),
    "build": ("build",),
    None: ("check", "ci", "verify", "validate"),
}
_KIND_OF_NAME = {name: kind for kind, names in SCRIPT_NAMES.items() for name in names}
# What `npm init` writes as the test script: a placeholder, not a test suite.
NPM_PLACEHOLDER_TEST = 'echo "Error: no test specified" && exit 1'
# Deepest chain of scripts calling scripts that is followed (a cycle stops at the first
# script seen twice).
MAX_CALL_DEPTH = 8

# Package managers' own commands: `pnpm install` is not a script named install.
_PNPM_COMMANDS = frozenset({
    "add", "install", "i", "update", "up", "remove", "rm", "uninstall", "link", "ln", "unlink",
    "import", "rebuild", "rb", "prune", "fetch", "patch", "patch-commit", "exec", "dlx",
    "create", "publish", "pack", "list", "ls", "outdated", "why", "audit", "licenses", "store",
    "root", "bin", "config", "c", "setup", "env", "init", "deploy", "doctor", "server", "dedupe",
    "approve-builds", "self-update", "help", "recursive", "m", "multi", "install-test", "it",
    "cat-file", "cat-index", "find-hash", "ignored-builds", "version",
})  # fmt: skip
_YARN_COMMANDS = frozenset({
    "add", "install", "remove", "up", "upgrade", "dlx", "exec", "workspace", "workspaces",
    "info", "why", "npm", "pack", "link", "unlink", "config", "cache", "set", "plugin",
    "constraints", "dedupe", "explain", "init", "node", "patch", "patch-commit", "rebuild",
    "search", "stage", "version", "bin", "import", "global", "audit", "outdated", "login",
    "logout", "publish", "tag", "team", "licenses", "generate-lock-entry", "check", "autoclean",
    "create", "policies", "help",
})  # fmt: skip
_YARNS = frozenset({"yarn", "jlpm", "yarnpkg"})
# Flags that make a package manager run scripts of other packages, not this one's.
_RECURSIVE_FLAGS = frozenset({"-r", "--recursive", "--filter", "-F", "--workspaces", "-ws",
                              "--workspace", "-w", "-C", "--dir", "--prefix"})
# Programs that run a list of scripts: npm-run-all's `run-s`, `run-p`, `npm-run-all`, and
# concurrently's `"npm:lint" "npm:test"`.
_RUN_ALL = frozenset({"run-s", "run-p", "npm-run-all", "npm-run-all2"})
_NOTHING = frozenset({"echo", "true", "exit", ":", "printf"})
# Reads a command that starts a task runner (`make lint`) as the tools its tasks run; None
# for any other command (`task_runners.TaskLookup.resolver`).
TaskResolver = Callable[[Command], "list[ToolUse] | None"]


@dataclass(frozen=True)
class Script:
    """A script to plan: its name, its kind, and the tools it runs, its callees' included."""

    name: str
    kind: str
    tools: frozenset[str]


@dataclass(frozen=True)
class _Line:
    """What a script's body runs, whichever package's it is."""

    commands: tuple[Command, ...]
    tools: tuple[ToolUse | None, ...]  # what each command runs when it is a tool (`classify`)
    idle: bool  # runs nothing (an `echo` placeholder)
    elsewhere: bool  # runs only in other folders (`cd packages/app && pnpm test`)
    watches: bool  # runs until stopped (`jest --watch`)


@dataclass(frozen=True)
class _Reading:
    uses: tuple[ToolUse, ...]
    calls: tuple[str, ...]
    idle: bool  # runs nothing (an `echo` placeholder)
    elsewhere: bool  # runs only in other folders (`cd packages/app && pnpm test`)
    watches: bool  # runs until stopped (`jest --watch`)


def checks_of(scripts: Mapping[str, object], *,
              tasks: TaskResolver | None = None) -> list[Script]:
    """The scripts of a package.json (`scripts`) to plan as checks, in `SCRIPT_NAMES` order;
    `tasks` reads the task runners they start (`"lint": "make lint"`)."""
    bodies = {name: body for name, body in scripts.items()
              if isinstance(name, str) and isinstance(body, str)}
    readings = {name: _read(body, bodies, tasks) for name, body in bodies.items()}
    candidates: list[Script] = []
    closures: dict[str, list[str]] = {}  # each candidate's and the scripts it calls
    # In `SCRIPT_NAMES` order (a name is listed once there).
    for name in sorted((n for n in bodies if n in _ORDER), key=_ORDER.__getitem__):
        called = _closure(name, readings)
        script = _script(name, _KIND_OF_NAME[name], bodies, readings, called)
        if script is not None:
            candidates.append(script)
            closures[name] = called
    called = {c for s in candidates for c in closures[s.name]
              if c != s.name and s.name not in closures.get(c, ())}  # a cycle drops neither
    chosen: list[Script] = []
    for script in candidates:
        if script.name in called or _covered(script, chosen):
            continue
        chosen.append(script)
    return sorted(chosen, key=lambda s: _ORDER[s.name])


_ORDER = {name: i for i, name in enumerate(n for names in SCRIPT_NAMES.values() for n in names)}


def _script(name: str, kind: str | None, bodies: Mapping[str, str],
            readings: Mapping[str, _Reading], called: list[str]) -> Script | None:
    """The script `name` as a check, or None; `called` is it and the scripts it calls."""
    body = bodies[name].strip()
    if not body or body == NPM_PLACEHOLDER_TEST:
        return None
    reading = [readings[n] for n in called]
    if readings[name].elsewhere or all(r.idle for r in reading):
        return None  # a placeholder, or another package's check run from here
    uses = [use for r in reading for use in r.uses]
    for use in uses:
        if use.writes:
            return None  # a fixer: it rewrites files instead of checking them
    for r in reading:
        if r.watches:
            return None
    if kind is None:
        found = list(dict.fromkeys(use.kind for use in uses))
        if len(found) != 1:
            return None  # `check` running nothing known, or a lint and a test together
        kind = found[0]
    return Script(name, kind, frozenset(use.tool for use in uses))


def line_uses(line: str, scripts: Mapping[str, object], *,
              tasks: TaskResolver | None = None) -> list[ToolUse]:
    """The tools a shell line run in a package's folder runs, through the scripts of that
    package it calls (a CI step's `pnpm run check`: `tsc --noEmit`) and the task runners it
    starts (`tasks`: `make lint`'s recipe), in order."""
    bodies = {name: body for name, body in scripts.items()
              if isinstance(name, str) and isinstance(body, str)}
    first = _read(line, bodies, tasks)
    readings: dict[str, _Reading] = {}
    uses = list(first.uses)
    pending = [(call, 0) for call in first.calls]
    while pending:
        name, depth = pending.pop(0)
        if name in readings or name not in bodies or depth >= MAX_CALL_DEPTH:
            continue
        readings[name] = _read(bodies[name], bodies, tasks)
        uses += readings[name].uses
        pending += [(call, depth + 1) for call in readings[name].calls]
    return uses


def _covered(script: Script, chosen: list[Script]) -> bool:
    """A test or type check is planned once per package; a lint whose tools a chosen lint
    runs already adds nothing."""
    same = [c for c in chosen if c.kind == script.kind]
    if not same:
        return False
    if script.kind in ("test", "typecheck", "build"):
        return True
    return bool(script.tools) and any(script.tools <= c.tools for c in same)


def _closure(name: str, readings: Mapping[str, _Reading]) -> list[str]:
    """`name` and every script it calls, transitively, each once."""
    found = [name]
    frontier = [(name, 0)]
    while frontier:
        current, depth = frontier.pop()
        if depth >= MAX_CALL_DEPTH:
            continue
        for call in readings[current].calls:
            if call in readings and call not in found:
                found.append(call)
                frontier.append((call, depth + 1))
    return found


def _read(body: str, scripts: Mapping[str, str], tasks: TaskResolver | None = None
          ) -> _Reading:
    uses: list[ToolUse] = []
    calls: list[str] = []
    line = _line(body)
    for command, tool in zip(line.commands, line.tools, strict=True):
        called = _calls(command, scripts)
        if called is None:
            through = tasks(command) if tasks is not None else None
            if through is not None:
                uses += through
            elif tool is not None:
                uses.append(tool)
        else:
            calls += called
    return _Reading(tuple(uses), tuple(calls), line.idle, line.elsewhere, line.watches)


@lru_cache(maxsize=4096)
def _line(body: str) -> _Line:
    """`body` read once: the packages of a monorepo repeat the same scripts."""
    found = commands(body)
    return _Line(tuple(found), tuple(classify(c) for c in found),
                 bool(found) and all(c.program in _NOTHING for c in found),
                 bool(found) and all(c.cwd != "." for c in found),
                 any(WATCHING & set(c.args) for c in found))


def _calls(command: Command, scripts: Mapping[str, str]) -> list[str] | None:
    """The own scripts `command` runs (`npm run x`, `pnpm x`, `yarn x`, `run-s a b`), or None
    when it runs no script of this package (a tool, or a script in other packages)."""
    if command.cwd != ".":
        return None
    program, args = command.program, command.args
    if program in _RUN_ALL:
        patterns = [a for a in args if not a.startswith("-")]
        return [name for pattern in patterns for name in _matching(pattern, scripts)]
    if program == "concurrently":
        return [a.removeprefix("npm:").removeprefix("pnpm:").removeprefix("yarn:")
                for a in args if re.match(r"(npm|pnpm|yarn):", a)]
    if program not in ("npm", "pnpm", "bun", *_YARNS) or not args:
        return None
    if _RECURSIVE_FLAGS & set(args):
        return None  # `pnpm -r run build`, `npm run test --workspaces`: other packages
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return None
    first = words[0]
    if first in ("run", "run-script", "rr") and len(words) > 1:
        return [words[1]] if words[1] in scripts else []
    if first in ("test", "t", "tst") and program != "bun":
        return ["test"] if "test" in scripts else []
    if program == "pnpm" and first not in _PNPM_COMMANDS and first in scripts:
        return [first]
    if program in _YARNS and first not in _YARN_COMMANDS and first in scripts:
        return [first]
    return None


def _matching(pattern: str, scripts: Mapping[str, str]) -> list[str]:
    """npm-run-all's patterns: `lint:*` matches one level, `lint:**` any depth."""
    if "*" not in pattern:
        return [pattern] if pattern in scripts else []
    glob = pattern.replace("**", "\0").replace("*", "[!:]*").replace("\0", "*")
    return [name for name in scripts if fnmatchcase(name, glob)]

