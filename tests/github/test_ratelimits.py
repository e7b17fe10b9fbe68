"""Rate limits waited out or reported, and mutating calls paced per installation.

The client's clocks are a ``FakeTime``: waits are asserted as the sleeps the client asked for
and the order in which requests reached the fake, never as wall time.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from github.client import GitHubClient
from github.errors import RateLimited
from tests.fakes.conftest import BRANCH, OWNER, REPO
from tests.fakes.fakegithub import FakeGitHub, faults
from tests.github.conftest import INSTALLATION, FakeTime, make_client

WIDGETS = {"owner": OWNER, "repo": REPO}
ISSUE = {**WIDGETS, "issue_number": 1}
REPOSITORY = "/repos/{owner}/{repo}"
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
HOLD = 60.0  # seconds a held request waits for its release: reached only when a test fails


@pytest.fixture
def fake_time(fake: FakeGitHub) -> FakeTime:
    return FakeTime(fake)


@pytest.fixture
def client(fake: FakeGitHub, app_key: bytes, fake_time: FakeTime) -> GitHubClient:
    return make_client(fake, app_key, **fake_time.client_options())


@pytest.mark.parametrize("status", [403, 429])
def test_a_short_primary_limit_is_waited_out_until_its_reset(
    fake: FakeGitHub, client: GitHubClient, fake_time: FakeTime, status: int
) -> None:
    client.installation_token(INSTALLATION)
    fake.inject("GET", REPOSITORY, faults.primary_rate_limit(reset_in=1, status=status))
    start = fake.clock.now()
    assert client.get(REPOSITORY, WIDGETS, installation=INSTALLATION)["name"] == REPO
    [waited] = fake_time.slept  # one wait, on the client's clock, up to the reset
    assert fake_time.now() >= int(start) + 1  # x-ratelimit-reset is int(now) + 1 in the fake
    assert 0 < waited <= fake_time.now() - fake_time.started
    assert [c.status for c in fake.calls(path_pattern=REPOSITORY)] == [status, 200]


def test_a_short_secondary_limit_is_waited_out_and_the_write_lands_once(
    fake: FakeGitHub, client: GitHubClient, fake_time: FakeTime
) -> None:
    client.installation_token(INSTALLATION)
    fake.inject("POST", COMMENTS, faults.secondary_rate_limit(retry_after=1))
    client.post(COMMENTS, ISSUE, data={"body": "once"}, installation=INSTALLATION)
    assert fake_time.slept == [1.0]  # the retry-after, waited out before the retry
    assert [c.status for c in fake.calls(method="POST", path_pattern=COMMENTS)] == [403, 201]
    assert [c.body for c in fake.comments(OWNER, REPO, 1)] == ["once"]


def test_a_long_primary_limit_raises_without_waiting_and_holds_later_calls(
    fake: FakeGitHub, client: GitHubClient, fake_time: FakeTime
) -> None:
    client.installation_token(INSTALLATION)
    fake.inject("GET", REPOSITORY, faults.primary_rate_limit(reset_in=3600))
    with pytest.raises(RateLimited) as limited:
        client.get(REPOSITORY, WIDGETS, installation=INSTALLATION)
    assert fake_time.slept == []
    assert limited.value.failure_class == "transient" and limited.value.limit == "primary"
    assert limited.value.retry_at == pytest.approx(fake.clock.now() + 3600, abs=3)
    assert "back off and retry after" in str(limited.value)

    # The installation's budget is spent: its next call is not even sent.
    with pytest.raises(RateLimited):
        client.post(COMMENTS, ISSUE, data={"body": "later"}, installation=INSTALLATION)
    assert len(fake.calls(path_pattern=REPOSITORY)) == 1
    assert not fake.calls(path_pattern=COMMENTS)


def test_a_long_secondary_limit_on_graphql_raises(fake: FakeGitHub, client: GitHubClient) -> None:
    number = fake.create_pull(OWNER, REPO, head=BRANCH, base="main", title="t", draft=True)
    client.installation_token(INSTALLATION)
    fake.inject("POST", "/graphql", faults.secondary_rate_limit(retry_after=120))
    mutation = """mutation($id: ID!) {
      markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { id } } }"""
    node_id = fake.pull(OWNER, REPO, number).node_id
    with pytest.raises(RateLimited) as limited:
        client.graphql(mutation, installation=INSTALLATION, variables={"id": node_id})
    assert limited.value.limit == "secondary"
    assert limited.value.retry_at == pytest.approx(fake.clock.now() + 120, abs=3)
    assert fake.pull(OWNER, REPO, number).draft is True


def test_mutations_of_one_installation_start_an_interval_apart_across_threads(
    fake: FakeGitHub, app_key: bytes, fake_time: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    interval = 0.2
    client = make_client(
        fake, app_key, mutation_interval=interval, request_timeout=HOLD + 30,
        **fake_time.client_options(),
    )
    client.installation_token(INSTALLATION)
    arrivals: list[tuple[str, float]] = []  # (method, the client's clock) as the fake sees them
    record = fake.recorder.start
    first_post_held, release = threading.Event(), threading.Event()

    def held(method: str, path: str, query: dict[str, str], body: Any) -> Any:
        arrivals.append((method, fake_time.monotonic()))
        if method == "POST" and not first_post_held.is_set():
            first_post_held.set()
            release.wait(HOLD)  # the first post stays in flight until the read is answered
        return record(method, path, query, body)

    monkeypatch.setattr(fake.recorder, "start", held)

    def post(texts: list[str]) -> None:
        for text in texts:
            client.post(COMMENTS, ISSUE, data={"body": text}, installation=INSTALLATION)

    threads = [
        threading.Thread(target=post, args=(["a1", "a2"],)),
        threading.Thread(target=post, args=(["b1"],)),
    ]
    for thread in threads:
        thread.start()
    assert first_post_held.wait(HOLD)
    # Reads are not paced: this one is answered while a post is still in flight (queued
    # behind the posts, it would wait for the release that follows it).
    client.get(REPOSITORY, WIDGETS, installation=INSTALLATION)
    release.set()
    for thread in threads:
        thread.join()

    assert [method for method, _ in arrivals] == ["POST", "GET", "POST", "POST"]
    posts = [at for method, at in arrivals if method == "POST"]
    assert posts == pytest.approx([0.0, interval, 2 * interval])  # one start per interval
    assert fake_time.slept == pytest.approx([interval, interval])
    assert sorted(c.body for c in fake.comments(OWNER, REPO, 1)) == ["a1", "a2", "b1"]
