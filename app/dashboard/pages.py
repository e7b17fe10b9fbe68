"""What the pages show, as data built from ledger records. Pure: no I/O, no HTML.

Values are shown as the ledger stored them (logs and artifacts were redacted when recorded);
the templates escape every one of them. Links point only under GitHub's web root, never at a
URL a record merely contains.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

from app.dashboard.access import repo_slug
from runner.budget import Limit, format_amount
from runner.ledger.records import Checkpoint, Effect, Event, Run
from runner.names import EffectKind, EventType, StepId
from runner.render import say_cost, say_tokens
from runner.signals import has_tree
from runner.usage import AgentRun, UsageTotals, agent_runs, total
from runner.views import diff_in_reason
from runner.workflow import State, is_end, is_stopped

# How much of a log the run page shows inline (the whole log is one click away).
LOG_TAIL_CHARS = 16_000
# Events that end a verification round, and the conclusion each one means.
_ROUND_ENDS = {
    EventType.VERIFICATION_PASSED: "success", EventType.TESTS_FAILED: "failure",
    EventType.STATIC_CHECK_FAILED: "failure", EventType.CHECKS_FAILED: "failure",
    EventType.VERIFICATION_UNVERIFIED: "neutral",
}
_FAILURES = frozenset({
    EventType.RUN_FAILED, EventType.NEEDS_HUMAN, EventType.STEP_FAILED,
    EventType.POLICY_VIOLATION, EventType.CHECKPOINT_CORRUPT, EventType.ARTIFACT_CORRUPT,
    EventType.TESTS_FAILED, EventType.STATIC_CHECK_FAILED, EventType.CHECKS_FAILED,
    EventType.EFFECT_FAILED, EventType.SALVAGE_REFUSED, EventType.APPROVAL_TIMED_OUT,
})
_SUCCESSES = frozenset({EventType.RUN_COMPLETED, EventType.PUBLISHED,
                        EventType.VERIFICATION_PASSED, EventType.SPEC_APPROVED})
# Events that record how the work was done, not what was done: a worker taking the lease, a
# workspace made ready, an effect intended and sent (its confirmation, reconciliation or
# failure stays shown), a signal arriving (its acceptance or refusal stays shown). The
# timeline folds them; a takeover is the exception (see ``is_bookkeeping``).
BOOKKEEPING = frozenset({
    EventType.LEASE_ACQUIRED, EventType.WORKSPACE_PREPARED, EventType.EFFECT_INTENDED,
    EventType.EFFECT_ATTEMPTED, EventType.SIGNAL_RECEIVED,
})
# Effects whose confirmation is bookkeeping too: the tracking comment's edit at every change
# of state (the comment mirrors the timeline) and a signal's acknowledging reaction. A push,
# a pull request, a check run or a reply confirmed stays shown.
QUIET_EFFECTS = frozenset({EffectKind.COMMENT, EffectKind.REACTION})
# How the run page names a budget's limits.
LIMIT_NAMES = {Limit.COST: "dollars", Limit.AGENT_RUNS: "agent runs",
               Limit.AGENT_MINUTES: "agent minutes", Limit.RUN_HOURS: "run hours"}


@dataclass(frozen=True)
class MachineTime:
    """The machine time a run took: its agents' completed steps and its checks."""

    agent_s: float = 0.0
    checks_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.agent_s + self.checks_s

    def __add__(self, other: MachineTime) -> MachineTime:
        return MachineTime(round(self.agent_s + other.agent_s, 3),
                           round(self.checks_s + other.checks_s, 3))


@dataclass(frozen=True)
class Spent:
    """What agent runs cost, as ``ratchet status`` says it: dollars (or ``unpriced``) and
    tokens, from the ledger's ``UsageTotals``."""

    totals: UsageTotals

    @property
    def dollars(self) -> str:
        return say_cost(self.totals.to_dict()) if self.totals.agent_runs else ""

    @property
    def tokens(self) -> str:
        return say_tokens(self.totals.to_dict())


