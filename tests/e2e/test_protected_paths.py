"""Protected paths and review before push, end to end through ``ratchet serve``, signed
webhooks and the fake GitHub.

The agent's change also writes ``.github/workflows/ci.yml``: verification passes (after one
repair), but nothing is pushed to the branch nor marked ready; the ``ratchet/verify`` check run
(on the candidate, which waits on the run's review ref) concludes ``action_required`` naming the
path and the diff's hash. A reader's approval, a wrong hash and
the hash of the earlier (failed) candidate's diff are refused; the writer's button on the check
run approves that exact diff and the run publishes. With ``publish.review_before_push`` the
implementation waits on ``refs/ratchet/review/<run>``: nothing agent-written reaches a branch
(where CI would run it with the repository's secrets) until the diff is approved, then it is
pushed once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.e2e.github_app import OWNER, READER, REPO, WRITER, AppScene, scenes
from tests.e2e.harness import CONFIG, Ratchet, make_target_repo
from tests.gitrepo import git

ISSUE = 1
BRANCH = f"ratchet/issue-{ISSUE}"
WORKFLOW = ".github/workflows/ci.yml"
AGENT = {"AGENT_PROTECTED": WORKFLOW}


@pytest.fixture(scope="module")
def app_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


@pytest.fixture
def scene(tmp_path: Path, app_key: bytes) -> Iterator[AppScene]:
    yield from scenes(tmp_path, app_key)


@pytest.fixture
def reviewed(tmp_path: Path, app_key: bytes) -> Iterator[AppScene]:
    yield from scenes(tmp_path, app_key,
                      config=CONFIG + "publish:\n  review_before_push: true\n")


def approve_spec(scene: AppScene) -> int:
    """Label the issue, wait for the spec, approve it as the writer; the pull request."""
    scene.serve(extra=AGENT)
    assert scene.deliver("issues", scene.labeled(ISSUE)).status_code == 202
    [pull] = scene.wait_for("the spec's pull request", lambda: [
        p for p in scene.fake.pulls(OWNER, REPO) if "/ratchet approve " in (p.body or "")])
    prefix = re.search(r"/ratchet approve ([0-9a-f]{12})", pull.body or "")
    assert prefix, pull.body
    scene.command(pull.number, f"/ratchet approve {prefix.group(1)}", author=WRITER)
    return pull.number


def awaiting_diff(scene: AppScene) -> bool:
    """The run waits for its diff's approval, and GitHub shows it (tracking comment, checks)."""
    tracking = scene.tracking_comments(ISSUE)
    return bool((scene.run_state() or {}).get("state") == "awaiting_diff_approval"
                and tracking and "awaiting diff approval" in tracking[0].body
                and any(c.conclusion == "action_required" for c in verify_checks(scene)))


def verify_checks(scene: AppScene) -> list:
    return [c for c in scene.fake.check_runs(OWNER, REPO) if c.name == "ratchet/verify"
            and c.status == "completed"]


def diff_hash(text: str) -> str:
    found = re.search(r"Diff sha256 \(base tree to this tree\): `([0-9a-f]{64})`", text)
    assert found, text
    return found.group(1)


def finished(scene: AppScene, number: int) -> None:
    """Wait until the run is done and GitHub shows it: the pull request is ready (its effects
    are sent after the transition to done is committed)."""
    scene.wait_for("the ready pull request", lambda: (
        (scene.run_state() or {}).get("state") == "done"
        and scene.fake.pull(OWNER, REPO, number).draft is False))


