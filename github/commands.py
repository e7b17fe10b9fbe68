"""``/ratchet`` commands in comments: parsed, pure.

A command is the first line of a comment's plain text that starts with ``/ratchet``; anything
else in the comment is ignored, except for ``request-changes``, whose feedback is the rest of
that line and every line of the comment after it. Plain text is what a reader sees as the
comment's own words, read with a CommonMark parser (markdown-it): lines of top-level
paragraphs. A command quoted (``> /ratchet approve``), shown as code (fenced, indented or
inline), inside an HTML comment or a collapsed ``<details>`` block, in a list or a heading is
not one: quoting or showing a command must not run it, and what the reader cannot see must not
act.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt

from runner.budget import BadRaise, parse_raise
from runner.names import VERBS, SignalKind
from runner.signal_payloads import (
    Approve,
    ApproveDiff,
    CommentRef,
    RaiseBudget,
    RequestChanges,
    SignalPayload,
)

PREFIX = "/ratchet"
_COMMAND = re.compile(r"^/ratchet(?:\s+(?P<verb>[a-z-]+))?(?P<rest>.*)$", re.IGNORECASE)
# Feedback is the next specify prompt and the ledger's record of it: at most what GitHub lets a
# comment or review body hold. A spec hash is 64 hex characters; what is echoed back is capped.
MAX_FEEDBACK_CHARS = 65_536
HASH_CHARS = 64
ECHO_CHARS = 80
USAGE = (
    "`/ratchet approve <spec hash>`, `/ratchet approve-diff <diff hash>`,"
    " `/ratchet request-changes <feedback>`, `/ratchet retry`,"
    " `/ratchet verify-again`, `/ratchet cancel`, `/ratchet status`, `/ratchet budget +<amount>`"
)


@dataclass(frozen=True)
class Command:
    kind: SignalKind
    argument: str  # the hash, the feedback, the amount, or empty

    def payload(self, *, comment: CommentRef | None = None) -> SignalPayload:
        """The signal's payload, carried by ``comment``."""
        if self.kind is SignalKind.APPROVE:
            return Approve(hash=self.argument, comment=comment)
        if self.kind is SignalKind.APPROVE_DIFF:
            return ApproveDiff(hash=self.argument, comment=comment)
        if self.kind is SignalKind.REQUEST_CHANGES:
            return RequestChanges(message=self.argument, comment=comment)
        if self.kind is SignalKind.BUDGET:
            return RaiseBudget(amount=self.argument, comment=comment)
        return SignalPayload(comment=comment)


class CommandError(ValueError):
    """A ``/ratchet`` line that names no known command or lacks its argument."""


def parse_command(body: str | None) -> Command | None:
    """The command a comment carries, or None when it carries none.

    Raises ``CommandError`` for ``/ratchet`` with an unknown verb or a missing argument.
    """
    lines = (body or "").splitlines()
    for index, line in plain_lines(body or ""):
        match = _COMMAND.match(line.strip())
        if match is None:
            continue
        verb = (match.group("verb") or "").lower()
        if verb not in VERBS:
            raise CommandError(
                f"unknown command {line.strip()[:ECHO_CHARS]!r}; the commands are {USAGE}")
        rest = match.group("rest").strip()
        kind = VERBS[verb]
        if kind is SignalKind.REQUEST_CHANGES:
            feedback = "\n".join([_source_rest(lines[index], rest), *lines[index + 1:]]).strip()
            if not feedback:
                raise CommandError("`/ratchet request-changes` needs feedback after it")
            return Command(kind, checked_feedback(feedback))
        if kind in {SignalKind.APPROVE, SignalKind.APPROVE_DIFF}:
            if not rest:
                raise CommandError(f"`/ratchet {verb}` needs the"
                                   f" {'spec' if kind is SignalKind.APPROVE else 'diff'}'s hash"
                                   " after it")
            return Command(kind, rest.split()[0][:HASH_CHARS])
        if kind is SignalKind.BUDGET:
            try:
                parse_raise(rest)  # the unit is decided by the run's stop, when it is bare
            except BadRaise as exc:
                raise CommandError(f"`/ratchet budget`: {exc}") from None
            return Command(kind, rest)
        return Command(kind, "")
    return None


def _source_rest(source: str, plain: str) -> str:
    """What follows the command on its source line, as written (feedback keeps its markup);
    ``plain`` when the line does not hold it."""
    at = source.lower().find(PREFIX)
    match = _COMMAND.match(source[at:].strip()) if at >= 0 else None
    return match.group("rest").strip() if match is not None else plain


_MARKDOWN = MarkdownIt("commonmark")
_DETAILS_OPEN = re.compile(r"<details[\s>]", re.IGNORECASE)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.IGNORECASE)


def plain_lines(body: str) -> Iterator[tuple[int, str]]:
    """Each line of ``body``'s plain text (see the module docstring) with the index of the
    source line it starts on. Inline code keeps its backticks (so it never starts with
    ``/ratchet``); inline HTML, comments included, is dropped."""
    tokens = _MARKDOWN.parse(body)
    details = 0  # <details> blocks open around the current token
    for position, token in enumerate(tokens):
        if token.type == "html_block":
            details = max(0, details + len(_DETAILS_OPEN.findall(token.content))
                          - len(_DETAILS_CLOSE.findall(token.content)))
            continue
        top_paragraph = (token.type == "inline" and token.level == 1 and position > 0
                         and tokens[position - 1].type == "paragraph_open")
        if not top_paragraph or details or token.map is None:
            continue
        line = start = token.map[0]  # the source line now, and the one the text started on
        text = ""
        for child in token.children or ():
            if child.type in {"softbreak", "hardbreak"}:
                yield start, text
                line += 1
                start, text = line, ""
            elif child.type in {"text", "code_inline"}:
                start = start if text else line
                text += child.content if child.type == "text" else f"`{child.content}`"
            elif child.type == "html_inline":
                line += child.content.count("\n")
        yield start, text


def checked_feedback(text: str) -> str:
    """``text`` as feedback for the next spec; ``CommandError`` when it is longer than GitHub
    lets a body be (so it is not from GitHub)."""
    if len(text) > MAX_FEEDBACK_CHARS:
        raise CommandError(f"feedback of {len(text)} characters is longer than GitHub allows"
                           f" ({MAX_FEEDBACK_CHARS}); shorten it")
    return text
