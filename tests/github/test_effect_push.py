"""The run's branch: fast-forwards only, from the head the run decided; never forced."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from github.effects import GitHubExecutor
from github.words import GitHubWords
from runner.effects import EffectExecutor, EffectRequest, Outbox
from runner.errors import (
    AmbiguousFailure,
    AuthorityFailure,
    StepFailure,
    TransientFailure,
)
from runner.ledger.records import EffectStatus
from runner.sink import LocalSink
from tests.fakes.conftest import OWNER, REPO
from tests.github.harness import (
    BOT,
    INSTALLATION,
    ISSUE,
    FlakyWorktrees,
    Scene,
    push,
)
from tests.gitrepo import git

RUN_BRANCH = "ratchet/run-1"


def test_a_push_creates_the_branch_then_fast_forwards_it(scene: Scene) -> None:
    first, commit = push(scene, branch=RUN_BRANCH, expect=None)
    scene.record(first)
    since = scene.mark()
    scene.flush()
    assert scene.remote_head(RUN_BRANCH) == commit
    assert scene.effect(first.key).resource == {"branch": RUN_BRANCH, "commit": commit}
    assert scene.cost(since).calls == 0  # git alone: the token is its only API call
    second, newer = push(
        scene, branch=RUN_BRANCH, expect=commit, step="verify.1", message="Widgets wobble\n"
    )
    scene.record(second)
    scene.flush()
    assert scene.remote_head(RUN_BRANCH) == newer
    assert scene.worktrees.pushes == 2


def test_a_branch_someone_else_moved_is_never_forced(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    request, _ = push(scene, branch=RUN_BRANCH, expect=None)
    theirs = scene.origin.push_commit(RUN_BRANCH, {"theirs.txt": "mine\n"})  # someone pushes
    scene.record(request)
    with pytest.raises(AuthorityFailure) as refused:
        scene.flush()
    assert scene.remote_head(RUN_BRANCH) == theirs  # their commit is kept
    assert refused.value.evidence == {"branch": RUN_BRANCH, "expected": None, "actual": theirs}
    assert "never forces" in str(refused.value)
    assert scene.effect(request.key).status is EffectStatus.INTENDED  # a person decides
    for token in scene.tokens():
        assert token not in str(refused.value) and token not in caplog.text


def test_a_moved_branch_is_refused_on_a_fast_forward_too(scene: Scene) -> None:
    first, commit = push(scene, branch=RUN_BRANCH, expect=None)
    scene.record(first)
    scene.flush()
    # Someone fetches the run's branch and pushes a commit on top of it.
    git(
        scene.origin.work,
        "fetch",
        "--quiet",
        scene.origin.bare.as_uri(),
        f"refs/heads/{RUN_BRANCH}:refs/heads/{RUN_BRANCH}",
    )
    theirs = scene.origin.push_commit(RUN_BRANCH, {"theirs.txt": "mine\n"})
    second, _ = push(scene, branch=RUN_BRANCH, expect=commit, step="verify.1", message="next\n")
    scene.record(second)
    with pytest.raises(AuthorityFailure) as refused:
        scene.flush()
    assert refused.value.evidence["expected"] == commit
    assert scene.remote_head(RUN_BRANCH) == theirs


def test_a_protected_branch_is_an_authority_decision(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    hook = scene.origin.bare / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'protected branch hook declined' >&2\nexit 1\n")
    hook.chmod(0o755)
    request, _ = push(scene, branch=RUN_BRANCH, expect=None)
    scene.record(request)
    with pytest.raises(AuthorityFailure) as refused:
        scene.flush()
    assert "branch rule or hook protects it" in str(refused.value)
    assert scene.remote_head(RUN_BRANCH) is None
    for token in scene.tokens():
        assert token not in str(refused.value) and token not in repr(refused.value.evidence)
        assert token not in caplog.text


def test_a_commit_decided_on_another_host_is_rebuilt_from_its_recipe(
    scene: Scene, tmp_path: Path
) -> None:
    # Another host, whose mirror of the repository predates the run's first push...
    elsewhere = FlakyWorktrees(tmp_path / "host-2")
    worktree = elsewhere.checkout("run-1", 2, scene.origin.bare.as_uri(), scene.origin.main_sha)
    first, commit = push(scene, branch=RUN_BRANCH, expect=None)
    scene.record(first)
    scene.flush()
    second, newer = push(scene, branch=RUN_BRANCH, expect=commit, step="verify.1", message="next\n")
    scene.record(second)
    # ...takes the run over and sends the second push: it has neither commit.
    assert not elsewhere.has_commit(worktree, commit)
    executor = GitHubExecutor(
        scene.client,
        owner=OWNER,
        repo=REPO,
        installation=INSTALLATION,
        issue=ISSUE,
        worktrees=elsewhere,
        worktree=worktree,
        words=GitHubWords(),
        ledger=lambda: scene.store.effects(scene.run_id),
        bot_login=BOT,
    )
    Outbox(scene.store, lambda: scene.lease, executor).flush(scene.run_id)
    assert scene.remote_head(RUN_BRANCH) == newer
    assert scene.effect(second.key).resource == {"branch": RUN_BRANCH, "commit": newer}


def _protected(scene: Scene) -> EffectRequest:
    hook = scene.origin.bare / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'protected branch hook declined' >&2\nexit 1\n")
    hook.chmod(0o755)
    return push(scene, branch=RUN_BRANCH, expect=None)[0]


def _moved(scene: Scene) -> EffectRequest:
    request, _ = push(scene, branch=RUN_BRANCH, expect=None)
    scene.origin.push_commit(RUN_BRANCH, {"theirs.txt": "mine\n"})
    return request


def _answer_lost(scene: Scene) -> EffectRequest:
    scene.worktrees.drop_pushes = 1
    return push(scene, branch=RUN_BRANCH, expect=None)[0]


def _parent_unreachable(scene: Scene) -> EffectRequest:
    request, _ = push(scene, branch=RUN_BRANCH, expect=None)
    recipe = {**request.payload["recipe"], "parent": "0" * 40}  # on no host, on no branch
    return dataclasses.replace(request, payload={**request.payload, "recipe": recipe})


@pytest.mark.parametrize("forge", ["github", "local"])
@pytest.mark.parametrize(
    ("failure", "expected", "says"),
    [
        (_protected, AuthorityFailure, "branch rule or hook protects it"),
        (_moved, AuthorityFailure, "never forces"),
        (_answer_lost, AmbiguousFailure, "may or may not have moved"),
        (_parent_unreachable, TransientFailure, "could not fetch"),
    ],
    ids=["protected", "moved", "answer-lost", "parent-unreachable"],
)
def test_a_local_push_fails_as_the_github_push_does(
    scene: Scene,
    tmp_path: Path,
    forge: str,
    failure: Callable[[Scene], EffectRequest],
    expected: type[StepFailure],
    says: str,
) -> None:
    request = failure(scene)
    executor: EffectExecutor = (
        scene.executor()
        if forge == "github"
        else LocalSink(tmp_path / "outbox", scene.worktrees, scene.worktree, GitHubWords())
    )
    with pytest.raises(StepFailure) as failed:
        executor.apply(request)
    assert type(failed.value) is expected
    assert says in str(failed.value)
