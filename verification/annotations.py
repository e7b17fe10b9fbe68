"""Annotations parsed from tool output: a file, a line, a level and a message.

Pure. Each parser reads one tool's output format (ruff, mypy, pytest, Python tracebacks, tsc,
eslint) and JUnit failures; paths are made relative to the repository root by joining them to
the check's workspace folder (or, for absolute paths, by removing the repository root). A path
that would leave the repository is dropped: GitHub rejects annotations outside the commit's tree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from posixpath import isabs, join, normpath
from typing import Literal

from verification.junit import TestSummary

Level = Literal["notice", "warning", "failure"]

# Characters of message kept per annotation; GitHub allows 64 KB, reviewers read far less.
MESSAGE_LIMIT = 4000
# GitHub's limit on an annotation title.
TITLE_LIMIT = 255

_RUFF_CONCISE = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+):(?P<col>\d+): (?P<msg>[A-Z]+\d+ .*)$")
_RUFF_FULL_HEAD = re.compile(r"^(?P<code>[A-Z]+\d+) (?P<msg>.+)$")
_RUFF_FULL_ARROW = re.compile(r"^\s*--> (?P<path>[^\s:]+):(?P<line>\d+):(?P<col>\d+)$")
_MYPY = re.compile(
    r"^(?P<path>[^\s:]+\.pyi?):(?P<line>\d+)(?::\d+)?: (?P<level>error|warning|note): (?P<msg>.*)$"
)
_PYTEST_SECTION = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$")
_PYTEST_LOCATION = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+): (?P<exc>[\w.]+)$")
_PYTEST_E_LINE = re.compile(r"^E {1,3}(?P<msg>.*)$")
_TRACEBACK_START = "Traceback (most recent call last):"
_TRACEBACK_FRAME = re.compile(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+)')
_TSC = re.compile(
    r"^(?P<path>[^\s(:]+\.[cm]?[jt]sx?)(?:\((?P<line>\d+),(?P<col>\d+)\)|:(?P<line2>\d+):(?P<col2>\d+))"
    r"(?::| -) (?P<level>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_ESLINT_FILE = re.compile(r"^(?P<path>/\S+|\S+\.(?:[cm]?[jt]sx?|vue|svelte))$")
_ESLINT_STYLISH = re.compile(
    r"^\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<level>error|warning)\s+(?P<msg>.+?)(?:\s{2,}(?P<rule>\S+))?$"
)
_ESLINT_UNIX = re.compile(
    r"^(?P<path>[^\s:]+):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+) "
    r"\[(?P<level>Error|Warning)/(?P<rule>[^\]]+)\]$"
)


@dataclass(frozen=True)
class Annotation:
    """A message attached to lines of a file, as GitHub check runs and workflow commands show."""

    path: str
    start_line: int
    end_line: int
    level: Level
    message: str
    title: str


class _Paths:
    """Turns tool-reported paths into repository-relative ones (or None when outside)."""

    def __init__(self, workspace: str, root: str | None) -> None:
        self.workspace = workspace
        self.root = root.rstrip("/") if root else None

    def resolve(self, path: str) -> str | None:
        if isabs(path):
            if not self.root or not path.startswith(self.root + "/"):
                return None
            relative = path[len(self.root) + 1 :]
        else:
            relative = path if self.workspace == "." else join(self.workspace, path)
        relative = normpath(relative)
        if relative.startswith("../") or relative in {"..", "."}:
            return None
        return relative


def parse_annotations(
    log: str, *, workspace: str = ".", root: str | None = None, title: str = ""
) -> list[Annotation]:
    """Every annotation any known format finds in `log`, deduplicated, in order of appearance.

    `workspace` is the folder the tool ran in (relative paths are relative to it); `root` is
    the repository's absolute path, for tools that print absolute paths.
    """
    paths = _Paths(workspace, root)
    lines = log.splitlines()
    found: list[Annotation] = []
    for parser in _PARSERS:
        found.extend(parser(lines, paths, title))
    return _unique(found)


def junit_annotations(
    summary: TestSummary, *, workspace: str = ".", root: str | None = None, title: str = ""
) -> list[Annotation]:
    """One failure annotation per failing test case whose file and line are known."""
    paths = _Paths(workspace, root)
    found = []
    for case in summary.failed:
        path = paths.resolve(case.file) if case.file else None
        if path is None or case.line is None:
            continue
        name = f"{case.classname}.{case.name}" if case.classname else case.name
        message = f"{name} failed: {case.message}\n\n{case.details}".strip()
        found.append(_annotation(path, case.line, "failure", message, title or name))
    return found


def _annotation(path: str, line: int, level: Level, message: str, title: str) -> Annotation:
    line = max(1, line)
    return Annotation(path, line, line, level, message[:MESSAGE_LIMIT], title[:TITLE_LIMIT])


def _ruff(lines: list[str], paths: _Paths, title: str) -> Iterator[Annotation]:
    for index, text in enumerate(lines):
        match = _RUFF_CONCISE.match(text)
        if match and (path := paths.resolve(match["path"])):
            yield _annotation(path, int(match["line"]), "failure", match["msg"], title or "ruff")
            continue
        arrow = _RUFF_FULL_ARROW.match(text)
        head = _RUFF_FULL_HEAD.match(lines[index - 1]) if arrow and index > 0 else None
        if arrow and head and (path := paths.resolve(arrow["path"])):
            message = f"{head['code']} {head['msg']}"
            yield _annotation(path, int(arrow["line"]), "failure", message, title or "ruff")


def _mypy(lines: list[str], paths: _Paths, title: str) -> Iterator[Annotation]:
    levels: dict[str, Level] = {"error": "failure", "warning": "warning", "note": "notice"}
    for text in lines:
        match = _MYPY.match(text)
        if match and (path := paths.resolve(match["path"])):
            level = levels[match["level"]]
            yield _annotation(path, int(match["line"]), level, match["msg"], title or "mypy")


def _pytest(lines: list[str], paths: _Paths, title: str) -> Iterator[Annotation]:
    """Each failure section's last `path.py:N: Exception` line, with its `E` lines as message."""
    section: str | None = None
    location: tuple[str, int, str] | None = None
    messages: list[str] = []

    def flush() -> Iterator[Annotation]:
        if section is not None and location is not None:
            path, line, exc = location
            message = "\n".join(messages) or exc
            yield _annotation(path, line, "failure", message, title or f"{section} failed")

    for text in lines:
        header = _PYTEST_SECTION.match(text)
        if header or (text.startswith("=") and section is not None):
            yield from flush()
            section = header["name"] if header else None
            location, messages = None, []
            continue
        if section is None:
            continue
        if error := _PYTEST_E_LINE.match(text):
            messages.append(error["msg"])
        elif (match := _PYTEST_LOCATION.match(text)) and (path := paths.resolve(match["path"])):
            location = (path, int(match["line"]), match["exc"])
    yield from flush()


