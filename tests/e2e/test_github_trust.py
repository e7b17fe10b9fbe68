"""Who may start and command runs, through ``ratchet serve``, signed webhooks and the fake
GitHub: a triager's label starts nothing and gets one reply; hidden or quoted commands do
nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.e2e.github_app import BOT, OWNER, READER, REPO, WRITER, AppScene, scenes
from tests.e2e.harness import AGENT
from tests.fakes.fakegithub import faults
from tests.webhook_examples import example

ISSUE = 1
TRIAGER = "tess"


@pytest.fixture(scope="module")
def app_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


@pytest.fixture
def scene(tmp_path: Path, app_key: bytes) -> Iterator[AppScene]:
    yield from scenes(tmp_path, app_key)


def bot_replies(scene: AppScene) -> list[str]:
    return [c.body for c in scene.fake.comments(OWNER, REPO, ISSUE) if c.user.login == BOT]


def test_a_triagers_label_starts_no_run_and_gets_one_reply(scene: AppScene) -> None:
    scene.fake.set_permission(OWNER, REPO, TRIAGER, "triage")
    scene.serve()
    first = scene.deliver("issues", scene.labeled(ISSUE, sender=TRIAGER))
    assert first.status_code == 200 and first.json()["decision"] == "ignore"
    assert "tess has triage access" in first.json()["reason"]
    [reply] = scene.wait_for("the refusal's reply", lambda: bot_replies(scene))
    assert "@tess" in reply and "write access or more (write, maintain, admin)" in reply
    # Again within the minute: still no run, no second reply.
    again = scene.deliver("issues", scene.labeled(ISSUE, sender=TRIAGER))
    assert again.json()["decision"] == "ignore"
    assert scene.run_state() is None
    # A writer's label starts the run (its tracking comment is the bot's next comment).
    started = scene.deliver("issues", scene.labeled(ISSUE, sender=WRITER))
    assert started.status_code == 202 and started.json()["decision"] == "start"
    assert scene.run_state() is not None
    assert len([b for b in bot_replies(scene) if "@tess" in b]) == 1


@pytest.mark.parametrize("body", [
    "> /ratchet cancel",
    "```\n/ratchet cancel\n```",
    "<!-- /ratchet cancel -->",
    "looks fine <!--\n/ratchet cancel\n-->",
])
def test_a_quoted_fenced_or_hidden_command_does_nothing(scene: AppScene, body: str) -> None:
    scene.serve()
    assert scene.deliver("issues", scene.labeled(ISSUE, sender=WRITER)).status_code == 202
    _, answer = scene.command(ISSUE, body, author=WRITER)
    assert answer.status_code == 200
    assert (answer.json()["decision"], answer.json()["reason"]) == (
        "ignore", "no /ratchet command")
    assert scene.run_state()["state"] not in {"cancelled"}


def spec_prefix(scene: AppScene) -> str:
    [pull] = scene.fake.pulls(OWNER, REPO)
    found = re.search(r"/ratchet approve ([0-9a-f]{12})", pull.body or "")
    assert found, pull.body
    return found.group(1)


def waiting_for_approval(scene: AppScene) -> bool:
    tracking = [c for c in scene.tracking_comments(ISSUE) if "awaiting approval" in c.body]
    return bool(scene.fake.pulls(OWNER, REPO) and tracking)


def test_a_readers_burst_gets_one_reply_and_a_demoted_writer_cannot_approve(
        scene: AppScene) -> None:
    scene.serve()
    assert scene.deliver("issues", scene.labeled(ISSUE)).status_code == 202
    scene.wait_for("the spec's review", lambda: waiting_for_approval(scene))
    [pull] = scene.fake.pulls(OWNER, REPO)
    prefix = spec_prefix(scene)

    # Twenty approvals from a reader: twenty refusals recorded, one reply.
    for _ in range(20):
        _, answer = scene.command(pull.number, f"/ratchet approve {prefix}", author=READER)
        assert answer.status_code == 202
    scene.wait_for("one reply", lambda: scene.replies(pull.number))
    # alice's status request is answered (her write access is now cached), after the burst.
    scene.command(pull.number, "/ratchet status", author=WRITER)
    scene.wait_for("the status reply", lambda: len(scene.replies(pull.number)) == 2)
    assert len([r for r in scene.replies(pull.number) if f"@{READER}" in r.body]) == 1
    # The status says the run waits for a reviewer, not for the worker answering it.
    [status] = [r.body for r in scene.replies(pull.number) if f"@{WRITER}" in r.body]
    assert "waits for a reviewer with write access" in status, status
    assert "holds the lease" not in status and f"/ratchet approve {prefix}" in status

    # alice is demoted to read; GitHub says so with a member webhook; her approve is refused
    # at once, not a minute later.
    scene.fake.set_permission(OWNER, REPO, WRITER, "read")
    member = example("member", "edited")
    member["member"] = {**member["member"], "login": WRITER}
    assert scene.deliver("member", member).json()["decision"] == "ignore"
    scene.command(pull.number, f"/ratchet approve {prefix}", author=WRITER)
    scene.wait_for("the refusal", lambda: len(scene.replies(pull.number)) == 3)
    refusal = scene.replies(pull.number)[-1].body
    assert f"@{WRITER}" in refusal and "read access" in refusal
    assert scene.run_state()["state"] == "awaiting_approval"


def test_an_approve_sent_before_ratchet_confirmed_its_pull_request_is_answered(
        scene: AppScene) -> None:
    """GitHub opened the spec's pull request but its answer to Ratchet is slow (as when it
    is lost and Ratchet finds the pull request later): a writer's approve on it waits for the
    run to link it, then is accepted; it is never dropped as "no active run"."""
    scene.fake.inject("POST", "/repos/{owner}/{repo}/pulls",
                      faults.delay(8, after_apply=True))
    scene.serve()
    assert scene.deliver("issues", scene.labeled(ISSUE)).status_code == 202
    [pull] = scene.wait_for("the pull request on GitHub", lambda: scene.fake.pulls(OWNER, REPO))
    prefix = spec_prefix(scene)
    comment, answer = scene.command(pull.number, f"/ratchet approve {prefix}", author=WRITER)
    assert answer.json()["decision"] == "wait", answer.json()
    scene.wait_for("the approval's acknowledgement",
                   lambda: scene.fake.reactions(OWNER, REPO, comment))
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, comment)] == ["eyes"]
    scene.wait_for("the run to move past its approval",
                   lambda: (scene.run_state() or {}).get("state") != "awaiting_approval")


def test_a_writers_mistyped_verb_is_answered_with_the_commands(scene: AppScene) -> None:
    scene.serve()
    assert scene.deliver("issues", scene.labeled(ISSUE, sender=WRITER)).status_code == 202
    for _ in range(2):
        _, answer = scene.command(ISSUE, "/ratchet aprove 3f2a", author=WRITER)
        assert answer.status_code == 200 and answer.json()["decision"] == "ignore"

    def answers() -> list[str]:
        return [b for b in bot_replies(scene) if b.startswith(f"@{WRITER}: unknown command")]

    replies = scene.wait_for("both answers", lambda: len(answers()) == 2 and answers())
    assert all("`/ratchet approve <spec hash>`" in r and "`/ratchet status`" in r
               for r in replies)


def test_commands_on_an_ended_run_are_answered_with_its_final_state(scene: AppScene) -> None:
    scene.serve()
    assert scene.deliver("issues", scene.labeled(ISSUE, sender=WRITER)).status_code == 202
    scene.command(ISSUE, "/ratchet cancel", author=WRITER)
    scene.wait_for("the run to end",
                   lambda: (scene.run_state() or {}).get("state") == "cancelled")
    _, answer = scene.command(ISSUE, "/ratchet status", author=WRITER)
    assert answer.json()["decision"] == "ignore" and "has ended" in answer.json()["reason"]

    def answers() -> list[str]:
        return [b for b in bot_replies(scene) if b.startswith(f"@{WRITER}: run `")]

    [reply] = scene.wait_for("the status reply", answers)
    assert "is cancelled" in reply and "none: the run was cancelled" in reply, reply
    # Any other command on it is answered with the state it ended in.
    scene.command(ISSUE, "/ratchet retry", author=WRITER)
    replies = scene.wait_for("the retry's answer", lambda: len(answers()) == 2 and answers())
    assert "has ended (cancelled), so `/ratchet retry` changes nothing" in replies[1]


def test_a_command_on_an_issue_without_a_run_is_answered(scene: AppScene) -> None:
    scene.serve()
    _, answer = scene.command(ISSUE, "/ratchet status", author=WRITER)
    assert answer.json()["decision"] == "ignore"
    [reply] = scene.wait_for("the answer", lambda: bot_replies(scene))
    assert reply.startswith(f"@{WRITER}: there is no Ratchet run for #{ISSUE}"), reply
    assert scene.run_state() is None


def test_a_check_run_button_of_an_ended_run_gets_one_answer(scene: AppScene) -> None:
    scene.serve()
    assert scene.deliver("issues", scene.labeled(ISSUE, sender=WRITER)).status_code == 202
    spec = scene.wait_for("the spec's check run", lambda: [
        c for c in scene.fake.check_runs(OWNER, REPO) if c.name == "ratchet/spec"])[0]
    scene.command(ISSUE, "/ratchet cancel", author=WRITER)
    scene.wait_for("the run to end",
                   lambda: (scene.run_state() or {}).get("state") == "cancelled")
    clicked = scene.deliver("check_run", scene.check_run_event(
        spec.id, "requested_action", sender=WRITER))
    assert clicked.status_code == 202, clicked.text  # a signal for the run the button names

    def answers() -> list[str]:
        return [b for b in bot_replies(scene) if f"\n@{WRITER}: " in b]

    [reply] = scene.wait_for("the button's answer", answers)
    assert f"@{WRITER}: the run has ended (cancelled); start a new one." in reply, reply
    run_id = scene.run_state()["run_id"]
    assert scene.wait_for("the signal answered", lambda: scene.status(run_id)[
        "pending_signals"] == [])
    assert len(answers()) == 1


def test_each_writers_command_gets_one_answer_and_a_redelivery_none(scene: AppScene) -> None:
    """Status while the spec waits, a mistyped verb, a retry with nothing to retry, the
    approval, then status and a mistyped verb on the finished run: each answered once, each
    delivered twice by GitHub (the same delivery id) without a second answer."""
    scene.serve()
    assert scene.deliver("issues", scene.labeled(ISSUE)).status_code == 202
    scene.wait_for("the spec's review", lambda: waiting_for_approval(scene))
    [pull] = scene.fake.pulls(OWNER, REPO)
    prefix = spec_prefix(scene)

    def said(number: int, body: str) -> tuple[int, str]:
        """``WRITER`` comments ``body`` on ``number``; GitHub delivers it twice."""
        comment = scene.fake.add_issue_comment(OWNER, REPO, number, body=body, author=WRITER)
        delivery = f"delivery-{comment}"
        first = scene.deliver("issue_comment", scene.comment(comment), delivery=delivery)
        again = scene.deliver("issue_comment", scene.comment(comment), delivery=delivery)
        assert first.status_code in {200, 202} and "duplicate" not in first.json()
        assert again.json()["duplicate"] is True, again.json()
        return comment, delivery

    def answers(number: int) -> list[str]:
        """The bot's answers to ``WRITER`` on ``number``, from the words on (the marker a
        reply carries as an effect goes first)."""
        return [c.body[c.body.index(f"@{WRITER}: "):] for c in scene.bot_comments(number)
                if f"@{WRITER}: " in c.body and "<!-- ratchet:name=" not in c.body]

    said(pull.number, "/ratchet status")
    [status] = scene.wait_for("the status reply", lambda: answers(pull.number))
    assert "is awaiting approval" in status and "waits for a reviewer with write access" in status
    said(pull.number, "/ratchet aprove")
    mistyped = scene.wait_for("the mistyped verb's answer",
                              lambda: answers(pull.number)[1:])
    assert mistyped[0].startswith(f"@{WRITER}: unknown command '/ratchet aprove'")
    assert "`/ratchet status`" in mistyped[0] and "`/ratchet approve <spec hash>`" in mistyped[0]

    said(pull.number, "/ratchet retry")
    refused = scene.wait_for("the retry's refusal", lambda: answers(pull.number)[2:])
    assert "there is nothing to retry: the run is awaiting_approval" in refused[0], refused

    approval, _ = said(pull.number, f"/ratchet approve {prefix}")
    scene.wait_for("the run to be done", lambda: (scene.run_state() or {}).get("state") == "done")
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, approval)] == ["eyes"]

    said(ISSUE, "/ratchet status")
    [finished] = scene.wait_for("the finished run's status", lambda: answers(ISSUE))
    assert "is done" in finished and "none: the run is done" in finished, finished
    said(ISSUE, "/ratchet stauts")
    later = scene.wait_for("the next answer", lambda: answers(ISSUE)[1:])
    assert later[0].startswith(f"@{WRITER}: unknown command '/ratchet stauts'")
    # Every command above was delivered twice; each has its one answer, none a second.
    assert len(answers(ISSUE)) == 2 and len(answers(pull.number)) == 3
    assert [r.content for r in scene.fake.reactions(OWNER, REPO, approval)] == ["eyes"]


def test_a_run_whose_agent_does_not_start_waits_for_the_operator_who_retries_it(
        scene: AppScene) -> None:
    """The service's agent command is not installed: the issue's tracking comment says the
    operator must make it start (a reviewer cannot), and the operator's
    `ratchet retry RUN --agent-command ...` at the host takes the run up with one that does,
    through serve (--detach) and on to the spec's review."""
    scene.serve(extra={"RATCHET_AGENT_COMMAND": "no-such-agent -p {prompt}"})
    assert scene.deliver("issues", scene.labeled(ISSUE)).status_code == 202

    def stopped() -> str:
        return next((c.body for c in scene.tracking_comments(ISSUE)
                     if "waits for the operator to make its agent start" in c.body), "")

    tracking = scene.wait_for("the failure in the tracking comment", stopped)
    assert "`/ratchet retry`" in tracking and "another agent command at the host" in tracking
    assert "fix its template" not in tracking
    run_id = scene.run_state()["run_id"]
    retried = subprocess.run(
        [sys.executable, "-m", "app.cli", "retry", run_id, "--agent-command",
         f"{sys.executable} {AGENT}", "--detach"],
        cwd=scene.root, env=scene.environ(), capture_output=True, text=True, timeout=120,
        check=False)
    assert retried.returncode == 0, retried.stderr
    scene.wait_for("the spec's review", lambda: waiting_for_approval(scene))
    events = [json.loads(line) for line in
              (scene.exported(run_id) / "events.ndjson").read_text().splitlines()]
    [resumed] = [e for e in events if e["type"] == "RUN_RESUMED"]
    assert resumed["data"]["agent"] == {"command": f"{sys.executable} {AGENT}"}
    assert scene.run_state()["state"] == "awaiting_approval"
    assert len(scene.tracking_comments(ISSUE)) == 1
