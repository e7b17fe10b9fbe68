"""Failing tests named from a test runner's own output, for the checks that write no JUnit XML.

Pure. ``parse_test_failures`` reads a check's log, colour codes and carriage-return progress
removed first, with one reader per runner, each matching only lines that runner prints:

- pytest: the short test summary (``FAILED path::test - message``, ``ERROR ...``) and the
  failure sections (``____ test ____``, their ``path:line: Exception`` and ``E`` lines), so a
  run without the summary (``-rN``) still names its tests;
- unittest: the ``FAIL: test (module.Class.test)`` and ``ERROR:`` blocks and their tracebacks;
- jest: the ``● Suite › test`` blocks under each ``FAIL path``, and its ``✕ test`` lines (a
  long log's capture may have left the blocks out);
- vitest: the `` FAIL  path > suite > test`` blocks with their `` ❯ path:line:col``, and the
  ``× test`` lines under `` ❯ path``;
- cargo test: ``test x::y ... FAILED``, the ``---- x::y stdout ----`` block with the panic's
  location and message, the ``failures:`` list;
- go test: ``--- FAIL: TestX (0.00s)`` with the ``file_test.go:12: message`` lines it logged
  (before it with ``-v``), ``FAIL<tab>package [build failed]``.

A test named twice (jest's closing summary repeats its blocks) is one entry. At most
``MAX_FAILED`` are kept, names and messages cut to ``NAME_LIMIT`` and ``MESSAGE_LIMIT``; a
path under ``root`` is made relative to it. The log is evidence already redacted, so is what
is read from it.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from plumbing.ansi import strip_ansi
from verification.junit import FailedTest

# Failing tests kept from one log; past this a reader opens the log.
MAX_FAILED = 200
# Characters of a test's name, and of its message (the assertion, its first lines).
NAME_LIMIT = 300
MESSAGE_LIMIT = 1000
MESSAGE_LINES = 12

# pytest
_PYTEST_SUMMARY = re.compile(
    r"^(?:\[gw\d+\] \[\s*\d+%\] )?(?:FAILED|ERROR) (?P<id>\S.*?)(?: - (?P<msg>.*))?$")
_PYTEST_VERBOSE = re.compile(r"^(?P<id>\S+\.py::\S.*?) (?:FAILED|ERROR)(?:\s+\[\s*\d+%\])?$")
_PYTEST_BANNER = re.compile(r"^={3,} (?P<title>[A-Za-z ]+?) ={3,}$")
# A section's header; what the test printed unbuffered (stderr) may follow it on its line.
_PYTEST_SECTION = re.compile(r"^_{3,} (?P<name>.+?) _{3,}")
_PYTEST_LOCATION = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+): (?P<what>.*)$")
_PYTEST_E = re.compile(r"^E {1,3}(?P<msg>.*)$")
_PYTEST_CAPTURED = re.compile(r"^-{3,} Captured .* -{3,}$")
# unittest
_UNITTEST_HEAD = re.compile(
    r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<method>\S+) \((?P<where>[^)]*)\)(?P<rest>.*)$")
_UNITTEST_UNLOADED = "unittest.loader._FailedTest."
_UNITTEST_RULE = re.compile(r"^(?:={20,}|-{20,})$")
_FRAME = re.compile(r'^\s+File "(?P<path>[^"]+)", line (?P<line>\d+)')
# jest
_JEST_FILE = re.compile(r"^\s*(?P<state>FAIL|PASS)\s+(?P<path>\S+\.[cm]?[jt]sx?)(?:\s+\(.*\))?$")
_JEST_BLOCK = re.compile(r"^\s*● (?P<name>.+?)\s*$")
# A line of a file's tree (``--verbose``, or one file): a test with its mark, or a suite.
_JEST_TREE = re.compile(
    r"^(?P<indent>\s+)(?:(?P<mark>[✕✓○✎]) )?(?P<name>\S.*?)(?: \(\d+(?:\.\d+)? m?s\))?$")
_JEST_FRAME = re.compile(r"^\s+at .*?\(?(?P<path>[^\s()]+):(?P<line>\d+):\d+\)?$")
_JEST_CODE = re.compile(r"^\s*>?\s*\d*\s*\|")
_JEST_END = re.compile(r"^(?:Test Suites|Tests|Snapshots|Time|Ran all test suites)\b")
# vitest
_VITEST_BLOCK = re.compile(
    r"^\s*FAIL\s+(?:\|[^|]+\|\s+)?(?P<path>\S+?)(?: > (?P<name>.+?)| \[ .+ \])\s*$")
_VITEST_FILE = re.compile(r"^\s*❯ (?:\|[^|]+\|\s+)?(?P<path>\S+) \(\d+ tests?")
_VITEST_CROSS = re.compile(r"^\s+× (?P<name>.+?)(?: \d+(?:\.\d+)?m?s)?$")
_VITEST_AT = re.compile(r"^\s*❯ (?P<path>[^\s:]+):(?P<line>\d+):\d+$")
_VITEST_RULE = re.compile(r"^⎯{3,}")
# cargo test
_CARGO_RESULT = re.compile(r"^(?:test (?P<name>.+?) \.\.\. FAILED|(?P<terse>\S+) --- FAILED)$")
_CARGO_PROGRESS = re.compile(r"^(?:\.+| \d+/\d+)$")  # the terse format's (``-q``)
_CARGO_BLOCK = re.compile(r"^---- (?P<name>.+?) stdout ----$")
_CARGO_PANIC = re.compile(
    r"^thread '(?P<thread>[^']*)'(?: \(\d+\))? panicked at (?:'(?P<old>.*)', )?"
    r"(?P<path>[^\s:]+):(?P<line>\d+):\d+:?$")
_CARGO_LIST = re.compile(r"^    (?P<name>\S.*)$")
_CARGO_END = re.compile(r"^(?:note: run with `RUST_BACKTRACE|stack backtrace:|test result: )")
# go test
_GO_FAIL = re.compile(r"^(?P<indent>\s*)--- FAIL: (?P<name>\S+) \([\d.]+s\)$")
_GO_START = re.compile(r"^=== (?:RUN|CONT|NAME|PAUSE)\s+(?P<name>\S+)$")
_GO_LOG = re.compile(r"^\s+(?P<path>[\w./-]+\.go):(?P<line>\d+): (?P<msg>.*)$")
_GO_PACKAGE = re.compile(r"^FAIL\t(?P<package>\S+)(?:\t| \[(?P<why>[a-z ]+)\])")


@dataclass
class _Found:
    """One failing test as a reader assembles it."""

    name: str
    file: str | None = None
    line: int | None = None
    message: list[str] = field(default_factory=list)

    def located(self, path: str | None, line: int | None) -> None:
        if path and self.file is None:
            self.file, self.line = path, line


def parse_test_failures(log: str, *, root: str | None = None) -> tuple[FailedTest, ...]:
    """The failing tests ``log`` names, in the order found (see the module docstring)."""
    lines = [_visible(line) for line in strip_ansi(log).splitlines()]
    seen: dict[str, _Found] = {}
    for reader in _READERS:
        for found in reader(lines):
            known = seen.setdefault(found.name, found)
            if known is not found:
                known.located(found.file, found.line)
                known.message = known.message or found.message
        if len(seen) >= MAX_FAILED:
            break
    return tuple(_failed_test(found, root) for found in list(seen.values())[:MAX_FAILED])


def _visible(line: str) -> str:
    """What a terminal shows of a line a progress display rewrote (``\\r``): its last form."""
    return line.rstrip("\r").rsplit("\r", 1)[-1]


def _failed_test(found: _Found, root: str | None) -> FailedTest:
    message = textwrap.dedent("\n".join(line.rstrip() for line in found.message[:MESSAGE_LINES]))
    return FailedTest(
        name=_cut(found.name, NAME_LIMIT), classname="",
        file=_relative(found.file, root) if found.file else None, line=found.line,
        message=_cut(message.strip("\n"), MESSAGE_LIMIT), details="")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _relative(path: str, root: str | None) -> str:
    path = path.removeprefix("./")
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return path


def _pytest(lines: list[str]) -> Iterator[_Found]:
    """The short summary's tests (else ``-v``'s progress lines', else the sections'), each
    with its section's location (the last in the test's own file) and ``E`` lines."""
    sections: dict[str, tuple[list[tuple[str, int]], list[str]]] = {}
    current: tuple[list[tuple[str, int]], list[str]] | None = None
    in_failures = captured = False
    named: list[tuple[str, str]] = []
    verbose: list[tuple[str, str]] = []
    for text in lines:
        if banner := _PYTEST_BANNER.match(text):
            in_failures = banner["title"] in {"FAILURES", "ERRORS"}
            current = None
            continue
        if in_failures and (header := _PYTEST_SECTION.match(text)):
            current = sections.setdefault(header["name"], ([], []))
            captured = False
            continue
        if current is not None and not captured:
            if _PYTEST_CAPTURED.match(text):
                captured = True
            elif error := _PYTEST_E.match(text):
                current[1].append(error["msg"])
            elif location := _PYTEST_LOCATION.match(text):
                current[0].append((location["path"], int(location["line"])))
            continue
        if (summary := _PYTEST_SUMMARY.match(text)) and ".py" in summary["id"]:
            named.append((summary["id"], summary["msg"] or ""))
        elif progress := _PYTEST_VERBOSE.match(text):
            verbose.append((progress["id"], ""))
    named = named or verbose or [(name, "") for name in sections]
    for node, said in named:
        path, _, rest = node.partition("::")
        short = rest.replace("::", ".")
        section = next((sections[key] for key in (
            short, node, f"ERROR at setup of {short}", f"ERROR at teardown of {short}",
            f"ERROR collecting {node}") if key in sections), ([], []))
        locations, errors = section
        own = [loc for loc in locations if loc[0] == path] or locations
        found = _Found(node, message=errors or ([said] if said else []))
        if own:
            found.located(*own[-1])
        elif path.endswith(".py"):
            found.located(path, None)
        yield found


def _unittest(lines: list[str]) -> Iterator[_Found]:
    """Each ``FAIL:``/``ERROR:`` block: the frame in the test's module (else the innermost
    outside Python's own library), and the exception's lines."""
    index = 0
    while index < len(lines):
        head = _UNITTEST_HEAD.match(lines[index])
        index += 1
        if head is None:
            continue
        where, method = head["where"], head["method"]
        name = where if where.endswith(f".{method}") else f"{where}.{method}"
        if where.startswith(_UNITTEST_UNLOADED):
            name = where = method  # a module that could not be imported: its name
        frames: list[tuple[str, int]] = []
        message: list[str] = []
        traceback = False
        while index < len(lines) and not _UNITTEST_HEAD.match(lines[index]):
            text = lines[index]
            if _UNITTEST_RULE.match(text) and (traceback or message):
                break
            if text.startswith("Traceback (most recent call last):"):
                traceback = True
            elif frame := _FRAME.match(text):
                frames.append((frame["path"], int(frame["line"])))
                message = []
            elif (traceback and text and not text.startswith(" ")) or (message and text.strip()):
                message.append(text)
            index += 1
        found = _Found(name, message=message or [head["kind"].lower()])
        module = where.rsplit(".", 2 if where.endswith(f".{method}") else 1)[0]
        outside = [f for f in frames if "/lib/python" not in f[0]]
        mine = [f for f in outside if f[0].endswith(module.replace(".", "/") + ".py")]
        if chosen := (mine or outside or frames):
            found.located(*chosen[-1])
        yield found


def _jest(lines: list[str]) -> Iterator[_Found]:
    """Each ``●`` block under a ``FAIL path`` line: its name, message and first frame in the
    test file; and each ``✕`` test no block names."""
    path: str | None = None
    block: _Found | None = None
    crossed: list[tuple[str, str]] = []
    named: set[str] = set()
    suites: list[tuple[int, str]] = []  # the tree's open suites: (indent, name)
    for text in lines:
        file = _JEST_FILE.match(text)
        head = _JEST_BLOCK.match(text) if path is not None else None
        if file or head or _JEST_END.match(text):
            if block is not None:
                yield block
            block = None
        if file:
            path = file["path"].removeprefix("./") if file["state"] == "FAIL" else None
            suites = []
            continue
        if path is None:
            continue
        if _JEST_END.match(text):
            path = None
            continue
        if head:
            name = head["name"]
            if name == "Console":  # what the tests printed, shown when several files ran
                continue
            if name == "Test suite failed to run":
                name = f"{path} (suite failed to run)"
            block = _Found(f"{path} › {name}" if not name.startswith(path) else name)
            named.add(block.name)
            continue
        if block is None:
            if tree := _JEST_TREE.match(text):
                indent = len(tree["indent"])
                suites = [(i, name) for i, name in suites if i < indent]
                if tree["mark"] is None:
                    suites.append((indent, tree["name"]))
                elif tree["mark"] == "✕":
                    crossed.append((path, " › ".join([*(n for _, n in suites), tree["name"]])))
            continue
        if frame := _JEST_FRAME.match(text):
            if "node_modules" not in frame["path"]:
                block.located(frame["path"], int(frame["line"]))
        elif not _JEST_CODE.match(text) and text.strip() and block.file is None:
            block.message.append(text)
    if block is not None:
        yield block
    yield from _unblocked(crossed, named, " › ")


def _vitest(lines: list[str]) -> Iterator[_Found]:
    """Each `` FAIL  path > test`` block: the error's lines and its ``❯ path:line:col``; and
    each ``×`` test no block names."""
    block: _Found | None = None
    file: str | None = None
    crossed: list[tuple[str, str]] = []
    named: set[str] = set()
    for text in lines:
        if head := _VITEST_BLOCK.match(text):
            if block is not None:
                yield block
            path = head["path"]
            name = f"{path} > {head['name']}" if head["name"] else f"{path} (suite failed)"
            block, file = _Found(name), None
            named.add(name)
            continue
        if block is not None:
            if _VITEST_RULE.match(text):
                yield block
                block = None
            elif at := _VITEST_AT.match(text):
                block.located(at["path"], int(at["line"]))
            elif text.strip() and block.file is None:
                block.message.append(text.strip())
            continue
        if listed := _VITEST_FILE.match(text):
            file = listed["path"]
        elif file is not None and (cross := _VITEST_CROSS.match(text)):
            crossed.append((file, cross["name"]))
        elif not text.startswith(" "):
            file = None
    if block is not None:
        yield block
    yield from _unblocked(crossed, named, " > ")


def _unblocked(crossed: list[tuple[str, str]], named: set[str], joint: str
               ) -> Iterator[_Found]:
    """The tests a file's tree marks failed (``✕``, ``×``) that no block named: the middle of
    a long log, where the blocks were, may have been left out of the capture. vitest's tree
    names a test without its suites: a block naming it with them is the same test."""
    for path, test in crossed:
        if not any(name.startswith(f"{path}{joint}") and name.endswith(f"{joint}{test}")
                   for name in named):
            yield _Found(f"{path}{joint}{test}", file=path)


def _cargo(lines: list[str]) -> Iterator[_Found]:
    """The ``... FAILED`` results and the ``failures:`` lists, each with its panic: where, and
    the message up to the note or the backtrace. The panic is read in the test's ``----
    stdout ----`` block, or (``--nocapture``) wherever its thread, named for the test, said it."""
    failed: dict[str, _Found] = {}
    panics: dict[str, _Found] = {}
    block: _Found | None = None
    listing = False
    for text in lines:
        if result := _CARGO_RESULT.match(text):
            name = result["name"] or result["terse"]
            failed.setdefault(name, _Found(name))
            block = None
            continue
        if _CARGO_PROGRESS.match(text):
            continue
        if head := _CARGO_BLOCK.match(text):
            failed.setdefault(head["name"], _Found(head["name"]))
            block, listing = None, False
            continue
        if text == "failures:":
            block, listing = None, True
            continue
        if listing:
            if item := _CARGO_LIST.match(text):
                failed.setdefault(item["name"], _Found(item["name"]))
            elif text.strip():
                listing = False
            continue
        if panic := _CARGO_PANIC.match(text):
            block = _Found(panic["thread"], panic["path"], int(panic["line"]),
                           [panic["old"]] if panic["old"] else [])
            panics.setdefault(block.name, block)
        elif block is not None:
            if _CARGO_END.match(text) or not text.strip():
                block = None
            else:
                block.message.append(text)
    for name, test in failed.items():
        if said := panics.get(name):
            test.located(said.file, said.line)
            test.message = said.message
        yield test


def _go(lines: list[str]) -> Iterator[_Found]:
    """Each ``--- FAIL: TestX`` with the ``file.go:N: message`` lines logged under it (after
    it, or before it under ``=== RUN`` with ``-v``), named with its package (``TestX
    (example.com/calc)``) once the ``FAIL<tab>package`` line says it, and each package that
    failed to build."""
    logged: dict[str, list[tuple[str, int, str]]] = {}
    running: str | None = None
    failing: _Found | None = None
    failed: dict[str, _Found] = {}
    found: list[_Found] = []
    for text in lines:
        if start := _GO_START.match(text):
            running, failing = start["name"], None
            continue
        if fail := _GO_FAIL.match(text):
            name = fail["name"]
            failing = failed.setdefault(name, _Found(name))
            for path, line, message in logged.pop(name, []):
                failing.located(path, line)
                failing.message.append(message)
            running = None
            continue
        if log := _GO_LOG.match(text):
            entry = (log["path"], int(log["line"]), log["msg"])
            if failing is not None:
                failing.located(entry[0], entry[1])
                failing.message.append(entry[2])
            elif running is not None:
                logged.setdefault(running, []).append(entry)
            continue
        if failing is not None and text.startswith("panic: "):
            failing.message.append(text)
            continue
        if package := _GO_PACKAGE.match(text):
            found += _go_tests(failed, package["package"])
            if package["why"]:
                found.append(_Found(package["package"], message=[package["why"]]))
            failed, logged, failing, running = {}, {}, None, None
        elif failing is not None and not text.startswith(" "):
            failing = None
    yield from found
    yield from _go_tests(failed, None)


def _go_tests(failed: dict[str, _Found], package: str | None) -> list[_Found]:
    """A package's failed tests, named with it; a parent whose subtests failed and that
    logged nothing itself is left to them."""
    kept = []
    for name, test in failed.items():
        if not test.message and any(other.startswith(f"{name}/") for other in failed):
            continue
        if package:
            test.name = f"{name} ({package})"
        kept.append(test)
    return kept


_READERS: tuple[Callable[[list[str]], Iterator[_Found]], ...] = (
    _pytest, _unittest, _jest, _vitest, _cargo, _go,
)
