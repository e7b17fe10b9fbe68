"""Check runs: found by ``external_id``, annotations in batches of 50, output within limits."""

from __future__ import annotations

from github.checkruns import TEXT_LIMIT, plan_check_run
from github.words import GitHubWords
from runner.render import key_marker
from tests.fakes.conftest import OWNER, REPO
from tests.fakes.fakegithub import faults
from tests.fakes.fakegithub.state import CheckRun
from tests.github.harness import DETAILS_URL, Scene, spec_check, verify_check

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
    request = verify_check(scene, summary=long, text=long)
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
