"""Rate limits waited out or reported, and mutating calls paced per installation."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from github.client import GitHubClient
from github.errors import RateLimited
from tests.fakes.conftest import BRANCH, OWNER, REPO
from tests.fakes.fakegithub import FakeGitHub, faults
from tests.github.conftest import INSTALLATION, make_client

WIDGETS = {"owner": OWNER, "repo": REPO}
ISSUE = {**WIDGETS, "issue_number": 1}
REPOSITORY = "/repos/{owner}/{repo}"
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"


@pytest.mark.parametrize("status", [403, 429])
def test_a_short_primary_limit_is_waited_out_until_its_reset(
    fake: FakeGitHub, client: GitHubClient, status: int
) -> None:
    client.installation_token(INSTALLATION)
    fake.inject("GET", REPOSITORY, faults.primary_rate_limit(reset_in=1, status=status))
    start = fake.clock.now()
    assert client.get(REPOSITORY, WIDGETS, installation=INSTALLATION)["name"] == REPO
    waited = fake.clock.now() - start
    assert waited >= int(start) + 1 - start  # x-ratelimit-reset is int(now) + 1 in the fake
    assert [c.status for c in fake.calls(path_pattern=REPOSITORY)] == [status, 200]


def test_a_short_secondary_limit_is_waited_out_and_the_write_lands_once(
    fake: FakeGitHub, client: GitHubClient
) -> None:
    client.installation_token(INSTALLATION)
    fake.inject("POST", COMMENTS, faults.secondary_rate_limit(retry_after=1))
    start = time.monotonic()
    client.post(COMMENTS, ISSUE, data={"body": "once"}, installation=INSTALLATION)
    assert time.monotonic() - start >= 1.0
    assert [c.status for c in fake.calls(method="POST", path_pattern=COMMENTS)] == [403, 201]
    assert [c.body for c in fake.comments(OWNER, REPO, 1)] == ["once"]


def test_a_long_primary_limit_raises_without_waiting_and_holds_later_calls(
    fake: FakeGitHub, client: GitHubClient
) -> None:
    client.installation_token(INSTALLATION)
    fake.inject("GET", REPOSITORY, faults.primary_rate_limit(reset_in=3600))
    start = time.monotonic()
    with pytest.raises(RateLimited) as limited:
        client.get(REPOSITORY, WIDGETS, installation=INSTALLATION)
    assert time.monotonic() - start < 1.0
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
    fake: FakeGitHub, app_key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    interval = 0.2
    client = make_client(fake, app_key, mutation_interval=interval)
    client.installation_token(INSTALLATION)
    arrivals: list[tuple[str, float]] = []
    record = fake.recorder.start

    def timed(method: str, path: str, query: dict[str, str], body: Any) -> Any:
        arrivals.append((method, time.monotonic()))
        return record(method, path, query, body)

    monkeypatch.setattr(fake.recorder, "start", timed)

    def post(texts: list[str]) -> None:
        for text in texts:
            client.post(COMMENTS, ISSUE, data={"body": text}, installation=INSTALLATION)

    threads = [
        threading.Thread(target=post, args=(["a1", "a2"],)),
        threading.Thread(target=post, args=(["b1"],)),
    ]
    for thread in threads:
        thread.start()
    read_at = time.monotonic()
    client.get(REPOSITORY, WIDGETS, installation=INSTALLATION)  # reads are not paced
    read_took = time.monotonic() - read_at
    for thread in threads:
        thread.join()

    posts = sorted(at for method, at in arrivals if method == "POST")
    assert len(posts) == 3
    gaps = [later - earlier for earlier, later in itertools.pairwise(posts)]
    assert all(gap >= interval - 0.01 for gap in gaps), gaps
    assert read_took < 2 * interval  # paced, it would have queued behind the posts
    assert sorted(c.body for c in fake.comments(OWNER, REPO, 1)) == ["a1", "a2", "b1"]
