"""How a step talks to the Actions runner: workflow commands on stdout, outputs and the step
summary in the files the runner names.

Formats: https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions.
An output is written in the multi-line form (``name<<DELIMITER``) with a random delimiter, so
no value can end it early. Outside Actions (no ``GITHUB_OUTPUT`` or ``GITHUB_STEP_SUMMARY``)
outputs and the summary are skipped and the commands are plain lines on stdout.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, TextIO

from verification.evidence import escape_data, escape_property

Level = Literal["error", "warning", "notice"]
# Annotations the runner shows per step and level: the rest are only in the logs.
SHOWN_PER_LEVEL = 10
_RANK = {"error": 0, "warning": 1, "notice": 2}


def workflow_command(level: Level, message: str, *, file: str | None = None,
                     line: int | None = None, title: str | None = None) -> str:
    """``::error file=F,line=L,title=T::message``, escaped as the runner expects."""
    properties = ",".join(
        f"{name}={escape_property(str(value))}"
        for name, value in (("file", file), ("line", line), ("title", title))
        if value is not None
    )
    return f"::{level}{' ' + properties if properties else ''}::{escape_data(message)}"


def most_important_first(commands: Iterable[str]) -> list[str]:
    """Errors, then warnings, then notices (stable): the runner shows the first of each."""
    return sorted(commands, key=_rank)


def _rank(command: str) -> int:
    level = command.removeprefix("::").split("::", 1)[0].split(" ", 1)[0]
    return _RANK.get(level, len(_RANK))


class Runner:
    """The runner's channels for one step (see the module docstring)."""

    def __init__(self, *, output: Path | None, summary: Path | None,
                 stream: TextIO | None = None) -> None:
        self.output = output
        self.summary_file = summary
        self.stream = stream or sys.stdout

    def command(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def annotate(self, level: Level, message: str, *, file: str | None = None,
                 line: int | None = None, title: str | None = None) -> None:
        self.command(workflow_command(level, message, file=file, line=line, title=title))

    def set_output(self, name: str, value: str) -> None:
        if self.output is None:
            return
        delimiter = f"ratchet_{secrets.token_hex(8)}"
        with self.output.open("a", encoding="utf-8") as out:
            out.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")

    def summary(self, markdown: str) -> None:
        if self.summary_file is None:
            return
        with self.summary_file.open("a", encoding="utf-8") as out:
            out.write(markdown if markdown.endswith("\n") else markdown + "\n")
