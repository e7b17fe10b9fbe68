"""Run mode through ``action.yml``: one Ratchet run carried across Actions jobs.

Each job is a real ``ratchet action`` process started by the composite's bash step, with a
fresh runner folder (nothing survives between jobs but the repository), against the fake
GitHub and git over HTTP. The run's ledger travels in ``refs/ratchet/ledger/issue-<n>``.
The scripted agent (``tests/fixtures/scripted_agent.py``) counts its completed invocations
per phase.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import Counter
from typing import Any

import pytest

from tests.action.actions_runner import ActionResult
from tests.action.conftest import JOB_TOKEN, OWNER, READER, REPO, WRITER, Scene, example
from tests.e2e.harness import AGENT, CONFIG, with_agent_channels
from tests.gitrepo import git

ISSUE = 1
BRANCH = f"ratchet/issue-{ISSUE}"
BOT = "github-actions[bot]"
AGENT_COMMAND = f"{sys.executable} {AGENT}"


@pytest.fixture
def scene(open_scene: Any) -> Scene:
    built = open_scene({".github/ratchet.yml": CONFIG, "README.md": "# demo\n"})
    built.fake.create_issue(OWNER, REPO, title="Add calc", body="Add calc.add(a, b).",
                            author=WRITER)
    built.shared.mkdir()
    return built


def job_env(scene: Scene, **extra: str) -> dict[str, str]:
    """The workflow's `env:` for the action: the agent's log and test-speed settings."""
    return with_agent_channels({
        "RATCHET_SANDBOX_RW": str(scene.shared), "AGENT_LOG": str(scene.shared / "agent.log"),
        "RATCHET_LEASE_SECONDS": "2", "RATCHET_GITHUB_MUTATION_INTERVAL": "0", **extra})


def labeled(scene: Scene, issue: int = ISSUE, *, sender: str = WRITER) -> dict[str, Any]:
    payload = example("issues", "labeled")
    payload["issue"] = scene.read(f"/repos/{OWNER}/{REPO}/issues/{issue}")
    payload["label"] = {**payload["label"], "name": "ratchet"}
    return scene.common(payload, sender)


def commented(scene: Scene, number: int, body: str, *, author: str) -> tuple[int, dict[str, Any]]:
    """``author`` comments ``body`` on issue or pull request ``number``; the event's payload."""
    comment_id = scene.fake.add_issue_comment(OWNER, REPO, number, body=body, author=author)
    payload = example("issue_comment", "created")
    payload["comment"] = scene.read(f"/repos/{OWNER}/{REPO}/issues/comments/{comment_id}")
    payload["issue"] = scene.read(f"/repos/{OWNER}/{REPO}/issues/{number}")
    return comment_id, scene.common(payload, author)


def run_action(scene: Scene, event: str, payload: dict[str, Any], **options: Any
               ) -> ActionResult:
    env = job_env(scene, **options.pop("env", {}))
    return scene.run(scene.job(event, payload, env=env, **options), mode="run",
                     agent_command=AGENT_COMMAND)


def agent_steps(scene: Scene) -> Counter[str]:
    log = scene.shared / "agent.log"
    return Counter(s.split(".")[0] for s in log.read_text().split()) if log.exists() \
        else Counter()


def spec_prefix(scene: Scene) -> str:
    [pull] = scene.fake.pulls(OWNER, REPO)
    found = re.search(r"/ratchet approve ([0-9a-f]{12})", pull.body or "")
    assert found, pull.body
    return found.group(1)


def bot_comments(scene: Scene, number: int) -> list[Any]:
    return [c for c in scene.fake.comments(OWNER, REPO, number) if c.user.login == BOT]


def notices(result: ActionResult) -> list[str]:
    return [a.message for a in result.annotations_at("notice")]


def ledger_oid(scene: Scene, issue: int = ISSUE) -> str:
    return git(scene.bare, "--git-dir", str(scene.bare), "rev-parse",
               f"refs/ratchet/ledger/issue-{issue}").strip()


def assert_clean_output(result: ActionResult) -> None:
    for text in (result.stdout, result.stderr, result.summary):
        assert JOB_TOKEN not in text


