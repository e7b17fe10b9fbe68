"""The research step's fan-out: focused subagents in parallel, each result its own transaction.

Once the research agent has finished (``runner/steps/agent.py``), its plan is validated and
recorded with its result (``SUBAGENTS_PLANNED``, one transaction), so a crash during the
fan-out runs neither that agent nor the plan again. Subagents then run in a thread pool of
``research.concurrency``: each an agent in phase ``subagent``, in its own sandbox, the worktree
shown read-only, its own output folder. This thread records each one as it ends
(``SUBAGENT_COMPLETED`` or ``SUBAGENT_FAILED`` with its usage, fenced by the lease), as
verification records its checks; a step taken up again runs only the subagents without a
result. The budget is asked before each launch (those in flight count as agent runs); a cancel
or a lost lease stops them all. The fan-in (``research/subagents.md``) completes the step.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path, PurePosixPath

from plumbing.files import UnsafePath, read_beneath
from plumbing.walk import remove
from runner.agents.base import AgentResult, AgentTask
from runner.agents.command import read_output
from runner.agents.prompt import PromptContext, output_path, render_prompt
from runner.budget import Allowance, Exhaustion, allowance, budget_of
from runner.canonical import sha256_hex
from runner.config import RepositoryConfig
from runner.errors import (
    AgentUnauthorized,
    AuthorityFailure,
    BudgetExhausted,
    DeterministicFailure,
    PolicyViolation,
    ProviderUnavailable,
    StepFailure,
    TransientFailure,
)
from runner.ledger.records import NewEvent
from runner.names import EventType
from runner.neutralise import neutralise
from runner.results import prepared_result
from runner.steps.base import (
    StepInput,
    StepResult,
    StepServices,
    artifact_text,
    redacted_usage,
    scratch_of,
)
from runner.subagents import (
    FAN_IN,
    MAX_NOTE_BYTES,
    MAX_PLAN_BYTES,
    NOTE_FILE,
    PLAN_ARTIFACT,
    PLAN_FILE,
    BadPlan,
    Planned,
    Subagent,
    SubagentResult,
    SubagentStatus,
    failed_names,
    one_paragraph,
    parse_plan,
    plan_subagents,
    recorded_results,
    render_fan_in,
)
from runner.usage import usage_event_data
from runner.workflow import Outcome

log = logging.getLogger(__name__)

# The folder, in a later agent step's scratch, that holds the subagents' artifacts for it to
# read (RATCHET_ARTIFACTS), laid out as in the run directory.
ARTIFACTS_FOLDER = "artifacts"


def declared(config: RepositoryConfig) -> tuple[Subagent, ...]:
    """The subagents the repository declares."""
    return tuple(Subagent(s.name, s.focus) for s in config.research.subagents)


def plan_limit(config: RepositoryConfig) -> int:
    """How many subagents the research agent's plan may add."""
    return max(0, config.research.max_subagents - len(config.research.subagents))


def research_env(config: RepositoryConfig, output_dir: Path) -> dict[str, str]:
    """The research agent's extra environment: where it may write a plan, if it may."""
    return {"RATCHET_SUBAGENT_PLAN": str(output_dir / PLAN_FILE)} if plan_limit(config) else {}


def read_plan(inp: StepInput, task: AgentTask) -> tuple[Subagent, ...]:
    """The declared subagents plus the research agent's plan, validated.

    Raises ``DeterministicFailure`` naming the problem (the plan is kept as evidence), or
    ``PolicyViolation`` for a plan that is a symlink or a special file.
    """
    step = inp.run.step
    raw = None
    if plan_limit(inp.config):
        try:
            raw = read_beneath(task.output_dir, PLAN_FILE, limit=MAX_PLAN_BYTES)
        except UnsafePath as exc:
            if exc.reason == "too_large":
                raise DeterministicFailure(
                    f"the research agent's subagent plan ($RATCHET_SUBAGENT_PLAN) is larger than"
                    f" {MAX_PLAN_BYTES} bytes in step {step!r} of run {inp.run.id!r}; a plan"
                    " lists a few names and questions") from exc
            if exc.reason != "missing":
                raise PolicyViolation(
                    f"the research agent's subagent plan cannot be used: {exc}; it must be a"
                    " regular file. Review the agent command, then start a new run") from exc
    try:
        written = parse_plan(raw) if raw is not None else []
        return plan_subagents(declared(inp.config), written,
                              limit=inp.config.research.max_subagents)
    except BadPlan as exc:
        evidence_path = f"evidence/{step}.subagent-plan.json"
        raise DeterministicFailure(
            f"the research agent's subagent plan ($RATCHET_SUBAGENT_PLAN) is invalid: {exc}."
            f" It was saved as {evidence_path}; fix the agent (or research.max_subagents in"
            " .github/ratchet.yml), then retry the run",
            evidence={"plan_problem": str(exc)},
            artifacts={evidence_path: raw or b""},
        ) from None


