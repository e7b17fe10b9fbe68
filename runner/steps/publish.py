"""Publish: the runner alone marks the verified pull request ready for review.

The verified head is already on the run's branch (pushed after verification, with its check
run); publishing decides the pull request's final form: ready, with the implementation's
summary under the spec.
"""

from __future__ import annotations

from runner.canonical import sha256_hex
from runner.ledger.records import NewEvent
from runner.names import EffectKind, EventType
from runner.results import branch_head
from runner.steps.base import StepInput, StepResult, StepServices, artifact_text
from runner.steps.review import pull_request_payload
from runner.workflow import Outcome


def publish(inp: StepInput, services: StepServices) -> StepResult:
    run = inp.run
    spec = artifact_text(services, run.id, "spec.md") or ""
    head = branch_head(list(inp.history))
    summary = artifact_text(services, run.id, "implementation/summary.md")
    ready = inp.effect(EffectKind.PULL_REQUEST, "pull-request", pull_request_payload(
        inp, spec_text=spec, spec_sha256=sha256_hex(spec.encode()), draft=False,
        summary=summary))
    return StepResult(
        Outcome.COMPLETED,
        record={"tree": inp.tree, "patch": inp.patch_sha, "commit": head, "branch": inp.branch},
        events=(NewEvent(EventType.PUBLISHED, step=run.step, attempt=run.attempt, revision=head,
                         data={"branch": inp.branch}),),
        effects=(ready,),
        head_revision=head,
    )
