"""What each runnable state's step does. The engine owns leases, commits and failure policy.

A step reads the run's context, does its work (an agent, verification, effects) and returns a
``StepResult``: the outcome the workflow table maps, events, artifacts and the checkpoint's
result. It raises a ``StepFailure`` subclass when it did not complete.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.agents.base import Agent, AgentResult, AgentTask
from runner.agents.command import MAX_OUTPUT_BYTES, read_output
from runner.agents.prompt import FailingCheck, PromptContext, output_path, render_prompt
from runner.canonical import sha256_hex
from runner.effects import EffectRequest, Effects, effect_key
from runner.errors import (
    AuthorityFailure,
    CorruptArtifact,
    DeterministicFailure,
    PolicyViolation,
)
from runner.faults import CrashPoints
from runner.ledger.records import Checkpoint, Lease, NewEvent, Run
from runner.ledger.store import Store
from runner.redact import NO_REDACTION, Redactor
from runner.sandbox import Sandbox
from runner.workflow import PROFILES, Outcome, State, verify_outcome
from runner.workspace import PushRejected, Workspaces
from verification.config import ConfigError, RepositoryConfig, load_repository_config
from verification.evidence import EvidenceBundle, build_bundle, render_check_run
from verification.execute import CheckResult, execute_plan
from verification.files import printable_path
from verification.plan import Plan, PlannedCheck, build_plan
from verification.tree import GitTree

log = logging.getLogger(__name__)

STATIC_KINDS = frozenset({"lint", "format", "typecheck"})
COMPLETED_EVENTS = {
    State.QUEUED: "WORKSPACE_PREPARED",
    State.RESEARCH: "RESEARCH_COMPLETED",
    State.SPECIFY: "SPEC_CREATED",
    State.IMPLEMENT: "IMPLEMENTATION_COMPLETED",
    State.REPAIR: "REPAIR_COMPLETED",
    State.PUBLISH: "PUBLISHED",
}
STARTED_EVENTS = {
    State.RESEARCH: "RESEARCH_STARTED",
    State.SPECIFY: "SPEC_STARTED",
    State.IMPLEMENT: "IMPLEMENTATION_STARTED",
    State.VERIFY: "VERIFICATION_STARTED",
    State.REPAIR: "REPAIR_STARTED",
    State.PUBLISH: "PUBLISH_STARTED",
}
JOURNAL = "result.json"  # the agent's exit, written by the runner once the agent has exited


@dataclass
class StepResult:
    outcome: Outcome
    data: dict[str, Any] = field(default_factory=dict)  # the checkpoint's result
    events: list[NewEvent] = field(default_factory=list)
    artifacts: dict[str, bytes] = field(default_factory=dict)
    reason: str | None = None
    head_revision: str | None = None


@dataclass
class StepContext:
    """Everything a step may use; built by the engine for one lease session."""

    run: Run
    store: Store
    workspaces: Workspaces
    effects: Effects
    lease: Callable[[], Lease]  # the current (renewed) lease
    cancel: threading.Event  # set when the lease is lost
    worktree: Path
    scratch: Path  # this lease epoch's scratch folder for the run
    history: list[Checkpoint]
    tree: str | None  # the checkpointed worktree tree hash (None before preparation)
    patch_sha: str | None  # artifact of the checkpointed patch against the base
    agent: Callable[[], Agent]
    agent_timeout: float
    crash: CrashPoints
    outbox_remote: str  # where publish pushes (the target repository)
    redact: Redactor = NO_REDACTION
    child_env: Mapping[str, str] | None = None  # environment for checks (no Ratchet settings)
    sandbox: Sandbox = field(default_factory=Sandbox)  # where agents and checks run
    max_output_bytes: int = MAX_OUTPUT_BYTES
    adopted: dict[str, AgentResult] = field(default_factory=dict)
    salvage: dict[str, str] = field(default_factory=dict)  # step -> salvage artifact path

    @property
    def sandbox_mode(self) -> str:
        return str(self.sandbox.mode)

    @property
    def base(self) -> str:
        assert self.run.base_revision, "run has no base revision"
        return self.run.base_revision

    def config(self) -> RepositoryConfig:
        """The repository config read at the base revision by the preparation step.

        Read from the base, never from the agent's tree: an agent cannot weaken its checks.
        """
        for checkpoint in self.history:
            if "config" in checkpoint.result:
                return RepositoryConfig.model_validate(checkpoint.result["config"])
        return RepositoryConfig()

    def latest(self, phase: State) -> Checkpoint | None:
        for checkpoint in reversed(self.history):
            if checkpoint.step.split(".")[0] == phase.value:
                return checkpoint
        return None

    def count(self, phase: State) -> int:
        return sum(1 for c in self.history if c.step.split(".")[0] == phase.value)

    def artifact_text(self, path: str) -> str | None:
        data = self.store.read_artifact(self.run.id, path)
        return None if data is None else data.decode(errors="replace")

    def ensure_tree(self) -> None:
        """Put the worktree back at the checkpointed tree if anything drifted (e.g. caches)."""
        assert self.tree is not None
        if self.workspaces.tree_of(self.worktree) != self.tree:
            self.restore_tree()

    def restore_tree(self) -> None:
        """Rebuild the worktree at the checkpointed tree, ignored files removed too."""
        assert self.tree is not None
        patch = read_patch(self.store, self.run.id, self.patch_sha)
        self.workspaces.restore(self.worktree, self.base, patch, self.tree)


def read_patch(store: Store, run_id: str, patch_sha: str | None) -> bytes:
    """The checkpointed patch by its hash; a corrupt one names the run and what it is."""
    if not patch_sha:
        return b""
    try:
        return store.get_artifact(patch_sha)
    except CorruptArtifact as exc:
        raise exc.about(run_id, "implementation/patch.diff") from None


def prepare(ctx: StepContext) -> StepResult:
    """Queued: read the repository config at the base and record the base tree."""
    try:
        config = load_repository_config(ctx.worktree)
    except ConfigError as exc:
        raise DeterministicFailure(
            f"repository config is invalid: {exc}; fix it on the base branch and start a new run"
        ) from exc
    tree = ctx.workspaces.tree_of(ctx.worktree)
    ctx.tree = tree
    return StepResult(
        Outcome.COMPLETED,
        data={"config": config.model_dump(mode="json"), "tree": tree, "base": ctx.base},
        events=[NewEvent(COMPLETED_EVENTS[State.QUEUED], step=ctx.run.step,
                         revision=ctx.base, data={"tree": tree})],
    )


def run_agent(ctx: StepContext) -> StepResult:
    """Research, specify, implement, repair: an agent step under its capability profile."""
    run, phase, step = ctx.run, State(ctx.run.state), ctx.run.step
    repair_number = int(step.split(".")[1]) if phase is State.REPAIR else None
    output_rel = output_path(phase.value, repair_number)
    folder = ctx.scratch / step
    prompt = render_prompt(_prompt_context(ctx, phase, output_rel, repair_number))
    task = AgentTask(
        run_id=run.id, phase=phase.value, step=step, worktree=ctx.worktree, prompt=prompt,
        prompt_file=folder / "prompt.md", output_dir=folder / "out",
        output=folder / "out" / output_rel, log_file=folder / f"agent.{run.attempt}.log",
        timeout=ctx.agent_timeout,
        readable=(ctx.workspaces.repository_objects(ctx.worktree),),
    )

    result = ctx.adopted.get(step)
    if result is None:
        ctx.ensure_tree()
        shutil.rmtree(task.output_dir, ignore_errors=True)  # no stale output passes for this one
        task.output.parent.mkdir(parents=True, exist_ok=True)
        task.prompt_file.write_text(prompt)
        result = ctx.agent().run(task, cancel=ctx.cancel)
        write_journal(folder, result)
    ctx.crash.reached("after_agent_output", step)

    content = read_output(task, limit=ctx.max_output_bytes)
    if sha256_hex(content) != result.output_sha256:
        raise DeterministicFailure(
            f"{output_rel} changed after the agent exited (expected sha256"
            f" {result.output_sha256[:12]}); rerun the step"
        )
    _enforce_worktree_limits(ctx, phase)
    # Agent text is evidence: it is redacted before it is stored, hashed or shown to a reviewer.
    artifacts = {output_rel: ctx.redact.bytes(content),
                 f"prompts/{step}.md": ctx.redact(prompt).encode()}
    data: dict[str, Any] = {
        "output": {"path": output_rel, "sha256": sha256_hex(artifacts[output_rel])},
        "exit_code": result.exit_code,
        "duration_s": round(result.duration_s, 3),
        "sandbox": ctx.sandbox_mode,
    }
    assert ctx.tree is not None
    if PROFILES[phase].modify_worktree:
        snapshot = ctx.workspaces.snapshot(ctx.worktree, ctx.base)
        artifacts["implementation/patch.diff"] = snapshot.patch
        ctx.tree, ctx.patch_sha = snapshot.tree, sha256_hex(snapshot.patch)
        data.update(tree=snapshot.tree, patch=ctx.patch_sha)
    else:
        _enforce_read_only(ctx, phase)
        data.update(tree=ctx.tree, patch=ctx.patch_sha)

    stored_sha = data["output"]["sha256"]
    events = [NewEvent(COMPLETED_EVENTS[phase], step=step, attempt=run.attempt,
                       data={"output": output_rel, "sha256": stored_sha, "tree": ctx.tree})]
    if phase is State.SPECIFY:
        _post_spec_for_review(ctx, stored_sha)
    return StepResult(Outcome.COMPLETED, data=data, events=events, artifacts=artifacts)


def write_journal(folder: Path, result: AgentResult) -> None:
    """Record the agent's exit durably, so a crash before the checkpoint does not rerun it."""
    tmp = folder / f".{JOURNAL}.tmp"
    with open(tmp, "w") as fh:
        json.dump({"exit_code": result.exit_code, "duration_s": result.duration_s,
                   "output_sha256": result.output_sha256, "log_tail": result.log_tail}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / JOURNAL)


