"""Research, specify, implement, repair: an agent step under its state's capability profile.

The agent runs in the sandbox on the rebuilt worktree. Afterwards the runner, not the agent,
checks what it did: its output is read safely and must hash as the agent left it; nothing a
step may not leave (a huge file, a symlink out, a FIFO) may stay; a read-only step must leave
the tree as it found it. Specify also opens the spec's review (``runner/steps/review.py``).
Research may fan out to subagents once its agent's result is recorded
(``runner/steps/subagents.py``); a research step taken up again goes straight to them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from plumbing.files import printable_path
from plumbing.walk import remove
from runner.agents.base import AgentResult, AgentTask
from runner.agents.command import read_output
from runner.agents.prompt import (
    FailingCheck,
    FailingTest,
    PromptContext,
    output_path,
    render_prompt,
)
from runner.budget import overspent, stopped_at
from runner.canonical import sha256_hex
from runner.decisions import decide_idle, idle_timeouts
from runner.errors import (
    AgentIdle,
    AgentTimedOut,
    BudgetExhausted,
    DeterministicFailure,
    PolicyViolation,
    StepFailure,
)
from runner.ledger.records import NewEvent
from runner.names import EventType
from runner.neutralise import neutralise, strip_controls
from runner.results import VerifyRecord
from runner.steps.base import (
    StepInput,
    StepResult,
    StepServices,
    artifact_text,
    ensure_tree,
    redacted_usage,
    restore_tree,
    scratch_of,
    write_journal,
)
from runner.steps.review import open_review
from runner.steps.subagents import (
    declared,
    fan_in,
    fan_out,
    plan_limit,
    read_plan,
    readable_artifacts,
    record_plan,
    research_env,
)
from runner.subagents import FAN_IN, Planned, recorded_plan
from runner.usage import usage_event_data
from runner.workflow import PROFILES, Outcome, State

COMPLETED_EVENTS = {
    State.RESEARCH: EventType.RESEARCH_COMPLETED,
    State.SPECIFY: EventType.SPEC_CREATED,
    State.IMPLEMENT: EventType.IMPLEMENTATION_COMPLETED,
    State.REPAIR: EventType.REPAIR_COMPLETED,
}
# What each phase's prompt shows of earlier phases.
_EARLIER_ARTIFACTS = {
    State.RESEARCH: (),
    State.SPECIFY: ("research/repository-analysis.md", FAN_IN),
    State.IMPLEMENT: ("research/repository-analysis.md", "spec.md"),
    State.REPAIR: ("spec.md", "implementation/summary.md"),
}


def run_agent(inp: StepInput, services: StepServices) -> StepResult:
    run, phase, step = inp.run, State(inp.run.state), inp.run.step
    if phase is State.RESEARCH:
        planned = recorded_plan(services.store.events(run.id), step)
        if planned is not None:  # the research agent's result is recorded: fan out the rest
            ensure_tree(services, inp)
            return _with_subagents(inp, services, planned)
    repair_number = inp.step.n if phase is State.REPAIR else None
    output_rel = output_path(phase.value, repair_number)
    folder = scratch_of(inp)
    env: dict[str, str] = {}
    readable = [services.worktrees.repository_objects(inp.worktree)]
    if phase is State.RESEARCH:
        env = research_env(inp.config, folder / "out")
    elif phase is State.SPECIFY and (shared := readable_artifacts(inp, services, folder)):
        env, readable = {"RATCHET_ARTIFACTS": str(shared)}, [*readable, shared]
    output = folder / "out" / output_rel
    prompt = render_prompt(replace(
        _prompt_context(inp, services, phase, output_rel, repair_number,
                        artifacts_readable="RATCHET_ARTIFACTS" in env),
        output_file=str(output), plan_file=env.get("RATCHET_SUBAGENT_PLAN", "")))
    task = AgentTask(
        run_id=run.id, phase=phase.value, step=step, worktree=inp.worktree, prompt=prompt,
        prompt_file=folder / "prompt.md", output_dir=folder / "out",
        output=output, log_file=folder / f"agent.{run.attempt}.log",
        timeout=services.agent_timeout, idle_timeout=inp.config.agent.idle_timeout,
        readable=tuple(readable), env=env, network_allow=tuple(inp.config.agent.network.allow),
        cost_left=services.cost_left,
    )
    result = inp.adopted
    if result is None:
        ensure_tree(services, inp)
        remove(task.output_dir)  # no stale output passes for this one, however deep
        task.output.parent.mkdir(parents=True, exist_ok=True)
        task.prompt_file.write_text(prompt)
        result = _run(task, inp, services)
        write_journal(folder, result)
    services.settings.crash.reached("after_agent_output", step)
    usage = redacted_usage(services, result.usage)
    try:
        concluded = _conclude(inp, services, phase, task, prompt, result, usage)
        plan = read_plan(inp, task) if phase is State.RESEARCH else ()
    except StepFailure as failure:  # the agent ran: what it spent is recorded with the failure
        failure.usage = failure.usage or usage
        raise
    if not plan:
        return concluded
    # Recorded with the plan (its usage too): failures from here on spent nothing of it.
    return _with_subagents(inp, services, record_plan(inp, services, concluded, plan))


def _with_subagents(inp: StepInput, services: StepServices, planned: Planned) -> StepResult:
    """Fan out to the planned subagents, check they left the tree alone, then fan in."""
    results = fan_out(inp, services, planned)
    _enforce_worktree_limits(inp, services, State.RESEARCH)
    _enforce_read_only(inp, services, State.RESEARCH)
    return fan_in(inp, planned, results)


def _run(task: AgentTask, inp: StepInput, services: StepServices) -> AgentResult:
    """Run the agent; a hung agent's failure is decided by how often it hung in this step,
    and one stopped by the budget's time, or failed having spent its dollars, is an authority
    stop, not a failure to retry."""
    try:
        return services.agent().run(task, cancel=services.cancel)
    except DeterministicFailure as failure:
        cost = (failure.usage or {}).get("cost_usd")
        exhaustion = (overspent(services.cost_bound, step=inp.run.step, cost=float(cost))
                      if services.cost_bound is not None and isinstance(cost, int | float)
                      else None)
        if exhaustion is None:
            raise
        # It spent what the budget had left (a CLI given its cap stops there, Claude's
        # --max-budget-usd): the run waits for a raise, as it would before the next step.
        raise BudgetExhausted(
            f"{exhaustion.reason}; the {task.phase} agent stopped having spent what the"
            f" budget had left ({failure})",
            exhaustion=exhaustion.to_dict(), usage=failure.usage) from None
    except AgentIdle as idle:
        earlier = idle_timeouts(services.store.events(inp.run.id), inp.run.step)
        raise decide_idle(idle, earlier=earlier) from None
    except AgentTimedOut as timeout:
        if services.budget_bound is None:
            raise
        seconds = float((timeout.usage or {}).get("agent_seconds") or task.timeout)
        exhaustion = stopped_at(services.budget_bound, step=inp.run.step, seconds=seconds)
        raise BudgetExhausted(
            f"{exhaustion.reason}; the {task.phase} agent was stopped at the budget after"
            f" {seconds:.1f}s",
            exhaustion=exhaustion.to_dict(), usage=timeout.usage,
        ) from None


def _conclude(inp: StepInput, services: StepServices, phase: State, task: AgentTask,
              prompt: str, result: AgentResult, usage: dict[str, Any]) -> StepResult:
    """What the agent left, checked and recorded with what it spent."""
    run, step = inp.run, inp.run.step
    output_rel = task.output.relative_to(task.output_dir).as_posix()
    content = read_output(task, limit=services.settings.max_output_bytes)
    if sha256_hex(content) != result.output_sha256:
        raise DeterministicFailure(
            f"{output_rel} changed after the agent exited (expected sha256"
            f" {result.output_sha256[:12]}); rerun the step"
        )
    _enforce_worktree_limits(inp, services, phase)
    # Agent text is evidence: it is redacted before it is stored, hashed or shown to a reviewer,
    # and its controls go first, so a secret split by an escape sequence is masked whole.
    shown = strip_controls(content.decode(errors="surrogateescape")).encode(
        errors="surrogateescape")
    artifacts = {output_rel: services.settings.redact.bytes(shown),
                 f"prompts/{step}.md": services.settings.redact(prompt).encode()}
    stored_sha = sha256_hex(artifacts[output_rel])
    record: dict[str, Any] = {
        "output": {"path": output_rel, "sha256": stored_sha},
        "exit_code": result.exit_code,
        "duration_s": round(result.duration_s, 3),
        "sandbox": str(services.settings.sandbox.mode),
        "usage": usage,
        # Its log is capped on disk (RATCHET_MAX_LOG_BYTES): what it printed, what was dropped.
        "log": {"bytes": result.log_bytes, "omitted_bytes": result.log_omitted_bytes},
    }
    if result.network_blocked:  # what the egress proxy refused: one sentence each
        record["network_blocked"] = [services.settings.redact(s) for s in result.network_blocked]
    tree, patch_sha = inp.tree, inp.patch_sha
    if PROFILES[phase].modify_worktree:
        snapshot = services.worktrees.snapshot(inp.worktree, inp.base)
        artifacts["implementation/patch.diff"] = snapshot.patch
        tree, patch_sha = snapshot.tree, sha256_hex(snapshot.patch)
    else:
        _enforce_read_only(inp, services, phase)
    record.update(tree=tree, patch=patch_sha)

    events = (NewEvent(COMPLETED_EVENTS[phase], step=step, attempt=run.attempt,
                       data={"output": output_rel, "sha256": stored_sha, "tree": tree}),
              NewEvent(EventType.AGENT_USAGE, step=step, attempt=run.attempt,
                       data=usage_event_data("completed", usage)))
    effects: tuple = ()
    if phase is State.SPECIFY:
        review = open_review(inp, services, spec_text=artifacts[output_rel].decode(
            errors="replace"), spec_sha256=stored_sha)
        record.update(spec_sha256=stored_sha, commit=review.commit)
        effects = review.effects
    return StepResult(Outcome.COMPLETED, record=record, events=events, artifacts=artifacts,
                      effects=effects)


def _prompt_context(
    inp: StepInput, services: StepServices, phase: State, output_rel: str,
    repair_number: int | None, *, artifacts_readable: bool = False,
) -> PromptContext:
    research = phase is State.RESEARCH  # it learns of the subagents that will follow it
    wanted = list(_EARLIER_ARTIFACTS[phase])
    if phase is State.REPAIR:
        wanted += [f"repair/{n}/summary.md" for n in range(1, repair_number or 1)]
    earlier = []
    for path in wanted:
        text = artifact_text(services, inp.run.id, path)
        if text is not None:  # as people are shown it: one text for the reviewer and the agent
            earlier.append((path, neutralise(text)))
    feedback: tuple[str, ...] = ()
    if phase is State.SPECIFY:
        feedback = tuple(
            e.data.get("message", "") for e in services.store.events(inp.run.id)
            if e.type == EventType.CHANGES_REQUESTED
        )
    failing: tuple[FailingCheck, ...] = ()
    if phase is State.REPAIR:
        verify = inp.latest(State.VERIFY.value)
        if verify is not None:
            failing = tuple(
                FailingCheck(**f.model_dump(exclude={"tests"}),
                             tests=tuple(FailingTest(**t.model_dump()) for t in f.tests))
                for f in VerifyRecord.of(verify).failing)
    return PromptContext(
        run_id=inp.run.id, phase=phase.value, step=inp.run.step, title=inp.run.title,
        body=inp.run.body, output_path=output_rel, artifacts=tuple(earlier), feedback=feedback,
        failing_checks=failing, salvage_path=inp.salvage, repair_number=repair_number,
        artifacts_readable=artifacts_readable,
        subagents=tuple((s.name, s.focus) for s in declared(inp.config)) if research else (),
        plan_limit=plan_limit(inp.config) if research else 0,
    )


def _enforce_worktree_limits(inp: StepInput, services: StepServices, phase: State) -> None:
    """No step may leave what git must not read (a nested .git, files in a submodule's
    folder, a FIFO, a tree too deep), a file or a change over the repository's limits, or a
    symlink out of the worktree: checked before git reads the worktree, then removed unread."""
    findings = services.worktrees.inspect(inp.worktree, inp.config.limits)
    if not findings:
        return
    restore_tree(services, inp)
    listed = [{"kind": f.kind, "path": printable_path(f.path), "detail": f.detail}
              for f in findings]
    shown = "; ".join(f"{item['path']}: {item['detail']}" for item in listed[:5])
    raise PolicyViolation(
        f"the {phase.value} agent left what no step may add to the worktree ({shown}); the"
        " worktree was reset to the last checkpoint without reading them. Review the agent"
        " command, then start a new run",
        evidence={"findings": listed},
    )


def _enforce_read_only(inp: StepInput, services: StepServices, phase: State) -> None:
    """A step whose profile forbids product changes must leave the tree as it found it."""
    worktrees = services.worktrees
    if worktrees.tree_of(inp.worktree) == inp.tree:
        return
    changes = worktrees.diff(inp.worktree, inp.tree)
    files = [printable_path(f) for f in worktrees.changed_files(inp.worktree, inp.tree)]
    evidence_path = f"evidence/{inp.run.step}.policy-violation.patch"
    ensure_tree(services, inp)
    raise PolicyViolation(
        f"the {phase.value} agent changed the worktree ({', '.join(files) or 'files'}), which"
        " its capability profile forbids; the changes were saved as"
        f" {evidence_path} and discarded. Review the agent command, then start a new run",
        evidence={"files": files},
        artifacts={evidence_path: changes},
    )