def _traceback(lines: list[str], paths: _Paths, title: str) -> Iterator[Annotation]:
    """Python tracebacks: the innermost frame inside the repository, with the exception line."""
    index = 0
    while index < len(lines):
        if lines[index].strip() != _TRACEBACK_START:
            index += 1
            continue
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        frame: tuple[str, int] | None = None
        index += 1
        while index < len(lines) and lines[index].startswith(indent + " "):
            match = _TRACEBACK_FRAME.match(lines[index])
            if match and (path := paths.resolve(match["path"])):
                frame = (path, int(match["line"]))
            index += 1
        exception = lines[index].strip() if index < len(lines) else "exception"
        if frame is not None:
            yield _annotation(frame[0], frame[1], "failure", exception, title or "traceback")


def _tsc(lines: list[str], paths: _Paths, title: str) -> Iterator[Annotation]:
    for text in lines:
        match = _TSC.match(text)
        if match and (path := paths.resolve(match["path"])):
            line = int(match["line"] or match["line2"])
            level: Level = "failure" if match["level"] == "error" else "warning"
            message = f"{match['code']}: {match['msg']}"
            yield _annotation(path, line, level, message, title or "tsc")


def _eslint(lines: list[str], paths: _Paths, title: str) -> Iterator[Annotation]:
    current: str | None = None
    for text in lines:
        if unix := _ESLINT_UNIX.match(text):
            if path := paths.resolve(unix["path"]):
                level: Level = "failure" if unix["level"] == "Error" else "warning"
                message = f"{unix['msg']} ({unix['rule']})"
                yield _annotation(path, int(unix["line"]), level, message, title or "eslint")
            continue
        if file := _ESLINT_FILE.match(text):
            current = paths.resolve(file["path"])
            continue
        stylish = _ESLINT_STYLISH.match(text)
        if stylish and current is not None:
            level = "failure" if stylish["level"] == "error" else "warning"
            rule = f" ({stylish['rule']})" if stylish["rule"] else ""
            message = f"{stylish['msg']}{rule}"
            yield _annotation(current, int(stylish["line"]), level, message, title or "eslint")
        elif not text.strip():
            current = None


_PARSERS: tuple[Callable[[list[str], _Paths, str], Iterable[Annotation]], ...] = (
    _ruff,
    _mypy,
    _pytest,
    _traceback,
    _tsc,
    _eslint,
)


def _unique(annotations: Iterable[Annotation]) -> list[Annotation]:
    seen: set[tuple[str, int, str]] = set()
    unique = []
    for annotation in annotations:
        key = (annotation.path, annotation.start_line, annotation.message)
        if key not in seen:
            seen.add(key)
            unique.append(annotation)
    return unique
