"""The run's pull request: created as a draft, updated in place, made ready through GraphQL."""

from __future__ import annotations

from runner.render import key_marker
from tests.fakes.conftest import BRANCH, OWNER, REPO
from tests.fakes.fakegithub import faults
from tests.fakes.fakegithub.state import PullRequest
from tests.github.harness import Scene, published_pull_request, pull_request, verify_check

GRAPHQL = "/graphql"
PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"


def the_pull(scene: Scene) -> PullRequest:
    [pull] = [p for p in scene.fake.pulls(OWNER, REPO) if p.head_ref == BRANCH]
    return pull


def test_draft_then_updated_then_ready_costs_one_two_and_three_calls(scene: Scene) -> None:
    draft = pull_request(scene, draft=True)
    since = scene.mark()
    scene.record(draft)
    scene.flush()
    assert scene.cost(since).writes == ["POST /repos/acme/widgets/pulls"]
    assert scene.cost(since).lookups == []
    pull = the_pull(scene)
    assert pull.draft and pull.base_ref == "main" and pull.title == "Widgets wobble"
    assert "`/ratchet approve abababababab`" in (pull.body or "")
    assert "`/ratchet request-changes <feedback>`" in (pull.body or "")
    resource = scene.resource(draft.key)
    assert resource == {
        "number": pull.number,
        "node_id": pull.node_id,
        "draft": True,
        "url": f"https://github.com/acme/widgets/pull/{pull.number}",
    }

    revised = pull_request(scene, draft=True, step="specify.2", spec="# Spec\n\nRevised.\n")
    since = scene.mark()
    scene.record(revised)
    scene.flush()
    assert scene.cost(since).writes == [f"PATCH /repos/acme/widgets/pulls/{pull.number}"]
    assert scene.cost(since).lookups == []
    assert "Revised." in (the_pull(scene).body or "") and the_pull(scene).draft

    ready = pull_request(scene, draft=False, step="publish.1", summary="Steadied the widgets.")
    since = scene.mark()
    scene.record(ready)
    scene.flush()
    cost = scene.cost(since)
    assert cost.writes == [f"PATCH /repos/acme/widgets/pulls/{pull.number}", "POST /graphql"]
    assert cost.lookups == []
    final = the_pull(scene)
    assert not final.draft and "Steadied the widgets." in (final.body or "")
    assert scene.resource(ready.key)["draft"] is False
    assert len(scene.fake.pulls(OWNER, REPO)) == 1


def test_a_pull_request_already_ready_is_not_marked_again(scene: Scene) -> None:
    scene.record(pull_request(scene, draft=False, step="publish.1"))
    scene.flush()
    assert not the_pull(scene).draft
    scene.record(pull_request(scene, draft=False, step="publish.2"))
    scene.flush()
    assert scene.fake.calls(path_pattern=GRAPHQL) == []


def test_a_lost_ready_answer_is_read_back(scene: Scene) -> None:
    scene.record(pull_request(scene, draft=True))
    scene.flush()
    ready = pull_request(scene, draft=False, step="publish.1")
    scene.fake.inject("POST", GRAPHQL, faults.drop_after_apply())
    scene.record(ready)
    since = scene.mark()
    failures = scene.settle()
    cost = scene.cost(since)
    assert len(failures) == 1
    # PATCH, GraphQL (answer lost); then one lookup by head shows it ready: nothing resent.
    assert len(cost.writes) == 2 and len(cost.lookups) == 1, cost
    assert not the_pull(scene).draft


def test_a_lost_edit_before_ready_resends_only_what_is_missing(scene: Scene) -> None:
    scene.record(pull_request(scene, draft=True))
    scene.flush()
    ready = pull_request(scene, draft=False, step="publish.1")
    scene.fake.inject("PATCH", PULL, faults.drop_after_apply())
    scene.record(ready)
    since = scene.mark()
    scene.settle()
    cost = scene.cost(since)
    # The PATCH landed (its answer lost); the lookup sees this edit's marker, still a draft:
    # only the GraphQL mutation is sent.
    assert [w.split()[0] for w in cost.writes] == ["PATCH", "POST"], cost
    assert cost.writes[1] == "POST /graphql" and len(cost.lookups) == 1
    assert not the_pull(scene).draft and key_marker(ready.key) in (the_pull(scene).body or "")


def test_a_pull_request_opened_by_hand_on_the_branch_is_adopted(scene: Scene) -> None:
    number = scene.fake.create_pull(
        OWNER, REPO, head=BRANCH, base="main", title="by hand", draft=True
    )
    request = pull_request(scene, draft=True)
    scene.record(request)
    scene.flush()
    assert scene.resource(request.key)["number"] == number
    assert the_pull(scene).title == "Widgets wobble"


def test_publishing_rewrites_the_body_as_finished_work_once(scene: Scene) -> None:
    scene.record(pull_request(scene, draft=True))
    scene.flush()
    check = verify_check(scene, step="verify.2", conclusion="success")
    scene.record(check)
    scene.flush()
    check_url = scene.resource(check.key)["url"]
    published = published_pull_request(scene, check)
    scene.fake.inject("PATCH", PULL, faults.drop_after_apply())  # the edit's answer is lost
    scene.record(published)
    since = scene.mark()
    scene.settle()

    body = the_pull(scene).body or ""
    assert "Fixed the sign in widgets.wobble." in body  # the summary of the step that passed
    assert f"1 of 1 checks passed on `{check.payload['head_sha'][:12]}`, after 1 repair:" \
           f" [ratchet/verify]({check_url})" in body
    assert f"Spec sha256: `{'ab' * 32}`, approved by `alice`:" \
           " [`spec.md`](https://ratchet.example/runs/run-1/artifacts/spec.md)" in body
    assert "Make widgets steady." in body.split("<details><summary>spec.md</summary>")[1]
    assert body.rstrip().endswith("Closes #1")
    assert "/ratchet " not in body  # nothing left to do: no approve or request-changes command
    cost = scene.cost(since)
    # One edit: its answer lost, the lookup finds its marker and only marks it ready.
    assert cost.writes == [f"PATCH /repos/acme/widgets/pulls/{the_pull(scene).number}",
                           "POST /graphql"], cost
    assert not the_pull(scene).draft

    # The step retried after a crash decides the same effect: the ledger has it, nothing is sent.
    since = scene.mark()
    scene.record(published_pull_request(scene, check))
    scene.flush()
    assert scene.cost(since).calls == 0
    assert len(scene.fake.pulls(OWNER, REPO)) == 1