def read_journal(folder: Path) -> AgentResult | None:
    try:
        data = json.loads((folder / JOURNAL).read_text())
        return AgentResult(data["exit_code"], data["duration_s"], data["output_sha256"],
                           data["log_tail"])
    except (OSError, ValueError, KeyError):
        return None


def _prompt_context(
    ctx: StepContext, phase: State, output_rel: str, repair_number: int | None
) -> PromptContext:
    earlier: list[tuple[str, str]] = []
    wanted = {
        State.RESEARCH: [],
        State.SPECIFY: ["research/repository-analysis.md"],
        State.IMPLEMENT: ["research/repository-analysis.md", "spec.md"],
        State.REPAIR: ["spec.md", "implementation/summary.md"]
        + [f"repair/{n}/summary.md" for n in range(1, repair_number or 1)],
    }[phase]
    for path in wanted:
        text = ctx.artifact_text(path)
        if text is not None:
            earlier.append((path, text))
    feedback: tuple[str, ...] = ()
    if phase is State.SPECIFY:
        feedback = tuple(
            e.data.get("message", "") for e in ctx.store.events(ctx.run.id)
            if e.type == "CHANGES_REQUESTED"
        )
    failing: tuple[FailingCheck, ...] = ()
    if phase is State.REPAIR:
        verify = ctx.latest(State.VERIFY)
        failing = tuple(FailingCheck(**f) for f in (verify.result["failing"] if verify else []))
    return PromptContext(
        run_id=ctx.run.id, phase=phase.value, step=ctx.run.step, title=ctx.run.title,
        body=ctx.run.body, output_path=output_rel, artifacts=tuple(earlier), feedback=feedback,
        failing_checks=failing, salvage_path=ctx.salvage.get(ctx.run.step),
        repair_number=repair_number,
    )


