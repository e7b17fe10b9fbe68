"""Verify: the runner alone plans the checks from the changed files, runs them in the sandbox,
keeps the evidence, and decides the candidate commit and its ``ratchet/verify`` check run.

A change touching protected paths (``runner/protected.py``), or any change of a repository with
``publish.review_before_push``, is not published on passing: its check run asks a writer to
approve the diff by hash (``action_required``), and the run waits. Its candidates go to the
run's review ref, which no workflow triggers on, never to its branch (publish pushes the
approved one there).

Exactly the checkpointed tree is verified, the tree the commit publishes: the worktree is
rebuilt from the checkpoint first (``Worktrees.restore``), which removes everything git does not
record (ignored files, anything in a submodule's folder or a nested repository), so no file a
check could read is missing from the commit. Each finished check is persisted at once, and a
check that passed on the same tree is reused by a rerun.
"""

from __future__ import annotations

from typing import Any

from plumbing.files import printable_path
from runner.canonical import sha256_hex
from runner.checkruns import VERIFY_CHECK, CheckRunId, diff_request, verify_check
from runner.egress import egress
from runner.errors import DeterministicFailure
from runner.ledger.records import NewEvent
from runner.names import EffectKind, EventType
from runner.neutralise import strip_controls
from runner.protected import MIN_DIFF_PREFIX, diff_sha256, protected_paths, review_ref
from runner.results import prepared_result
from runner.steps.base import (
    StepInput,
    StepResult,
    StepServices,
    ensure_tree,
    restore_tree,
)
from runner.steps.review import push_commit, trailers
from runner.workflow import PULL_REQUEST_WORKFLOW, Outcome, State, verify_outcome
from verification.evidence import EvidenceReport, failed_test_name
from verification.execute import CheckResult
from verification.pipeline import Candidate, plan_verification
from verification.plan import Plan, PlannedCheck

STATIC_KINDS = frozenset({"lint", "format", "typecheck"})


