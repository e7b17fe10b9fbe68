"""Check runs: found by ``external_id``, rendered from the payload's data, annotations in
batches of 50, output within limits; an effect recorded rendered by an older Ratchet is sent."""

from __future__ import annotations

import json

from github.checkruns import ANNOTATIONS_PER_REQUEST, TEXT_LIMIT, plan_check_run
from github.words import GitHubWords
from runner.checkruns import VERIFY_CHECK, CheckRunId
from runner.checkruns import verify_check as verify_check_payload
from runner.effects import EffectRequest
from runner.names import EffectKind
from runner.render import key_marker
from tests.fakes.conftest import OWNER, REPO
from tests.fakes.fakegithub import faults
from tests.fakes.fakegithub.state import CheckRun
from tests.github.harness import (
    DETAILS_URL,
    Scene,
    recorded_verify_check,
    spec_check,
    verify_check,
)
from verification.evidence import EvidenceReport, build_bundle
from verification.execute import CheckResult
from verification.plan import Plan, PlannedCheck, PlannedWorkspace

CHECK_RUN = "/repos/{owner}/{repo}/check-runs/{check_run_id}"


def the_run(scene: Scene) -> CheckRun:
    [run] = scene.fake.check_runs(OWNER, REPO, scene.origin.branch_sha)
    return run


def test_annotations_go_fifty_at_a_time_with_the_create_then_patches(scene: Scene) -> None:
    request = verify_check(scene, annotations=120)
    since = scene.mark()
    scene.record(request)
    scene.flush()
    cost = scene.cost(since)
    assert [w.split()[0] for w in cost.writes] == ["POST", "PATCH", "PATCH"] and not cost.lookups
    sent = [
        len(c.body["output"].get("annotations", []))
        for c in scene.fake.calls()[since:]
        if c.method in {"POST", "PATCH"} and c.operation_id in {"checks/create", "checks/update"}
    ]
    assert sent == [50, 50, 20]
    run = the_run(scene)
    assert len(run.annotations) == 120 and run.annotations[0]["annotation_level"] == "failure"
    assert (run.name, run.conclusion, run.status) == ("ratchet/verify", "failure", "completed")
    assert run.external_id == request.payload["external_id"]
    assert run.details_url == DETAILS_URL
    assert key_marker(request.key) in (run.output_text or "")
    assert scene.resource(request.key)["check_run_id"] == run.id


def test_a_lost_batch_is_counted_and_only_the_rest_is_sent(scene: Scene) -> None:
    request = verify_check(scene, annotations=120)
    scene.fake.inject("PATCH", CHECK_RUN, faults.drop_after_apply())  # the second batch
    scene.record(request)
    since = scene.mark()
    failures = scene.settle()
    cost = scene.cost(since)
    assert len(failures) == 1
    # POST, PATCH (answer lost); then one lookup (100 of 120 landed) and the last PATCH.
    assert [w.split()[0] for w in cost.writes] == ["POST", "PATCH", "PATCH"], cost
    assert len(cost.lookups) == 1 and "/check-runs" in cost.lookups[0]
    assert len(the_run(scene).annotations) == 120


def test_summary_and_text_are_cut_to_githubs_limit(scene: Scene) -> None:
    long = "x" * (TEXT_LIMIT + 5000)
    request = recorded_verify_check(scene, summary=long, text=long)
    scene.record(request)
    scene.flush()  # the fake refuses (and the autouse check reports) a body over the limit
    run = the_run(scene)
    assert len(run.output_summary or "") <= TEXT_LIMIT
    assert len(run.output_text or "") <= TEXT_LIMIT
    assert (run.output_text or "").endswith(key_marker(request.key))
    assert "more bytes not shown" in (run.output_summary or "")


def test_the_spec_check_asks_for_approval_with_a_button(scene: Scene) -> None:
    request = spec_check(scene)
    scene.record(request)
    scene.flush()
    run = the_run(scene)
    assert (run.name, run.conclusion) == ("ratchet/spec", "action_required")
    assert run.actions == [
        {
            "identifier": "approve",
            "label": "Approve spec",
            "description": "Approve spec cdcdcdcdcdcd",
        }
    ]
    assert "`/ratchet approve cdcdcdcdcdcd`" in (run.output_summary or "")
    assert run.output_title == "Spec awaiting approval"


def test_an_update_of_a_recorded_check_run_is_one_patch_without_old_annotations(
    scene: Scene,
) -> None:
    first = verify_check(scene, annotations=3)
    scene.record(first)
    scene.flush()
    again = verify_check(scene, annotations=4, step="verify.2", conclusion="failure")
    since = scene.mark()
    scene.record(again)
    scene.flush()
    cost = scene.cost(since)
    assert cost.writes == [f"PATCH /repos/acme/widgets/check-runs/{the_run(scene).id}"]
    assert not cost.lookups
    assert len(the_run(scene).annotations) == 4  # three before, one new: none twice
    assert key_marker(again.key) in (the_run(scene).output_text or "")