def _enforce_worktree_limits(ctx: StepContext, phase: State) -> None:
    """No step may leave a file over the size limit, a symlink out of the worktree, or a
    special file: checked before anything hashes the worktree, then discarded unread."""
    limit = ctx.config().limits.max_file_bytes
    findings = ctx.workspaces.inspect(ctx.worktree, max_file_bytes=limit)
    if not findings:
        return
    assert ctx.tree is not None
    ctx.restore_tree()
    listed = [{"kind": f.kind, "path": printable_path(f.path), "detail": f.detail}
              for f in findings]
    shown = "; ".join(f"{item['path']}: {item['detail']}" for item in listed[:5])
    raise PolicyViolation(
        f"the {phase.value} agent left what no step may add to the worktree ({shown}); the"
        " worktree was reset to the last checkpoint without reading them. Review the agent"
        " command, then start a new run",
        evidence={"findings": listed},
    )


def _enforce_read_only(ctx: StepContext, phase: State) -> None:
    """A step whose profile forbids product changes must leave the tree as it found it."""
    assert ctx.tree is not None
    if ctx.workspaces.tree_of(ctx.worktree) == ctx.tree:
        return
    changes = ctx.workspaces.diff(ctx.worktree, ctx.tree)
    files = [printable_path(f) for f in ctx.workspaces.changed_files(ctx.worktree, ctx.tree)]
    evidence_path = f"evidence/{ctx.run.step}.policy-violation.patch"
    ctx.ensure_tree()
    raise PolicyViolation(
        f"the {phase.value} agent changed the worktree ({', '.join(files) or 'files'}), which"
        f" its capability profile forbids; the changes were saved as {evidence_path} and"
        " discarded. Review the agent command, then start a new run",
        evidence={"files": files},
        artifacts={evidence_path: changes},
    )