def record_plan(inp: StepInput, services: StepServices, concluded: StepResult,
                plan: tuple[Subagent, ...]) -> Planned:
    """Record the research agent's result (artifacts, usage) with the validated plan, in one
    transaction: from here on the step never runs that agent again."""
    run = inp.run
    # A planned focus is agent-written text: redacted before it is stored or handed on.
    plan = tuple(Subagent(s.name, services.settings.redact(s.focus)) for s in plan)
    planned = Planned(run.step, plan, dict(concluded.record))
    usage = [e for e in concluded.events if e.type is EventType.AGENT_USAGE]
    plan_json = json.dumps([s.to_dict() for s in plan], indent=2) + "\n"
    services.store.append(
        services.lease(),
        events=[NewEvent(EventType.SUBAGENTS_PLANNED, step=run.step, attempt=run.attempt,
                         data=planned.event_data()), *usage],
        artifacts={**concluded.artifacts, PLAN_ARTIFACT: plan_json.encode()},
    )
    log.info("run %r step %r: %d subagent(s) planned: %s", run.id, run.step, len(plan),
             ", ".join(s.name for s in plan))
    services.settings.crash.reached("after_subagents_planned", run.step)
    return planned


class _Stop(threading.Event):
    """Set to stop every subagent; also reads as set once the session's cancel is (a lost
    lease, a cancel waiting in the inbox)."""

    def __init__(self, session_cancel: threading.Event) -> None:
        super().__init__()
        self.session_cancel = session_cancel

    def is_set(self) -> bool:
        return super().is_set() or self.session_cancel.is_set()


def fan_out(inp: StepInput, services: StepServices,
            planned: Planned) -> dict[str, SubagentResult]:
    """Run the planned subagents that have no recorded result; record each as it ends.

    Returns every subagent's result. Raises ``BudgetExhausted`` when the budget stopped
    further launches, ``ProviderUnavailable`` or ``AgentUnauthorized`` when the model
    provider refused one for now or refused its credentials (no further launch: the others
    share the provider; those without a result run when the step is retried),
    ``TransientFailure`` when a cancel or a lost lease stopped them (those in flight are ended
    and record nothing), ``StaleWrite`` from a fenced write.
    """
    run, step = inp.run, inp.run.step
    concurrency = inp.config.research.concurrency
    results = recorded_results(services.store.events(run.id), step)
    waiting = [s for s in planned.subagents if s.name not in results]
    if not waiting:
        return results
    analysis = artifact_text(services, run.id, output_path("research")) or ""
    agent = services.agent()
    stop = _Stop(services.cancel)
    running: dict[Future[AgentResult], tuple[Subagent, AgentTask]] = {}
    exhaustion: Exhaustion | None = None
    refused: ProviderUnavailable | AgentUnauthorized | None = None  # by the model provider
    with ThreadPoolExecutor(max_workers=concurrency,
                            thread_name_prefix=f"subagents-{run.id}") as pool:
        try:
            while waiting or running:
                while (waiting and len(running) < concurrency and exhaustion is None
                       and refused is None and not stop.is_set()):
                    allowed = _budget(inp, services, running=len(running))
                    exhaustion = allowed.exhaustion
                    if exhaustion is not None:
                        break
                    subagent = waiting.pop(0)
                    task = _task(inp, services, subagent, analysis, timeout=allowed.seconds,
                                 cost_left=allowed.cost_left)
                    log.info("run %r step %r: subagent %r starts", run.id, step, subagent.name)
                    running[pool.submit(agent.run, task, cancel=stop)] = (subagent, task)
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: running[f][0].name):
                    subagent, task = running.pop(future)
                    error = future.exception()
                    if (isinstance(error, ProviderUnavailable | AgentUnauthorized)
                            and not stop.is_set()):
                        # Not the subagent's failure: it runs again when the step is retried;
                        # what it spent is recorded now.
                        refused = error
                        services.store.append(services.lease(), events=_spent(
                            inp, services, subagent, error))
                        continue
                    settled = _settle(inp, services, subagent, task, future, stop)
                    if settled is None:
                        continue
                    result, events, artifacts = settled
                    services.store.append(services.lease(), events=events, artifacts=artifacts)
                    results[subagent.name] = result
                    log.info("run %r step %r: subagent %r %s", run.id, step, subagent.name,
                             result.status.value)
                    services.settings.crash.reached("after_subagent_result",
                                                    f"{step}:{len(results)}")
        finally:
            stop.set()  # on any way out, nothing keeps running: the pool waits for them to end
    missing = [s.name for s in planned.subagents if s.name not in results]
    if missing and services.cancel.is_set():
        raise TransientFailure(f"cancelled: subagent(s) {', '.join(missing)} were stopped")
    if missing and refused is not None:
        raise type(refused)(
            f"research subagent(s) {', '.join(missing)} did not complete: {refused}",
            evidence=refused.evidence)
    if missing and exhaustion is not None:
        raise BudgetExhausted(
            f"{exhaustion.reason}; research subagent(s) {', '.join(missing)} did not start",
            exhaustion=exhaustion.to_dict())
    return results


