"""What a page reads from the ledger (blocking: handlers call these in a thread).

The pages' content is decided in ``pages.py`` from what these return; here are only the
reads, and what a damaged record does to them: a corrupt checkpoint or artifact is named on
the page, it never hides the rest.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from app.dashboard import pages
from app.dashboard.access import Gate, Viewer
from app.dashboard.diagram import path_taken
from runner.errors import CorruptArtifact, CorruptCheckpoint, LedgerError
from runner.ledger.records import Checkpoint, Run, Signal
from runner.ledger.store import Store
from runner.names import EventType
from runner.status import read_status
from runner.subagents import subagent_rows
from runner.usage import UsageTotals, agent_runs, total, totals_by_run
from runner.views import RunStatus
from runner.workflow import State

log = logging.getLogger(__name__)

PAGE_SIZE = 50  # runs per page of the list
MAX_INLINE_LOGS = 20  # check logs a run's page shows inline (each up to its last 16,000 chars)


@dataclass(frozen=True)
class RunList:
    rows: list[pages.RunRow]
    repositories: dict[str, int]  # the viewer's repositories, with their runs
    state: State | None
    repo: str | None
    newer: str | None  # the cursor of the page before this one (newer runs), if any
    older: str | None  # the cursor of the page after it (older runs), if any
    spent: pages.Spent = field(default_factory=lambda: pages.Spent(UsageTotals()))
    time: pages.MachineTime = field(default_factory=pages.MachineTime)  # the rows' sums


@dataclass(frozen=True)
class RunDetail:
    run: Run
    repo: pages.RepoRef
    status: RunStatus
    timeline: list[pages.TimelineEntry | pages.Folded]
    spent: pages.Spent  # the run's total, as ``ratchet status`` says it
    agent_steps: list[pages.AgentStep]
    budget: list[pages.BudgetLine]
    path: list[State]
    checkpoints: list[pages.CheckpointRow]
    effects: list[pages.EffectRow]
    signals: list[Signal]
    spec_text: str | None
    spec_sha256: str | None
    approvals: list[pages.Approval]
    plan: list[dict[str, Any]]
    rounds: list[pages.VerifyRound]
    timing: pages.Timing
    artifacts: dict[str, str]
    subagents: list[dict[str, Any]] = field(default_factory=list)  # research subagents
    problems: list[str] = field(default_factory=list)


def repositories_for(store: Store, gate: Gate, viewer: Viewer) -> dict[str, int]:
    """The repositories whose runs ``viewer`` may read, with how many runs each has."""
    every = store.repositories()
    readable = gate.readable(viewer, every)
    return every if readable is None else {repo: every[repo] for repo in readable}


def load_list(store: Store, gate: Gate, viewer: Viewer, *, state: State | None,
              repo: str | None, before: str | None, after: str | None, web_url: str,
              limit: int = PAGE_SIZE) -> RunList:
    """One page of the runs ``viewer`` may read (``UnknownRun`` for a cursor naming none).

    A repository filter the viewer may not read (or that has no runs) is ignored.
    """
    repositories = repositories_for(store, gate, viewer)
    if repo not in repositories:
        repo = None
    repos: Collection[str] | None = (
        [repo] if repo is not None else None if gate.sees_all(viewer) else list(repositories))
    states = None if state is None else [state]
    found = store.runs_page(limit=limit + 1, states=states, repos=repos, before=before,
                            after=after)
    if after is not None:  # newest first; an extra run (if any) is the newest one
        runs, more_newer, more_older = found[-limit:], len(found) > limit, True
    else:
        runs, more_older = found[:limit], len(found) > limit
        more_newer = before is not None and bool(runs) and bool(store.runs_page(
            limit=1, states=states, repos=repos, after=runs[0].id))
    usage, overall = list_usage(store, [run.id for run in runs])
    rows = [pages.run_row(run, _checkpoints(store, run.id)[0],
                          usage.get(run.id, UsageTotals()), web_url=web_url) for run in runs]
    return RunList(rows, repositories, state, repo,
                   newer=runs[0].id if runs and more_newer else None,
                   older=runs[-1].id if runs and more_older else None,
                   spent=pages.Spent(overall),
                   time=sum((row.time for row in rows), pages.MachineTime()))


def list_usage(store: Store, run_ids: Collection[str]
               ) -> tuple[dict[str, UsageTotals], UsageTotals]:
    """What each of ``run_ids``' agents spent (``runner.usage.total``, as ``ratchet status``
    sums it; a run without agent runs is absent), and what all of them did, in one query."""
    events = store.events_of_type(EventType.AGENT_USAGE, runs=list(run_ids))
    return totals_by_run(events), total(agent_runs(events))


def load_run(store: Store, run: Run, *, now: float, web_url: str) -> RunDetail:
    """Everything the run's page shows, read once."""
    problems: list[str] = []
    events = store.events(run.id)
    checkpoints, rows = _checkpoints(store, run.id)
    problems += [row.problem for row in rows if row.problem]
    status = read_status(store, run.id, now=now)
    problems += status.problems
    spec_text = _text(store, run.id, "spec.md", problems)
    spec_sha = status.spec_sha256  # of the bytes as stored
    plan_text = _text(store, run.id, "verification/plan.json", problems)
    repo = pages.repo_ref(run.repo, web_url=web_url)
    rounds = pages.verify_rounds(events)
    return RunDetail(
        run=run, repo=repo, status=status, timeline=pages.fold(pages.timeline(events)),
        spent=pages.Spent(UsageTotals.from_dict(status.usage.get("total") or {})),
        agent_steps=pages.agent_steps(status.usage), budget=pages.budget_lines(status.usage),
        path=path_taken(run, status.completed_steps, events), checkpoints=rows,
        effects=pages.effect_rows(store.effects(run.id), repo=repo, web_url=web_url),
        signals=store.signals(run.id), spec_text=spec_text, spec_sha256=spec_sha,
        approvals=pages.approvals(events, spec_sha256=spec_sha),
        plan=pages.plan_checks(_json(plan_text)),
        rounds=pages.with_logs(rounds, _shown_logs(store, rounds)),
        timing=pages.timing(run, checkpoints, now=now), artifacts=store.artifacts(run.id),
        subagents=subagent_rows(events), problems=problems,
    )


