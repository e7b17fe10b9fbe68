"""Whether a CI step's script only does the workflow's bookkeeping, which proves nothing.

Pure. GitHub gives a step files to talk back to its workflow: `$GITHUB_OUTPUT` (step outputs),
`$GITHUB_ENV`, `$GITHUB_PATH`, `$GITHUB_STEP_SUMMARY`, `$GITHUB_STATE`, and workflow commands
printed to the log (`::group::`, `::set-output`; "Workflow commands for GitHub Actions",
https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands). A step
that only writes those (`echo "dir=$(pnpm store path)" >> $GITHUB_OUTPUT`) passes whatever the
change is: it is no check. The steps reading what it wrote are read as before.

The script is read conservatively, and is bookkeeping only when every command is one of:
`echo` or `printf` (to the log, or into one of those files), `cat` of a heredoc or `tee` into
one of them, `export`, a variable assignment, `set -e...`, `true`, a `[`/`test` condition of an
`if` or of `&&`/`||`, comments; `if`/`then`/`else`/`fi` and `{ ...; }` around them. A command
substitution in it may compute a value (`$(git rev-parse HEAD)`) but not run a known check
tool or task (`$(cargo test)`, `$(make lint)`). Anything else keeps the step a check: another
program, a loop or `case`, a redirection into another file, a line that cannot be read.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from verification.commandline import commands as shell_commands
from verification.tools import ToolUse, tool_uses

# The files of `$GITHUB_...` a step writes to talk back to its workflow.
WORKFLOW_FILES = frozenset({"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY",
                            "GITHUB_STATE"})
_WORKFLOW_FILE = re.compile(r"\$\{?(GITHUB_[A-Z_]+)\}?")
# Redirection targets that are the log, not a file other steps read.
_LOG = frozenset({"/dev/stdout", "/dev/stderr", "/dev/null"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "|&"})
# Words that only open or close a compound command around the commands it runs.
_KEYWORDS = frozenset({"then", "else", "fi", "{", "}", "(", ")", "!"})
_CONDITIONS = frozenset({"if", "elif"})
_TESTS = frozenset({"[", "[[", "test"})
# Command substitutions nested in one another, at most (each level is a recursion).
MAX_NESTING = 16
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:=.*)?", re.DOTALL)
_SET_OPTION = re.compile(r"[-+][a-zA-Z]+|pipefail|errexit|nounset|xtrace")
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
# A placeholder for a command substitution's value, once its commands are set aside.
_VALUE = "__value__"
# Programs that run a repository's tasks: in a command substitution, the step may check.
_TASK_RUNNERS = frozenset({"make", "gmake", "just", "tox", "nox", "turbo", "nx", "poe"})
_SCRIPT_RUNS = frozenset({"run", "run-script", "test", "t", "exec", "x", "dlx"})
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun", "deno"})


def not_checked(written: frozenset[str]) -> str:
    """Why a bookkeeping step is not planned, for `--explain`."""
    if not written:
        return "only prints to the log (messages, workflow commands): bookkeeping, no check"
    what = ", ".join(f"${name}" for name in sorted(written))
    return f"only writes {what}: bookkeeping, no check"


def bookkeeping(script: str, uses: Sequence[ToolUse] = ()) -> frozenset[str] | None:
    """The workflow files the script writes (`GITHUB_OUTPUT`...; empty when it only prints)
    when it does nothing but bookkeeping (see the module docstring), else None. `uses` are the
    tools its lines run (`scripts.line_uses`): any of them makes it a check."""
    if uses:
        return None
    lines = _logical_lines(script)
    if lines is None:
        return None
    written: set[str] = set()
    for line, inner in lines:
        if any(not _only_computes(text) for text in inner):
            return None
        found = _line_writes(line)
        if found is None:
            return None
        written |= found
    return frozenset(written)


def _logical_lines(script: str) -> list[tuple[str, list[str]]] | None:
    """The script's logical lines (`\\` continuations joined, comment lines left out), each
    with the command substitutions set aside: a heredoc's operator removed and its body kept
    only for the substitutions an unquoted one expands. None when a heredoc or substitution
    does not close."""
    found: list[tuple[str, list[str]]] = []
    raw = script.splitlines()
    index, pending = 0, ""
    while index < len(raw):
        line = (pending + " " + raw[index].strip()).strip() if pending else raw[index].strip()
        index += 1
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        if not line or line.startswith("#"):
            continue
        inner: list[str] = []
        heredocs = _heredocs(line)
        for heredoc in heredocs:
            body: list[str] = []
            while index < len(raw) and raw[index].strip() != heredoc[3]:
                body.append(raw[index])
                index += 1
            if index == len(raw):
                return None
            index += 1
            if not heredoc[2]:  # an unquoted delimiter: the body's `$(...)` run
                expanded = _substituted("\n".join(body), quoted=True)
                if expanded is None:
                    return None
                inner += expanded[1]
        for heredoc in reversed(heredocs):
            line = line[:heredoc.start()] + " " + line[heredoc.end():]
        substituted = _substituted(line, quoted=False)
        if substituted is None:
            return None
        found.append((substituted[0], inner + substituted[1]))
    return None if pending else found


def _heredocs(line: str) -> list[re.Match[str]]:
    """The heredoc operators of a line, outside quotes (`echo "A<<EOF" >> $GITHUB_ENV` opens
    none: GitHub's multiline value, written by echo)."""
    found: list[re.Match[str]] = []
    state = ""
    for at, char in enumerate(line):
        if state:
            state = "" if char == state else state
        elif char in "'\"":
            state = char
        elif line.startswith("<<", at) and (at == 0 or line[at - 1] != "<"):
            match = _HEREDOC.match(line, at)
            if match is not None:
                found.append(match)
    return found


def _substituted(text: str, *, quoted: bool, depth: int = 0) -> tuple[str, list[str]] | None:
    """`text` with each `$(...)` and backtick substitution replaced by a placeholder, and the
    commands they held (nested ones included). `quoted` reads text where single quotes are
    characters (a heredoc's body). None when one does not close, or they nest deeper than
    MAX_NESTING (a script read so is no bookkeeping: it stays a check)."""
    if depth > MAX_NESTING:
        return None
    out: list[str] = []
    inner: list[str] = []
    at, state = 0, ""  # state: "" outside quotes, "'" or '"' inside
    while at < len(text):
        char = text[at]
        if char == "\\" and state != "'":
            out.append(text[at:at + 2])
            at += 2
            continue
        if state == "'":
            state = "" if char == "'" else state
        elif char == "'" and not state and not quoted:
            state = "'"
        elif char == '"' and not quoted:
            state = "" if state == '"' else '"'
        elif text.startswith("$(", at) and not text.startswith("$((", at):
            end = _closing(text, at + 2)
            if end is None:
                return None
            nested = _substituted(text[at + 2:end], quoted=False, depth=depth + 1)
            if nested is None:
                return None
            inner += [nested[0], *nested[1]]
            out.append(_VALUE)
            at = end + 1
            continue
        elif char == "`":
            end = text.find("`", at + 1)
            if end < 0:
                return None
            inner.append(text[at + 1:end])
            out.append(_VALUE)
            at = end + 1
            continue
        out.append(char)
        at += 1
    return "".join(out), inner


def _closing(text: str, start: int) -> int | None:
    """Where the `)` closing a `$(` opened before `start` is, quotes and nesting honoured."""
    depth, state, at = 1, "", start
    while at < len(text):
        char = text[at]
        if char == "\\" and state != "'":
            at += 2
            continue
        if state:
            state = "" if char == state else state
        elif char in "'\"":
            state = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return at
        at += 1
    return None


def _only_computes(text: str) -> bool:
    """True when a command substitution runs no known check tool nor a repository task."""
    if tool_uses(text):
        return False
    for command in shell_commands(text):
        if command.program in _TASK_RUNNERS or (
                command.program in _PACKAGE_MANAGERS and command.args[:1]
                and command.args[0] in _SCRIPT_RUNS):
            return False
    return True


def _line_writes(line: str) -> set[str] | None:
    """The workflow files a line's commands write, or None when one is not bookkeeping."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote
        return None
    written: set[str] = set()
    words: list[str] = []
    for token in [*tokens, ";"]:
        if token not in _SEPARATORS and token not in (";;",):
            words.append(token)
            continue
        if token == ";;":
            return None  # a `case`: not read
        found = _command_writes(words, chained=token in ("&&", "||"))
        if found is None:
            return None
        written |= found
        words = []
    return written


def _command_writes(words: list[str], *, chained: bool) -> set[str] | None:
    """The workflow files one simple command writes, or None when it is not bookkeeping;
    `chained`: an `&&` or `||` follows it, so a failing condition does not fail the step."""
    condition = False
    while words and (words[0] in _KEYWORDS or words[0] in _CONDITIONS):
        condition = condition or words[0] in _CONDITIONS
        words = words[1:]
    comment = next((i for i, w in enumerate(words) if w.startswith("#")), len(words))
    words = words[:comment]  # `echo done  # note`
    written: set[str] = set()
    rest: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word == ">&" and at + 1 < len(words) and words[at + 1].isdigit():
            at += 2  # `>&2`: into the log
            continue
        if word in _REDIRECTS:
            if at + 1 == len(words):
                return None
            target = words[at + 1]
            named = _WORKFLOW_FILE.fullmatch(target)
            if named is not None and named[1] in WORKFLOW_FILES:
                written.add(named[1])
            elif target not in _LOG:
                return None
            at += 2
            continue
        if word.startswith(("<", ">")) or word in ("&", "|"):
            return None  # input from a file, or a redirection not read
        rest.append(word)
        at += 1
    while rest and _ASSIGNMENT.match(rest[0]):
        rest = rest[1:]
    rest = [w for w in rest if w not in _KEYWORDS]
    if not rest:
        return written  # an assignment, or a group's closing brace with its redirection
    program, args = rest[0], rest[1:]
    if program in ("echo", "printf", "true", ":"):
        return written
    if program == "cat" and all(a == "-" for a in args):
        return written  # its heredoc, or what a pipe gives it
    if program == "tee":
        files = [a for a in args if not a.startswith("-")]
        named = [_WORKFLOW_FILE.fullmatch(f) for f in files]
        if all(n is not None and n[1] in WORKFLOW_FILES for n in named):
            return written | {n[1] for n in named if n is not None}
        return None
    if program == "export" and all(_NAME.fullmatch(a) or a in ("-n", "-p") for a in args):
        return written
    if program == "set" and all(_SET_OPTION.fullmatch(a) or a in ("-o", "+o") for a in args):
        return written
    if program in _TESTS and (condition or chained):
        return written
    return None