@dataclass(frozen=True)
class RepoRef:
    """A run's repository as shown: ``owner/name`` with links on GitHub, else its path."""

    raw: str
    label: str
    slug: str | None
    url: str | None

    def issue_url(self, number: int | None) -> str | None:
        return f"{self.url}/issues/{number}" if self.url and number else None

    def pull_url(self, number: int | None) -> str | None:
        return f"{self.url}/pull/{number}" if self.url and number else None

    def branch_url(self, branch: str | None) -> str | None:
        return f"{self.url}/tree/{quote(branch, safe='/')}" if self.url and branch else None


@dataclass(frozen=True)
class RunRow:
    run: Run
    repo: RepoRef
    phase: str
    time: MachineTime
    spent: Spent


@dataclass(frozen=True)
class TimelineEntry:
    event: Event
    note: str
    tone: str  # takeover, reconcile, signal, effect, failure, success, or ""
    data: str  # the event's data as JSON, as stored


@dataclass(frozen=True)
class Folded:
    """Consecutive bookkeeping entries of the timeline, shown as one row that opens."""

    entries: list[TimelineEntry]

    @property
    def id(self) -> str:
        """Stable while the page updates live: the first folded event's sequence number."""
        return f"fold-{self.entries[0].event.seq}"


@dataclass(frozen=True)
class AgentStep:
    """One agent run of a step, with what it spent."""

    step: str
    attempt: int | None
    subagent: str | None
    outcome: str
    model: str
    spent: Spent


@dataclass(frozen=True)
class BudgetLine:
    """One limit of a run's budget: what it allows, what was spent, what is left."""

    name: str
    allowed: str
    spent: str
    left: str


@dataclass(frozen=True)
class CheckpointRow:
    step: str
    attempt: int | None
    sha256: str | None
    problem: str | None  # why it is not trusted (a hash that does not match its content)


@dataclass(frozen=True)
class EffectRow:
    effect: Effect
    name: str  # the key's last part (tracking.verify, pull-request, ...)
    target: str  # what it made, in words
    url: str | None


@dataclass(frozen=True)
class Approval:
    by: str
    sha256: str
    at: float
    current: bool  # approves the spec as it is now


@dataclass(frozen=True)
class CheckRow:
    id: str
    kind: str
    status: str
    exit_code: int | None
    duration_s: float
    command: str
    workspace: str
    reused: bool
    log_sha256: str | None
    log_size: int | None
    log_tail: str | None = None  # filled from the stored log


@dataclass(frozen=True)
class VerifyRound:
    step: str
    conclusion: str | None  # success, failure, neutral; None while it runs
    checks: list[CheckRow]


@dataclass(frozen=True)
class Timing:
    created_at: float
    updated_at: float
    elapsed_s: float
    machine: MachineTime
    attempts: dict[str, int] = field(default_factory=dict)  # step -> attempts it took


def repo_ref(repo: str, *, web_url: str) -> RepoRef:
    slug = repo_slug(repo, web_url=web_url)
    if slug is None:
        return RepoRef(repo, repo, None, None)
    return RepoRef(repo, slug, slug, f"{web_url.rstrip('/')}/{slug}")


def phase_of(run: Run) -> str:
    """The phase a run is in (its step's state), or its state when it has stopped or ended."""
    if is_end(run.state) or is_stopped(run.state):
        return run.state.value
    try:
        return StepId.parse(run.step).state
    except ValueError:
        return run.state.value


def machine_time(checkpoints: Iterable[Checkpoint]) -> MachineTime:
    agent = checks = 0.0
    for checkpoint in checkpoints:
        profile = checkpoint.input.get("profile")
        if isinstance(profile, dict) and profile.get("agent"):
            agent += _number(checkpoint.result.get("duration_s"))
        for result in _dicts(checkpoint.result.get("results")):
            checks += _number(result.get("duration_s"))
    return MachineTime(round(agent, 3), round(checks, 3))