def verify(inp: StepInput, services: StepServices) -> StepResult:
    run, step = inp.run, inp.run.step
    tree, config, worktrees = inp.tree, inp.config, services.worktrees
    pull_request = run.workflow == PULL_REQUEST_WORKFLOW
    if pull_request and not services.settings.sandbox.confined:
        # Unconfined, its tests could read the runner's own processes and files: every secret.
        raise DeterministicFailure(
            "a pull request's head is someone else's code and is verified only in the sandbox,"
            " but RATCHET_SANDBOX=none; set RATCHET_SANDBOX=bwrap (docs/operations.md,"
            " 'Sandbox') and re-run its ratchet/verify check"
        )
    restore_tree(services, inp)
    since = (worktrees.merge_base(inp.worktree, inp.diff_base, inp.base) if pull_request
             else inp.base)
    changed = worktrees.changed_files(inp.worktree, since)
    candidate = Candidate(worktrees.git(inp.worktree), since, None, tuple(changed),
                          diff_stat=_diff_stat(changed))
    verification = plan_verification(candidate, config.verify)
    plan = verification.plan
    previous = _passed_results(inp, services)
    persisted = 0

    def persist(result: CheckResult) -> None:
        nonlocal persisted
        services.store.append(
            services.lease(),
            events=[NewEvent(EventType.CHECK_COMPLETED, step=step, attempt=run.attempt,
                             data={"tree": tree, "result": _without_log(result)})],
            artifacts={f"verification/{_log_name(plan, result.key)}.log": result.log.encode()},
        )
        persisted += 1
        if persisted == 1:
            services.settings.crash.reached("mid_verification", step)

    # A run verifies in the sandbox it was configured with: a host without it fails here even
    # when nothing is planned, as the agent steps do.
    services.settings.sandbox.check()
    artifacts = {"verification/plan.json": plan.to_json().encode()}
    policy = (services.settings.network.for_checks(config.verify.network)
              if services.settings.sandbox.confined else None)
    with egress(policy, label=f"run {run.id} step {step}") as proxy:
        bundle = verification.run(
            services.settings.sandbox, readable=(worktrees.repository_objects(inp.worktree),),
            host_env=services.settings.environ, allowed_env=services.settings.check_env,
            on_result=persist, reuse=lambda check: _reusable(previous, check),
            redact=services.settings.redact, max_log_bytes=services.settings.max_log_bytes,
            artifacts={path: sha256_hex(data) for path, data in artifacts.items()},
            network=proxy.endpoint if proxy else None, untrusted=pull_request,
        )
    blocked = [services.settings.redact(sentence) for sentence in proxy.blocked] if proxy else []
    results = list(bundle.results)
    ensure_tree(services, inp)  # checks may leave caches behind; the next step starts clean
    artifacts["verification/result.json"] = bundle.to_json().encode()
    failing = [r for r in results if r.status != "passed"]
    outcome = verify_outcome(passed=bundle.conclusion == "success",
                             repairs_done=inp.count(State.REPAIR.value),
                             max_repairs=config.repair.max_attempts)
    reason = None
    if bundle.conclusion == "neutral":
        # Nothing verifies the change: it is not verified, so it is neither repaired (nothing
        # failed) nor published as verified. A person adds a check or declares the paths.
        outcome = Outcome.NEEDS_HUMAN
        shown = ", ".join(printable_path(p) for p in bundle.plan.unverified[:5])
        reason = (
            f"{bundle.reason} ({shown}); add a check that covers these paths, or list them"
            " under verify.ignore in the repository config, then retry the run"
        )
    elif outcome is Outcome.REPAIRS_EXHAUSTED:
        reason = (
            f"verification still fails after {config.repair.max_attempts} repair attempts"
            f" ({', '.join(r.key for r in failing)}); a human must fix or accept the change"
        )
    diff = None if pull_request else _diff(inp, changed)
    events = _verification_events(step, run.attempt, failing, plan.sha256,
                                  unverified=bundle.conclusion == "neutral")
    if pull_request:
        # The head is someone else's commit: report on it; never push, never repair.
        outcome, reason, commit, effects = Outcome.REPORTED, None, inp.base, ()
    else:
        spec_sha = sha256_hex(services.store.read_artifact(run.id, "spec.md") or b"")
        message = f"{strip_controls(run.title)}\n\n{trailers(inp, spec_sha)}"
        commit, push = push_commit(inp, services, tree=tree, message=message,
                                   ref=diff.get("ref") if diff else None)
        effects = (push,)
    awaiting = diff is not None and outcome is Outcome.CHECKS_PASSED
    if awaiting:
        assert diff is not None
        outcome, reason = Outcome.DIFF_APPROVAL_NEEDED, _approval_reason(diff)
        events = (*events, NewEvent(EventType.DIFF_APPROVAL_REQUESTED, step=step,
                                    attempt=run.attempt, revision=commit, data=diff))
        # Publish pushes this very commit to the branch when it waited on the review ref.
        diff = {**diff, "recipe": push.payload["recipe"]}
    check_id = CheckRunId(run.id, VERIFY_CHECK, commit,
                          diff["sha256"][:MIN_DIFF_PREFIX] if awaiting and diff else "")
    report = EvidenceReport.from_bundle(bundle)
    payload = verify_check(run.id, check_id, report)
    if diff is not None:
        payload = diff_request(payload, diff, awaiting=awaiting)
    check = inp.effect(EffectKind.CHECK_RUN, "verify-check", payload)
    record = {
        "tree": tree, "patch": inp.patch_sha, "commit": commit,
        "sandbox": str(services.settings.sandbox.mode), "plan": plan.sha256,
        "conclusion": bundle.conclusion, "results": [_without_log(r) for r in results],
        **({"network_blocked": blocked} if blocked else {}),
        **({"diff": diff, **({"ref": diff["ref"]} if diff.get("ref") else {})}
           if diff else {}),
        "failing": [
            {"id": r.key, "command": r.command, "status": r.status, "exit_code": r.exit_code,
             "log_tail": r.log_tail(), "tests": _failed_tests(report, r.key)}
            for r in failing
        ],
    }
    return StepResult(
        outcome, record=record, events=events, artifacts=artifacts,
        effects=(*effects, check), reason=reason, head_revision=commit,
    )


