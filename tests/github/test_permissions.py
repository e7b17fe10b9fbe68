"""Who may signal a GitHub run: writers yes, readers and bots no; answers cached a minute."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from github.client import GitHubClient
from github.errors import GitHubUnavailable
from github.permissions import PERMISSION_TTL, GitHubAuthorizer
from github.repository import RepoTarget
from github.routing import PERMISSION_EVENTS
from runner.ledger import open_store
from runner.ledger.records import NewDelivery, NewRun, Run, Signal
from runner.names import SignalKind, SignalStatus
from runner.signal_payloads import Approve
from tests.fakes.conftest import OWNER, REPO
from tests.fakes.fakegithub import FakeGitHub, faults
from tests.github.conftest import INSTALLATION

PERMISSION = "/repos/{owner}/{repo}/collaborators/{username}/permission"


@pytest.fixture
def run(tmp_path: Path) -> Run:
    store = open_store(str(tmp_path / "ledger.db"))
    try:
        return store.create_run(
            NewRun(
                id="run-1",
                repo="https://github.com/acme/widgets.git",
                title="Widgets wobble",
                issue=1,
            )
        )
    finally:
        store.close()


@pytest.fixture
def authorizer(fake: FakeGitHub, client: GitHubClient) -> GitHubAuthorizer:
    return GitHubAuthorizer(
        client,
        locate=lambda run: RepoTarget(OWNER, REPO, INSTALLATION),
        bot_login="ratchet[bot]",
        allowed_bots={"renovate[bot]"},
        clock=fake.clock.now,
    )


def signal(author: str, *, origin: str = "github", n: int = 1) -> Signal:
    return Signal(
        id=f"delivery-{author}-{n}",
        run_id="run-1",
        kind=SignalKind.APPROVE,
        author=author,
        origin=origin,
        payload=Approve(hash="abcdef"),
        status=SignalStatus.PENDING,
        reason=None,
        created_at=time.time(),
        decided_at=None,
    )


def permission_calls(fake: FakeGitHub) -> int:
    return len(fake.calls(path_pattern=PERMISSION))


@pytest.mark.parametrize("role", ["write", "maintain", "admin"])
def test_writers_may_signal(
    fake: FakeGitHub, authorizer: GitHubAuthorizer, run: Run, role: str
) -> None:
    fake.set_permission(OWNER, REPO, "bob", role)
    answer = authorizer.authorize(run, signal("bob"))
    assert answer.allowed and answer.detail == f"bob has {role} access to acme/widgets"


@pytest.mark.parametrize("role", ["read", "triage"])
def test_readers_are_refused_saying_what_they_have_and_what_is_needed(
    fake: FakeGitHub, authorizer: GitHubAuthorizer, run: Run, role: str
) -> None:
    fake.set_permission(OWNER, REPO, "carol", role)
    answer = authorizer.authorize(run, signal("carol"))
    assert not answer.allowed
    assert f"carol has {role} access to acme/widgets" in answer.detail
    assert "needs write access" in answer.detail


def test_someone_github_does_not_know_is_refused(
    fake: FakeGitHub, authorizer: GitHubAuthorizer, run: Run
) -> None:
    fake.mark_missing_user("ghost")
    answer = authorizer.authorize(run, signal("ghost"))
    assert not answer.allowed and "knows no user ghost" in answer.detail


@pytest.mark.parametrize("login", ["ratchet[bot]", "Ratchet[bot]", "dependabot[bot]"])
def test_bots_are_refused_without_asking_github(
    fake: FakeGitHub, authorizer: GitHubAuthorizer, run: Run, login: str
) -> None:
    answer = authorizer.authorize(run, signal(login))
    assert not answer.allowed and "bot" in answer.detail
    assert permission_calls(fake) == 0


def test_an_allowed_bot_and_the_local_operator_may_signal(
    fake: FakeGitHub, authorizer: GitHubAuthorizer, run: Run
) -> None:
    assert authorizer.authorize(run, signal("renovate[bot]")).allowed
    assert authorizer.authorize(run, signal("root", origin="local")).allowed
    refused = authorizer.authorize(run, signal("eve", origin="gitlab"))
    assert not refused.allowed and "'gitlab'" in refused.detail
    assert permission_calls(fake) == 0


def test_answers_are_cached_for_a_minute(
    fake: FakeGitHub, authorizer: GitHubAuthorizer, run: Run
) -> None:
    fake.set_permission(OWNER, REPO, "bob", "write")
    assert authorizer.authorize(run, signal("bob", n=1)).allowed
    assert authorizer.authorize(run, signal("Bob", n=2)).allowed
    assert permission_calls(fake) == 1
    fake.set_permission(OWNER, REPO, "bob", "read")  # revoked: seen once the minute is over
    fake.advance_clock(PERMISSION_TTL + 1)
    assert not authorizer.authorize(run, signal("bob", n=3)).allowed
    assert permission_calls(fake) == 2


def test_a_recorded_access_change_drops_every_cached_answer(
    fake: FakeGitHub, client: GitHubClient, run: Run, tmp_path: Path
) -> None:
    """A writer demoted to read cannot approve for the rest of the minute: the ``member``
    webhook the demotion sent, recorded by any process, empties the cache."""
    store = open_store(str(tmp_path / "changes.db"))
    authorizer = GitHubAuthorizer(
        client, locate=lambda run: RepoTarget(OWNER, REPO, INSTALLATION), bot_login=None,
        clock=fake.clock.now, changes=lambda: store.count_deliveries(PERMISSION_EVENTS))
    fake.set_permission(OWNER, REPO, "bob", "maintain")
    assert authorizer.authorize(run, signal("bob", n=1)).allowed
    fake.set_permission(OWNER, REPO, "bob", "read")
    assert authorizer.authorize(run, signal("bob", n=2)).allowed  # cached: nothing said so
    store.accept_delivery(NewDelivery("g-1", "member", "edited", "ignore", "access changed"))
    refused = authorizer.authorize(run, signal("bob", n=3))
    assert not refused.allowed and "bob has read access" in refused.detail
    assert permission_calls(fake) == 2
    store.close()


def test_a_failure_to_ask_is_raised_not_taken_for_a_refusal(
    fake: FakeGitHub, authorizer: GitHubAuthorizer, run: Run
) -> None:
    fake.set_permission(OWNER, REPO, "bob", "write")
    fake.inject("GET", PERMISSION, faults.http_502())
    with pytest.raises(GitHubUnavailable):
        authorizer.authorize(run, signal("bob"))
    assert authorizer.authorize(run, signal("bob", n=2)).allowed  # nothing was cached
