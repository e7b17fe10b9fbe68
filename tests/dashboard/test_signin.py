"""Sign-in with GitHub against the fake GitHub's OAuth web flow, and who sees and does what.

The dashboard runs in Starlette's TestClient; the fake GitHub is a real HTTP server, so the
code exchange, ``GET /user`` and the permission lookups (with the App's installation token)
cross a real socket. The browser's part (following GitHub's redirect) is played by httpx.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import itsdangerous
import pytest
from starlette.testclient import TestClient

from app.dashboard.access import GitHubPermissions
from app.dashboard.config import Access, DashboardConfig, OAuthApp
from app.dashboard.sessions import SESSION_COOKIE, SESSION_MAX_AGE
from github.client import GitHubClient
from github.credentials import AppCredentials
from runner.ledger.records import NewRun
from runner.names import SignalKind
from tests.dashboard.conftest import dashboard_app, waiting_run
from tests.fakes.conftest import APP_ID
from tests.fakes.fakegithub import FakeGitHub
from tests.gitrepo import git

CLIENT_ID, CLIENT_SECRET = "Iv23liDashboardTest", "client-secret-for-tests"
SESSION_SECRET = "session-secret-for-tests"
API_TOKEN = "api-token-for-tests-0123456789"
APP = "http://testserver"  # the TestClient's origin


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("origin") / "repo.git"
    git(path.parent, "init", "--quiet", "--bare", str(path))
    return path


@pytest.fixture
def fake(app_key: bytes, bare: Path) -> Iterator[FakeGitHub]:
    """Two private repositories with the App installed: alice writes acme/widgets, bob
    reads it, nobody but the App sees acme/gadgets."""
    with FakeGitHub() as server:
        server.register_app(app_id=APP_ID, slug="ratchet", private_key_pem=app_key)
        for name in ("widgets", "gadgets"):
            server.create_repo("acme", name, git_dir=bare, private=True)
        server.install_app(repos=["acme/widgets", "acme/gadgets"], installation_id=77)
        server.set_permission("acme", "widgets", "alice", "write")
        server.set_permission("acme", "widgets", "bob", "read")
        server.oauth.add_client(client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
                                callback_url=f"{APP}/auth/callback")
        yield server
        server.assert_clean()


@pytest.fixture
def runs(store, fake: FakeGitHub) -> dict[str, str]:
    """A waiting run on each repository (and a local one nobody signed in may see)."""
    ids = {"widgets": "r-widgets", "gadgets": "r-gadgets", "local": "r-local"}
    waiting_run(store, ids["widgets"], repo=f"{fake.base_url}/acme/widgets.git")
    waiting_run(store, ids["gadgets"], repo=f"{fake.base_url}/acme/gadgets.git")
    store.create_run(NewRun(id=ids["local"], repo="/srv/local", title="local"))
    return ids


@pytest.fixture
def app(store, fake: FakeGitHub, app_key: bytes):
    config = DashboardConfig(
        access=Access.GITHUB, session_secret=SESSION_SECRET, web_url=fake.base_url,
        api_token=API_TOKEN, oauth=OAuthApp(CLIENT_ID, CLIENT_SECRET, fake.base_url,
                                            fake.base_url))
    client = GitHubClient(AppCredentials.from_values(
        app_id=str(APP_ID), private_key=app_key.decode(), api_url=fake.base_url),
        mutation_interval=0.0, request_timeout=5.0, clock=fake.clock.now)
    starlette, _ = dashboard_app(store, config, permissions=GitHubPermissions(client))
    return starlette


def sign_in(app, fake: FakeGitHub, login: str, *, wanted: str = "/") -> TestClient:
    """A browser session signed in as ``login`` through the whole web flow."""
    browser = TestClient(app)
    start = browser.get(f"/auth/github?next={wanted}", follow_redirects=False)
    assert start.status_code == 302
    fake.oauth.sign_in_browser(login)
    back = httpx.get(start.headers["location"], follow_redirects=False)  # GitHub's page
    assert back.status_code == 302, back.text
    landed = browser.get(back.headers["location"].removeprefix(APP), follow_redirects=False)
    assert landed.status_code == 303, landed.text
    assert landed.headers["location"] == wanted
    return browser


def test_sign_in_shows_only_runs_of_repositories_the_user_can_read(app, fake, runs):
    anonymous = TestClient(app)
    # No session: no page (a redirect to sign in), no API (401), no stream.
    page = anonymous.get(f"/runs/{runs['widgets']}", follow_redirects=False)
    assert page.status_code == 303
    assert page.headers["location"] == f"/login?next=%2Fruns%2F{runs['widgets']}"
    api = anonymous.get("/api/runs")
    assert api.status_code == 401 and api.headers["www-authenticate"].startswith("Bearer")
    assert anonymous.get("/live").status_code == 401
    assert 'id="sign-in"' in anonymous.get("/login").text

    start = anonymous.get("/auth/github?next=/", follow_redirects=False)
    authorize = urlsplit(start.headers["location"])
    params = parse_qs(authorize.query)
    assert f"{authorize.scheme}://{authorize.netloc}" == fake.base_url
    assert authorize.path == "/login/oauth/authorize"
    assert params["client_id"] == [CLIENT_ID]
    assert params["redirect_uri"] == [f"{APP}/auth/callback"] and params["state"][0]

    bob = sign_in(app, fake, "bob", wanted=f"/runs/{runs['widgets']}")
    widgets = bob.get(f"/runs/{runs['widgets']}")
    assert widgets.status_code == 200 and "bob" in widgets.text
    assert 'id="approve"' not in widgets.text  # reading is not writing
    assert "acting on it needs write access" in widgets.text
    assert bob.get(f"/runs/{runs['gadgets']}").status_code == 404
    assert bob.get(f"/api/runs/{runs['gadgets']}").status_code == 404
    assert bob.get(f"/runs/{runs['local']}").status_code == 404
    assert bob.get(f"/runs/{runs['gadgets']}/artifacts/spec.md").status_code == 404
    listed = re.findall(r'<tr data-run="([^"]+)">', bob.get("/").text)
    assert listed == [runs["widgets"]]
    assert [r["run_id"] for r in bob.get("/api/runs").json()] == [runs["widgets"]]
    assert bob.get("/api/runs", params={"repo": f"{fake.base_url}/acme/gadgets.git"}).json() \
        == []
    # GitHub was asked once per repository (answers are cached), with the App's token.
    asked = fake.calls(operation_id="repos/get-collaborator-permission-level")
    assert sorted(c.path.split("/")[3] for c in asked) == ["gadgets", "widgets"]
    [exchange] = fake.calls(operation_id="oauth/access-token")
    assert exchange.body["client_secret"] == CLIENT_SECRET
    assert len(fake.calls(operation_id="users/get-authenticated")) == 1


def test_session_cookie_is_signed_http_only_and_lax(app, fake, runs):
    browser = TestClient(app)
    start = browser.get("/auth/github", follow_redirects=False)
    fake.oauth.sign_in_browser("alice")
    back = httpx.get(start.headers["location"], follow_redirects=False)
    landed = browser.get(back.headers["location"].removeprefix(APP), follow_redirects=False)
    header = landed.headers["set-cookie"]
    assert header.startswith(f"{SESSION_COOKIE}=")
    flags = {part.strip().lower() for part in header.split(";")[1:]}
    assert {"httponly", "samesite=lax", f"max-age={SESSION_MAX_AGE}"} <= flags
    # It holds who signed in, never a GitHub token.
    value = header.split(";")[0].split("=", 1)[1]
    data = json.loads(base64.b64decode(value.split(".")[0]))
    assert data["login"] == "alice" and "ghu_" not in json.dumps(data)


def test_the_sign_in_state_is_checked_and_works_once(app, fake, runs):
    browser = TestClient(app)
    start = browser.get("/auth/github", follow_redirects=False)
    fake.oauth.sign_in_browser("alice")
    callback = httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
    query = parse_qs(urlsplit(callback).query)
    forged = browser.get(f"/auth/callback?code={query['code'][0]}&state=forged",
                         follow_redirects=False)
    assert forged.status_code == 400 and "state does not match" in forged.text
    # The state was used up by the failed attempt: the genuine callback no longer works.
    assert browser.get(callback.removeprefix(APP), follow_redirects=False).status_code == 400
    # A code GitHub refuses (an attacker's, a replayed one) signs nobody in.
    again = browser.get("/auth/github", follow_redirects=False)
    state = parse_qs(urlsplit(again.headers["location"]).query)["state"][0]
    replay = browser.get(f"/auth/callback?code={query['code'][0]}x&state={state}",
                         follow_redirects=False)
    assert replay.status_code == 502 and "bad_verification_code" in replay.text
    assert browser.get("/", follow_redirects=False).status_code == 303


def test_a_denied_sign_in_is_said_plainly(app, fake, runs):
    browser = TestClient(app)
    start = browser.get("/auth/github", follow_redirects=False)
    fake.oauth.sign_in_browser("alice", deny=True)
    callback = httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
    refused = browser.get(callback.removeprefix(APP), follow_redirects=False)
    assert refused.status_code == 403 and "access_denied" in refused.text


def test_forged_and_expired_session_cookies_are_refused(app, fake, runs):
    def cookie(secret: str, *, age: float = 0.0) -> str:
        class Aged(itsdangerous.TimestampSigner):
            def get_timestamp(self) -> int:
                return int(time.time() - age)

        data = base64.b64encode(json.dumps({"login": "alice", "csrf": "x"}).encode())
        return Aged(secret).sign(data).decode()

    for value in (cookie("not-the-secret"), cookie(SESSION_SECRET, age=SESSION_MAX_AGE + 60),
                  "garbage"):
        browser = TestClient(app, cookies={SESSION_COOKIE: value})
        assert browser.get("/", follow_redirects=False).status_code == 303
        assert browser.get("/api/runs").status_code == 401
    # The same cookie, fresh and signed with the service's secret, is a session.
    good = TestClient(app, cookies={SESSION_COOKIE: cookie(SESSION_SECRET, age=60)})
    assert good.get("/", follow_redirects=False).status_code == 200


def test_actions_need_write_access_and_a_same_site_form(app, fake, runs, store):
    alice = sign_in(app, fake, "alice", wanted=f"/runs/{runs['widgets']}")
    page = alice.get(f"/runs/{runs['widgets']}").text
    form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                           page.split('action="/runs/r-widgets/approve"', 1)[1].split(
                               "</form>", 1)[0]))
    url = f"/runs/{runs['widgets']}/approve"
    # A cross-site POST is refused, whatever it carries.
    assert alice.post(url, data=form, headers={"Origin": "https://evil.example"}
                      ).status_code == 403
    assert alice.post(url, data=form, headers={"Sec-Fetch-Site": "cross-site"}
                      ).status_code == 403
    assert alice.post(url, data={**form, "csrf_token": "guessed"}).status_code == 403
    assert store.signals(runs["widgets"]) == []
    sent = alice.post(url, data=form, headers={"Origin": APP, "Sec-Fetch-Site": "same-origin"},
                      follow_redirects=False)
    assert sent.status_code == 303
    [signal] = store.signals(runs["widgets"])
    # Recorded as a comment would be: the GitHub login, origin github, the spec's hash.
    assert (signal.kind, signal.author, signal.origin) == (SignalKind.APPROVE, "alice",
                                                           "github")
    # bob may read the run but not act on it; nobody acts on a run they cannot see.
    bob = sign_in(app, fake, "bob")
    bob_form = {**form, "csrf_token": _csrf(bob, runs["widgets"]), "nonce": "ab" * 16}
    assert bob.post(url, data=bob_form).status_code == 403
    gadgets = f"/runs/{runs['gadgets']}/cancel"
    assert alice.post(gadgets, data={**form, "nonce": "cd" * 16}).status_code == 404
    assert len(store.signals(runs["widgets"])) == 1 and store.signals(runs["gadgets"]) == []


def test_the_api_token_reads_everything_and_nothing_else(app, fake, runs):
    bearer = TestClient(app, headers={"Authorization": f"Bearer {API_TOKEN}"})
    listed = [r["run_id"] for r in bearer.get("/api/runs").json()]
    assert sorted(listed) == sorted(runs.values())
    assert bearer.get(f"/api/runs/{runs['gadgets']}").json()["state"] == "awaiting_approval"
    # The token is for the API: pages still ask to sign in.
    assert bearer.get("/", follow_redirects=False).status_code == 303
    wrong = TestClient(app, headers={"Authorization": "Bearer nope"})
    assert wrong.get("/api/runs").status_code == 401


def test_logging_out_ends_the_session(app, fake, runs):
    alice = sign_in(app, fake, "alice")
    token = _csrf(alice, runs["widgets"])
    assert alice.post("/logout", data={"csrf_token": "wrong"}).status_code == 403
    out = alice.post("/logout", data={"csrf_token": token}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert alice.get("/", follow_redirects=False).status_code == 303


def _csrf(browser: TestClient, run_id: str) -> str:
    page = browser.get(f"/runs/{run_id}").text
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