def run_row(run: Run, checkpoints: Sequence[Checkpoint], usage: UsageTotals, *,
            web_url: str) -> RunRow:
    return RunRow(run, repo_ref(run.repo, web_url=web_url), phase_of(run),
                  machine_time(checkpoints), Spent(usage))


def agent_steps(usage: Mapping[str, Any]) -> list[AgentStep]:
    """Each agent run a status's usage lists (``runner.views.usage_view``'s ``steps``), with
    its cost summed by ``runner.usage.total`` as the run's total is."""
    rows = []
    for item in _dicts(usage.get("steps")):
        run = AgentRun.from_dict(item)
        rows.append(AgentStep(run.step, run.attempt, run.subagent, run.outcome,
                              str(run.usage.get("model") or ""), Spent(total([run]))))
    return rows


def budget_lines(usage: Mapping[str, Any]) -> list[BudgetLine]:
    """Each limit of a status's budget (``usage_view``'s ``budget``: allowed and spent), with
    what is left of it; none when the run has no budget."""
    lines = []
    for name, item in (usage.get("budget") or {}).items():
        try:
            which = Limit(name)
            allowed, spent = float(item["allowed"]), float(item["spent"])
        except (KeyError, TypeError, ValueError):
            continue  # a limit this version does not know is not shown as one
        lines.append(BudgetLine(LIMIT_NAMES[which], format_amount(which, allowed),
                                format_amount(which, spent),
                                format_amount(which, max(0.0, allowed - spent))))
    return lines


def is_bookkeeping(entry: TimelineEntry) -> bool:
    """Whether the timeline folds ``entry``, by its kind: a ``BOOKKEEPING`` event that is not a
    takeover (a lease taken from a worker whose lease expired is news), or the confirmation
    of a ``QUIET_EFFECTS`` effect."""
    kind = entry.event.type
    if kind == EventType.EFFECT_CONFIRMED:
        return entry.event.data.get("kind") in QUIET_EFFECTS
    return kind in BOOKKEEPING and entry.tone != "takeover"


def fold(entries: Iterable[TimelineEntry]) -> list[TimelineEntry | Folded]:
    """The timeline with each stretch of consecutive bookkeeping entries folded into one
    ``Folded``; every other entry stays where it was."""
    shown: list[TimelineEntry | Folded] = []
    for entry in entries:
        if not is_bookkeeping(entry):
            shown.append(entry)
        elif shown and isinstance(shown[-1], Folded):
            shown[-1].entries.append(entry)
        else:
            shown.append(Folded([entry]))
    return shown