def test_a_run_across_jobs_survives_a_killed_job_and_publishes_once(scene: Scene) -> None:
    # Job 1: the label. Research, specify, then the job ends with the spec in a draft PR.
    first = run_action(scene, "issues", labeled(scene))
    assert first.exit_code == 0, first.stderr
    assert first.outputs["state"] == "awaiting_approval"
    assert first.outputs["conclusion"] == "action_required"
    run_id = first.outputs["run-id"]
    assert run_id.startswith("r-")
    [pull] = scene.fake.pulls(OWNER, REPO)
    assert pull.draft and pull.head_ref == BRANCH and pull.user.login == BOT
    prefix = spec_prefix(scene)
    assert f"/ratchet approve {prefix}" in first.summary
    assert [c.name for c in scene.fake.check_runs(OWNER, REPO)] == ["ratchet/spec"]
    assert agent_steps(scene) == {"research": 1, "specify": 1}
    after_label = ledger_oid(scene)

    # Job 2: a reader approves on the pull request: refused with one reply, nothing moves.
    _, payload = commented(scene, pull.number, f"/ratchet approve {prefix}", author=READER)
    refused = run_action(scene, "issue_comment", payload)
    assert refused.exit_code == 0, refused.stderr
    assert refused.outputs["state"] == "awaiting_approval"
    [reply] = bot_comments(scene, pull.number)
    assert f"@{READER}" in reply.body and "write access" in reply.body

    # Job 3: a writer approves; the job is SIGKILLed while the agent implements.
    block = scene.shared / "release-implement"
    approval_id, payload = commented(scene, pull.number, f"/ratchet approve {prefix}",
                                     author=WRITER)
    approve_job = scene.job("issue_comment", payload,
                            env=job_env(scene, AGENT_BLOCK_FILE=str(block)))
    running = scene.start(approve_job, mode="run", agent_command=AGENT_COMMAND)
    deadline = time.monotonic() + 120
    while not (scene.shared / "release-implement.seen").exists():
        assert time.monotonic() < deadline, "implement never started"
        time.sleep(0.05)
    running.kill()
    killed = running.wait()
    assert killed.killed and killed.exit_code != 0

    # Job 3, attempt 2 ("Re-run failed jobs"): resumes at implement from the ledger's ref.
    rerun = run_action(scene, "issue_comment", payload, run_id=approve_job.run_id, attempt=2,
                       env={"AGENT_BLOCK_FILE": str(block)})
    assert rerun.exit_code == 0, rerun.stderr + rerun.stdout
    assert rerun.outputs["state"] == "done" and rerun.outputs["conclusion"] == "success"
    assert rerun.outputs["run-id"] == run_id
    assert re.fullmatch(r"[0-9a-f]{64}", rerun.outputs["plan-hash"])

    # Research and specify ran once; implement completed once (the killed one never did).
    assert agent_steps(scene) == {"research": 1, "specify": 1, "implement": 1, "repair": 1}

    # On GitHub, each thing once: one tracking comment (done), one pull request (ready),
    # one reply, one reaction, one check run per name and head.
    [tracking] = bot_comments(scene, ISSUE)
    assert f"`{run_id}`: done" in tracking.body
    [pull] = scene.fake.pulls(OWNER, REPO)
    assert not pull.draft and pull.state == "open"
    # A workflow run serves no artifact file by file: the body names spec.md, links none.
    assert "`spec.md` in the run's artifacts" in (pull.body or "")
    assert "/artifacts/spec.md" not in (pull.body or "") + tracking.body
    assert len(bot_comments(scene, pull.number)) == 1
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, approval_id)] == ["eyes"]
    checks = scene.fake.check_runs(OWNER, REPO)
    assert set(Counter((c.name, c.head_sha) for c in checks).values()) == {1}
    verify = [c for c in checks if c.name == "ratchet/verify"]
    assert [c.conclusion for c in verify] == ["failure", "success"]  # implement, then repair
    assert verify[-1].head_sha == pull.head_sha
    assert verify[-1].details_url.endswith(f"/actions/runs/{approve_job.run_id}")
    assert len([c for c in checks if c.name == "ratchet/spec"]) == 1
    assert ledger_oid(scene) != after_label
    for result in (first, refused, killed, rerun):
        assert_clean_output(result)
    # Nor in what stays: the ledger in the repository, and everything posted on GitHub.
    ledger = subprocess.run(["git", "--git-dir", str(scene.bare), "cat-file", "blob",
                             "refs/ratchet/ledger/issue-1:ledger.sqlite3"],
                            capture_output=True, check=True).stdout
    assert b"SQLite format 3" in ledger[:16] and JOB_TOKEN.encode() not in ledger
    posted = [c.body for c in scene.fake.comments(OWNER, REPO, ISSUE)] + [pull.body or ""] + [
        f"{c.output_summary}{c.output_text}" for c in checks]
    assert all(JOB_TOKEN not in text for text in posted)
    scene.fake.assert_clean()


@pytest.mark.slow
def test_two_jobs_for_one_issue_at_once_one_proceeds_the_other_exits_with_a_notice(
        scene: Scene) -> None:
    payload = labeled(scene)
    jobs = [scene.start(scene.job("issues", payload, env=job_env(scene)), mode="run",
                        agent_command=AGENT_COMMAND) for _ in range(2)]
    results = [job.wait() for job in jobs]

    assert [r.exit_code for r in results] == [0, 0], [r.stderr for r in results]
    proceeded = [r for r in results if r.outputs["state"] == "awaiting_approval"]
    stood_down = [r for r in results if r.outputs["state"] == ""]
    assert len(proceeded) == 1 and len(stood_down) == 1, [r.outputs for r in results]
    assert notices(stood_down[0]), stood_down[0].stdout
    assert len(scene.fake.pulls(OWNER, REPO)) == 1
    assert len(bot_comments(scene, ISSUE)) == 1
    assert len(scene.fake.check_runs(OWNER, REPO)) == 1


