"""The fake's App manifest flow: GitHub's page creates the App and redirects with a code that
fetches its credentials once, within the hour; the key it hands out signs the App's JWTs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest

from tests.fakes.fakegithub import FakeGitHub

REDIRECT = "http://127.0.0.1:9/created"
MANIFEST = {
    "name": "Ratchet Test", "url": "https://ratchet.example.com",
    "hook_attributes": {"url": "https://ratchet.example.com/webhooks/github"},
    "callback_urls": ["https://ratchet.example.com/auth/callback"],
    "redirect_url": REDIRECT, "public": False,
    "default_permissions": {"issues": "write", "metadata": "read"},
    "default_events": ["issues"],
}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake
        assert fake.response_mismatches == [] and fake.crashes == []


def post_manifest(fake: FakeGitHub, manifest: object, *, state: str = "s-1",
                  org: str | None = None) -> httpx.Response:
    where = f"/organizations/{org}" if org else ""
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    return httpx.post(f"{fake.base_url}{where}/settings/apps/new", params={"state": state},
                      data={"manifest": text})


def code_of(response: httpx.Response) -> str:
    assert response.status_code == 302, response.text
    location = urlsplit(response.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    query = parse_qs(location.query)
    assert query["state"] == ["s-1"]
    return query["code"][0]


def convert(fake: FakeGitHub, code: str) -> httpx.Response:
    return httpx.post(f"{fake.base_url}/app-manifests/{code}/conversions",
                      headers={"Accept": "application/vnd.github+json"})


def test_the_created_apps_key_signs_its_jwts_and_the_code_works_once(
        github: FakeGitHub) -> None:
    github.oauth.sign_in_browser("alice")
    code = code_of(post_manifest(github, MANIFEST))
    created = convert(github, code)
    assert created.status_code == 201, created.text
    app = created.json()
    assert (app["slug"], app["name"], app["owner"]["login"]) == ("ratchet-test", "Ratchet Test",
                                                                 "alice")
    assert app["html_url"] == "https://github.com/apps/ratchet-test"
    assert app["permissions"] == MANIFEST["default_permissions"]
    assert app["events"] == ["issues"] and app["webhook_secret"] and app["client_secret"]
    # The key GitHub handed out is the App's: GET /app accepts a JWT it signs.
    now = int(time.time())
    token = jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(app["id"])}, app["pem"],
                       algorithm="RS256")
    me = httpx.get(f"{github.base_url}/app", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200 and me.json()["client_id"] == app["client_id"]
    # Its OAuth client signs people in, coming back to the manifest's callback URL.
    github.oauth.sign_in_browser("bob")
    authorize = httpx.get(f"{github.base_url}/login/oauth/authorize",
                          params={"client_id": app["client_id"], "state": "x"})
    assert authorize.headers["location"].startswith(MANIFEST["callback_urls"][0] + "?code=")
    # The code is spent: a second exchange is GitHub's 404, with nothing handed out.
    again = convert(github, code)
    assert again.status_code == 404 and "pem" not in again.text
    assert [c.status for c in github.calls(operation_id="apps/create-from-manifest")] == [201, 404]


def test_a_code_older_than_an_hour_is_404(github: FakeGitHub) -> None:
    github.oauth.sign_in_browser("alice")
    code = code_of(post_manifest(github, MANIFEST))
    github.advance_clock(3601)
    assert convert(github, code).status_code == 404
    assert convert(github, "never-issued").status_code == 404


def test_an_organizations_app_is_the_organizations(github: FakeGitHub) -> None:
    github.oauth.sign_in_browser("alice")
    assert post_manifest(github, MANIFEST, org="acme").status_code == 404  # no such org
    github.create_organization("acme")
    created = convert(github, code_of(post_manifest(github, MANIFEST, org="acme"))).json()
    assert created["owner"]["login"] == "acme" and created["owner"]["type"] == "Organization"


def test_the_page_refuses_what_github_refuses_and_creates_nothing(github: FakeGitHub) -> None:
    nobody = post_manifest(github, MANIFEST)
    assert nobody.status_code == 200 and "Sign in" in nobody.text
    github.oauth.sign_in_browser("alice")
    assert post_manifest(github, "{not json").status_code == 422
    no_hook_url = {**MANIFEST, "hook_attributes": {"active": True}}
    assert "Hook URL" in post_manifest(github, no_hook_url).text
    assert "Homepage URL" in post_manifest(github, {**MANIFEST, "url": ""}).text
    code_of(post_manifest(github, MANIFEST))
    taken = post_manifest(github, {**MANIFEST, "name": "ratchet TEST"})
    assert taken.status_code == 422 and "already taken" in taken.text
    assert [call.status for call in github.calls(operation_id="apps/new-from-manifest")] == [
        200, 422, 422, 422, 302, 422]
    assert github.app("ratchet-test").owner.login == "alice"
