"""Who may start a run with the trigger label, and the one reply to someone who may not."""

from __future__ import annotations

from pathlib import Path

import pytest

from github.client import GitHubClient
from github.permissions import Permissions
from github.routing import Reply
from github.triggers import TriggerGate
from runner.ledger import open_store
from runner.ledger.records import EARLY_SIGNAL_SECONDS, NewDelivery, SignalFor
from runner.names import SignalKind
from runner.origin import GitHubOrigin
from runner.signal_payloads import Approve
from tests.fakes.conftest import OWNER, REPO
from tests.fakes.fakegithub import FakeGitHub
from tests.github.conftest import INSTALLATION


def origin(login: str) -> GitHubOrigin:
    return GitHubOrigin(owner=OWNER, repo=REPO, installation=INSTALLATION,
                        clone_url=f"https://github.com/{OWNER}/{REPO}.git", label="ratchet",
                        started_by=login)


@pytest.mark.parametrize(("required", "role", "allowed"), [
    ("write", "triage", False), ("write", "read", False), ("write", "write", True),
    ("write", "maintain", True), ("write", "admin", True), ("triage", "triage", True),
    ("maintain", "write", False), ("admin", "maintain", False),
])
def test_the_label_needs_the_configured_role(fake: FakeGitHub, client: GitHubClient,
                                             tmp_path: Path, required: str, role: str,
                                             allowed: bool) -> None:
    store = open_store(str(tmp_path / "ledger.db"))
    gate = TriggerGate(client, Permissions(client), store, role=required)
    fake.set_permission(OWNER, REPO, "tess", role)
    answer = gate.check(origin("tess"))
    assert answer.allowed is allowed and f"tess has {role} access" in answer.detail
    store.close()


def test_bots_need_the_operators_word_and_strangers_have_no_access(
        fake: FakeGitHub, client: GitHubClient, tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "ledger.db"))
    gate = TriggerGate(client, Permissions(client), store, allowed_bots={"renovate[bot]"})
    assert gate.check(origin("renovate[bot]")).allowed
    assert not gate.check(origin("dependabot[bot]")).allowed
    fake.mark_missing_user("nobody")
    assert "nobody has no access" in gate.check(origin("nobody")).detail
    with pytest.raises(ValueError, match="RATCHET_TRIGGER_PERMISSION='read'"):
        TriggerGate(client, Permissions(client), store, role="read")
    store.close()


def test_one_reply_per_person_and_issue_a_minute(fake: FakeGitHub, client: GitHubClient,
                                                 tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "ledger.db"))
    gate = TriggerGate(client, Permissions(client), store)
    fake.set_permission(OWNER, REPO, "tess", "triage")
    issue = fake.create_issue(OWNER, REPO, title="t", body="b", author="tess")
    why = gate.check(origin("tess"))
    assert gate.refuse(origin("tess"), issue, why)
    assert not gate.refuse(origin("tess"), issue, why)
    [reply] = fake.comments(OWNER, REPO, issue)
    assert reply.body.startswith("@tess: the `ratchet` label starts a Ratchet run only when")
    store.close()


def test_a_command_reaching_no_run_is_answered_every_time_for_a_writer(
        fake: FakeGitHub, client: GitHubClient, tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "ledger.db"))
    gate = TriggerGate(client, Permissions(client), store)
    fake.set_permission(OWNER, REPO, "alice", "write")
    fake.set_permission(OWNER, REPO, "rory", "read")
    issue = fake.create_issue(OWNER, REPO, title="t", body="b", author="alice")

    def reply(login: str) -> Reply:
        return Reply(owner=OWNER, repo=REPO, installation=INSTALLATION,
                     clone_url=f"https://github.com/{OWNER}/{REPO}.git", number=issue,
                     author=login, text="unknown command '/ratchet aprove'; the commands are X.")

    assert gate.answer(reply("alice")) and gate.answer(reply("alice"))
    assert gate.answer(reply("rory")) and not gate.answer(reply("rory"))
    bodies = [c.body for c in fake.comments(OWNER, REPO, issue)]
    assert bodies == [
        "@alice: unknown command '/ratchet aprove'; the commands are X.\n"] * 2 + [
        "@rory: unknown command '/ratchet aprove'; the commands are X.\n"]
    store.close()


def test_a_command_no_run_linked_within_a_day_is_answered_once_asking_to_repeat_it(
        fake: FakeGitHub, client: GitHubClient, tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "ledger.db"))
    gate = TriggerGate(client, Permissions(client), store)
    fake.set_permission(OWNER, REPO, "alice", "write")
    fake.create_issue(OWNER, REPO, title="t", body="b", author="alice")
    pull = fake.create_pull(OWNER, REPO, head="main", base="main", title="by hand")
    clone_url = f"https://github.com/{OWNER}/{REPO}.git"
    at = 1_700_000_000.0
    # What the webhook records for an approval on a pull request no run has linked: it waits.
    waiting = store.accept_delivery(
        NewDelivery("guid-1", "issue_comment", "created", "signal", "approve"),
        signal=SignalFor(clone_url, pull, SignalKind.APPROVE, "alice", "github",
                         Approve(hash="abcdef" * 2), pull_request=True), now=at)
    assert waiting.decision == "wait"

    assert gate.answer_expired(now=at + EARLY_SIGNAL_SECONDS - 1) == 0  # still waiting
    assert fake.comments(OWNER, REPO, pull) == []
    assert gate.answer_expired(now=at + EARLY_SIGNAL_SECONDS + 1) == 1
    assert gate.answer_expired(now=at + 2 * EARLY_SIGNAL_SECONDS) == 0  # answered once
    [reply] = fake.comments(OWNER, REPO, pull)
    assert reply.body == (
        "@alice: `/ratchet approve` was not applied: it waited for a Ratchet run to link this"
        " pull request, and none has in 24 hours. If this pull request belongs to a run, please"
        " repeat it here once the run's tracking comment links it.\n")
    store.close()