def _post_spec_for_review(ctx: StepContext, spec_sha: str) -> None:
    body = (
        f"Ratchet run `{ctx.run.id}` wrote a specification (`spec.md`, sha256 `{spec_sha}`).\n\n"
        f"Approve it with `/ratchet approve {spec_sha[:12]}` (or locally: `ratchet approve-spec"
        f" {ctx.run.id} --hash {spec_sha[:12]}`), or request changes with"
        f" `ratchet request-changes {ctx.run.id} --message ...`."
    )
    _perform(ctx, "spec-ready", "comment", {"body": body, "spec_sha256": spec_sha})


def verify(ctx: StepContext) -> StepResult:
    """The runner alone: plan from the changed files, run the checks, keep the evidence."""
    run, step = ctx.run, ctx.run.step
    assert ctx.tree is not None
    tree = ctx.tree
    # Verify exactly the checkpointed tree: nothing an agent left in ignored folders
    # (a planted .venv, node_modules, caches) may take part.
    ctx.restore_tree()
    config = ctx.config()
    changed = ctx.workspaces.changed_files(ctx.worktree, ctx.base)
    plan = build_plan(changed, GitTree(ctx.workspaces.git(ctx.worktree)), config.verify)
    objects = ctx.workspaces.repository_objects(ctx.worktree)

    def confine(argv: Sequence[str], *, cwd: Path, writable: Sequence[Path]) -> list[str]:
        return ctx.sandbox.command(argv, cwd=cwd, writable=writable, readable=(objects,),
                                   network=config.verify.network)

    previous = _passed_results(ctx, tree)
    persisted = 0

    def reuse(check: PlannedCheck) -> CheckResult | None:
        return previous.get(check.key)

    def persist(result: CheckResult) -> None:
        nonlocal persisted
        check_log = f"verification/{_log_name(plan, result.key)}.log"
        ctx.store.append(
            ctx.lease(),
            events=[NewEvent("CHECK_COMPLETED", step=step, attempt=run.attempt,
                             data={"tree": tree, "result": _without_log(result)})],
            artifacts={check_log: result.log.encode()},
        )
        persisted += 1
        if persisted == 1:
            ctx.crash.reached("mid_verification", step)

    ctx.sandbox.check()
    results = execute_plan(plan, ctx.worktree, on_result=persist, reuse=reuse,
                           redact=ctx.redact, env=ctx.child_env, confine=confine)
    ctx.ensure_tree()  # checks may leave caches behind; the next step starts clean
    artifacts = {"verification/plan.json": plan.to_json().encode()}
    bundle = build_bundle(plan, results, diff_stat=_diff_stat(changed), artifacts={
        path: sha256_hex(data) for path, data in artifacts.items()
    })
    artifacts["verification/result.json"] = bundle.to_json().encode()
    artifacts["verification/check-run.json"] = _check_run_json(bundle)
    passed = bundle.conclusion == "success"
    failing = [r for r in results if r.status != "passed"]
    outcome = verify_outcome(passed=passed, repairs_done=ctx.count(State.REPAIR),
                             max_repairs=config.repair.max_attempts)
    events = _verification_events(step, run.attempt, failing, plan.sha256)
    reason = None
    if outcome is Outcome.REPAIRS_EXHAUSTED:
        reason = (
            f"verification still fails after {config.repair.max_attempts} repair attempts"
            f" ({', '.join(r.key for r in failing)}); a human must fix or accept the change"
        )
    data = {
        "tree": tree,
        "patch": ctx.patch_sha,
        "sandbox": ctx.sandbox_mode,
        "plan": plan.sha256,
        "conclusion": bundle.conclusion,
        "results": [_without_log(r) for r in results],
        "failing": [
            {"id": r.key, "command": r.command, "status": r.status, "exit_code": r.exit_code,
             "log_tail": r.log_tail()}
            for r in failing
        ],
    }
    return StepResult(outcome, data=data, events=events, artifacts=artifacts, reason=reason)