def timeline(events: Iterable[Event]) -> list[TimelineEntry]:
    """Every event with a sentence saying what it means: takeovers name who took over from
    whom, reconciliations what was found, signals who asked."""
    entries = []
    holder: str | None = None
    expired: str | None = None  # the holder whose lease expired, until someone takes over
    for event in events:
        data = event.data
        kind, note, tone = event.type, "", ""
        if kind == EventType.LEASE_EXPIRED:
            expired = str(data.get("owner") or holder or "?")
            note = f"lease of {expired} (epoch {data.get('epoch', event.lease_epoch)}) expired"
            note += " (found by the reaper)" if data.get("by") == "reaper" else ""
            tone = "takeover"
        elif kind == EventType.LEASE_ACQUIRED:
            owner = str(data.get("owner") or "?")
            if expired is not None and expired != owner:
                note, tone = f"takeover: {owner} took the run over from {expired}", "takeover"
            else:
                note = f"{owner} holds the lease (epoch {event.lease_epoch})"
            holder, expired = owner, None
        elif kind == EventType.EFFECT_RECONCILED:
            note = f"reconciled: {_kind(data)} found already applied ({_short(data)})"
            tone = "reconcile"
        elif kind in {EventType.SIGNAL_RECEIVED, EventType.SIGNAL_ACCEPTED,
                      EventType.SIGNAL_REFUSED}:
            verb = {EventType.SIGNAL_RECEIVED: "received", EventType.SIGNAL_ACCEPTED: "accepted",
                    EventType.SIGNAL_REFUSED: "refused"}[EventType(kind)]
            note = f"{data.get('kind', 'signal')} from {data.get('author', '?')} {verb}"
            if kind == EventType.SIGNAL_REFUSED and data.get("refusal"):
                note += f" ({data['refusal']})"
            tone = "signal"
        elif kind.startswith("EFFECT_"):
            note, tone = f"{_kind(data)}: {kind.removeprefix('EFFECT_').lower()}", "effect"
            if kind == EventType.EFFECT_FAILED:
                note, tone = f"{_kind(data)} given up: {data.get('error', '')}", "failure"
        elif kind == EventType.CHECK_COMPLETED:
            result = data.get("result") if isinstance(data.get("result"), dict) else {}
            note = f"check {result.get('id', '?')}: {result.get('status', '?')}"
            tone = "failure" if result.get("status") == "failed" else ""
        elif kind == EventType.SPEC_APPROVED:
            note = f"approved by {data.get('by', '?')} ({str(data.get('sha256', ''))[:12]})"
        elif kind == EventType.RUN_CANCELLED:
            note = f"cancelled by {data.get('by', '?')}: {data.get('reason', '')}"
            if data.get("fenced_owner"):
                note += f" ({data['fenced_owner']} fenced out)"
        elif kind == EventType.AGENT_USAGE:
            spent = Spent(total(agent_runs([event])))
            who = f"subagent {data['subagent']}" if data.get("subagent") else "agent"
            note = ", ".join(part for part in (
                f"{who} {data.get('outcome', '?')}", spent.dollars, spent.tokens) if part)
        elif data.get("reason"):
            note = str(data["reason"])
        if not tone:
            tone = ("failure" if kind in _FAILURES else "success" if kind in _SUCCESSES
                    else "")
        entries.append(TimelineEntry(event, note, tone,
                                     json.dumps(data, sort_keys=True) if data else ""))
    return entries


def effect_rows(effects: Iterable[Effect], *, repo: RepoRef, web_url: str) -> list[EffectRow]:
    return [EffectRow(effect, effect.key.rsplit(":", 1)[-1], _target(effect),
                      _link(effect, repo=repo, web_url=web_url)) for effect in effects]


def approvals(events: Iterable[Event], *, spec_sha256: str | None) -> list[Approval]:
    return [Approval(str(e.data.get("by", "?")), str(e.data.get("sha256", "")), e.at,
                     bool(spec_sha256) and e.data.get("sha256") == spec_sha256)
            for e in events if e.type == EventType.SPEC_APPROVED]


def verify_rounds(events: Iterable[Event]) -> list[VerifyRound]:
    """Each verification (``verify.N``) with its checks as they completed, newest last."""
    rounds: dict[str, tuple[list[CheckRow], list[str | None]]] = {}
    for event in events:
        if event.step is None:
            continue
        if event.type == EventType.VERIFICATION_STARTED:
            rounds.setdefault(event.step, ([], [None]))
        elif event.type == EventType.CHECK_COMPLETED:
            result = event.data.get("result")
            if isinstance(result, dict):
                rounds.setdefault(event.step, ([], [None]))[0].append(_check(result))
        elif event.type in _ROUND_ENDS:
            rounds.setdefault(event.step, ([], [None]))[1][0] = _ROUND_ENDS[EventType(
                event.type)]
    return [VerifyRound(step, conclusion[0], checks)
            for step, (checks, conclusion) in rounds.items()]


def with_logs(rounds: list[VerifyRound], logs: Mapping[str, str]) -> list[VerifyRound]:
    """The rounds with each check's stored log (its last ``LOG_TAIL_CHARS``) filled in."""
    out = []
    for round_ in rounds:
        checks = []
        for check in round_.checks:
            text = logs.get(check.log_sha256 or "")
            tail = None if text is None else text[-LOG_TAIL_CHARS:]
            checks.append(replace(check, log_tail=tail))
        out.append(VerifyRound(round_.step, round_.conclusion, checks))
    return out


