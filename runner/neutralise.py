"""Text Ratchet did not write, made inert before Ratchet shows it. Pure.

An agent's spec and summary, a failure's reason, a check's log reach GitHub in Ratchet's own
comments, pull request bodies and check runs. There the text must not act: no closing keyword
that closes another issue on merge, no ``@`` mention that pings a person or a team, no HTML
comment that hides words from the reviewer while the next agent reads them, no control or bidi
character that makes a line read differently from what it holds, no second hash line that
looks like Ratchet's.

``neutralise`` makes Markdown inert: what GitHub shows is what the text says. GitHub does not
parse references or mentions inside code (backslash escapes do not stop it), so a reference
after a closing keyword and a mention are wrapped in a code span whose backtick run is longer
than any in the text: it pairs only with its own closer, and inside an existing code span it
closes nothing, so the reference is code however GitHub parses the line; a backslash before
it is taken in, so it cannot escape the run. Code fences at column
0 (which no container can end) are left as they are; an unclosed one is closed. The same
function makes what later agents read of the text (``runner/steps/agent.py``): the reviewer and
the agent see one text, a pure function of the stored one that the spec hash names.

``strip_controls`` removes what a terminal or a renderer would interpret (ANSI escapes, C0 and
C1 controls but newline and tab, bidi overrides, invisible tag characters);
``escape_controls`` shows them instead, for a one-line terminal field.
"""

from __future__ import annotations

import re

from plumbing.ansi import strip_ansi
from runner.signals import MIN_HASH_PREFIX

# Controls but newline and tab, C1, bidi marks, embeddings, overrides and isolates, line and
# paragraph separators, and the tag characters (invisible text a model still reads).
_CONTROL_CHARS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\u2028\u2029\U000e0000-\U000e007f"
)
_CONTROLS = re.compile(f"[{_CONTROL_CHARS}]")
_LINE_CONTROLS = re.compile(f"[{_CONTROL_CHARS}\n\t]")

# GitHub's closing keywords, then what may stand between one and its reference (markup, a
# colon, escapes, a line break), then the reference: #N, GH-N, owner/repo#N or an issue or pull
# request URL (any host: GitHub Enterprise too).
_CLOSING = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?![A-Za-z0-9_])"
    r"[\s:*_~\[(\\]*"
    r"(?P<ref>\\*(?:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)?#[0-9]+|\\*GH-[0-9]+"
    r"|https?://[^\s/]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(?:issues|pull)/[0-9]+)"
)
# A user or team mention: GitHub takes one after any character but a letter, digit or "_".
_MENTION = re.compile(r"(?<![A-Za-z0-9_])\\*@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9_.-]+)?")
# A hash people could approve with: full sha256 anywhere, or 12+ hex digits on a line that
# talks about a sha256 or a /ratchet command (the shortest prefix an approval accepts).
_SHA256 = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{64}(?![0-9A-Za-z])")
_PREFIX = re.compile(rf"(?<![0-9A-Za-z])[0-9a-fA-F]{{{MIN_HASH_PREFIX},}}(?![0-9A-Za-z])")
_HASH_TALK = re.compile(r"(?i)sha-?256|/ratchet\b")
SHOWN_HEX = 7  # what is left of such a hash: enough to recognise, too little to approve
# HTML GitHub would render: a comment anywhere; any tag where it would open an HTML block (at
# the start of a line, after container markers); a tag GitHub allows anywhere else.
_CONTAINER = r"^(?:[ \t]*(?:>|[*+-](?=[ \t])|[0-9]{1,9}[.)](?=[ \t])))*[ \t]*"
_BLOCK_HTML = re.compile(_CONTAINER + r"<(?=[A-Za-z/!?])", re.MULTILINE)
_TAGS = (
    "a|abbr|b|bdi|bdo|blockquote|br|caption|center|cite|code|col|colgroup|dd|del|details|dfn|div|"
    "dl|dt|em|figcaption|figure|font|h[1-6]|hr|i|img|input|ins|kbd|li|mark|ol|p|picture|pre|q|rp|"
    "rt|ruby|s|samp|small|source|span|strike|strong|sub|summary|sup|table|tbody|td|tfoot|th|"
    "thead|time|tr|tt|u|ul|var|video|wbr"
)
_INLINE_HTML = re.compile(rf"(?i)<(?=!--|/?(?:{_TAGS})(?:[\s/>]|$))")
# A link reference definition renders as nothing: "[//]: # (hidden)".
_LINK_DEFINITION = re.compile(_CONTAINER + r"\[(?=[^\]\n]+\]:)", re.MULTILINE)
# Character references GitHub decodes before it looks for mentions and references.
_ENTITY = re.compile(r"(?i)&(?:#x([0-9a-f]{1,6})|#([0-9]{1,7})|(lrm|rlm|commat|num));?")
_NAMED = {"lrm": "", "rlm": "", "commat": "@", "num": "#"}
_BACKTICKS = re.compile(r"`+")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})(.*)")