def publish(ctx: StepContext) -> StepResult:
    """The runner alone: a deterministic commit, push, pull request, check run, comment."""
    run, step = ctx.run, ctx.run.step
    assert ctx.tree is not None
    spec_sha = sha256_hex(ctx.store.read_artifact(run.id, "spec.md") or b"")
    verify_cp = ctx.latest(State.VERIFY)
    message = f"{run.title}\n\nRatchet-Run: {run.id}\nRatchet-Spec: {spec_sha}\n"
    commit = ctx.workspaces.commit(
        ctx.worktree, tree=ctx.tree, parent=ctx.base, message=message,
        when=datetime.fromtimestamp(run.created_at, tz=UTC),
    )
    branch = str(run.params.get("branch") or f"ratchet/{run.id}")
    try:
        _perform(ctx, "push", "push",
                 {"remote": ctx.outbox_remote, "branch": branch, "commit": commit, "expect": None})
    except PushRejected as exc:
        raise AuthorityFailure(
            f"branch {branch} already exists with other commits: {exc}; delete or rename it,"
            " then resume the run"
        ) from exc
    summary = ctx.artifact_text("implementation/summary.md") or ""
    _perform(ctx, "pull-request", "pull_request", {
        "title": run.title, "head": branch, "base": ctx.base,
        "body": f"{summary}\n\nSpec sha256: `{spec_sha}`\nRun: `{run.id}`",
    })
    if verify_cp is not None:
        output = json.loads(ctx.artifact_text("verification/check-run.json") or "{}")
        _perform(ctx, "check-run", "check_run", {
            "name": "ratchet/verify", "head_sha": commit, "external_id": f"{run.id}:verify",
            "conclusion": verify_cp.result["conclusion"], "output": output,
        })
    _perform(ctx, "published", "comment", {
        "body": f"Ratchet run `{run.id}` published `{branch}` at `{commit}`.",
    })
    return StepResult(
        Outcome.COMPLETED,
        data={"tree": ctx.tree, "patch": ctx.patch_sha, "commit": commit, "branch": branch},
        events=[NewEvent(COMPLETED_EVENTS[State.PUBLISH], step=step, attempt=run.attempt,
                         revision=commit, data={"branch": branch})],
        head_revision=commit,
    )


