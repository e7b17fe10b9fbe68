"""Every way a call can fail, injected by the fake, arrives as its failure class."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from github.client import GitHubClient
from github.credentials import TokenCredentials
from github.errors import (
    BadCredentials,
    Forbidden,
    GitHubFailure,
    GitHubUnavailable,
    InvalidRequest,
    NotFound,
    OutcomeUnknown,
)
from tests.fakes.conftest import BRANCH, OWNER, REPO
from tests.fakes.fakegithub import FakeGitHub, faults
from tests.github.conftest import ACTIONS_TOKEN, INSTALLATION, make_client

WIDGETS = {"owner": OWNER, "repo": REPO}
ISSUE = {**WIDGETS, "issue_number": 1}
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
PULLS = "/repos/{owner}/{repo}/pulls"


def comment_bodies(fake: FakeGitHub) -> list[str | None]:
    return [c.body for c in fake.comments(OWNER, REPO, 1)]


def test_502_on_a_read_is_transient(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.inject("GET", "/repos/{owner}/{repo}/issues/{issue_number}", faults.http_502())
    with pytest.raises(GitHubUnavailable) as failed:
        client.get("/repos/{owner}/{repo}/issues/{issue_number}", ISSUE, installation=INSTALLATION)
    assert failed.value.failure_class == "transient" and failed.value.status == 502
    assert failed.value.evidence["path"] == "/repos/acme/widgets/issues/1"
    assert "retry with backoff" in str(failed.value)


def test_502_before_a_write_is_transient_and_nothing_was_applied(
    fake: FakeGitHub, client: GitHubClient
) -> None:
    fake.inject("POST", COMMENTS, faults.http_502())
    with pytest.raises(GitHubUnavailable) as failed:
        client.post(COMMENTS, ISSUE, data={"body": "once"}, installation=INSTALLATION)
    assert failed.value.failure_class == "transient"
    assert comment_bodies(fake) == []


def test_a_lost_answer_after_a_write_is_ambiguous_though_it_was_applied(
    fake: FakeGitHub, client: GitHubClient
) -> None:
    fake.inject("POST", COMMENTS, faults.drop_after_apply())
    with pytest.raises(OutcomeUnknown) as lost:
        client.post(COMMENTS, ISSUE, data={"body": "once"}, installation=INSTALLATION)
    assert lost.value.failure_class == "ambiguous"
    assert lost.value.evidence["sent"] is True and lost.value.status is None
    assert "look the effect up before sending it again" in str(lost.value)
    assert comment_bodies(fake) == ["once"]  # applied: the caller must reconcile, not resend


def test_a_lost_answer_to_a_patch_is_ambiguous(fake: FakeGitHub, client: GitHubClient) -> None:
    created = client.post(COMMENTS, ISSUE, data={"body": "v1"}, installation=INSTALLATION)
    comment = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
    fake.inject("PATCH", comment, faults.drop_after_apply())
    with pytest.raises(OutcomeUnknown):
        where = {**WIDGETS, "comment_id": created["id"]}
        client.patch(comment, where, data={"body": "v2"}, installation=INSTALLATION)
    assert comment_bodies(fake) == ["v2"]


def test_a_lost_answer_to_a_read_is_transient(fake: FakeGitHub, client: GitHubClient) -> None:
    # aiohttp resends an idempotent request once on a reused connection: drop both.
    fake.inject("GET", "/repos/{owner}/{repo}", faults.drop_after_apply(), times=2)
    with pytest.raises(GitHubUnavailable) as lost:
        client.get("/repos/{owner}/{repo}", WIDGETS, installation=INSTALLATION)
    assert "it changed nothing" in str(lost.value)


def test_a_refused_connection_is_transient_even_for_a_write() -> None:
    nowhere = TokenCredentials.from_values(token=ACTIONS_TOKEN, api_url="http://127.0.0.1:9")
    client = GitHubClient(nowhere, request_timeout=2.0)
    with pytest.raises(GitHubUnavailable) as refused:
        client.post(COMMENTS, ISSUE, data={"body": "x"}, installation=None)
    assert refused.value.evidence["sent"] is False
    assert "it was never sent" in str(refused.value)


def test_a_timeout_is_transient_for_a_read_and_ambiguous_for_a_write(
    fake: FakeGitHub, app_key: bytes
) -> None:
    client = make_client(fake, app_key, request_timeout=0.2)
    client.installation_token(INSTALLATION)  # mint before the slow calls
    fake.inject("GET", "/repos/{owner}/{repo}", faults.delay(0.5))
    with pytest.raises(GitHubUnavailable) as slow_read:
        client.get("/repos/{owner}/{repo}", WIDGETS, installation=INSTALLATION)
    assert "TimeoutError" in str(slow_read.value)

    fake.inject("POST", COMMENTS, faults.delay(0.5))
    with pytest.raises(OutcomeUnknown):
        client.post(COMMENTS, ISSUE, data={"body": "late"}, installation=INSTALLATION)
    deadline = time.monotonic() + 30  # a backstop: it lands 0.5 s after
    while not comment_bodies(fake) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert comment_bodies(fake) == ["late"]  # GitHub applied it after the client gave up


def test_the_whole_call_has_a_timeout_too(fake: FakeGitHub, app_key: bytes) -> None:
    client = make_client(fake, app_key, call_timeout=0.3)
    client.installation_token(INSTALLATION)
    fake.inject("POST", COMMENTS, faults.delay(0.6))
    with pytest.raises(OutcomeUnknown):
        client.post(COMMENTS, ISSUE, data={"body": "late"}, installation=INSTALLATION)
    fake.inject("GET", "/repos/{owner}/{repo}", faults.delay(0.6))
    with pytest.raises(GitHubUnavailable):
        client.get("/repos/{owner}/{repo}", WIDGETS, installation=INSTALLATION)
    time.sleep(0.4)  # let the delayed handlers finish before the fake stops


def test_422_is_deterministic_with_githubs_reasons(fake: FakeGitHub, client: GitHubClient) -> None:
    spec = {"title": "Fix widgets", "head": BRANCH, "base": "main", "draft": True}
    client.post(PULLS, WIDGETS, data=spec, installation=INSTALLATION)
    with pytest.raises(InvalidRequest) as duplicate:
        client.post(PULLS, WIDGETS, data=spec, installation=INSTALLATION)
    assert duplicate.value.failure_class == "deterministic" and duplicate.value.status == 422
    assert "A pull request already exists" in str(duplicate.value)
    assert duplicate.value.evidence["errors"][0]["resource"] == "PullRequest"
    assert duplicate.value.evidence["request_id"]


def test_404_is_not_found(fake: FakeGitHub, client: GitHubClient) -> None:
    with pytest.raises(NotFound) as missing:
        client.get(
            "/repos/{owner}/{repo}/issues/{issue_number}",
            {**WIDGETS, "issue_number": 999},
            installation=INSTALLATION,
        )
    assert missing.value.failure_class == "deterministic" and missing.value.status == 404


def test_graphql_errors_are_classified(fake: FakeGitHub, client: GitHubClient) -> None:
    mutation = """mutation($id: ID!) {
      markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { id } } }"""
    with pytest.raises(NotFound) as unknown:
        client.graphql(mutation, installation=INSTALLATION, variables={"id": "PR_nope"})
    assert "PR_nope" in str(unknown.value)


def test_403_without_a_rate_limit_is_an_authority_decision(
    fake: FakeGitHub, token_client: GitHubClient, origin: Any
) -> None:
    run = {"name": "ratchet/verify", "head_sha": origin.main_sha}
    with pytest.raises(Forbidden) as refused:
        token_client.post("/repos/{owner}/{repo}/check-runs", WIDGETS, data=run, installation=None)
    assert refused.value.failure_class == "authority" and refused.value.status == 403
    assert "grant the App the permission" in str(refused.value)


def test_401_for_an_unknown_token_is_not_retried(fake: FakeGitHub) -> None:
    stranger = TokenCredentials.from_values(token="not-a-token-github-knows", api_url=fake.base_url)
    client = GitHubClient(stranger, mutation_interval=0.0)
    with pytest.raises(BadCredentials) as refused:
        client.get("/repos/{owner}/{repo}", WIDGETS, installation=None)
    assert refused.value.failure_class == "deterministic"
    assert len(fake.calls()) == 1


def test_tokens_never_reach_logs_exceptions_or_evidence(
    fake: FakeGitHub, client: GitHubClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = client.installation_token(INSTALLATION)
    failures: list[GitHubFailure] = []
    fake.inject("POST", COMMENTS, faults.drop_after_apply())
    fake.inject("GET", "/repos/{owner}/{repo}", faults.http_502())
    fake.inject(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        faults.secondary_rate_limit(retry_after=600),
    )
    calls = [
        # Even a body holding the token (never done on purpose) is not logged.
        lambda: client.post(COMMENTS, ISSUE, data={"body": token}, installation=INSTALLATION),
        lambda: client.get("/repos/{owner}/{repo}", WIDGETS, installation=INSTALLATION),
        lambda: client.get(
            "/repos/{owner}/{repo}/pulls/{pull_number}",
            {**WIDGETS, "pull_number": 404},
            installation=INSTALLATION,
        ),
        lambda: client.get(
            "/repos/{owner}/{repo}/issues/{issue_number}", ISSUE, installation=INSTALLATION
        ),
    ]
    for call in calls:
        with pytest.raises(GitHubFailure) as failed:
            call()
        failures.append(failed.value)
    assert [type(f).__name__ for f in failures] == [
        "OutcomeUnknown",
        "GitHubUnavailable",
        "NotFound",
        "RateLimited",
    ]
    assert caplog.records, "the client logs its calls"
    assert any("installation 77" in r.getMessage() for r in caplog.records)
    for text in [caplog.text, *(str(f) for f in failures), *(repr(f.evidence) for f in failures)]:
        assert token not in text
    assert token not in repr(client)