def fan_in(inp: StepInput, planned: Planned,
           results: Mapping[str, SubagentResult]) -> StepResult:
    """Complete the research step with ``research/subagents.md``, or stop for a human when
    ``research.require_all`` and a subagent failed (its log tail is the evidence)."""
    failed = failed_names(planned.subagents, results)
    if failed and inp.config.research.require_all:
        reasons = "; ".join(
            f"{name}: {one_paragraph(results[name].error or 'failed', limit=200)}"
            for name in failed)
        raise AuthorityFailure(
            f"research subagent(s) {', '.join(failed)} failed and research.require_all is set"
            f" ({reasons}); retry the run to run the failed ones again (completed ones are"
            " kept), or cancel it",
            evidence={"failed": [results[name].to_dict() for name in failed]},
        )
    statuses = {s.name: results[s.name].status.value for s in planned.subagents}
    record = {**planned.record, "subagents": statuses}
    output = dict(record.get("output") or {})
    event = NewEvent(EventType.RESEARCH_COMPLETED, step=inp.run.step, attempt=inp.run.attempt,
                     data={"output": output.get("path"), "sha256": output.get("sha256"),
                           "tree": inp.tree, "subagents": statuses})
    text = render_fan_in(planned.subagents, results)
    return StepResult(Outcome.COMPLETED, record=record, events=(event,),
                      artifacts={FAN_IN: text.encode()})


def readable_artifacts(inp: StepInput, services: StepServices, folder: Path) -> Path | None:
    """The subagents' artifacts as files under ``folder/artifacts`` (run-directory layout),
    for a later agent to read (RATCHET_ARTIFACTS); None when the run has none."""
    target = folder / ARTIFACTS_FOLDER
    shutil.rmtree(target, ignore_errors=True)
    paths = [p for p in services.store.artifacts(inp.run.id) if p.startswith("subagents/")]
    for path in paths:
        parts = PurePosixPath(path).parts
        data = services.store.read_artifact(inp.run.id, path)
        if data is None or ".." in parts:
            continue
        destination = target.joinpath(*parts)
        destination.parent.mkdir(parents=True, exist_ok=True)
        # What later agents read is what people would be shown (runner/neutralise.py).
        destination.write_text(neutralise(data.decode(errors="replace")))
    return target if paths else None


def _budget(inp: StepInput, services: StepServices, *, running: int) -> Allowance:
    """Whether the budget lets another subagent start, for how long, and with how many
    dollars left."""
    events = services.store.events(inp.run.id)
    budget = budget_of(prepared_result(inp.history), events,
                       defaults=services.settings.budget)
    return allowance(budget, events, now=time.time(), timeout=services.agent_timeout,
                     running=running, step=inp.run.step)


def _task(inp: StepInput, services: StepServices, subagent: Subagent, analysis: str, *,
          timeout: float, cost_left: float | None) -> AgentTask:
    """The subagent's agent task, its folder cleared and its prompt written."""
    run = inp.run
    folder = scratch_of(inp) / "subagents" / subagent.name
    out = folder / "out"
    remove(out)  # no stale output passes for this one, however deep
    relative = output_path("subagent", subagent=subagent.name)
    prompt = render_prompt(PromptContext(
        run_id=run.id, phase="subagent", step=run.step, title=run.title, body=run.body,
        output_path=relative, focus=subagent.focus,
        artifacts=((output_path("research"), analysis),) if analysis else (),
        output_file=str(out / relative), note_file=str(out / NOTE_FILE),
    ))
    task = AgentTask(
        run_id=run.id, phase="subagent", step=run.step, worktree=inp.worktree, prompt=prompt,
        prompt_file=folder / "prompt.md", output_dir=out, output=out / relative,
        log_file=folder / f"agent.{run.attempt}.log", timeout=timeout,
        idle_timeout=inp.config.agent.idle_timeout,
        readable=(services.worktrees.repository_objects(inp.worktree),),
        env={"RATCHET_SUBAGENT_NAME": subagent.name, "RATCHET_SUBAGENT_FOCUS": subagent.focus,
             "RATCHET_NOTE": str(out / NOTE_FILE)},
        worktree_writable=False, network_allow=tuple(inp.config.agent.network.allow),
        cost_left=cost_left,
    )
    task.output.parent.mkdir(parents=True, exist_ok=True)
    task.prompt_file.write_text(prompt)
    return task


