"""What a command does, by the tool it runs: a lint, a type check, a test or a build.

Pure. A script named `check` or a Makefile target named `ci` says little; its body says more:
`tsc --noEmit` and `vue-tsc` type-check, `vitest`, `jest` and `playwright test` test, `eslint`,
`prettier --check` and `biome check` lint, `vite build` and `rollup -c` build. A command that
rewrites files (`prettier --write`, `eslint --fix`, `ruff format` without `--check`) is a fixer,
not a check: planning never runs it to verify a change. Each use keeps the tool's name, so a
change to that tool's config concerns exactly the checks running it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from verification.commandline import Command, commands

# Programs that are one kind of check whatever their arguments (fixers are told apart below).
_KINDS = {
    "lint": ("eslint", "oxlint", "stylelint", "markdownlint", "markdownlint-cli2", "xo",
             "standard", "tslint", "knip", "publint", "flake8", "pylint", "shellcheck",
             "codespell", "typos", "actionlint", "zizmor", "golangci-lint", "staticcheck",
             "yamllint", "hadolint", "vale", "cspell", "sort-package-json", "syncpack",
             "manypkg", "sherif", "jsonlint", "lint-staged", "commitlint", "editorconfig-checker",
             "prettier", "biome", "black", "isort", "oxfmt", "dprint", "ruff", "rome",
             "taplo", "tombi", "clang-format", "gofmt", "rustfmt"),
    "typecheck": ("mypy", "pyright", "basedpyright", "pyrefly", "vue-tsc", "svelte-check",
                  "tsd", "tstyche", "attw", "tsc-files", "dmypy"),
    "test": ("vitest", "jest", "mocha", "ava", "tap", "uvu", "karma", "cypress", "pytest",
             "py.test", "nose2", "ward", "jasmine", "qunit", "wdio", "web-test-runner", "wtr",
             "tape", "lab", "nextest"),
    "build": ("rollup", "tsup", "tsdown", "esbuild", "webpack", "unbuild", "babel", "swc",
              "parcel", "microbundle", "rolldown", "rspack", "ncc", "pkgroll", "bunchee",
              "maturin", "setup.py"),
}
_KIND_OF = {tool: kind for kind, tools in _KINDS.items() for tool in tools}
# Subcommands that decide the kind: `vite build`, `go test`, `cargo clippy`, ...
_SUBCOMMANDS = {
    ("vite", "build"): "build", ("next", "build"): "build", ("astro", "build"): "build",
    ("astro", "check"): "typecheck", ("nuxi", "typecheck"): "typecheck",
    ("nuxt", "typecheck"): "typecheck", ("playwright", "test"): "test",
    ("node", "--test"): "test", ("bun", "test"): "test", ("deno", "test"): "test",
    ("deno", "check"): "typecheck", ("deno", "lint"): "lint", ("deno", "fmt"): "lint",
    ("go", "test"): "test", ("go", "vet"): "lint", ("go", "build"): "build",
    ("cargo", "test"): "test", ("cargo", "nextest"): "test", ("cargo", "check"): "typecheck",
    ("cargo", "clippy"): "lint", ("cargo", "fmt"): "lint", ("cargo", "build"): "build",
    ("ty", "check"): "typecheck", ("uv", "build"): "build", ("build", None): "build",
    ("tox", None): "test", ("nox", None): "test", ("hatch", "test"): "test",
}  # fmt: skip
# Arguments that make a formatter or linter rewrite files instead of checking them.
_WRITING = frozenset({"--write", "-w", "--fix", "--apply", "--apply-unsafe", "--unsafe",
                      "--fix-only", "-i", "--in-place"})
# Arguments and subcommands of tools that run until stopped, or measure instead of check.
WATCHING = frozenset({"--watch", "--watchAll"})
_NOT_CHECKS = frozenset({("vitest", "bench"), ("vitest", "dev"), ("vitest", "watch"),
                         ("cargo", "bench"), ("go", "run"), ("cargo", "run")})
# Formatters that rewrite unless told to check, and the arguments that tell them.
_CHECKING = {
    "prettier": frozenset({"--check", "-c", "--list-different", "-l"}),
    "black": frozenset({"--check", "--diff"}),
    "isort": frozenset({"--check", "--check-only", "-c", "--diff"}),
    "oxfmt": frozenset({"--check", "--list-different"}),
    "dprint": frozenset({"check"}),
    "gofmt": frozenset({"-l", "-d"}),
    "rustfmt": frozenset({"--check"}),
    "clang-format": frozenset({"--dry-run", "-n"}),
    "taplo": frozenset({"check", "lint", "--check"}),
    "tombi": frozenset({"lint", "--check"}),
}


@dataclass(frozen=True)
class ToolUse:
    """One tool a command runs, the kind of check it is, and whether it rewrites files."""

    tool: str
    kind: str
    writes: bool


def tool_uses(line: str) -> list[ToolUse]:
    """The tools a shell line runs, in order; programs of no known kind are left out."""
    return [use for command in commands(line) if (use := classify(command)) is not None]


@lru_cache(maxsize=4096)
def classify(command: Command) -> ToolUse | None:
    """The tool `command` runs and its kind, or None for a program of no known kind (read
    once per command: the packages of a monorepo repeat the same scripts)."""
    program, args = command.program.removesuffix(".exe"), set(command.args)
    first = next((a for a in command.args if not a.startswith("-") or a == "--test"), None)
    if WATCHING & args or (program, first) in _NOT_CHECKS:
        return None  # a watcher never ends, a benchmark verifies nothing
    writes = bool(_WRITING & args)
    if program in ("tsc", "tsgo"):  # `tsc -b` emits too: a script's name may still say check
        return ToolUse("tsc", "typecheck" if "--noEmit" in args else "build", False)
    if (program, first) in (("ruff", "format"), ("cargo", "fmt")):
        return ToolUse("ruff" if program == "ruff" else "rustfmt", "lint", "--check" not in args)
    kind = _SUBCOMMANDS.get((program, first))
    if kind is not None:
        return ToolUse(f"{program} {first}", kind, writes and kind == "lint")
    kind = _SUBCOMMANDS.get((program, None)) or _KIND_OF.get(program)
    if kind is None:
        return None
    if program in _CHECKING:
        return ToolUse(program, kind, writes or not (_CHECKING[program] & args))
    return ToolUse(program, kind, writes and kind == "lint")


def kinds(uses: Iterable[ToolUse]) -> list[str]:
    """The kinds of checks among `uses`, in order, each once (fixers left out)."""
    return list(dict.fromkeys(use.kind for use in uses if not use.writes))