def test_the_plan_counts_what_earlier_effects_sent(scene: Scene) -> None:
    first, again = (
        verify_check(scene, annotations=3),
        verify_check(scene, annotations=5, step="verify.2"),
    )
    plan = plan_check_run(again, GitHubWords(), details_url=None, earlier=[first.payload])
    assert (plan.before, len(plan.annotations), plan.total) == (3, 2, 5)
    assert "details_url" not in plan.fields
    assert plan.batches(1) == [plan.annotations[1:]]
    assert plan_check_run(first, GitHubWords(), details_url=None).batches() == [
        plan_check_run(first, GitHubWords(), details_url=None).annotations
    ]


def test_the_evidence_is_rendered_where_github_is(scene: Scene) -> None:
    request = verify_check(scene, annotations=2)
    assert "output" not in request.payload  # data only: no forge wording in the ledger
    scene.record(request)
    scene.flush()
    run = the_run(scene)
    assert run.output_title == "1 of 1 checks did not pass"
    assert "| ❌ failed | `unit` | test | 1.5s | 1 |" in (run.output_summary or "")
    assert "### `unit`: failed (exit 1, 1.5s)" in (run.output_text or "")
    assert "1 failed" in (run.output_text or "")
    assert [a["message"] for a in run.annotations] == ["assertion 0 failed", "assertion 1 failed"]


def test_a_check_run_an_older_ledger_recorded_rendered_is_still_sent(scene: Scene) -> None:
    """Ledgers written before evidence travelled as data hold the output rendered; an unsent
    one is sent as recorded, and a later evidence effect adds only the annotations it lacks."""
    old = recorded_verify_check(scene, annotations=60, text="recorded text")
    scene.record(old)
    scene.flush()
    run = the_run(scene)
    assert (run.output_title, run.output_summary) == (
        "1 of 1 checks did not pass", "1 of 1 checks did not pass")
    assert (run.output_text or "").startswith("recorded text")
    assert len(run.annotations) == 60
    new = verify_check(scene, annotations=62, step="verify.2")
    plan = plan_check_run(new, GitHubWords(), details_url=None, earlier=[old.payload])
    assert (plan.before, len(plan.annotations)) == (60, 2)
    scene.record(new)
    scene.flush()
    assert len(the_run(scene).annotations) == 62


def test_a_ten_megabyte_log_and_500_annotations_fit_a_check_run() -> None:
    """The evidence of one failing check with a huge log: GitHub gets its summary and text
    within 65,535 characters and its 500 annotations 50 to a request."""
    check = PlannedCheck("lint", "pkg", "lint", "ruff check .", 60, None)
    lines = [f"mod{i}.py:{i + 1}:1: F401 `os` imported but unused" for i in range(500)]
    log = "\n".join(lines) + "\n" + "x" * 10_000_000 + "\n" + "`" * 5 + "\n"
    result = CheckResult(check.key, check.id, check.workspace, check.kind, check.command,
                         "failed", 1, 1.5, "0" * 64, len(log.encode()), log)
    bundle = build_bundle(Plan((PlannedWorkspace("pkg", ()),), (check,), 2), [result],
                          diff_stat=" a.py | 2 +-\n")
    head = "a" * 40
    request = EffectRequest("r-1:verify.1:verify-check", "r-1", "verify.1",
                            EffectKind.CHECK_RUN,
                            verify_check_payload("r-1", CheckRunId("r-1", VERIFY_CHECK, head),
                                                 EvidenceReport.from_bundle(bundle)))
    plan = plan_check_run(request, GitHubWords(), details_url=None)
    assert len(plan.output["summary"]) <= TEXT_LIMIT
    assert len(plan.output["text"]) <= TEXT_LIMIT
    assert len(plan.output["text"].encode()) <= TEXT_LIMIT
    assert "bytes not shown" in plan.output["text"]
    batches = plan.batches()
    assert sum(len(batch) for batch in batches) == 500
    assert all(0 < len(batch) <= ANNOTATIONS_PER_REQUEST for batch in batches)
    assert len(batches) == 10
    body = plan.output_with(batches[3])
    assert len(body["annotations"]) == 50
    assert body["annotations"][0]["annotation_level"] == "failure"
    json.dumps(body)  # serializable as an API request body


def test_an_external_id_is_written_and_read_by_one_type() -> None:
    head, spec = "c" * 40, "d" * 64
    verify = CheckRunId("r-1", VERIFY_CHECK, head)
    assert str(verify) == f"r-1:ratchet/verify:{head}"
    assert CheckRunId.parse(str(verify)) == verify
    approve = CheckRunId.for_spec("r-1", head, spec)
    assert str(approve) == f"r-1:ratchet/spec:{head}:{spec[:12]}"
    assert CheckRunId.parse(str(approve)) == approve
    assert CheckRunId.parse("no-run") is None
