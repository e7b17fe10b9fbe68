"""The client's happy paths over real HTTP: REST verbs, pagination, GraphQL, token mode."""

from __future__ import annotations

import pytest

from github.client import GitHubClient
from tests.fakes.conftest import APP_SLUG, BRANCH, OWNER, REPO
from tests.fakes.fakegithub import FakeGitHub
from tests.github.conftest import ACTIONS_TOKEN, INSTALLATION

WIDGETS = {"owner": OWNER, "repo": REPO}
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
LABEL = "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"
# REST cannot take a pull request out of draft; this mutation can.
READY = """
    mutation($id: ID!) {
      markPullRequestReadyForReview(input: {pullRequestId: $id}) {
        pullRequest { id isDraft number }
      }
    }"""


def test_post_patch_get_and_delete_as_the_apps_bot(fake: FakeGitHub, client: GitHubClient) -> None:
    issue = {**WIDGETS, "issue_number": 1}
    created = client.post(COMMENTS, issue, data={"body": "first"}, installation=INSTALLATION)
    assert created["user"]["login"] == f"{APP_SLUG}[bot]"
    where = {**WIDGETS, "comment_id": created["id"]}
    client.patch(COMMENT, where, data={"body": "edited"}, installation=INSTALLATION)
    assert client.get(COMMENT, where, installation=INSTALLATION)["body"] == "edited"
    assert fake.comment(OWNER, REPO, created["id"]).body == "edited"

    labels = "/repos/{owner}/{repo}/issues/{issue_number}/labels"
    client.post(labels, issue, data={"labels": ["ratchet"]}, installation=INSTALLATION)
    client.delete(LABEL, {**issue, "name": "ratchet"}, installation=INSTALLATION)
    assert fake.labels(OWNER, REPO, 1) == []


def test_getiter_follows_every_page(fake: FakeGitHub, client: GitHubClient) -> None:
    for n in range(5):
        fake.add_issue_comment(OWNER, REPO, 1, body=f"comment {n}", author="alice")
    url = "/repos/{owner}/{repo}/issues/{issue_number}/comments{?per_page}"
    where = {**WIDGETS, "issue_number": 1, "per_page": 2}
    items = client.getiter(url, where, installation=INSTALLATION)
    assert [c["body"] for c in items] == [f"comment {n}" for n in range(5)]
    pages = fake.calls(method="GET", path_pattern=COMMENTS)
    assert len(pages) == 3 and all(p.query.get("per_page") == "2" for p in pages)


def test_getiter_reads_a_list_inside_an_object(fake: FakeGitHub, client: GitHubClient) -> None:
    url = "/repos/{owner}/{repo}/commits/{ref}/check-runs"
    runs = client.getiter(
        url, {**WIDGETS, "ref": "main"}, installation=INSTALLATION, iterable_key="check_runs"
    )
    assert runs == []


def test_graphql_marks_a_draft_ready_for_review(fake: FakeGitHub, client: GitHubClient) -> None:
    number = fake.create_pull(OWNER, REPO, head=BRANCH, base="main", title="t", draft=True)
    node_id = fake.pull(OWNER, REPO, number).node_id
    data = client.graphql(READY, installation=INSTALLATION, variables={"id": node_id})
    assert data["markPullRequestReadyForReview"]["pullRequest"] == {
        "id": node_id,
        "isDraft": False,
        "number": number,
    }
    assert fake.pull(OWNER, REPO, number).draft is False
    [call] = fake.calls(path_pattern="/graphql")
    assert call.status == 200 and call.actor == f"{APP_SLUG}[bot]"


def test_graphql_needs_an_installation(client: GitHubClient) -> None:
    with pytest.raises(ValueError, match="installation"):
        client.graphql(READY, installation=None, variables={"id": "PR_x"})


def test_token_mode_uses_the_token_for_every_call(
    fake: FakeGitHub, token_client: GitHubClient
) -> None:
    assert token_client.installation_id(OWNER, REPO) is None
    assert token_client.installation_token(None) == ACTIONS_TOKEN
    issue = {**WIDGETS, "issue_number": 1}
    created = token_client.post(COMMENTS, issue, data={"body": "from CI"}, installation=None)
    assert created["user"]["login"] == "github-actions[bot]"
    number = fake.create_pull(OWNER, REPO, head=BRANCH, base="main", title="t", draft=True)
    node_id = fake.pull(OWNER, REPO, number).node_id
    token_client.graphql(READY, installation=None, variables={"id": node_id})
    assert fake.pull(OWNER, REPO, number).draft is False
    assert not fake.calls(path_pattern="/app/installations/{installation_id}/access_tokens")
    with pytest.raises(ValueError, match="no installations"):
        token_client.get(COMMENTS, issue, installation=INSTALLATION)
    assert "actions-token" not in repr(token_client)