def strip_controls(text: str) -> str:
    """``text`` without ANSI escapes and the characters that change how it reads (controls
    but newline and tab, bidi marks and overrides, invisible tags)."""
    return _CONTROLS.sub("", strip_ansi(text))


def escape_controls(text: str) -> str:
    """``text`` for one line of a terminal: every control, bidi and invisible character
    (newline and tab too) shown as its Python escape, ``\\x1b``, ``\\u202e``."""
    return _LINE_CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def neutralise(text: str) -> str:
    """Markdown that shows ``text`` and cannot act on GitHub (see the module's docstring)."""
    text = strip_controls(text)
    out: list[str] = []
    prose: list[str] = []
    fence: tuple[str, int] | None = None  # the open fence's character and length
    for line in text.splitlines(keepends=True):
        if fence is None:
            opened = _fence_opens(line)
            if opened is None:
                prose.append(line)
                continue
            out.append(_prose("".join(prose)))
            prose = []
            fence = opened
        elif _fence_closes(line, fence):
            fence = None
        out.append(_defuse_hashes(line))
    out.append(_prose("".join(prose)))
    shown = "".join(out)
    if fence is not None:  # an unclosed fence would swallow whatever Ratchet writes after it
        shown += ("" if shown.endswith("\n") else "\n") + fence[0] * fence[1] + "\n"
    return shown


def neutralise_inline(text: str) -> str:
    """``text`` made inert on one line inside one of Ratchet's own (a reason after
    "Reason: "): never at column 0, so no fence; its whitespace folded to spaces."""
    return _prose(" ".join(strip_controls(text).split()))


def _fence_opens(line: str) -> tuple[str, int] | None:
    """The fence a line opens at column 0 (no container can end it), as CommonMark reads it:
    a backtick fence's info string holds no backtick."""
    match = _FENCE_OPEN.fullmatch(line.rstrip("\n"))
    if match is None or (match.group(1)[0] == "`" and "`" in match.group(2)):
        return None
    return match.group(1)[0], len(match.group(1))


def _fence_closes(line: str, fence: tuple[str, int]) -> bool:
    char, length = fence
    closer = rf" {{0,3}}{re.escape(char)}{{{length},}}[ \t]*"
    return re.fullmatch(closer, line.rstrip("\n")) is not None


def _prose(text: str) -> str:
    """Prose outside fences: HTML escaped, link definitions shown, hashes shortened,
    references after closing keywords and mentions put in code spans of a backtick run longer
    than any in it (inline code never crosses a fence at column 0)."""
    if not text:
        return text
    ticks = "`" * (max((len(r) for r in _BACKTICKS.findall(text)), default=0) + 1)
    text = _ENTITY.sub(_decoded, text)
    text = _BLOCK_HTML.sub(lambda m: m.group()[:-1] + "&lt;", text)
    text = _INLINE_HTML.sub("&lt;", text)
    text = _LINK_DEFINITION.sub(lambda m: m.group()[:-1] + "\\[", text)
    text = "".join(_defuse_hashes(line) for line in text.splitlines(keepends=True))
    spans = [m.span("ref") for m in _CLOSING.finditer(text)]
    spans += [m.span() for m in _MENTION.finditer(text)]
    return _wrap(text, spans, ticks)


def _decoded(match: re.Match[str]) -> str:
    """A character reference to a control or bidi character removed; one to ``@`` or ``#``
    written out, so the mention or reference it spells is found; any other kept."""
    hexa, decimal, name = match.groups()
    if name:
        return _NAMED[name.lower()]
    code = int(hexa, 16) if hexa else int(decimal)
    char = chr(code) if code <= 0x10FFFF else ""
    if not char or _CONTROLS.fullmatch(char) or char in "\n\t":
        return ""
    return char if char in "@#" else match.group()


def _defuse_hashes(line: str) -> str:
    line = _SHA256.sub(_shorten, line)
    return _PREFIX.sub(_shorten, line) if _HASH_TALK.search(line) else line


def _shorten(match: re.Match[str]) -> str:
    return match.group()[:SHOWN_HEX] + "…"


def _wrap(text: str, spans: list[tuple[int, int]], ticks: str) -> str:
    """``text`` with each span in a code span of ``ticks``, a space put between it and any
    backtick next to it (so the runs stay apart)."""
    parts, at = [], 0
    for start, end in sorted(set(spans)):
        while start > 0 and text[start - 1] == "\\":  # a backslash would escape the run
            start -= 1
        if start < at:  # inside a span already wrapped
            continue
        before = " " if (start > 0 and text[start - 1] == "`") or (parts and start == at) else ""
        after = " " if end < len(text) and text[end] == "`" else ""
        parts += [text[at:start], before, ticks, text[start:end], ticks, after]
        at = end
    parts.append(text[at:])
    return "".join(parts)