def refs(scene: AppScene) -> dict[str, str]:
    """Every ref of the repository on the git server, by name."""
    bare = scene.root / "git" / OWNER / f"{REPO}.git"
    out = git(bare, "--git-dir", str(bare), "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in out.splitlines())


def updates(scene: AppScene, ref: str) -> int:
    """How often ``ref`` was moved on the server (its reflog)."""
    bare = scene.root / "git" / OWNER / f"{REPO}.git"
    return len(git(bare, "--git-dir", str(bare), "reflog", "show", "--format=%H", ref,
                   "--").split())


def test_a_protected_path_change_is_not_ready_until_a_writer_approves_its_diff(
        scene: AppScene) -> None:
    number = approve_spec(scene)
    spec_head = scene.fake.pull(OWNER, REPO, number).head_sha
    scene.wait_for("the diff's approval request", lambda: awaiting_diff(scene))

    # Verified, but not ready: the check run asks for the diff's approval, naming the path.
    assert scene.fake.pull(OWNER, REPO, number).draft is True
    failed, passed = verify_checks(scene)  # implement's candidate failed, repair's passed
    assert failed.conclusion == "failure" and passed.conclusion == "action_required"
    summary = passed.output_summary or ""
    assert WORKFLOW in summary and "protected" in summary
    current = diff_hash(summary)
    earlier = diff_hash(failed.output_summary or "")
    assert earlier != current
    # Nor pushed: a workflow on a branch would run with the repository's secrets. The
    # candidates wait on the review ref; the pull request's head is still the spec's commit.
    found = refs(scene)
    [review] = [name for name in found if name.startswith("refs/ratchet/review/")]
    assert found[review] == passed.head_sha
    assert found[f"refs/heads/{BRANCH}"] == spec_head == scene.fake.pull(
        OWNER, REPO, number).head_sha
    assert [a["identifier"] for a in passed.actions] == ["approve-diff"]
    [tracking] = scene.tracking_comments(ISSUE)
    assert f"/ratchet approve-diff {current}" in tracking.body

    # Refused, each with one reply: a reader; a wrong hash; a short prefix; the stale diff (by
    # three writers: a writer's second refusal within a minute gets no reply).
    for writer in ("bob", "carol"):
        scene.fake.set_permission(OWNER, REPO, writer, "write")
    for author, text in ((READER, current), (WRITER, "0" * 64), ("bob", current[:8]),
                         ("carol", earlier)):
        before = len(scene.replies(number))
        scene.command(number, f"/ratchet approve-diff {text}", author=author)
        scene.wait_for("the refusal", lambda b=before: len(scene.replies(number)) == b + 1)
        assert awaiting_diff(scene)
    stale = scene.replies(number)[-1].body
    assert current in stale and "not the hash of the diff waiting" in stale
    assert scene.fake.pull(OWNER, REPO, number).draft is True

    # The writer's button on the check run approves exactly that diff: the run publishes.
    assert scene.deliver("check_run", scene.check_run_event(
        passed.id, "requested_action", sender=WRITER,
        identifier="approve-diff")).status_code == 202
    finished(scene, number)
    pull = scene.fake.pull(OWNER, REPO, number)
    assert pull.draft is False and pull.head_sha == passed.head_sha  # the approved commit
    assert updates(scene, f"refs/heads/{BRANCH}") == 2  # the spec's commit, then that one
    # Its check run no longer asks: it says the diff was approved.
    approved = scene.wait_for("the approved check run", lambda: [
        c for c in verify_checks(scene) if c.id == passed.id and c.conclusion == "success"])
    assert current in (approved[0].output_summary or "")
    assert scene.fake.validation_failures == [] and scene.fake.unknown_calls == []


def test_review_before_push_keeps_agent_code_off_every_branch_until_the_diff_is_approved(
        reviewed: AppScene) -> None:
    scene = reviewed
    number = approve_spec(scene)
    spec_head = scene.fake.pull(OWNER, REPO, number).head_sha
    scene.wait_for("the diff's approval request", lambda: awaiting_diff(scene))

    # Nothing agent-written is on a branch: the candidates wait on the run's review ref.
    found = refs(scene)
    assert found[f"refs/heads/{BRANCH}"] == spec_head
    assert updates(scene, f"refs/heads/{BRANCH}") == 1  # the spec commit only
    [review] = [name for name in found if name.startswith("refs/ratchet/review/")]
    candidate = found[review]
    assert git(scene.root / "git" / OWNER / f"{REPO}.git", "--git-dir",
               str(scene.root / "git" / OWNER / f"{REPO}.git"), "merge-base", "--is-ancestor",
               spec_head, candidate) == ""
    [tracking] = scene.tracking_comments(ISSUE)
    current = re.search(r"/ratchet approve-diff ([0-9a-f]{64})", tracking.body)
    assert current, tracking.body
    assert scene.fake.pull(OWNER, REPO, number).draft is True

    scene.command(number, f"/ratchet approve-diff {current.group(1)[:12]}", author=WRITER)
    finished(scene, number)
    # Pushed once, the approved commit itself; the pull request is ready.
    assert refs(scene)[f"refs/heads/{BRANCH}"] == candidate
    assert updates(scene, f"refs/heads/{BRANCH}") == 2
    pull = scene.fake.pull(OWNER, REPO, number)
    assert pull.head_sha == candidate and pull.draft is False


# -- a local run: the same wait, answered on the command line ---------------------------------


def test_a_local_run_with_a_protected_change_waits_for_approve_diff(tmp_path: Path) -> None:
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"),
                      env={"AGENT_PROTECTED": "CLAUDE.md"})
    assert ratchet.create().returncode == 0
    run_id = ratchet.run_id()
    waiting = ratchet.approve(run_id)
    assert waiting.returncode == 0, waiting.stderr
    status = ratchet.status(run_id)
    assert status["state"] == "awaiting_diff_approval"
    assert "CLAUDE.md" in status["reason"]
    current = status["next_action"]["diff_sha256"]
    assert f"ratchet approve-diff {run_id} {current}" in ratchet("status", run_id).stdout
    [check] = [c for c in ratchet.outbox(run_id).check_runs
               if c["name"] == "ratchet/verify" and c["conclusion"] == "action_required"]
    assert "CLAUDE.md" in check["output"]["summary"] and current in check["output"]["summary"]

    wrong = ratchet("approve-diff", run_id, "0" * 64)
    assert wrong.returncode == 2 and current in wrong.stderr
    assert ratchet.status(run_id)["state"] == "awaiting_diff_approval"
    approved = ratchet("approve-diff", run_id, current[:12])
    assert approved.returncode == 0, approved.stderr
    assert ratchet.status(run_id)["state"] == "done"
    assert ratchet.outbox(run_id).pull_requests[-1]["draft"] is False
    # The branch moved twice: the spec's commit, then the approved candidate.
    assert ratchet.branch_pushes(run_id)[-1] == check["head_sha"]
    assert len(ratchet.branch_pushes(run_id)) == 2


def test_a_local_run_reviewed_before_push_moves_its_branch_once_approved(
        tmp_path: Path) -> None:
    repo = make_target_repo(tmp_path / "repo",
                            config=CONFIG + "publish:\n  review_before_push: true\n")
    ratchet = Ratchet(home=tmp_path / "home", repo=repo)
    assert ratchet.create().returncode == 0
    run_id = ratchet.run_id()
    assert ratchet.approve(run_id).returncode == 0
    status = ratchet.status(run_id)
    assert status["state"] == "awaiting_diff_approval"
    spec_only = ratchet.branch_pushes(run_id)
    assert len(spec_only) == 1  # the spec's commit; the candidates wait on the review ref
    candidate = git(repo, "rev-parse", f"refs/ratchet/review/{run_id}").strip()
    assert ratchet("approve-diff", run_id, status["next_action"]["diff_sha256"]).returncode == 0
    assert ratchet.status(run_id)["state"] == "done"
    assert ratchet.branch_pushes(run_id) == [*spec_only, candidate]
