"""Publish: the runner alone marks the verified pull request ready for review.

The verified head is already on the run's branch (pushed after verification, with its check
run); publishing decides the pull request's final form: ready, with the implementation's
summary under the spec.

A verification that asked a person to approve its diff (``runner/protected.py``) is published
only with that approval, and only for that diff: the hash approved must be the hash of the tree
published, so an approval never carries over to a later change. The head, which waited on the
review ref, is pushed to the run's branch here, once, and its check run says it was approved.
"""

from __future__ import annotations

from runner.canonical import sha256_hex
from runner.effects import EffectRequest, effect_key
from runner.errors import PolicyViolation
from runner.ledger.records import Checkpoint, NewEvent
from runner.names import EffectKind, EventType, StepId
from runner.protected import diff_sha256
from runner.results import approved_diff, branch_head, diff_to_approve, pushed_head
from runner.steps.base import StepInput, StepResult, StepServices, artifact_text
from runner.steps.review import pull_request_payload
from runner.workflow import Outcome


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
    summary = artifact_text(services, run.id, "implementation/summary.md")
    effects.append(inp.effect(EffectKind.PULL_REQUEST, "pull-request", pull_request_payload(
        inp, spec_text=spec, spec_sha256=sha256_hex(spec.encode()), draft=False,
        summary=summary)))
    return StepResult(
        Outcome.COMPLETED,
        record={"tree": inp.tree, "patch": inp.patch_sha, "commit": head, "branch": inp.branch},
        events=(NewEvent(EventType.PUBLISHED, step=run.step, attempt=run.attempt, revision=head,
                         data={"branch": inp.branch}),),
        effects=tuple(effects),
        head_revision=head,
    )


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
