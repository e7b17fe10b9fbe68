"""Publish: the runner alone marks the verified pull request ready for review.

The verified head is already on the run's branch (pushed after verification, with its check
run); publishing decides the pull request's final form: ready, its body rewritten as finished
work (``runner/render.py``'s ``render_published``): the summary of the agent step whose tree
passed (the last repair's when a repair passed, not the first implementation's), the
verification with its check run, the approved spec by hash, and the run's issue to close. The
payload is data read from the ledger alone, so a retried step decides the same effect.

A verification that asked a person to approve its diff (``runner/protected.py``) is published
only with that approval, and only for that diff: the hash approved must be the hash of the tree
published, so an approval never carries over to a later change. The head, which waited on the
review ref, is pushed to the run's branch here, once, and its check run says it was approved.
"""

from __future__ import annotations

from typing import Any

from runner.agents.prompt import output_path
from runner.canonical import sha256_hex
from runner.checkruns import VERIFY_CHECK
from runner.effects import EffectRequest, effect_key
from runner.errors import PolicyViolation
from runner.ledger.records import Checkpoint, NewEvent
from runner.names import EffectKind, EventType, StepId
from runner.protected import diff_sha256
from runner.results import (
    VerifyRecord,
    approved_diff,
    branch_head,
    diff_to_approve,
    pushed_head,
)
from runner.steps.base import StepInput, StepResult, StepServices, artifact_text
from runner.steps.review import pull_request_payload
from runner.workflow import Outcome, State


def publish(inp: StepInput, services: StepServices) -> StepResult:
    run = inp.run
    history = list(inp.history)
    spec = artifact_text(services, run.id, "spec.md") or ""
    head = branch_head(history)
    effects = []
    diff = diff_to_approve(history)
    if diff is not None:
        approved = approved_diff(history)
        published = diff_sha256(diff.base_tree, inp.tree)
        if approved != published:
            raise PolicyViolation(
                f"the diff to publish ({published}) is not the one a writer approved"
                f" ({approved or 'none'}); verify the run again and approve its diff with"
                " approve-diff")
        effects.extend(_approved_check(inp, services, history))
        if diff.ref is not None and diff.recipe is not None:
            effects.append(inp.effect(EffectKind.PUSH, "push", {
                "remote": inp.remote, "branch": inp.branch, "commit": head,
                "expect": pushed_head(history, None), "recipe": diff.recipe,
                "fetch": diff.ref,
            }))
    effects.append(inp.effect(EffectKind.PULL_REQUEST, "pull-request",
                              _published(inp, services, history, spec)))
    return StepResult(
        Outcome.COMPLETED,
        record={"tree": inp.tree, "patch": inp.patch_sha, "commit": head, "branch": inp.branch},
        events=(NewEvent(EventType.PUBLISHED, step=run.step, attempt=run.attempt, revision=head,
                         data={"branch": inp.branch}),),
        effects=tuple(effects),
        head_revision=head,
    )


def _published(inp: StepInput, services: StepServices, history: list[Checkpoint],
               spec: str) -> dict[str, Any]:
    """The ready pull request's payload: the draft's fields, the passing summary, the
    verification that passed and the issue it closes."""
    payload = pull_request_payload(inp, spec_text=spec, spec_sha256=sha256_hex(spec.encode()),
                                   draft=False, summary=_passing_summary(inp, services))
    approval = next((c for c in reversed(history) if c.result.get("approved")), None)
    if approval is not None and approval.result.get("by"):
        payload["spec"]["by"] = str(approval.result["by"])
    verify = next(c for c in reversed(history) if StepId.parse(c.step).state == "verify")
    record = VerifyRecord.of(verify)
    check = services.store.get_effect(effect_key(inp.run.id, verify.step, "verify-check"))
    payload["verification"] = {
        "conclusion": record.conclusion, "plan": record.plan, "head": record.commit,
        "repairs": inp.count(State.REPAIR.value),
        "checks": [{"id": r.get("key"), "status": r.get("status")} for r in record.results],
        "check_name": VERIFY_CHECK,
        "check_run": check.payload.get("external_id") if check is not None else None,
    }
    if inp.run.issue is not None:
        payload["issue"] = inp.run.issue
    return payload


def _passing_summary(inp: StepInput, services: StepServices) -> str | None:
    """The summary of the agent step whose tree the last verification passed: the latest
    implement or repair step's."""
    for checkpoint in reversed(inp.history):
        step = StepId.parse(checkpoint.step)
        if step.state in {State.IMPLEMENT.value, State.REPAIR.value}:
            number = step.n if step.state == State.REPAIR.value else None
            return artifact_text(services, inp.run.id, output_path(step.state, number))
    return None


def _approved_check(inp: StepInput, services: StepServices,
                    history: list[Checkpoint]) -> tuple[EffectRequest, ...]:
    """The verification's check run, which asked for the diff's approval, updated to say it
    was approved (``success``), so the published head does not keep "action required"."""
    verify = next(c.step for c in reversed(history) if StepId.parse(c.step).state == "verify")
    asked = services.store.get_effect(effect_key(inp.run.id, verify, "verify-check"))
    if asked is None or asked.payload.get("conclusion") != "action_required":
        return ()
    approved = {k: v for k, v in asked.payload.items() if k != "actions"}
    return (inp.effect(EffectKind.CHECK_RUN, "verify-check", {
        **approved, "conclusion": "success", "diff": {**approved["diff"], "approved": True}}),)
