"""Comments a run posts on GitHub: one tracking comment edited in place, replies, reactions."""

from __future__ import annotations

import pytest

from github.client import GitHubClient
from github.effects import GitHubExecutor
from github.errors import OutcomeUnknown
from github.words import GitHubWords
from runner.effects import Outbox
from runner.ledger.records import EffectStatus
from runner.render import key_marker, name_marker
from runner.tracking import tracking_edit
from runner.workflow import State
from tests.fakes.conftest import OWNER, REPO
from tests.fakes.fakegithub import faults
from tests.github.harness import (
    BOT,
    DETAILS_URL,
    ISSUE,
    WHEN,
    Scene,
    command_comment,
    reaction,
    reply,
    tracking,
)

COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"


def bot_comments(scene: Scene, issue: int = ISSUE) -> list[str]:
    return [c.body or "" for c in scene.fake.comments(OWNER, REPO, issue) if c.user.login == BOT]


def test_the_tracking_comment_is_posted_once_then_edited_in_place(scene: Scene) -> None:
    edits = [tracking(scene, n) for n in range(1, 12)]  # one post, then ten edits
    for n, edit in enumerate(edits):
        since = scene.mark()
        scene.record(edit)
        scene.flush()
        cost = scene.cost(since)
        # The comment's id comes from the ledger: one call per edit and never a lookup.
        assert cost.lookups == [], cost
        assert [w.split()[0] for w in cost.writes] == ["POST" if n == 0 else "PATCH"], cost

    [body] = bot_comments(scene)
    assert name_marker("run-1/tracking") in body and key_marker(edits[-1].key) in body
    assert key_marker(edits[-2].key) not in body
    assert "Ratchet run `run-1`: research" in body
    assert len(scene.fake.calls(method="PATCH", path_pattern=COMMENT)) == 10
    recorded = {scene.resource(e.key)["comment_id"] for e in edits}
    assert recorded == {scene.fake.comments(OWNER, REPO, ISSUE)[0].id}


def test_the_tracking_comment_links_subagent_artifacts_to_the_dashboard(scene: Scene) -> None:
    run = scene.store.get_run(scene.run_id)
    rows = [{"name": "database", "status": "completed", "artifact": "subagents/database.md"},
            {"name": "cache", "status": "failed", "artifact": None}]
    scene.record(tracking_edit(run, state=State.SPECIFY, step="specify.1", reason=None,
                               completed=["research.1"], spec_sha256=None, at=WHEN,
                               subagents=rows))
    scene.flush()
    [body] = bot_comments(scene)
    assert (f"Subagents: `database` completed ([subagents/database.md]({DETAILS_URL}/artifacts/"
            "subagents/database.md)) · `cache` failed") in body


def test_a_lost_edit_is_read_back_not_sent_again(scene: Scene) -> None:
    scene.record(tracking(scene, 1))
    scene.flush()
    second = tracking(scene, 2)
    scene.fake.inject("PATCH", COMMENT, faults.drop_after_apply())
    scene.record(second)
    since = scene.mark()
    failures = scene.settle()
    cost = scene.cost(since)
    assert len(failures) == 1
    # The edit (its answer lost), then one GET of the comment the ledger knows: no resend.
    assert [w.split()[0] for w in cost.writes] == ["PATCH"] and len(cost.lookups) == 1, cost
    assert cost.lookups[0].startswith("GET /repos/acme/widgets/issues/comments/")
    [body] = bot_comments(scene)
    assert key_marker(second.key) in body
    assert scene.effect(second.key).status is EffectStatus.CONFIRMED


def test_an_edit_that_did_not_land_is_sent_again_after_its_lookup(scene: Scene) -> None:
    scene.record(tracking(scene, 1))
    scene.flush()
    second = tracking(scene, 2)
    scene.fake.inject("PATCH", COMMENT, faults.http_502())
    scene.record(second)
    scene.settle()
    assert key_marker(second.key) in bot_comments(scene)[0]
    assert len(scene.fake.calls(method="GET", path_pattern=COMMENT)) == 1
    assert len(bot_comments(scene)) == 1


