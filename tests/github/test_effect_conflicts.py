"""A replayed decision reuses its key; a changed one under the same key is refused, unsent."""

from __future__ import annotations

from dataclasses import replace

import pytest

from runner.errors import EffectConflict
from runner.ledger.records import EffectStatus
from tests.fakes.conftest import OWNER, REPO
from tests.github.harness import Scene, pull_request, tracking


def test_a_key_decided_again_with_another_payload_is_refused_and_nothing_is_sent(
    scene: Scene,
) -> None:
    decided = pull_request(scene, draft=True)
    scene.record(decided)
    changed = replace(decided, payload={**decided.payload, "title": "Something else"})
    before = scene.mark()
    with pytest.raises(EffectConflict, match="refused"):
        scene.record(changed)
    scene.flush()  # sends the decision that was recorded, once
    scene.flush()
    calls = scene.fake.calls()[before:]
    assert [
        c.method for c in calls if c.operation_id != "apps/create-installation-access-token"
    ] == ["POST"]
    [pull] = scene.fake.pulls(OWNER, REPO)
    assert pull.title == "Widgets wobble"

    after = scene.mark()
    with pytest.raises(EffectConflict):
        scene.record(changed)  # after confirmation too
    scene.flush()
    assert scene.fake.calls()[after:] == []


def test_the_same_decision_replayed_is_recorded_once_and_sent_once(scene: Scene) -> None:
    edit = tracking(scene, 1)
    scene.record(edit)
    scene.record(edit)
    scene.flush()
    scene.record(edit)  # replayed after it was confirmed: nothing new to send
    scene.flush()
    assert [e.status for e in scene.store.effects(scene.run_id)] == [EffectStatus.CONFIRMED]
    assert len(scene.fake.comments(OWNER, REPO, 1)) == 1
    assert (
        len(
            scene.fake.calls(
                method="POST", path_pattern="/repos/{owner}/{repo}/issues/{issue_number}/comments"
            )
        )
        == 1
    )