Settled = tuple[SubagentResult, list[NewEvent], dict[str, bytes]]


def _settle(inp: StepInput, services: StepServices, subagent: Subagent, task: AgentTask,
            future: Future[AgentResult], stop: threading.Event) -> Settled | None:
    """What to record of a subagent that ended: its result, events and artifacts; None for
    one stopped by a cancel or a lost lease (it did not fail: it runs again)."""
    try:
        result = future.result()
    except StepFailure as failure:
        if stop.is_set():
            return None
        return _failed(inp, services, subagent, task, failure)
    try:
        content = read_output(task, limit=services.settings.max_output_bytes)
        if sha256_hex(content) != result.output_sha256:
            raise DeterministicFailure(
                f"{subagent.artifact} changed after the subagent exited; its result is not used")
    except StepFailure as failure:
        failure.usage = failure.usage or result.usage
        return _failed(inp, services, subagent, task, failure)
    artifact = services.settings.redact.bytes(content)
    recorded = SubagentResult(
        subagent.name, SubagentStatus.COMPLETED, artifact=subagent.artifact,
        sha256=sha256_hex(artifact), note=services.settings.redact(_note(task)),
        duration_s=result.duration_s)
    return recorded, _events(inp, services, recorded, "completed", result.usage), {
        subagent.artifact: artifact, **_prompt_artifact(inp, services, subagent, task)}


def _failed(inp: StepInput, services: StepServices, subagent: Subagent, task: AgentTask,
            failure: StepFailure) -> Settled:
    """A failed subagent's record: why, and its log tail as evidence."""
    evidence = failure.evidence or {}
    recorded = SubagentResult(
        subagent.name, SubagentStatus.FAILED, failure_class=failure.failure_class,
        error=services.settings.redact(str(failure)),
        log_tail=services.settings.redact(str(evidence.get("log_tail") or "")),
        duration_s=float(evidence.get("duration_s") or 0.0))
    return (recorded,
            _events(inp, services, recorded, failure.failure_class, failure.usage),
            _prompt_artifact(inp, services, subagent, task))


def _events(inp: StepInput, services: StepServices, result: SubagentResult, outcome: str,
            usage: Mapping[str, object] | None) -> list[NewEvent]:
    """The result's event and, when its agent ran, what it spent (counted once, here)."""
    run = inp.run
    kind = (EventType.SUBAGENT_COMPLETED if result.status is SubagentStatus.COMPLETED
            else EventType.SUBAGENT_FAILED)
    events = [NewEvent(kind, step=run.step, attempt=run.attempt,
                       data={"result": result.to_dict()})]
    if usage is not None:
        events.append(NewEvent(EventType.AGENT_USAGE, step=run.step, attempt=run.attempt,
                               data=usage_event_data(outcome, redacted_usage(services, usage),
                                                     subagent=result.name)))
    return events


def _spent(inp: StepInput, services: StepServices, subagent: Subagent,
           failure: StepFailure) -> list[NewEvent]:
    """What a subagent stopped by its provider spent (no result is recorded for it)."""
    if failure.usage is None:
        return []
    return [NewEvent(EventType.AGENT_USAGE, step=inp.run.step, attempt=inp.run.attempt,
                     data=usage_event_data(failure.failure_class,
                                           redacted_usage(services, failure.usage),
                                           subagent=subagent.name))]


def _prompt_artifact(inp: StepInput, services: StepServices, subagent: Subagent,
                     task: AgentTask) -> dict[str, bytes]:
    return {f"prompts/{inp.run.step}/{subagent.name}.md":
            services.settings.redact(task.prompt).encode()}


def _note(task: AgentTask) -> str:
    """The subagent's note (RATCHET_NOTE) as one paragraph; none when absent or unusable."""
    try:
        raw = read_beneath(task.output_dir, NOTE_FILE, limit=MAX_NOTE_BYTES)
    except UnsafePath as exc:
        if exc.reason != "missing":
            log.warning("run %r step %r: the note of %r is ignored: %s", task.run_id,
                        task.step, task.env.get("RATCHET_SUBAGENT_NAME"), exc)
        return ""
    return one_paragraph(raw.decode("utf-8", errors="replace"))
