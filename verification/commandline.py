"""Reading a command line the way a shell would split it: the programs it runs, in order.

Pure, and never runs anything. A package.json script, a Makefile recipe or a pre-commit hook's
entry is a shell line (`FOO=1 pnpm exec vitest run && eslint .`); planning needs to know which
tools it runs (to classify it as a lint, a type check or a test, and to tell which tool's
config concerns it) and which of the repository's own tasks it calls (`pnpm run test:unit`,
`$(MAKE) lint-python`). The line is tokenized with `shlex` (quotes honoured), split at `&&`,
`||`, `;`, `|` and `&`, and each simple command is unwrapped: environment assignments,
launchers that run another program (`npx`, `pnpm exec`, `uv run`, `python -m`, `coverage run
-m`, `cross-env`, `bash -c '...'`) are removed, so `uv run --frozen coverage run -m pytest`
reads as `pytest`. A preceding `cd DIR` is kept as the folder the next commands run in.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from posixpath import basename, normpath

# A line longer than this is not read (a recipe is a few hundred characters; a planted one
# could be megabytes of tokens): it reads as no command.
MAX_LINE = 20_000
# `bash -c '...'` inside `bash -c '...'`: deeper nesting is not followed.
MAX_NESTING = 4

_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "\n"})
_GROUPING = frozenset({"(", ")", "{", "}", "!", "then", "do", "else", "fi", "done", "if",
                       "while", "until"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")

# Launchers that run the program named after their own options, and the options of theirs
# that take a value (so the value is not read as the program).
_LAUNCHERS: dict[str, frozenset[str]] = {
    "npx": frozenset({"-p", "--package", "-c", "--call"}),
    "pnpx": frozenset({"-p", "--package"}),
    "bunx": frozenset({"-p", "--package"}),
    "cross-env": frozenset(),
    "cross-env-shell": frozenset(),
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "time": frozenset(),
    "nice": frozenset({"-n"}),
    "nohup": frozenset(),
    "exec": frozenset(),
    "command": frozenset(),
    "xvfb-run": frozenset({"-s", "--server-args", "-n", "--server-num", "-e", "--error-file"}),
    "dotenv": frozenset({"-e", "-v", "-c"}),
    "nyc": frozenset({"--reporter", "-r", "--report-dir", "--include", "-n", "--exclude", "-x"}),
    "c8": frozenset({"--reporter", "-r", "--reports-dir", "-o", "--include", "-n", "--exclude",
                     "-x", "--src"}),
}
# Launchers with a subcommand that runs a program: `uv run`, `pnpm exec`, ...
_RUN_SUBCOMMANDS: dict[tuple[str, str], frozenset[str]] = {
    ("uv", "run"): frozenset({"--with", "--with-editable", "--with-requirements", "--group",
                              "--extra", "--python", "-p", "--package", "--directory",
                              "--project", "--env-file", "--index", "--only-group",
                              "--no-group", "--no-extra", "--script"}),
    ("poetry", "run"): frozenset({"-C", "--directory", "-P", "--project"}),
    ("pipenv", "run"): frozenset(),
    ("pdm", "run"): frozenset({"-p", "--project"}),
    ("hatch", "run"): frozenset(),
    ("rye", "run"): frozenset(),
    ("pixi", "run"): frozenset({"-e", "--environment", "--manifest-path"}),
    ("pnpm", "exec"): frozenset({"-C", "--dir", "--filter", "-F"}),
    ("pnpm", "dlx"): frozenset({"--package"}),
    ("npm", "exec"): frozenset({"-w", "--workspace", "-c", "--call", "--package"}),
    ("yarn", "exec"): frozenset(),
    ("yarn", "dlx"): frozenset({"-p", "--package"}),
    ("bun", "x"): frozenset(),
    ("go", "tool"): frozenset(),
}
_PYTHONS = re.compile(r"python(\d+(\.\d+)?)?(\.exe)?|py|pypy3?")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


@dataclass(frozen=True)
class Command:
    """One simple command: the program it runs (its file name, launchers removed), its
    arguments, and the folder it runs in relative to where the line starts (`cd web && ...`)."""

    program: str
    args: tuple[str, ...]
    cwd: str = "."


def commands(line: str, *, depth: int = 0) -> list[Command]:
    """The simple commands of a shell line, in order (a line that cannot be read: none)."""
    return list(_commands(line, depth))


@lru_cache(maxsize=4096)
def _commands(line: str, depth: int) -> tuple[Command, ...]:
    """`commands`, read once per line: the packages of a monorepo repeat the same scripts,
    and shlex reads a line slowly."""
    if len(line) > MAX_LINE or depth > MAX_NESTING:
        return ()
    found: list[Command] = []
    cwd = "."
    for words in _simple_commands(line):
        unwrapped = _unwrap(words)
        if not unwrapped:
            continue
        program, args = basename(unwrapped[0]), tuple(unwrapped[1:])
        if program == "cd":
            cwd = _changed_folder(cwd, args)
            continue
        if program in _SHELLS and len(args) >= 2 and args[0] == "-c":
            found += [Command(c.program, c.args, _joined(cwd, c.cwd))
                      for c in _commands(args[1], depth + 1)]
            continue
        found.append(Command(program, args, cwd))
    return tuple(found)


def programs(line: str) -> list[str]:
    """The programs a shell line runs, in order, each once."""
    return list(dict.fromkeys(command.program for command in commands(line)))


def _simple_commands(line: str) -> list[list[str]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    lexer.whitespace = " \t\r"  # a newline separates commands, like `;`
    groups: list[list[str]] = [[]]
    try:
        for token in lexer:
            if token in _SEPARATORS or "\n" in token:
                groups.append([])
            elif token in _GROUPING and not groups[-1]:
                continue
            elif token not in ("(", ")"):
                groups[-1].append(token)
    except ValueError:  # an unclosed quote: what was read so far
        pass
    return [group for group in groups if group]


def _unwrap(words: list[str]) -> list[str]:
    """`words` with assignments and launchers removed, down to the program they run."""
    while words:
        first = words[0]
        name = basename(first)
        if _ASSIGNMENT.match(first):
            words = words[1:]
        elif name in _LAUNCHERS:
            words = _after_options(words[1:], _LAUNCHERS[name], stop_at_double_dash=True)
        elif len(words) > 1 and (name, words[1]) in _RUN_SUBCOMMANDS:
            words = _after_options(words[2:], _RUN_SUBCOMMANDS[(name, words[1])],
                                   stop_at_double_dash=True)
        elif _PYTHONS.fullmatch(name) and "-m" in words[1:3]:
            words = words[words.index("-m", 1) + 1:]
        elif name == "coverage" and len(words) > 1 and words[1] == "run":
            rest = words[2:]
            module = next((i for i, w in enumerate(rest) if w == "-m"), None)
            if module is not None:
                words = rest[module + 1:]
            else:
                words = _after_options(rest, frozenset({"--rcfile", "--source", "--include",
                                                        "--omit", "--data-file"}),
                                       stop_at_double_dash=False)
        else:
            return words
    return []


def _after_options(words: list[str], valued: frozenset[str], *,
                   stop_at_double_dash: bool) -> list[str]:
    """The words from the first one that is not an option (or an option's value) on."""
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--" and stop_at_double_dash:
            return words[index + 1:]
        if _ASSIGNMENT.match(word):  # `env A=1 tool`, `cross-env A=1 tool`
            index += 1
        elif word.startswith("-") and word != "-":
            index += 2 if word in valued else 1
        else:
            return words[index:]
    return []


def _changed_folder(cwd: str, args: tuple[str, ...]) -> str:
    target = next((a for a in args if not a.startswith("-")), None)
    if target is None or target.startswith(("/", "~", "$")):
        return cwd  # `cd`, `cd ~`, `cd $DIR`: not a folder of the repository we can name
    return _joined(cwd, target)


def _joined(cwd: str, folder: str) -> str:
    joined = normpath(f"{cwd}/{folder}")
    return "." if joined in ("", ".") else joined