def read_log(store: Store, run_id: str, sha256: str) -> bytes | None:
    """A check log of this run by its hash; None unless one of the run's events names it."""
    if sha256 not in pages.log_hashes(store.events(run_id)):
        return None
    return store.get_artifact(sha256)


def _checkpoints(store: Store, run_id: str) -> tuple[list[Checkpoint], list[pages.CheckpointRow]]:
    """The run's checkpoints with their verified hashes; a corrupt one is named, not used."""
    try:
        found = store.checkpoints(run_id)
    except CorruptCheckpoint:
        found = None
    if found is not None:
        return found, [pages.CheckpointRow(c.step, c.attempt, c.sha256, None) for c in found]
    good, rows = [], []
    for step in store.completed_steps(run_id):
        try:
            checkpoint = store.checkpoint(run_id, step)
        except CorruptCheckpoint as exc:
            rows.append(pages.CheckpointRow(step, None, None, str(exc)))
            continue
        if checkpoint is not None:
            good.append(checkpoint)
            rows.append(pages.CheckpointRow(step, checkpoint.attempt, checkpoint.sha256, None))
    return good, rows


def _text(store: Store, run_id: str, path: str, problems: list[str]) -> str | None:
    try:
        data = store.read_artifact(run_id, path)
    except CorruptArtifact as exc:
        problems.append(str(exc))
        return None
    return None if data is None else data.decode("utf-8", errors="replace")


def _json(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _shown_logs(store: Store, rounds: list[pages.VerifyRound]) -> dict[str, str]:
    """The logs a run's page shows inline, decoded as stored: every check of the latest
    round and the failed checks of earlier ones (the rest are a link away)."""
    wanted = [check.log_sha256 for index, round_ in enumerate(rounds) for check in round_.checks
              if check.log_sha256 and (index == len(rounds) - 1 or check.status == "failed")]
    logs: dict[str, str] = {}
    for sha in wanted[-MAX_INLINE_LOGS:]:
        try:
            logs[sha] = store.get_artifact(sha).decode("utf-8", errors="replace")
        except LedgerError as exc:  # missing or corrupt: the page says so where the log goes
            logs[sha] = f"(log unavailable: {exc})"
    return logs