def plan_checks(plan: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return list(_dicts((plan or {}).get("checks")))


def timing(run: Run, checkpoints: Sequence[Checkpoint], *, now: float) -> Timing:
    end = run.updated_at if is_end(run.state) else now
    return Timing(run.created_at, run.updated_at, max(0.0, end - run.created_at),
                  machine_time(checkpoints), {c.step: c.attempt for c in checkpoints})


def log_hashes(events: Iterable[Event]) -> set[str]:
    """The check logs this run's events name (the only blobs its log links may serve)."""
    return {c.log_sha256 for r in verify_rounds(events) for c in r.checks if c.log_sha256}


def actions(run: Run, *, spec_sha256: str | None, completed_steps: Sequence[str],
            can_write: bool) -> dict[str, bool]:
    """Which buttons the run's page offers: what the run accepts now, for a writer."""
    waiting = run.state is State.AWAITING_APPROVAL
    return {
        "approve": can_write and waiting and spec_sha256 is not None,
        "approve_diff": (can_write and run.state is State.AWAITING_DIFF_APPROVAL
                         and diff_in_reason(run.reason) is not None),
        "request_changes": can_write and waiting and spec_sha256 is not None,
        "retry": can_write and is_stopped(run.state),
        "verify_again": can_write and is_stopped(run.state) and has_tree(completed_steps),
        "cancel": can_write and not is_end(run.state),
    }


def _check(result: Mapping[str, Any]) -> CheckRow:
    exit_code = result.get("exit_code")
    size = result.get("log_size")
    return CheckRow(
        id=str(result.get("id") or result.get("key") or "?"), kind=str(result.get("kind", "")),
        status=str(result.get("status", "")),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        duration_s=_number(result.get("duration_s")), command=str(result.get("command", "")),
        workspace=str(result.get("workspace", "")), reused=bool(result.get("reused")),
        log_sha256=str(result["log_sha256"]) if result.get("log_sha256") else None,
        log_size=size if isinstance(size, int) else None,
    )


def _target(effect: Effect) -> str:
    resource, payload = effect.resource or {}, effect.payload
    if effect.kind is EffectKind.PUSH:
        branch = resource.get("branch") or payload.get("branch") or ""
        commit = str(resource.get("commit") or payload.get("commit") or "")[:12]
        return f"{branch} at {commit}" if commit else str(branch)
    if effect.kind is EffectKind.PULL_REQUEST:
        number = resource.get("number")
        state = "draft" if payload.get("draft") else "ready"
        return f"pull request #{number} ({state})" if number else f"pull request ({state})"
    if effect.kind is EffectKind.CHECK_RUN:
        return f"{payload.get('name', 'check run')}: {payload.get('conclusion') or 'pending'}"
    if effect.kind is EffectKind.COMMENT:
        return f"comment {payload.get('name', '')}".strip()
    if "error" in resource:
        return str(resource["error"])
    return str(resource.get("path") or effect.kind)


def _link(effect: Effect, *, repo: RepoRef, web_url: str) -> str | None:
    resource = effect.resource or {}
    url = resource.get("url")
    if isinstance(url, str) and url.startswith(web_url.rstrip("/") + "/"):
        return url
    branch = resource.get("branch") or effect.payload.get("branch")
    if effect.kind is EffectKind.PUSH and repo.url and isinstance(branch, str) and branch:
        return repo.branch_url(branch)
    number = resource.get("number")
    if effect.kind is EffectKind.PULL_REQUEST and repo.url and isinstance(number, int):
        return f"{repo.url}/pull/{number}"
    return None


def _kind(data: Mapping[str, Any]) -> str:
    return str(data.get("kind") or "effect")


def _short(data: Mapping[str, Any]) -> str:
    resource = data.get("resource")
    if not isinstance(resource, dict) or not resource:
        return "no identity"
    return ", ".join(f"{k}={v}" for k, v in sorted(resource.items()))[:120]


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