def test_a_comment_without_a_command_ends_the_job_before_any_call(scene: Scene) -> None:
    _, payload = commented(scene, ISSUE, "Thanks, looks good!", author=WRITER)
    before = len(scene.fake.calls())
    result = run_action(scene, "issue_comment", payload)

    assert result.exit_code == 0
    assert notices(result) == ["nothing to do: no /ratchet command"]
    assert scene.fake.calls()[before:] == []


@pytest.mark.parametrize("role", ["triage", "read", None])
def test_a_label_from_someone_without_write_starts_nothing_and_gets_one_reply(
        scene: Scene, role: str | None) -> None:
    outsider = "tristan"
    if role is not None:
        scene.fake.set_permission(OWNER, REPO, outsider, role)
    result = run_action(scene, "issues", labeled(scene, sender=outsider))

    assert result.exit_code == 0, result.stderr + result.stdout
    assert result.outputs["run-id"] == "" and result.outputs["state"] == ""
    [notice] = notices(result)
    assert "not started" in notice and outsider in notice
    [reply] = bot_comments(scene, ISSUE)
    assert f"@{outsider}" in reply.body and "write access" in reply.body
    assert agent_steps(scene) == Counter()  # no agent ran
    assert scene.fake.pulls(OWNER, REPO) == [] and scene.fake.check_runs(OWNER, REPO) == []
    ledger = subprocess.run(["git", "--git-dir", str(scene.bare), "show-ref"],
                            capture_output=True, text=True).stdout
    assert "refs/ratchet/" not in ledger  # nothing recorded for it in the repository
    assert_clean_output(result)


@pytest.mark.slow
def test_request_changes_then_cancel_through_jobs_each_answered_once(scene: Scene) -> None:
    first = run_action(scene, "issues", labeled(scene))
    assert first.outputs["state"] == "awaiting_approval", first.stderr
    [pull] = scene.fake.pulls(OWNER, REPO)
    old_prefix = spec_prefix(scene)

    # A writer sends the spec back: specify runs again and the pull request shows a new hash.
    changes_id, payload = commented(
        scene, pull.number, "/ratchet request-changes cover negative numbers", author=WRITER)
    sent_back = run_action(scene, "issue_comment", payload)
    assert sent_back.exit_code == 0, sent_back.stderr
    assert sent_back.outputs["state"] == "awaiting_approval"
    assert agent_steps(scene) == {"research": 1, "specify": 2}
    assert spec_prefix(scene) != old_prefix
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, changes_id)] == ["eyes"]

    # A writer cancels on the issue: the run ends; a second delivery of it changes nothing.
    cancel_id, payload = commented(scene, ISSUE, "/ratchet cancel", author=WRITER)
    cancel_job = scene.job("issue_comment", payload, env=job_env(scene))
    cancelled = scene.run(cancel_job, mode="run", agent_command=AGENT_COMMAND)
    assert cancelled.exit_code == 0, cancelled.stderr
    assert cancelled.outputs["state"] == "cancelled"
    calls = len(scene.fake.calls())
    again = run_action(scene, "issue_comment", payload, run_id=cancel_job.run_id, attempt=2)
    assert again.exit_code == 0, again.stderr
    assert again.outputs["state"] == "cancelled"
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, cancel_id)] == ["eyes"]
    assert [c for c in scene.fake.calls()[calls:] if c.method != "GET"] == []

    [tracking] = bot_comments(scene, ISSUE)
    assert "cancelled" in tracking.body
    assert agent_steps(scene) == {"research": 1, "specify": 2}  # no agent after the cancel
    for result in (first, sent_back, cancelled, again):
        assert_clean_output(result)
    scene.fake.assert_clean()


@pytest.mark.slow
def test_a_failed_run_is_retried_by_a_later_job(scene: Scene) -> None:
    failed = run_action(scene, "issues", labeled(scene), env={"AGENT_EXIT": "research:3"})
    assert failed.outputs["state"] == "failed", (failed.outputs, failed.stderr)
    [tracking] = bot_comments(scene, ISSUE)
    assert "failed" in tracking.body and "/ratchet retry" in tracking.body
    assert scene.fake.pulls(OWNER, REPO) == []

    # Whatever made the agent fail is gone; a writer's retry takes research up again.
    retry_id, payload = commented(scene, ISSUE, "/ratchet retry", author=WRITER)
    retried = run_action(scene, "issue_comment", payload)
    assert retried.exit_code == 0, retried.stderr
    assert retried.outputs["state"] == "awaiting_approval"
    assert retried.outputs["run-id"] == failed.outputs["run-id"]
    assert agent_steps(scene) == {"research": 1, "specify": 1}
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, retry_id)] == ["eyes"]
    assert len(scene.fake.pulls(OWNER, REPO)) == 1 and len(bot_comments(scene, ISSUE)) == 1
    for result in (failed, retried):
        assert_clean_output(result)
    scene.fake.assert_clean()