def test_a_lookup_ignores_markers_pasted_by_people(scene: Scene) -> None:
    edit = tracking(scene, 1)
    forged = f"{name_marker('run-1/tracking')}\n{key_marker(edit.key)}\nnot Ratchet"
    scene.fake.add_issue_comment(OWNER, REPO, ISSUE, body=forged, author="mallory")
    scene.fake.inject(
        "POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", faults.http_502()
    )
    scene.record(edit)
    scene.settle()
    assert len(bot_comments(scene)) == 1  # the forged marker did not count as the run's comment
    own = scene.fake.comments(OWNER, REPO, ISSUE)[-1]
    assert scene.resource(edit.key)["comment_id"] == own.id


def test_a_deleted_tracking_comment_is_posted_again(scene: Scene) -> None:
    scene.record(tracking(scene, 1))
    scene.flush()
    first = scene.resource(tracking(scene, 1).key)["comment_id"]
    with scene.fake.world.lock:  # someone deletes it (the fake has no DELETE route)
        del scene.fake.world.repo(OWNER, REPO).comments[first]
    scene.record(tracking(scene, 2))
    scene.flush()
    [body] = bot_comments(scene)
    assert key_marker(tracking(scene, 2).key) in body


def test_a_reply_goes_where_the_command_was_typed_and_names_its_author(scene: Scene) -> None:
    pull_issue = scene.fake.create_issue(OWNER, REPO, title="the run's pull request")
    typed = scene.fake.add_issue_comment(
        OWNER, REPO, pull_issue, body="/ratchet approve x", author="mallory"
    )
    request = reply(scene, comment_id=typed, issue=pull_issue)
    scene.record(request)
    scene.flush()
    [body] = bot_comments(scene, pull_issue)
    assert bot_comments(scene) == []
    assert body.startswith(key_marker(request.key))
    assert "@mallory: your command was not applied: mallory has read access" in body
    assert scene.resource(request.key)["issue"] == pull_issue


def test_a_reaction_is_added_once_even_when_sent_twice(scene: Scene) -> None:
    typed = command_comment(scene)
    request = reaction(scene, comment_id=typed)
    executor = scene.executor()
    first, second = executor.apply(request), executor.apply(request)
    assert first == second  # GitHub answers 200 with the existing reaction
    [only] = scene.fake.reactions(OWNER, REPO, typed)
    assert (only.content, only.user.login) == ("eyes", BOT)
    assert executor.find(request) == first


def test_a_reaction_to_a_deleted_comment_is_done_with_nothing_to_show(scene: Scene) -> None:
    request = reaction(scene, comment_id=987654)
    scene.record(request)
    scene.flush()
    resource = scene.effect(request.key).resource
    assert resource == {
        "comment_id": 987654,
        "content": "eyes",
        "absent": "the comment was deleted",
    }


def test_a_plain_token_works_too(scene: Scene, token_client: GitHubClient) -> None:
    """Without an App (an Actions GITHUB_TOKEN), calls and lookups use the token's bot."""
    executor = GitHubExecutor(
        token_client,
        owner=OWNER,
        repo=REPO,
        installation=None,
        issue=ISSUE,
        worktrees=scene.worktrees,
        worktree=None,
        words=GitHubWords(),
        ledger=lambda: scene.store.effects(scene.run_id),
        bot_login="github-actions[bot]",
    )
    edit = tracking(scene, 1)
    scene.record(edit)
    scene.fake.inject(
        "POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments", faults.drop_after_apply()
    )
    outbox = Outbox(scene.store, lambda: scene.lease, executor)
    with pytest.raises(OutcomeUnknown):
        outbox.flush(scene.run_id)
    outbox.flush(scene.run_id)
    [comment] = scene.fake.comments(OWNER, REPO, ISSUE)
    assert comment.user.login == "github-actions[bot]"
    assert scene.resource(edit.key)["comment_id"] == comment.id
