"""The usage protocol: what an agent spent, as it says and as the runner measured, and the sums.

An agent may write one JSON object to the file named by ``RATCHET_USAGE``: ``cost_usd``,
``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``model``, ``turns``, all optional,
unknown keys kept. A preset also reads its CLI's own output (``runner/agents/presets.py``). The
runner adds what it measured itself (``agent_seconds``, which no agent can override) and records
the result with the step: in the checkpoint of a completed step and, for every agent run,
completed or failed, an ``AGENT_USAGE`` event in the same transaction. Sums are always computed
from those events, never kept in a counter of their own, so they cannot drift from what was
recorded, and a step recorded once is counted once.

Pure: parsing and arithmetic on records; reading the file is the caller's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from runner.ledger.records import Event
from runner.names import EventType

# The file the agent may write, in its output folder (RATCHET_USAGE points at it).
USAGE_FILE = "usage.json"
# The most the runner reads of it: a usage report is a few hundred bytes.
MAX_USAGE_BYTES = 64 * 1024
# Reported counts a usage record may carry, with their type.
COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "turns")
# Token kinds as metrics label them, with the field each is summed from.
TOKEN_KINDS = {"input": "input_tokens", "output": "output_tokens",
               "cache_read": "cache_read_tokens"}
# Longest model name kept; a longer value is a mistake, not a model.
MAX_MODEL_CHARS = 200
# How large and how deep an unknown key's value may be to be kept (it lands in the ledger).
MAX_EXTRA_CHARS = 2048
MAX_EXTRA_DEPTH = 4


def parse_usage(data: object) -> dict[str, Any]:
    """A usage record from what an agent reported (a decoded JSON value).

    Known fields with a wrong type or a negative or non-finite value are dropped and named in
    ``problems``; unknown keys are kept as they are. Never raises: a bad report is evidence,
    not a reason to fail the step.
    """
    if not isinstance(data, dict):
        return {"problems": [f"the usage report is a {type(data).__name__}, not an object"]}
    record: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in data.items():
        key = str(key)
        if key == "agent_seconds":
            continue  # measured by the runner, never taken from the agent
        if key == "cost_usd":
            if _is_amount(value):
                record[key] = float(value)
            else:
                problems.append(f"cost_usd: {value!r} is not a non-negative number")
        elif key in COUNTS:
            if _is_amount(value) and float(value).is_integer():
                record[key] = int(value)
            else:
                problems.append(f"{key}: {value!r} is not a non-negative whole number")
        elif key == "model":
            if isinstance(value, str) and len(value) <= MAX_MODEL_CHARS:
                record[key] = value
            else:
                problems.append(f"model: not a name of at most {MAX_MODEL_CHARS} characters")
        elif key != "problems":
            if _small(value, MAX_EXTRA_DEPTH):
                record[key] = value
            else:
                problems.append(f"{key}: dropped, larger than {MAX_EXTRA_CHARS} characters or"
                                f" nested deeper than {MAX_EXTRA_DEPTH}")
    if problems:
        record["problems"] = problems
    return record


def decode_usage(raw: bytes) -> dict[str, Any]:
    """``parse_usage`` of a usage file's bytes; undecodable bytes are a problem noted."""
    try:
        return parse_usage(json.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return {"problems": [f"the usage file is not JSON: {exc!r}"[:300]]}


def merge_usage(reported: Mapping[str, Any], parsed: Mapping[str, Any]) -> dict[str, Any]:
    """The agent's own report over what its CLI printed: an explicit report wins per field."""
    merged = {**parsed, **reported}
    problems = [*parsed.get("problems", []), *reported.get("problems", [])]
    if problems:
        merged["problems"] = problems
    return merged


def measured(record: Mapping[str, Any], *, seconds: float) -> dict[str, Any]:
    """``record`` with the agent's wall time as the runner measured it."""
    return {**record, "agent_seconds": round(max(0.0, seconds), 3)}


@dataclass(frozen=True)
class AgentRun:
    """One agent invocation as the ledger recorded it: its step, attempt, how it ended, and
    its usage record."""

    step: str
    attempt: int | None
    outcome: str  # "completed", or the failure class that ended it
    usage: Mapping[str, Any]
    subagent: str | None = None  # a research subagent of the step, by name

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "attempt": self.attempt, "outcome": self.outcome,
                **({"subagent": self.subagent} if self.subagent else {}), **self.usage}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentRun:
        """The agent run ``to_dict`` wrote (a status's ``usage.steps`` entry)."""
        usage = {key: value for key, value in data.items()
                 if key not in {"step", "attempt", "outcome", "subagent"}}
        attempt = data.get("attempt")
        return cls(step=str(data.get("step") or ""),
                   attempt=attempt if isinstance(attempt, int) else None,
                   outcome=str(data.get("outcome") or ""), usage=usage,
                   subagent=str(data["subagent"]) if data.get("subagent") else None)


