"""Research subagents as data: the plan, each one's recorded result, the fan-in. Pure.

A research step may fan out to focused subagents: those the repository declares
(``research.subagents`` in ``.github/ratchet.yml``) and those the research agent plans (JSON
written to ``RATCHET_SUBAGENT_PLAN``). Each returns an artifact (``subagents/<name>.md``) and
a one-paragraph note, never its conversation. The ledger records the validated plan with the
research agent's result (``SUBAGENTS_PLANNED``), then each subagent's result on its own
(``SUBAGENT_COMPLETED`` / ``SUBAGENT_FAILED``), so a step taken up again runs only what has no
result. The fan-in (``research/subagents.md``) lists name, status, artifact path and note: it
is what later prompts see. The fan-out itself is ``runner/steps/subagents.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from runner.config import check_subagent_name
from runner.ledger.records import Event
from runner.names import EventType

# Where the research agent may write its plan, in its output folder (RATCHET_SUBAGENT_PLAN).
PLAN_FILE = "subagent-plan.json"
# Where a subagent may write its note, in its output folder (RATCHET_NOTE).
NOTE_FILE = "note.md"
# The most the runner reads of a plan (a few entries) and of a note (one paragraph).
MAX_PLAN_BYTES = 64 * 1024
MAX_NOTE_BYTES = 16 * 1024
# A note longer than this is cut: it travels into every later prompt.
MAX_NOTE_CHARS = 800
# Run-directory paths the runner writes: the validated plan, and the fan-in later phases read.
PLAN_ARTIFACT = "research/subagent-plan.json"
FAN_IN = "research/subagents.md"
# Events that record one subagent's result.
RESULT_EVENTS = frozenset({EventType.SUBAGENT_COMPLETED, EventType.SUBAGENT_FAILED})


class SubagentStatus(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    PENDING = "pending"  # planned, no result recorded yet (views only)


@dataclass(frozen=True)
class Subagent:
    """One focused research agent: its name (a slug) and the question it researches."""

    name: str
    focus: str

    @property
    def artifact(self) -> str:
        """The run-directory path of its findings."""
        return f"subagents/{self.name}.md"

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "focus": self.focus}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Subagent:
        return cls(str(data["name"]), str(data["focus"]))


class BadPlan(ValueError):
    """A subagent plan that cannot run; the message names the entry and the problem."""


def parse_plan(raw: bytes) -> list[Subagent]:
    """The subagents a research agent's plan names: a JSON list of ``{"name", "focus"}``.

    Raises ``BadPlan`` naming the entry and the problem (not JSON, not a list, a missing or
    extra key, a name that is not a slug, an empty focus).
    """
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadPlan(f"it is not JSON ({exc})"[:300]) from None
    if not isinstance(data, list):
        raise BadPlan(f"it is a JSON {type(data).__name__}, not a list of"
                      ' {"name": ..., "focus": ...} objects')
    plan = []
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise BadPlan(f"[{index}] is a {type(entry).__name__}, not an object with name"
                          " and focus")
        extra = sorted(set(entry) - {"name", "focus"})
        if extra:
            raise BadPlan(f"[{index}] has unknown key(s) {', '.join(map(repr, extra))}; an entry"
                          " has only name and focus")
        name, focus = entry.get("name"), entry.get("focus")
        if not isinstance(name, str):
            raise BadPlan(f"[{index}].name is missing or not a string")
        try:
            check_subagent_name(name)
        except ValueError as exc:
            raise BadPlan(f"[{index}].name: {exc}") from None
        if not isinstance(focus, str) or not focus.strip():
            raise BadPlan(f"[{index}].focus ({name!r}) is missing or empty; give the one"
                          " question this subagent researches")
        plan.append(Subagent(name, focus.strip()))
    return plan


def plan_subagents(declared: Sequence[Subagent], written: Sequence[Subagent], *,
                   limit: int) -> tuple[Subagent, ...]:
    """The step's subagents: the declared ones, then the planned ones, each name once and at
    most ``limit`` in all (``research.max_subagents``).

    Raises ``BadPlan`` naming a name used twice or the count over the limit.
    """
    seen = {subagent.name for subagent in declared}
    for index, subagent in enumerate(written):
        if subagent.name in seen:
            where = ("is declared in .github/ratchet.yml" if any(
                d.name == subagent.name for d in declared) else "is planned twice")
            raise BadPlan(f"[{index}].name {subagent.name!r} {where}; each subagent needs its"
                          " own name")
        seen.add(subagent.name)
    if len(declared) + len(written) > limit:
        room = max(0, limit - len(declared))
        raise BadPlan(
            f"it plans {len(written)} subagent(s) and {len(declared)} are declared, more than"
            f" research.max_subagents allows ({limit}); plan at most {room}"
        )
    return (*declared, *written)


@dataclass(frozen=True)
class SubagentResult:
    """How one subagent ended, as the ledger records it (its log is evidence only)."""

    name: str
    status: SubagentStatus
    artifact: str | None = None  # run-directory path of its findings, when completed
    sha256: str | None = None  # of the artifact as stored
    note: str = ""  # one paragraph, redacted
    failure_class: str | None = None  # transient, deterministic, ... when failed
    error: str | None = None  # why it failed
    log_tail: str = ""  # the end of its log, when failed (evidence, never in a prompt)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "status": self.status.value,
                                "artifact": self.artifact, "sha256": self.sha256,
                                "note": self.note, "duration_s": round(self.duration_s, 3)}
        if self.status is SubagentStatus.FAILED:
            data.update({"class": self.failure_class, "error": self.error,
                         "log_tail": self.log_tail})
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SubagentResult:
        return cls(
            name=str(data["name"]), status=SubagentStatus(data["status"]),
            artifact=data.get("artifact"), sha256=data.get("sha256"),
            note=str(data.get("note") or ""), failure_class=data.get("class"),
            error=data.get("error"), log_tail=str(data.get("log_tail") or ""),
            duration_s=float(data.get("duration_s") or 0.0),
        )


@dataclass(frozen=True)
class Planned:
    """A research step's recorded plan, with the research agent's checkpoint record (its
    output, exit, usage), so the step completes without running that agent again."""

    step: str
    subagents: tuple[Subagent, ...]
    record: Mapping[str, Any]

    def event_data(self) -> dict[str, Any]:
        return {"plan": [s.to_dict() for s in self.subagents], "record": dict(self.record)}


def recorded_plan(events: Iterable[Event], step: str) -> Planned | None:
    """The plan ``step`` recorded, if it got that far."""
    found = None
    for event in events:
        if event.type == EventType.SUBAGENTS_PLANNED and event.step == step:
            found = Planned(step, tuple(Subagent.from_dict(s) for s in event.data["plan"]),
                            dict(event.data.get("record") or {}))
    return found


def recorded_results(events: Iterable[Event], step: str) -> dict[str, SubagentResult]:
    """The results ``step``'s subagents recorded, by name; the step needs only the others.

    A person who takes the stopped step up again (``RUN_RESUMED``) asks for its failed
    subagents to run again: their results before that do not count. Completed ones stay done.
    """
    results: dict[str, SubagentResult] = {}
    for event in events:
        if event.step != step:
            continue
        if event.type in RESULT_EVENTS:
            result = SubagentResult.from_dict(event.data["result"])
            results[result.name] = result
        elif event.type == EventType.RUN_RESUMED:
            results = {name: r for name, r in results.items()
                       if r.status is SubagentStatus.COMPLETED}
    return results


def failed_names(plan: Sequence[Subagent], results: Mapping[str, SubagentResult]) -> list[str]:
    """The planned subagents that failed, in plan order."""
    return [s.name for s in plan
            if s.name in results and results[s.name].status is SubagentStatus.FAILED]


def one_paragraph(text: str, *, limit: int = MAX_NOTE_CHARS) -> str:
    """``text`` as one paragraph of at most ``limit`` characters (what a note may be)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def render_fan_in(plan: Sequence[Subagent], results: Mapping[str, SubagentResult]) -> str:
    """``research/subagents.md``: each subagent's name, focus, status, artifact path and note
    (a failure says why in one line); no transcript, no log."""
    completed = sum(1 for s in plan if _status(results, s.name) is SubagentStatus.COMPLETED)
    lines = [
        "# Research subagents", "",
        f"{completed} of {len(plan)} subagent(s) completed. Each researched one focus in its own"
        " sandbox; its findings are the artifact at the run-directory path below. Their logs"
        " are evidence and are not included.", "",
    ]
    for subagent in plan:
        result = results.get(subagent.name)
        status = _status(results, subagent.name)
        lines += [f"## {subagent.name}: {status.value}", "",
                  f"- focus: {one_paragraph(subagent.focus)}"]
        if result is not None and status is SubagentStatus.COMPLETED:
            lines += [f"- artifact: {result.artifact}",
                      f"- note: {result.note or '(none)'}"]
        elif result is not None:
            lines.append(f"- failure ({result.failure_class}): "
                         f"{one_paragraph(result.error or 'no reason recorded', limit=300)}")
        lines.append("")
    return "\n".join(lines)


def subagent_rows(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The latest research step's subagents for a view: name, status (pending until a result
    is recorded), artifact path and note."""
    events = list(events)
    step = next((e.step for e in reversed(events)
                 if e.type == EventType.SUBAGENTS_PLANNED and e.step), None)
    planned = recorded_plan(events, step) if step else None
    if planned is None:
        return []
    results = recorded_results(events, planned.step)
    rows = []
    for subagent in planned.subagents:
        result = results.get(subagent.name)
        rows.append({
            "name": subagent.name, "status": _status(results, subagent.name).value,
            "artifact": result.artifact if result else None,
            "note": result.note if result else "",
        })
    return rows


def _status(results: Mapping[str, SubagentResult], name: str) -> SubagentStatus:
    result = results.get(name)
    return SubagentStatus.PENDING if result is None else result.status
