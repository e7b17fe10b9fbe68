"""What the scripted model does in each phase: tool calls through the CLI's own tools, then a
final message.

The server never sees ``RATCHET_PHASE``: it reads the phase from the prompt's title (``# Ratchet
research step research.1``), the output, note and plan paths from the absolute paths the prompt
names, and the worktree from what the CLI says of its working directory. An action names a
path with a placeholder (``{output}``, ``{note}``, ``{plan}``, ``{worktree}``); the server
turns it into the tool call each CLI offers (``runner``'s presets run them for real).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class Action:
    """One tool call: ``write`` (path, content), ``edit`` (path, old, new), ``read`` (path) or
    ``shell`` (command)."""

    kind: str
    path: str = ""
    content: str = ""
    old: str = ""
    new: str = ""
    command: str = ""


@dataclass(frozen=True)
class Turns:
    """A phase's actions, one per model turn, then its final text."""

    actions: tuple[Action, ...]
    final: str


def write(path: str, content: str) -> Action:
    return Action("write", path=path, content=content)


def edit(path: str, old: str, new: str) -> Action:
    return Action("edit", path=path, old=old, new=new)


def read(path: str) -> Action:
    return Action("read", path=path)


def shell(command: str) -> Action:
    return Action("shell", command=command)


BUGGY = "def add(a, b):\n    return a - b\n"
TEST = ("import unittest\n\nimport calc\n\n\nclass AddTest(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n")

# The calculator task of tests/e2e/harness.py: implement writes a bug and the test that catches
# it, verification fails, repair fixes the sign; every phase writes its output through the
# CLI's own write tool.
CALC: Mapping[str, Turns] = MappingProxyType({
    "research": Turns((read("{worktree}/README.md"),
                       write("{output}", "# Analysis\n\nA small Python package; tests run with"
                                         " unittest.\n")),
                      "Research written."),
    "specify": Turns((write("{output}", "# Spec\n\nAdd calc.add(a, b) returning a + b, with"
                                        " tests.\n"),),
                     "Specification written."),
    "implement": Turns((write("{worktree}/calc.py", BUGGY),
                        write("{worktree}/test_calc.py", TEST),
                        shell("python3 -m unittest -q"),
                        write("{output}", "Implemented calc.add.\n")),
                       "Implemented."),
    "repair": Turns((read("{worktree}/calc.py"),
                     edit("{worktree}/calc.py", "a - b", "a + b"),
                     shell("python3 -m unittest -q"),
                     write("{output}", "Fixed the sign in calc.add.\n")),
                    "Repaired."),
    "subagent": Turns((read("{worktree}/README.md"),
                       write("{output}", "# Findings\n\nThe README is one line.\n"),
                       write("{note}", "The package is tiny.\n")),
                      "Findings written."),
})


@dataclass
class Switches:
    """How the model misbehaves. ``delay_s``: pause between stream events (a slow model that
    still streams); ``fail_first``/``fail_status``: answer the first requests with that error
    (429 rate limit, 529 overloaded, 500); ``hang_phase``: stop streaming mid-answer in that
    phase and hold the connection open; ``slow_phase``: only that phase is slow (empty:
    every request)."""

    delay_s: float = 0.0
    slow_phase: str = ""
    fail_first: int = 0
    fail_status: int = 529
    hang_phase: str = ""
    text_chunks: int = 1  # the final text split into this many deltas (with delay_s between)
    cached_share: float = 0.0  # of each answer's input tokens, reported as cached (Responses)


@dataclass
class Script:
    """The model's behaviour: a ``Turns`` per phase and the switches."""

    phases: Mapping[str, Turns] = field(default_factory=lambda: CALC)
    switches: Switches = field(default_factory=Switches)


_TITLE = re.compile(r"# Ratchet (research|specify|implement|repair|subagent) step (\S+)")
_ABSOLUTE = re.compile(r"(?<![\w.])(/[^\s`'\"<>()\[\]{},;]+)")
# Where the CLIs say their working directory is (Claude Code's environment section, Codex's
# environment context, opencode's and aider's own words, Gemini CLI's workspace list).
_WORKDIR = (
    re.compile(r"Primary working directory: (/\S+)"),
    re.compile(r"<cwd>(/[^<]+)</cwd>"),
    re.compile(r"[Ww]orking directory: (/\S+)"),
    re.compile(r"\*\*Workspace Directories:\*\*\s*- (/\S+)"),  # Gemini CLI: the first is its cwd
)
# What each placeholder's absolute path ends with (runner/agents/prompt.py, runner/subagents.py).
_SUFFIXES = {
    "research": re.compile(r"/research/repository-analysis\.md$"),
    "specify": re.compile(r"/spec\.md$"),
    "implement": re.compile(r"/implementation/summary\.md$"),
    "repair": re.compile(r"/repair/\d+/summary\.md$"),
    "subagent": re.compile(r"/subagents/[a-z0-9-]+\.md$"),
    "note": re.compile(r"/note\.md$"),
    "plan": re.compile(r"/subagent-plan\.json$"),
}


def phase_of(text: str) -> tuple[str, str] | None:
    """(phase, step) from a Ratchet prompt's title in ``text``; None for any other request
    (a CLI's own side requests: titles, summaries, quota checks)."""
    match = _TITLE.search(text)
    return (match.group(1), match.group(2)) if match else None


def places(text: str, phase: str) -> dict[str, str]:
    """The absolute paths an action's placeholders stand for, as ``text`` (the whole request)
    names them; a placeholder the text does not name is left out."""
    found: dict[str, str] = {}
    for pattern in _WORKDIR:
        match = pattern.search(text)
        if match:
            found["worktree"] = match.group(1).rstrip(".")
            break
    paths = [path.rstrip(".:") for path in _ABSOLUTE.findall(text)]
    for name, key in ((phase, "output"), ("note", "note"), ("plan", "plan")):
        for path in paths:
            if _SUFFIXES[name].search(path):
                found.setdefault(key, path)
    return found


def fill(action: Action, where: Mapping[str, str]) -> Action:
    """``action`` with its placeholders replaced; ``KeyError`` names a path the prompt lacks."""
    return Action(action.kind, path=action.path.format_map(where),
                  content=action.content, old=action.old, new=action.new,
                  command=action.command.format_map(where))