def usage_event_data(outcome: str, usage: Mapping[str, Any], *,
                     subagent: str | None = None) -> dict[str, Any]:
    """The data of an ``AGENT_USAGE`` event (``subagent``: which of the step's subagents)."""
    return {"outcome": outcome, "usage": dict(usage),
            **({"subagent": subagent} if subagent else {})}


def agent_runs(events: Iterable[Event]) -> list[AgentRun]:
    """Every agent run recorded in ``events``, oldest first."""
    return [AgentRun(step=e.step or "", attempt=e.attempt,
                     outcome=str(e.data.get("outcome", "")), usage=e.data.get("usage") or {},
                     subagent=e.data.get("subagent") or None)
            for e in events if e.type == EventType.AGENT_USAGE]


@dataclass(frozen=True)
class UsageTotals:
    """What the agents of a run (or of every run) spent, summed."""

    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    agent_seconds: float = 0.0
    agent_runs: int = 0
    unpriced_runs: int = 0  # agent runs that reported no cost (a budget cannot count them)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cost_usd"] = round(self.cost_usd, 6)
        data["agent_seconds"] = round(self.agent_seconds, 3)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UsageTotals:
        """The totals ``to_dict`` wrote (a status's ``usage.total``); a field it lacks is 0."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


def totals_by_run(events: Iterable[Event]) -> dict[str, UsageTotals]:
    """``total`` of each run's agent runs in ``events`` (several runs' ``AGENT_USAGE`` events,
    as ``Store.events_of_type`` reads a page of them), by run id."""
    by_run: dict[str, list[Event]] = {}
    for event in events:
        by_run.setdefault(event.run_id, []).append(event)
    return {run_id: total(agent_runs(found)) for run_id, found in by_run.items()}


def total(runs: Iterable[AgentRun]) -> UsageTotals:
    """The sum of ``runs``' usage; a field a run did not report counts as nothing."""
    cost, seconds = 0.0, 0.0
    counts = dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens"), 0)
    number = unpriced = 0
    for run in runs:
        number += 1
        usage = run.usage
        if _is_amount(usage.get("cost_usd")):
            cost += float(usage["cost_usd"])
        else:
            unpriced += 1
        if _is_amount(usage.get("agent_seconds")):
            seconds += float(usage["agent_seconds"])
        for key in counts:
            if _is_amount(usage.get(key)):
                counts[key] += int(usage[key])
    return UsageTotals(cost_usd=cost, agent_seconds=seconds, agent_runs=number,
                       unpriced_runs=unpriced, **counts)


def _small(value: object, depth: int) -> bool:
    """Whether ``value`` is shallow and short enough to keep."""
    if isinstance(value, dict | list):
        items = value.values() if isinstance(value, dict) else value
        return depth > 0 and len(json.dumps(value)) <= MAX_EXTRA_CHARS and all(
            _small(item, depth - 1) for item in items)
    return len(json.dumps(value, default=str)) <= MAX_EXTRA_CHARS


def _is_amount(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)