def _diff(inp: StepInput, changed: list[str]) -> dict[str, Any] | None:
    """What a person must approve before this change is published, if anything: its hash, the
    protected paths it touches, and the review ref it waits on. A protected change always waits
    there: a workflow pushed to a branch runs, with the repository's secrets, before anyone
    approved it; ``publish.review_before_push`` holds every change so. The config is the
    base's, so a change cannot unprotect itself."""
    publish = inp.config.publish
    paths = protected_paths(changed, publish.protected_paths)
    if not paths and not publish.review_before_push:
        return None
    base_tree = str((prepared_result(inp.history) or {})["tree"])
    return {"sha256": diff_sha256(base_tree, inp.tree), "base_tree": base_tree,
            "tree": inp.tree, "paths": list(paths), "ref": review_ref(inp.run.id)}


def _approval_reason(diff: dict[str, Any]) -> str:
    shown = ", ".join(printable_path(p) for p in diff["paths"][:10])
    why = (f"it touches protected paths ({shown})" if diff["paths"]
           else "publish.review_before_push holds every change for review")
    return f"the diff sha256 {diff['sha256']} waits for a writer's approval: {why}"


def _passed_results(inp: StepInput, services: StepServices) -> dict[str, CheckResult]:
    """Checks already passed on this exact tree in this run: a rerun skips them."""
    found: dict[str, CheckResult] = {}
    for event in services.store.events(inp.run.id):
        if event.type != EventType.CHECK_COMPLETED or event.data.get("tree") != inp.tree:
            continue
        result = event.data["result"]
        if result.get("status") == "passed":
            found[result["key"]] = CheckResult.from_dict({**result, "log": ""})
    return found


def _failed_tests(report: EvidenceReport, key: str) -> list[dict[str, Any]]:
    """The failing tests the evidence names for check ``key``: what a repair is told."""
    shown = next(result for result in report.results if result.key == key)
    return [{"name": failed_test_name(case), "file": case.file, "line": case.line,
             "message": case.message} for case in shown.failed_tests]


def _reusable(passed: dict[str, CheckResult], check: PlannedCheck) -> CheckResult | None:
    """The result ``check`` already passed with on this tree, if it ran the same command."""
    earlier = passed.get(check.key)
    return earlier if earlier is not None and earlier.command == check.command else None


def _without_log(result: CheckResult) -> dict[str, Any]:
    data = result.to_dict()
    data.pop("log", None)
    return data


def _log_name(plan: Plan, key: str) -> str:
    return next(c.log_name for c in plan.checks if c.key == key)


def _diff_stat(changed: list[str]) -> str:
    shown = [printable_path(path) for path in changed]
    return "\n".join(shown) + (f"\n{len(shown)} files changed" if shown else "")


def _verification_events(
    step: str, attempt: int, failing: list[CheckResult], plan_sha: str, *, unverified: bool
) -> tuple[NewEvent, ...]:
    if unverified:
        return (NewEvent(EventType.VERIFICATION_UNVERIFIED, step=step, attempt=attempt,
                         data={"plan": plan_sha}),)
    if not failing:
        return (NewEvent(EventType.VERIFICATION_PASSED, step=step, attempt=attempt,
                         data={"plan": plan_sha}),)
    groups = (
        (EventType.STATIC_CHECK_FAILED, [r.key for r in failing if r.kind in STATIC_KINDS]),
        (EventType.TESTS_FAILED, [r.key for r in failing if r.kind == "test"]),
        (EventType.CHECKS_FAILED, [r.key for r in failing
                                   if r.kind not in STATIC_KINDS and r.kind != "test"]),
    )
    return tuple(NewEvent(event_type, step=step, attempt=attempt,
                          data={"checks": keys, "plan": plan_sha})
                 for event_type, keys in groups if keys)
