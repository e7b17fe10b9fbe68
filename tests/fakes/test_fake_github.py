"""The fake GitHub, exercised by real clients over real HTTP: httpx and gidgethub on aiohttp."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import gidgethub
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gidgethub import apps
from gidgethub.aiohttp import GitHubAPI

from tests.fakes.conftest import APP_ID, APP_SLUG, BRANCH, OWNER, REPO, Origin, app_jwt
from tests.fakes.fakegithub import AuthKind, FakeGitHub, faults
from tests.gitrepo import git

T = TypeVar("T")
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
ISSUE_COMMENTS = f"/repos/{OWNER}/{REPO}/issues/1/comments"


def with_gidgethub(
    fake: FakeGitHub, work: Callable[[GitHubAPI], Awaitable[T]], *, oauth_token: str | None = None
) -> T:
    """Run ``work`` with a gidgethub client on aiohttp pointed at the fake."""

    async def main() -> T:
        async with aiohttp.ClientSession() as session:
            gh = GitHubAPI(
                session, "ratchet-tests", base_url=fake.base_url, oauth_token=oauth_token
            )
            return await work(gh)

    return asyncio.run(main())


def client(fake: FakeGitHub, token: str | None = None, *, scheme: str = "token") -> httpx.Client:
    """An httpx client for the fake (plain HTTP: no TLS context to build, which costs 30 ms)."""
    headers = {"Authorization": f"{scheme} {token}"} if token is not None else {}
    return httpx.Client(base_url=fake.base_url, headers=headers, verify=False)


def as_app(fake: FakeGitHub, token: str) -> httpx.Client:
    return client(fake, token, scheme="Bearer")


# -- App authentication ---------------------------------------------------------------------


def test_app_jwt_from_gidgethub_is_accepted_and_mints_an_installation_token(
    fake: FakeGitHub, app_key: bytes
) -> None:
    async def work(gh: GitHubAPI) -> tuple[Any, Any, dict[str, Any]]:
        token = apps.get_jwt(app_id=str(APP_ID), private_key=app_key)
        me = await gh.getitem("/app", jwt=token)
        installation = await gh.getitem(f"/repos/{OWNER}/{REPO}/installation", jwt=token)
        access = await apps.get_installation_access_token(
            gh, installation_id=str(installation["id"]), app_id=str(APP_ID), private_key=app_key
        )
        return me, installation, access

    me, installation, access = with_gidgethub(fake, work)
    assert (me["id"], me["slug"], me["owner"]["type"]) == (APP_ID, APP_SLUG, "Organization")
    assert installation["id"] == 77 and installation["app_id"] == APP_ID
    assert access["token"].startswith("ghs_") and access["expires_at"].endswith("Z")
    assert access["permissions"]["checks"] == "write"
    assert [c.auth for c in fake.calls()] == [AuthKind.JWT] * 3
    fake.assert_clean()


def test_an_integer_iss_is_accepted(fake: FakeGitHub, app_key: bytes) -> None:
    now = int(time.time())
    claims = {"iat": now - 60, "exp": now + 500, "iss": APP_ID}  # PyJWT refuses to encode ints
    token = jwt.api_jws.encode(json.dumps(claims).encode(), app_key, algorithm="RS256")
    with as_app(fake, token) as http:
        response = http.get("/app")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("make_token", "status", "message"),
    [
        (lambda key: app_jwt(key, iat_offset=-700), 401, "'Expiration time' claim ('exp') must"),
        (lambda key: app_jwt(key, iat_offset=0, lifetime=660), 401, "too far in the future"),
        (lambda key: app_jwt(key, iat_offset=120), 401, "'Issued at' claim ('iat')"),
        (lambda key: app_jwt(key, iss="999"), 404, "Integration not found"),
        (lambda key: app_jwt(key)[:-4] + "AAAA", 401, "A JSON web token could not be decoded"),
        (lambda key: "ghs_notajwt", 401, "A JSON web token could not be decoded"),
    ],
    ids=["expired", "exp-too-far", "iat-in-future", "unknown-app", "bad-signature", "not-a-jwt"],
)
def test_bad_app_jwts_are_refused_with_githubs_messages(
    fake: FakeGitHub,
    app_key: bytes,
    make_token: Callable[[bytes], str],
    status: int,
    message: str,
) -> None:
    with as_app(fake, make_token(app_key)) as http:
        response = http.get("/app")
    assert response.status_code == status
    assert message in response.json()["message"]
    assert response.json()["documentation_url"] == "https://docs.github.com/rest"
    assert fake.calls()[-1].auth is AuthKind.INVALID


def test_githubs_documented_jwt_example_is_accepted(fake: FakeGitHub, app_key: bytes) -> None:
    # iat a minute back, exp ten minutes ahead: GitHub checks exp against its own clock.
    with as_app(fake, app_jwt(app_key, iat_offset=-60, lifetime=660)) as http:
        assert http.get("/app").status_code == 200


def test_a_key_that_is_not_the_apps_cannot_sign_for_it(fake: FakeGitHub) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with as_app(fake, app_jwt(other)) as http:
        response = http.get("/app")
    assert (response.status_code, response.json()["message"]) == (
        401,
        "A JSON web token could not be decoded",
    )


def test_a_jwt_cannot_write_where_github_wants_an_installation_token(
    fake: FakeGitHub, app_key: bytes
) -> None:
    with as_app(fake, app_jwt(app_key)) as http:
        response = http.post(ISSUE_COMMENTS, json={"body": "hi"})
    assert response.status_code == 403
    assert response.json()["message"] == "Resource not accessible by integration"
    assert fake.comments(OWNER, REPO, 1) == []


# -- tokens -----------------------------------------------------------------------------------


def test_installation_token_authors_as_the_bot_and_expires_after_an_hour(
    fake: FakeGitHub, token: str
) -> None:
    async def post(gh: GitHubAPI) -> Any:
        return await gh.post(ISSUE_COMMENTS, data={"body": "On it"}, oauth_token=token)

    created = with_gidgethub(fake, post)
    assert created["user"]["login"] == f"{APP_SLUG}[bot]"
    assert created["user"]["type"] == "Bot"
    assert created["performed_via_github_app"]["slug"] == APP_SLUG
    assert created["html_url"].endswith(f"/{OWNER}/{REPO}/issues/1#issuecomment-{created['id']}")
    [comment] = fake.comments(OWNER, REPO, 1)
    assert (comment.body, comment.user.login) == ("On it", f"{APP_SLUG}[bot]")

    fake.advance_clock(3601)
    with pytest.raises(gidgethub.BadRequest) as refused:
        with_gidgethub(fake, post)
    assert refused.value.status_code == 401
    assert str(refused.value) == "Bad credentials"


def test_installation_tokens_can_be_narrowed(fake: FakeGitHub, app_key: bytes) -> None:
    with as_app(fake, app_jwt(app_key)) as app:
        narrowed = app.post(
            "/app/installations/77/access_tokens",
            json={"repositories": [REPO], "permissions": {"issues": "read"}},
        )
        too_wide = app.post(
            "/app/installations/77/access_tokens", json={"permissions": {"administration": "write"}}
        )
    assert narrowed.status_code == 201
    assert narrowed.json()["permissions"] == {"issues": "read"}
    assert [r["full_name"] for r in narrowed.json()["repositories"]] == [f"{OWNER}/{REPO}"]
    assert too_wide.status_code == 422
    with client(fake, narrowed.json()["token"]) as http:
        assert http.get(f"/repos/{OWNER}/{REPO}/issues/1").status_code == 200
        assert http.post(ISSUE_COMMENTS, json={"body": "x"}).status_code == 403


def test_unknown_token_and_bearer_scheme(fake: FakeGitHub, token: str) -> None:
    url = f"/repos/{OWNER}/{REPO}/issues/1"
    with client(fake, "ghs_unknown") as unknown, client(fake, token, scheme="Bearer") as bearer:
        assert unknown.get(url).status_code == 401
        assert bearer.get(url).status_code == 200


def test_a_read_only_actions_token_cannot_create_check_runs(
    fake: FakeGitHub, origin: Origin
) -> None:
    fake.add_token(
        "ghs_actions_readonly",
        login="github-actions[bot]",
        permissions={"checks": "read", "contents": "read", "metadata": "read"},
    )
    with client(fake, "ghs_actions_readonly") as http:
        refused = http.post(
            f"/repos/{OWNER}/{REPO}/check-runs",
            json={"name": "ratchet/verify", "head_sha": origin.main_sha},
        )
        listed = http.get(f"/repos/{OWNER}/{REPO}/commits/main/check-runs")
    assert refused.status_code == 403
    assert refused.json()["message"] == "Resource not accessible by integration"
    assert refused.headers["x-accepted-github-permissions"] == "checks=write"
    assert listed.json() == {"total_count": 0, "check_runs": []}


def test_private_repositories_are_404_to_strangers(fake: FakeGitHub, origin: Origin) -> None:
    fake.create_repo(OWNER, "secret", git_dir=origin.bare, private=True)
    with client(fake) as anonymous:
        assert anonymous.get(f"/repos/{OWNER}/secret").status_code == 404
        public = anonymous.get(f"/repos/{OWNER}/{REPO}")
        anonymous_write = anonymous.post(ISSUE_COMMENTS, json={"body": "x"})
    assert public.status_code == 200 and public.json()["default_branch"] == "main"
    assert (anonymous_write.status_code, anonymous_write.json()["message"]) == (
        401,
        "Requires authentication",
    )


# -- comments and pagination --------------------------------------------------------------------


def test_comment_pages_carry_githubs_link_header_and_gidgethub_follows_it(
    fake: FakeGitHub, token: str
) -> None:
    with client(fake, token) as http:
        repo_id = http.get(f"/repos/{OWNER}/{REPO}").json()["id"]
        for n in range(5):
            assert http.post(ISSUE_COMMENTS, json={"body": f"c{n}"}).status_code == 201
        first = http.get(ISSUE_COMMENTS, params={"per_page": 2})
        middle = http.get(ISSUE_COMMENTS, params={"per_page": 2, "page": 2})
        last = http.get(ISSUE_COMMENTS, params={"per_page": 2, "page": 3})
        whole = http.get(ISSUE_COMMENTS)

    def page(number: int) -> str:
        base = f"{fake.base_url}/repositories/{repo_id}/issues/1/comments"
        return f"<{base}?per_page=2&page={number}>"

    assert first.headers["link"] == f'{page(2)}; rel="next", {page(3)}; rel="last"'
    assert middle.headers["link"] == (
        f'{page(1)}; rel="prev", {page(3)}; rel="next", {page(3)}; rel="last", '
        f'{page(1)}; rel="first"'
    )
    assert last.headers["link"] == f'{page(2)}; rel="prev", {page(1)}; rel="first"'
    assert "link" not in whole.headers
    assert [c["body"] for c in last.json()] == ["c4"]

    async def every(gh: GitHubAPI) -> list[Any]:
        url = f"{ISSUE_COMMENTS}?per_page=2"
        return [c async for c in gh.getiter(url, oauth_token=token)]

    assert [c["body"] for c in with_gidgethub(fake, every)] == [f"c{n}" for n in range(5)]
    fake.assert_clean()


def test_editing_a_comment_and_reacting_once(fake: FakeGitHub, token: str) -> None:
    with client(fake, token) as http:
        comment = http.post(ISSUE_COMMENTS, json={"body": "draft"}).json()
        url = f"/repos/{OWNER}/{REPO}/issues/comments/{comment['id']}"
        edited = http.patch(url, json={"body": "final"})
        first = http.post(f"{url}/reactions", json={"content": "eyes"})
        again = http.post(f"{url}/reactions", json={"content": "eyes"})
        listed = http.get(f"{url}/reactions")
        fetched = http.get(url)
    assert edited.status_code == 200 and edited.json()["body"] == "final"
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert [r["content"] for r in listed.json()] == ["eyes"]
    assert fetched.json()["reactions"]["eyes"] == 1
    assert [r.content for r in fake.reactions(OWNER, REPO, comment["id"])] == ["eyes"]


def test_labels_are_added_created_and_removed(fake: FakeGitHub, token: str) -> None:
    labels = f"/repos/{OWNER}/{REPO}/issues/1/labels"
    with client(fake, token) as http:
        added = http.post(labels, json={"labels": ["ratchet", "needs-approval"]})
        removed = http.delete(f"{labels}/needs-approval")
        missing = http.delete(f"{labels}/needs-approval")
    assert [label["name"] for label in added.json()] == ["ratchet", "needs-approval"]
    assert [label["name"] for label in removed.json()] == ["ratchet"]
    assert (missing.status_code, missing.json()["message"]) == (404, "Label does not exist")
    assert fake.labels(OWNER, REPO, 1) == ["ratchet"]


# -- faults, seen by real clients ---------------------------------------------------------------


def test_http_502_refuses_before_applying(fake: FakeGitHub, token: str) -> None:
    fake.inject("POST", COMMENTS, faults.http_502(), times=1)

    async def post(gh: GitHubAPI) -> Any:
        return await gh.post(ISSUE_COMMENTS, data={"body": "hello"}, oauth_token=token)

    with pytest.raises(gidgethub.GitHubBroken):
        with_gidgethub(fake, post)
    assert fake.comments(OWNER, REPO, 1) == []
    with_gidgethub(fake, post)  # the fault fired its one time
    assert [c.body for c in fake.comments(OWNER, REPO, 1)] == ["hello"]
    assert [c.fault for c in fake.calls(method="POST", path_pattern=COMMENTS)] == [
        "http_502",
        None,
    ]


def test_drop_after_apply_creates_the_comment_but_the_client_sees_a_connection_error(
    fake: FakeGitHub, token: str
) -> None:
    fake.inject("POST", COMMENTS, faults.drop_after_apply(), times=2)

    async def post(gh: GitHubAPI) -> Any:
        return await gh.post(ISSUE_COMMENTS, data={"body": "lost ack"}, oauth_token=token)

    with pytest.raises(aiohttp.ServerDisconnectedError):
        with_gidgethub(fake, post)
    with client(fake, token) as http, pytest.raises(httpx.RemoteProtocolError):
        http.post(ISSUE_COMMENTS, json={"body": "lost ack"})
    assert [c.body for c in fake.comments(OWNER, REPO, 1)] == ["lost ack", "lost ack"]
    dropped = fake.calls(method="POST", path_pattern=COMMENTS)
    assert [(c.status, c.fault) for c in dropped] == [(None, "drop_after_apply")] * 2
    assert dropped[0].response["body"] == "lost ack"  # what would have been answered


def test_delay_applies_after_the_sleep_even_when_the_client_gave_up(
    fake: FakeGitHub, token: str
) -> None:
    fake.inject("POST", COMMENTS, faults.delay(0.3))
    with client(fake, token) as http, pytest.raises(httpx.ReadTimeout):
        http.post(ISSUE_COMMENTS, json={"body": "slow"}, timeout=0.1)
    assert fake.comments(OWNER, REPO, 1) == []
    deadline = time.monotonic() + 30  # a backstop: it lands 0.3 s after
    while not fake.comments(OWNER, REPO, 1) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [c.body for c in fake.comments(OWNER, REPO, 1)] == ["slow"]


def test_primary_rate_limit_is_rate_limit_exceeded_for_gidgethub(
    fake: FakeGitHub, token: str
) -> None:
    fake.inject("GET", "/repos/{owner}/{repo}/issues/{issue_number}", faults.primary_rate_limit())

    async def get(gh: GitHubAPI) -> Any:
        return await gh.getitem(f"/repos/{OWNER}/{REPO}/issues/1", oauth_token=token)

    before = fake.clock.now()
    with pytest.raises(gidgethub.RateLimitExceeded) as limited:
        with_gidgethub(fake, get)
    after = fake.clock.now()
    assert limited.value.rate_limit.remaining == 0
    # The fault's default: a reset 3 s after the fake's clock read when it answered.
    reset = limited.value.rate_limit.reset_datetime.timestamp()
    assert int(before) + 3 <= reset <= int(after) + 3
    assert "API rate limit exceeded for installation ID 77" in str(limited.value)
    assert with_gidgethub(fake, get)["number"] == 1


def test_secondary_rate_limit_carries_retry_after_and_budget_left(
    fake: FakeGitHub, token: str
) -> None:
    fake.inject("POST", COMMENTS, faults.secondary_rate_limit(retry_after=7))

    async def post(gh: GitHubAPI) -> Any:
        return await gh.post(ISSUE_COMMENTS, data={"body": "x"}, oauth_token=token)

    with pytest.raises(gidgethub.BadRequest) as limited:
        with_gidgethub(fake, post)
    assert not isinstance(limited.value, gidgethub.RateLimitExceeded)
    assert limited.value.status_code == 403
    assert limited.value.headers["retry-after"] == "7"
    assert int(limited.value.headers["x-ratelimit-remaining"]) > 0
    assert "secondary rate limit" in str(limited.value)
    assert fake.comments(OWNER, REPO, 1) == []


def test_every_response_carries_githubs_headers(fake: FakeGitHub, token: str) -> None:
    with client(fake, token) as http:
        ok = http.get(f"/repos/{OWNER}/{REPO}/issues/1")
        missing = http.get(f"/repos/{OWNER}/{REPO}/issues/99")
        cached = http.get(
            f"/repos/{OWNER}/{REPO}/issues/1", headers={"If-None-Match": ok.headers["etag"]}
        )
    for response in (ok, missing):
        assert response.headers["content-type"].startswith("application/json")
        assert response.headers["x-github-request-id"]
        for name in ("limit", "remaining", "reset", "used", "resource"):
            assert response.headers[f"x-ratelimit-{name}"]
    assert int(missing.headers["x-ratelimit-used"]) > int(ok.headers["x-ratelimit-used"])
    assert ok.headers["x-ratelimit-resource"] == "core"
    assert cached.status_code == 304


# -- check runs -------------------------------------------------------------------------------


def _annotations(count: int) -> list[dict[str, Any]]:
    return [
        {
            "path": "fix.txt",
            "start_line": n + 1,
            "end_line": n + 1,
            "annotation_level": "warning",
            "message": f"m{n}",
        }
        for n in range(count)
    ]


def test_check_runs_follow_githubs_rules(fake: FakeGitHub, token: str, origin: Origin) -> None:
    runs = f"/repos/{OWNER}/{REPO}/check-runs"
    output = {"title": "Verify", "summary": "ok"}
    with client(fake, token) as http:
        too_many = http.post(
            runs,
            json={
                "name": "ratchet/verify",
                "head_sha": origin.branch_sha,
                "output": {**output, "annotations": _annotations(51)},
            },
        )
        too_long = http.post(
            runs,
            json={
                "name": "ratchet/verify",
                "head_sha": origin.branch_sha,
                "output": {"title": "t", "summary": "x" * 65536},
            },
        )
        unknown_sha = http.post(runs, json={"name": "ratchet/verify", "head_sha": "f" * 40})
        created = http.post(
            runs,
            json={
                "name": "ratchet/verify",
                "head_sha": origin.branch_sha,
                "external_id": "run-1:verify",
                "status": "in_progress",
                "output": {**output, "annotations": _annotations(50)},
            },
        )
        run_url = f"{runs}/{created.json()['id']}"
        completed = http.patch(
            run_url,
            json={"conclusion": "success", "output": {**output, "annotations": _annotations(30)}},
        )
        listed = http.get(
            f"/repos/{OWNER}/{REPO}/commits/{BRANCH}/check-runs",
            params={"check_name": "ratchet/verify"},
        )
        annotations = http.get(f"{run_url}/annotations", params={"per_page": 100})
        fetched = http.get(run_url)
    assert too_many.status_code == 422 and too_long.status_code == 422
    assert unknown_sha.status_code == 422
    assert unknown_sha.json()["message"] == f"No commit found for SHA: {'f' * 40}"
    assert len(fake.validation_failures) == 2
    assert created.status_code == 201
    assert created.json()["external_id"] == "run-1:verify"
    assert created.json()["app"]["slug"] == APP_SLUG
    body = completed.json()
    assert (body["status"], body["conclusion"]) == ("completed", "success")
    assert body["completed_at"] is not None
    assert body["output"]["annotations_count"] == 80  # annotations accumulate across updates
    assert len(annotations.json()) == 80
    assert fetched.json() == completed.json()
    assert listed.json()["total_count"] == 1
    assert listed.json()["check_runs"][0]["external_id"] == "run-1:verify"
    [stored] = fake.check_runs(OWNER, REPO, origin.branch_sha)
    assert (stored.external_id, len(stored.annotations)) == ("run-1:verify", 80)


def test_completed_without_conclusion_is_refused(
    fake: FakeGitHub, token: str, origin: Origin
) -> None:
    with client(fake, token) as http:
        refused = http.post(
            f"/repos/{OWNER}/{REPO}/check-runs",
            json={"name": "n", "head_sha": origin.main_sha, "status": "completed"},
        )
    assert refused.status_code == 422
    assert fake.check_runs(OWNER, REPO) == []
    assert fake.validation_failures[-1].problems == ('"conclusion" wasn\'t supplied.',)


# -- pull requests and GraphQL ------------------------------------------------------------------


def test_pull_requests_are_created_once_and_found_by_head(
    fake: FakeGitHub, token: str, origin: Origin
) -> None:
    pulls = f"/repos/{OWNER}/{REPO}/pulls"
    spec = {"title": "Fix widgets", "head": BRANCH, "base": "main", "draft": True, "body": "spec"}

    async def create(gh: GitHubAPI) -> Any:
        return await gh.post(pulls, data=spec, oauth_token=token)

    created = with_gidgethub(fake, create)
    assert (created["number"], created["draft"], created["head"]["sha"]) == (
        2,
        True,
        origin.branch_sha,
    )
    assert created["user"]["login"] == f"{APP_SLUG}[bot]"
    assert created["commits"] == 1 and created["changed_files"] == 1
    with pytest.raises(gidgethub.ValidationError) as duplicate:
        with_gidgethub(fake, create)
    assert f"A pull request already exists for {OWNER}:{BRANCH}." in str(duplicate.value)

    with client(fake, token) as http:
        missing_head = http.post(pulls, json={**spec, "head": "nope"})
        found = http.get(pulls, params={"head": f"{OWNER}:{BRANCH}", "state": "all"})
        other = http.get(pulls, params={"head": f"{OWNER}:other", "state": "all"})
        bare_branch = http.get(pulls, params={"head": "other", "state": "all"})
        closed = http.patch(f"{pulls}/2", json={"state": "closed", "draft": False})
        open_now = http.get(pulls)
    assert missing_head.status_code == 422
    assert missing_head.json()["errors"] == [
        {"resource": "PullRequest", "field": "head", "code": "invalid"}
    ]
    assert [p["number"] for p in found.json()] == [2]
    assert other.json() == []
    assert [p["number"] for p in bare_branch.json()] == [2]  # GitHub ignores a bare branch
    assert (closed.json()["state"], closed.json()["draft"]) == ("closed", True)
    assert open_now.json() == []
    fake.assert_clean()


def test_open_pull_request_head_follows_pushes(
    fake: FakeGitHub, token: str, origin: Origin
) -> None:
    number = fake.create_pull(OWNER, REPO, head=BRANCH, base="main", title="t", draft=True)
    new_head = origin.push_commit(BRANCH, {"more.txt": "more\n"})
    with client(fake, token) as http:
        pull = http.get(f"/repos/{OWNER}/{REPO}/pulls/{number}").json()
    assert pull["head"]["sha"] == new_head and pull["commits"] == 2


def test_seeded_review_comments_are_listed_in_order(
    fake: FakeGitHub, token: str, origin: Origin
) -> None:
    number = fake.create_pull(OWNER, REPO, head=BRANCH, base="main", title="t")
    first = fake.add_review_comment(
        OWNER, REPO, number, body="why?", path="fix.txt", line=1, author="alice"
    )
    fake.add_review_comment(
        OWNER, REPO, number, body="because", path="fix.txt", line=1, author="bob", in_reply_to=first
    )
    with client(fake, token) as http:
        listed = http.get(f"/repos/{OWNER}/{REPO}/pulls/{number}/comments")
    assert [(c["body"], c["user"]["login"]) for c in listed.json()] == [
        ("why?", "alice"),
        ("because", "bob"),
    ]
    assert listed.json()[0]["commit_id"] == origin.branch_sha
    assert listed.json()[1]["in_reply_to_id"] == first


def test_graphql_marks_a_draft_ready_for_review(fake: FakeGitHub, token: str) -> None:
    number = fake.create_pull(OWNER, REPO, head=BRANCH, base="main", title="t", draft=True)
    node_id = fake.pull(OWNER, REPO, number).node_id
    with_variables = """
        mutation($id: ID!) {
          markPullRequestReadyForReview(input: {pullRequestId: $id}) {
            pullRequest { id isDraft number }
          }
        }"""

    async def ready(gh: GitHubAPI) -> Any:
        # gidgethub's graphql() takes the token from the client only: a per-call oauth_token
        # would become a GraphQL variable (and GitHub would answer 401).
        return await gh.graphql(with_variables, endpoint=fake.graphql_url, id=node_id)

    result = with_gidgethub(fake, ready, oauth_token=token)
    assert result["markPullRequestReadyForReview"]["pullRequest"] == {
        "id": node_id,
        "isDraft": False,
        "number": number,
    }
    assert fake.pull(OWNER, REPO, number).draft is False
    with client(fake, token) as http:
        inline = http.post(
            "/graphql",
            json={
                "query": f"mutation {{ r: markPullRequestReadyForReview(input: {{pullRequestId: "
                f'"{node_id}"}}) {{ clientMutationId pullRequest {{ isDraft }} }} }}'
            },
        )
        unknown = http.post(
            "/graphql",
            json={
                "query": "mutation($input: MarkPullRequestReadyForReviewInput!) "
                "{ markPullRequestReadyForReview(input: $input) { pullRequest { id } } }",
                "variables": {"input": {"pullRequestId": "PR_nope"}},
            },
        )
    assert inline.json() == {
        "data": {"r": {"clientMutationId": None, "pullRequest": {"isDraft": False}}}
    }
    assert unknown.status_code == 200
    [error] = unknown.json()["errors"]
    assert error["type"] == "NOT_FOUND"
    assert error["message"] == "Could not resolve to a node with the global id of 'PR_nope'."
    assert fake.calls(path_pattern="/graphql")[0].operation_id == "graphql"
    fake.assert_clean()


# -- git data, live from the bare repository -------------------------------------------------


def test_refs_and_branches_are_read_live_from_the_bare_repository(
    fake: FakeGitHub, token: str, origin: Origin
) -> None:
    with client(fake, token) as http:
        absent = http.get(f"/repos/{OWNER}/{REPO}/git/ref/heads/ratchet/issue-2")
        pushed = origin.push_commit("ratchet/issue-2", {"two.txt": "2\n"})
        present = http.get(f"/repos/{OWNER}/{REPO}/git/ref/heads/ratchet/issue-2")
        moved = origin.push_commit("ratchet/issue-2", {"two.txt": "2 again\n"})
        again = http.get(f"/repos/{OWNER}/{REPO}/git/ref/heads/ratchet/issue-2")
        matching = http.get(f"/repos/{OWNER}/{REPO}/git/matching-refs/heads/ratchet/")
        branch = http.get(f"/repos/{OWNER}/{REPO}/branches/ratchet%2Fissue-2")
        no_branch = http.get(f"/repos/{OWNER}/{REPO}/branches/nope")
    assert absent.status_code == 404
    assert present.json()["object"] == {
        "type": "commit",
        "sha": pushed,
        "url": f"{fake.base_url}/repos/{OWNER}/{REPO}/git/commits/{pushed}",
    }
    assert again.json()["object"]["sha"] == moved != pushed
    assert [r["ref"] for r in matching.json()] == [
        "refs/heads/ratchet/issue-1",
        "refs/heads/ratchet/issue-2",
    ]
    assert branch.json()["name"] == "ratchet/issue-2"
    assert branch.json()["commit"]["sha"] == moved
    assert branch.json()["commit"]["parents"][0]["sha"] == pushed
    assert (no_branch.status_code, no_branch.json()["message"]) == (404, "Branch not found")

    git(origin.bare, "symbolic-ref", "HEAD", "refs/heads/ratchet/issue-2")
    with client(fake, token) as http:
        assert http.get(f"/repos/{OWNER}/{REPO}").json()["default_branch"] == "ratchet/issue-2"


# -- permissions ------------------------------------------------------------------------------


def test_collaborator_permissions_map_roles_like_github(
    fake: FakeGitHub, token: str, origin: Origin, app_key: bytes
) -> None:
    for login, role in [("mia", "maintain"), ("tom", "triage"), ("ada", "admin")]:
        fake.set_permission(OWNER, REPO, login, role)
    fake.mark_missing_user("ghost")
    fake.create_repo(OWNER, "private", git_dir=origin.bare, private=True)
    fake.install_app(account=OWNER, installation_id=78)
    with client(fake, token) as http:

        def permission(repo: str, login: str) -> tuple[int, Any]:
            response = http.get(f"/repos/{OWNER}/{repo}/collaborators/{login}/permission")
            body = response.json()
            return response.status_code, (body.get("permission"), body.get("role_name"))

        assert permission(REPO, "mia") == (200, ("write", "maintain"))
        assert permission(REPO, "tom") == (200, ("read", "triage"))
        assert permission(REPO, "ada") == (200, ("admin", "admin"))
        assert permission(REPO, "stranger") == (200, ("read", "read"))
        assert permission(REPO, "ghost")[0] == 404
        assert permission("private", "stranger")[0] == 404  # token 77 covers widgets only
    with as_app(fake, app_jwt(app_key)) as app:
        all_repos = app.post("/app/installations/78/access_tokens").json()["token"]
    with client(fake, all_repos) as http:
        body = http.get(f"/repos/{OWNER}/private/collaborators/stranger/permission").json()
    assert (body["permission"], body["role_name"]) == ("none", "none")


# -- validation ---------------------------------------------------------------------------------


def test_requests_github_would_refuse_are_recorded(fake: FakeGitHub, token: str) -> None:
    comment_id = fake.add_issue_comment(OWNER, REPO, 1, body="/approve", author="alice")
    with client(fake, token) as http:
        bad_reaction = http.post(
            f"/repos/{OWNER}/{REPO}/issues/comments/{comment_id}/reactions",
            json={"content": "smile"},
        )
        missing_body = http.post(ISSUE_COMMENTS, json={"text": "wrong key"})
        not_json = http.post(
            ISSUE_COMMENTS, content=b"{nope", headers={"content-type": "application/json"}
        )
        bad_query = http.get(f"/repos/{OWNER}/{REPO}/pulls", params={"state": "merged"})
        unknown = http.get(f"/repos/{OWNER}/{REPO}/issues/1/timeline")
    assert bad_reaction.status_code == 422
    assert bad_reaction.json()["message"].startswith("Invalid request.\n\n")
    assert missing_body.json()["message"] == 'Invalid request.\n\n"body" wasn\'t supplied.'
    assert (not_json.status_code, not_json.json()["message"]) == (400, "Problems parsing JSON")
    assert bad_query.status_code == 422
    assert (unknown.status_code, unknown.json()["message"]) == (404, "Not Found")
    assert [f.call.operation_id for f in fake.validation_failures] == [
        "reactions/create-for-issue-comment",
        "issues/create-comment",
        "issues/create-comment",
        "pulls/list",
    ]
    assert [c.path for c in fake.unknown_calls] == [f"/repos/{OWNER}/{REPO}/issues/1/timeline"]
    assert fake.comments(OWNER, REPO, 1)[0].body == "/approve"
    with pytest.raises(AssertionError, match="invalid request POST"):
        fake.assert_clean()