def _perform(ctx: StepContext, name: str, kind: str, payload: Mapping[str, Any]) -> None:
    phase = State(ctx.run.state)
    if kind not in PROFILES[phase].effects:
        raise AuthorityFailure(
            f"a {phase.value} step may not perform a {kind} effect (profile allows"
            f" {sorted(PROFILES[phase].effects) or 'none'})"
        )
    key = effect_key(ctx.run.id, ctx.run.step, name)
    safe = {k: ctx.redact(v) if isinstance(v, str) else v for k, v in payload.items()}
    ctx.effects.perform(EffectRequest(key, ctx.run.id, ctx.run.step, kind, safe))


def _passed_results(ctx: StepContext, tree: str) -> dict[str, CheckResult]:
    """Checks already passed on this exact tree in this run: a rerun skips them."""
    found: dict[str, CheckResult] = {}
    for event in ctx.store.events(ctx.run.id):
        if event.type != "CHECK_COMPLETED" or event.data.get("tree") != tree:
            continue
        result = event.data["result"]
        if result.get("status") == "passed":
            found[result["key"]] = CheckResult.from_dict({**result, "log": ""})
    return found


def _without_log(result: CheckResult) -> dict[str, Any]:
    data = result.to_dict()
    data.pop("log", None)
    return data


def _log_name(plan: Plan, key: str) -> str:
    for check in plan.checks:
        if check.key == key:
            return check.log_name
    return key.replace("/", "-").replace(":", "-")


def _diff_stat(changed: list[str]) -> str:
    shown = [printable_path(path) for path in changed]
    return "\n".join(shown) + (f"\n{len(shown)} files changed" if shown else "")


def _verification_events(
    step: str, attempt: int, failing: list[CheckResult], plan_sha: str
) -> list[NewEvent]:
    if not failing:
        return [NewEvent("VERIFICATION_PASSED", step=step, attempt=attempt,
                         data={"plan": plan_sha})]
    events = []
    static = [r.key for r in failing if r.kind in STATIC_KINDS]
    tests = [r.key for r in failing if r.kind == "test"]
    other = [r.key for r in failing if r.kind not in STATIC_KINDS and r.kind != "test"]
    for event_type, keys in (("STATIC_CHECK_FAILED", static), ("TESTS_FAILED", tests),
                             ("CHECKS_FAILED", other)):
        if keys:
            events.append(NewEvent(event_type, step=step, attempt=attempt,
                                   data={"checks": keys, "plan": plan_sha}))
    return events


def _check_run_json(bundle: EvidenceBundle) -> bytes:
    """The check run's output as rendered at verification, kept for the publish step."""
    rendered = render_check_run(bundle)
    return json.dumps({
        "title": rendered.title, "summary": rendered.summary, "text": rendered.text,
        "annotation_batches": [[asdict(a) for a in batch]
                               for batch in rendered.annotation_batches],
    }, sort_keys=True).encode()


STEPS: dict[State, Callable[[StepContext], StepResult]] = {
    State.QUEUED: prepare,
    State.RESEARCH: run_agent,
    State.SPECIFY: run_agent,
    State.IMPLEMENT: run_agent,
    State.REPAIR: run_agent,
    State.VERIFY: verify,
    State.PUBLISH: publish,
}
