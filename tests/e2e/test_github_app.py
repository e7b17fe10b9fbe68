"""The GitHub App end to end: signed webhooks against ``ratchet serve``, the fake GitHub.

A maintainer labels issue #1; Ratchet posts one tracking comment, opens a draft pull request
with the spec and a ``ratchet/spec`` check run; a writer approves with a comment; the agent
implements a bug, verification fails, the agent repairs it, verification passes; the pull
request is marked ready and each verified head carries one ``ratchet/verify`` check run. The
second test takes the same path through lost acknowledgements on every mutating endpoint, a
worker SIGKILLed during implement, refused commands and a request for changes, and must leave
the same things on GitHub, each once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.e2e.github_app import (
    BOT,
    MUTATIONS,
    OWNER,
    PUBLIC_URL,
    READER,
    REPO,
    WRITER,
    AppScene,
    github_state,
    scenes,
)
from tests.fakes.fakegithub import faults
from tests.gitrepo import git

ISSUE = 1
BRANCH = f"ratchet/issue-{ISSUE}"
# GitHub API calls the whole happy path may cost (the issue's target).
API_BUDGET = 25
PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"


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
def brokered(tmp_path: Path, app_key: bytes, redis_url: str) -> Iterator[AppScene]:
    yield from scenes(tmp_path, app_key, broker_url=redis_url)


def spec_prefix(scene: AppScene) -> str:
    """The approve command's hash, as the draft pull request's body shows it."""
    [pull] = scene.fake.pulls(OWNER, REPO)
    found = re.search(r"/ratchet approve ([0-9a-f]{12})", pull.body or "")
    assert found, pull.body
    return found.group(1)


def waiting_for_approval(scene: AppScene, *, spec: int = 1) -> bool:
    """The draft pull request is open and ``spec`` ratchet/spec check runs ask for approval."""
    pulls = scene.fake.pulls(OWNER, REPO)
    specs = [c for c in scene.fake.check_runs(OWNER, REPO) if c.name == "ratchet/spec"]
    tracking = scene.tracking_comments(ISSUE)
    return bool(pulls and len(specs) == spec and tracking
                and "awaiting approval" in tracking[0].body)


def finished(scene: AppScene) -> bool:
    pulls = scene.fake.pulls(OWNER, REPO)
    tracking = scene.tracking_comments(ISSUE)
    return bool(pulls and not pulls[0].draft and tracking and ": done" in tracking[0].body)


def assert_verified_once(scene: AppScene, *, spec_heads: int = 1, pr_replies: int = 0) -> None:
    """What the run leaves on GitHub: one tracking comment saying done, one pull request
    (ready), one check run per name and head, a branch that only fast-forwarded."""
    [tracking] = scene.tracking_comments(ISSUE)
    assert ": done" in tracking.body and "<!-- ratchet:name=" in tracking.body
    [pull] = scene.fake.pulls(OWNER, REPO)
    assert pull.head_ref == BRANCH and pull.base_ref == "main"
    assert pull.draft is False and pull.state == "open" and pull.user.login == BOT
    assert "Spec sha256" in (pull.body or "")
    assert len(scene.replies(pull.number)) == pr_replies
    # From the issue to the evidence: the tracking comment links the pull request and checks.
    assert f"[pull request #{pull.number}](" in tracking.body
    assert "[ratchet/verify](" in tracking.body
    checks = scene.fake.check_runs(OWNER, REPO)
    per_head = Counter((c.name, c.head_sha) for c in checks)
    assert set(per_head.values()) == {1}, per_head
    assert all(c.app.id == 4242 and c.status == "completed" for c in checks)
    verify = [c for c in checks if c.name == "ratchet/verify"]
    assert [c.conclusion for c in verify] == ["failure", "success"]  # implement, then repair
    assert len([c for c in checks if c.name == "ratchet/spec"]) == spec_heads
    final = verify[-1]
    assert final.head_sha == pull.head_sha
    assert final.output_summary and "unit" in final.output_summary
    assert final.details_url and final.details_url.startswith(f"{PUBLIC_URL}/runs/")
    run_id = final.details_url.rsplit("/", 1)[1]
    # One check run per head: its id names the head; the effect that wrote it, in a marker.
    assert final.external_id == f"{run_id}:ratchet/verify:{final.head_sha}"
    assert f"ratchet:key={run_id}:verify." in (final.output_text or "")
    # The branch: the spec commit(s), then each verified candidate, each on the one before.
    bare = scene.root / "git" / OWNER / f"{REPO}.git"
    log = git(bare, "--git-dir", str(bare), "rev-list", "--first-parent", BRANCH).split()
    main = git(bare, "--git-dir", str(bare), "rev-parse", "main").strip()
    heads = log[: log.index(main)]
    assert len(heads) == spec_heads + 2
    assert {c.head_sha for c in checks} <= set(heads)


def assert_published_as_finished_work(scene: AppScene) -> None:
    """The ready pull request's body, written once at publish: the repair's summary (the
    implementation's failed), the passing verification with a link to its check run, the
    approved spec by hash, the issue it closes; no command left to type."""
    [pull] = scene.fake.pulls(OWNER, REPO)
    body = pull.body or ""
    passed = max((c for c in scene.fake.check_runs(OWNER, REPO, pull.head_sha)
                  if c.name == "ratchet/verify"), key=lambda c: c.id)
    assert "Fixed the sign in calc.add." in body and "Implemented calc.add." not in body
    assert (f"1 of 1 checks passed on `{pull.head_sha[:12]}`, after 1 repair:"
            f" [ratchet/verify](https://github.com/{OWNER}/{REPO}/runs/{passed.id})") in body
    spec = max((c for c in scene.fake.check_runs(OWNER, REPO) if c.name == "ratchet/spec"),
               key=lambda c: c.id)  # the newest ratchet/spec names the approved spec
    found = re.search(r"Spec sha256: `([0-9a-f]{64})`, approved by `alice`", body)
    assert found and spec.external_id.endswith(found.group(1)[:12]), body
    assert f"{PUBLIC_URL}/runs/" in body and "/artifacts/spec.md)" in body
    assert body.rstrip().endswith(f"Closes #{ISSUE}")
    assert "/ratchet approve" not in body and "/ratchet request-changes" not in body
    edits = [c for c in scene.fake.calls(method="PATCH") if c.template == PULL and c.actor == BOT
             and ":publish." in str((c.body or {}).get("body"))]
    assert len(edits) == 1, edits  # once, whatever was retried or resumed


def agent_steps(scene: AppScene) -> Counter[str]:
    log = scene.shared / "agent.log"
    return Counter(step.split(".")[0] for step in log.read_text().split()) if log.exists() \
        else Counter()


def test_a_labeled_issue_becomes_a_verified_pull_request(scene: AppScene) -> None:
    scene.serve()
    labeled = scene.labeled(ISSUE)

    # The same delivery five times, then a second label event: one run.
    answers = [scene.deliver("issues", labeled, delivery="label-1").status_code
               for _ in range(5)]
    assert answers == [202, 200, 200, 200, 200]
    assert scene.deliver("issues", scene.labeled(ISSUE)).status_code == 200
    scene.wait_for("the spec's review", lambda: waiting_for_approval(scene))
    run = scene.run_state()
    assert run is not None and run["state"] == "awaiting_approval"

    # What the App itself did comes back as webhooks: none of it triggers anything.
    [tracking] = scene.tracking_comments(ISSUE)
    # The tracking comment names the spec waiting for approval and the command that approves it.
    assert f"/ratchet approve {spec_prefix(scene)}" in tracking.body
    assert scene.deliver("issue_comment", scene.comment(tracking.id)).status_code == 200
    assert scene.deliver("issue_comment",
                         scene.comment(tracking.id, action="edited")).status_code == 200
    [spec_check] = scene.fake.check_runs(OWNER, REPO)
    assert scene.deliver("check_run", scene.check_run_event(
        spec_check.id, "created", sender=BOT)).status_code == 200

    [pull] = scene.fake.pulls(OWNER, REPO)
    comment_id, answer = scene.command(pull.number, f"/ratchet approve {spec_prefix(scene)}",
                                       author=WRITER)
    assert answer.status_code == 202
    scene.wait_for("the verified pull request", lambda: finished(scene))

    assert_verified_once(scene)
    assert_published_as_finished_work(scene)
    # The first implementation's failing test, named in its check run and the repair's prompt.
    failed = min((c for c in scene.fake.check_runs(OWNER, REPO) if c.name == "ratchet/verify"),
                 key=lambda c: c.id)
    named = "`test_calc.AddTest.test_add` at `test_calc.py:8`"
    assert failed.conclusion == "failure" and named in (failed.output_text or "")
    prompt = scene.exported(scene.run_state()["run_id"]) / "prompts" / "repair.1.md"
    assert "- `test_calc.AddTest.test_add` at `test_calc.py:8`" in prompt.read_text()
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, comment_id)] == ["eyes"]
    assert agent_steps(scene) == {"research": 1, "specify": 1, "implement": 1, "repair": 1}
    assert scene.run_state()["state"] == "done"
    assert scene.fake.validation_failures == [] and scene.fake.unknown_calls == []

    calls = scene.ratchet_calls()
    by_operation = Counter(c.operation_id for c in calls)
    print(f"\nGitHub API calls for the happy path: {len(calls)} (target <= {API_BUDGET})")
    for operation, count in sorted(by_operation.items()):
        print(f"  {count:3d}  {operation}")
    assert len(calls) <= API_BUDGET, by_operation
    # Lookups happen only after an ambiguous outcome, and none was injected here.
    lookups = {"issues/list-comments", "pulls/list", "checks/list-for-ref",
               "reactions/list-for-issue-comment", "git/get-ref"}
    assert not lookups & set(by_operation), by_operation

    # Re-running the verified head's check verifies it again, in a new check run.
    ours = scene.fake.pull(OWNER, REPO, pull.number).head_sha
    [success] = [c for c in scene.fake.check_runs(OWNER, REPO, ours)
                 if c.name == "ratchet/verify"]
    assert scene.deliver("check_run", scene.check_run_event(
        success.id, "rerequested", sender=WRITER)).status_code == 202
    rerun = scene.wait_for("the re-run", lambda: [
        c for c in scene.fake.check_runs(OWNER, REPO, ours)
        if c.name == "ratchet/verify" and c.id != success.id and c.status == "completed"])
    assert [c.conclusion for c in rerun] == ["success"]

    # A person pushes to the run's branch: their head is verified and reported, never forced.
    theirs = scene.push_as_person(BRANCH, {"calc.py": "def add(a, b):\n    return 0\n"},
                                  author=WRITER)
    assert scene.deliver("pull_request", scene.pull_request_event(
        pull.number, "synchronize", sender=WRITER)).status_code == 202
    [verdict] = scene.wait_for("their head's check", lambda: [
        c for c in scene.fake.check_runs(OWNER, REPO, theirs) if c.status == "completed"])
    assert verdict.name == "ratchet/verify" and verdict.conclusion == "failure"
    assert scene.fake.pull(OWNER, REPO, pull.number).head_sha == theirs  # not forced over

    assert len(scene.tracking_comments(ISSUE)) == 1 and len(scene.fake.pulls(OWNER, REPO)) == 1


def test_lost_acknowledgements_a_killed_worker_and_refused_commands_change_nothing(
        brokered: AppScene) -> None:
    scene = brokered
    for method, path in MUTATIONS:  # every mutating endpoint loses its first answer
        scene.fake.inject(method, path, faults.drop_after_apply())
    block = scene.shared / "release-implement"
    scene.serve()
    worker = scene.worker(extra={"AGENT_BLOCK_FILE": str(block)})
    assert scene.deliver("issues", scene.labeled(ISSUE)).status_code == 202
    scene.wait_for("the spec's review", lambda: waiting_for_approval(scene))
    [pull] = scene.fake.pulls(OWNER, REPO)
    first = spec_prefix(scene)

    # Refused, each with one reply: a reader, a stale hash. The App itself is not listened to.
    scene.command(pull.number, f"/ratchet approve {first}", author=READER)
    scene.command(pull.number, "/ratchet approve 0123456789ab", author=WRITER)
    own = scene.fake.add_issue_comment(OWNER, REPO, pull.number,
                                       body=f"/ratchet approve {first}", author=BOT)
    assert scene.deliver("issue_comment", scene.comment(own)).status_code == 200
    scene.wait_for("two replies", lambda: len(scene.replies(pull.number)) == 2)
    replies = [c.body for c in scene.replies(pull.number)]
    assert any(f"@{READER}" in r and "write access" in r for r in replies), replies
    assert any("0123456789ab" in r and first in r for r in replies), replies

    # Sent back with GitHub's "Request changes" review: a second spec, the pull request's
    # body follows it.
    assert scene.deliver("pull_request_review", scene.review_event(
        pull.number, state="changes_requested", body="Also handle negative numbers.",
        author=WRITER)).status_code == 202
    scene.wait_for("the second spec", lambda: waiting_for_approval(scene, spec=2))
    second = spec_prefix(scene)
    assert second != first
    assert "with feedback" in (scene.fake.pull(OWNER, REPO, pull.number).body or "")
    # And with a command (it gets a reaction): a third spec.
    sent_back, _ = scene.command(pull.number, "/ratchet request-changes and zero",
                                 author=WRITER)
    scene.wait_for("the third spec", lambda: waiting_for_approval(scene, spec=3))
    third = spec_prefix(scene)
    assert third == second  # the scripted agent writes the same spec for any feedback
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, sent_back)] == ["eyes"]
    # Approved with the newest ratchet/spec check run's "Approve spec" button.
    newest = max((c for c in scene.fake.check_runs(OWNER, REPO) if c.name == "ratchet/spec"),
                 key=lambda c: c.id)
    assert newest.actions and newest.actions[0]["identifier"] == "approve"
    assert newest.external_id.endswith(third)
    assert scene.deliver("check_run", scene.check_run_event(
        newest.id, "requested_action", sender=WRITER)).status_code == 202

    # The worker dies during implement; another takes the run over.
    started = Path(f"{block}.seen")  # the scripted agent's mark: implement is running
    scene.wait_for("implement to start", started.exists)
    worker.kill()
    scene.worker()
    # The killed worker's agent is let go only once the new worker's implement has completed:
    # by then it died with its worker, or it outlived it and counts a second implement below
    # (let go at once, a dying agent on a loaded host could finish in the moment its SIGKILL
    # takes to arrive).
    scene.wait_for("the new worker's implement",
                   lambda: agent_steps(scene)["implement"] >= 1, timeout=180)
    block.write_text("go\n")
    scene.wait_for("the verified pull request", lambda: finished(scene), timeout=180)

    assert_verified_once(scene, spec_heads=3, pr_replies=2)
    assert_published_as_finished_work(scene)
    steps = agent_steps(scene)
    assert (steps["research"], steps["specify"], steps["implement"]) == (1, 3, 1)
    fired = Counter(c.fault for c in scene.fake.calls() if c.fault)
    assert sum(fired.values()) == len(MUTATIONS), fired
    state = github_state(scene, ISSUE)
    assert state["tracking_comments"] == 1 and len(state["pulls"]) == 1
    assert scene.fake.validation_failures == [] and scene.fake.unknown_calls == []
