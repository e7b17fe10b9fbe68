"""App authentication against the fake: the JWT, installations per repository, cached tokens."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from github.auth import (
    JWT_LIFETIME,
    TOKEN_REFRESH_MARGIN,
    AppAuth,
    InstallationToken,
    sign_app_jwt,
)
from github.client import GitHubClient
from github.errors import BadCredentials, NotInstalled
from tests.fakes.conftest import APP_ID, APP_SLUG, OWNER, REPO, Origin
from tests.fakes.fakegithub import FakeGitHub
from tests.github.conftest import INSTALLATION, app_credentials, make_client

TOKENS = "/app/installations/{installation_id}/access_tokens"
LOOKUP = "/repos/{owner}/{repo}/installation"
ISSUE = "/repos/{owner}/{repo}/issues/{issue_number}"
WIDGETS = {"owner": OWNER, "repo": REPO}


def test_the_app_jwt_has_githubs_claims_and_the_fake_accepts_it(
    fake: FakeGitHub, app_key: bytes, client: GitHubClient
) -> None:
    key = load_pem_private_key(app_key, password=None)
    assert isinstance(key, RSAPrivateKey)
    now = time.time()
    token = sign_app_jwt(APP_ID, key, now=now)
    claims = jwt.decode(token, key.public_key(), algorithms=["RS256"])
    assert claims["iss"] == str(APP_ID)
    assert claims["iat"] == int(now) - 60  # backdated for clock drift, as gidgethub does
    assert claims["exp"] - now <= 600 and claims["exp"] - claims["iat"] == JWT_LIFETIME
    assert jwt.get_unverified_header(token)["alg"] == "RS256"

    app = client.get("/app", installation=None)  # installation=None: the App's own JWT
    assert app["slug"] == APP_SLUG
    assert fake.calls(path_pattern="/app")[0].actor == APP_SLUG


def test_installation_lookup_is_cached_per_repository(
    fake: FakeGitHub, client: GitHubClient
) -> None:
    assert client.installation_id(OWNER, REPO) == INSTALLATION
    assert client.installation_id(OWNER.upper(), REPO) == INSTALLATION
    assert len(fake.calls(path_pattern=LOOKUP)) == 1


def test_a_repository_without_the_app_is_not_installed(
    fake: FakeGitHub, client: GitHubClient, origin: Origin
) -> None:
    fake.create_repo(OWNER, "gadgets", git_dir=origin.bare)
    with pytest.raises(NotInstalled) as refused:
        client.installation_id(OWNER, "gadgets")
    assert refused.value.failure_class == "deterministic"
    assert "install it there" in str(refused.value) and "acme/gadgets" in str(refused.value)


def test_the_token_is_reused_until_near_expiry_then_renewed(
    fake: FakeGitHub, client: GitHubClient
) -> None:
    issue = {**WIDGETS, "issue_number": 1}
    first = client.installation_token(INSTALLATION)
    for _ in range(3):
        assert client.get(ISSUE, issue, installation=INSTALLATION)["number"] == 1
    assert client.installation_token(INSTALLATION) == first
    assert len(fake.calls(path_pattern=TOKENS)) == 1

    fake.advance_clock(3600 - TOKEN_REFRESH_MARGIN - 5)  # just outside the margin: still kept
    client.get(ISSUE, issue, installation=INSTALLATION)
    assert len(fake.calls(path_pattern=TOKENS)) == 1

    fake.advance_clock(10)  # now inside the margin: renewed before GitHub would refuse it
    client.get(ISSUE, issue, installation=INSTALLATION)
    assert len(fake.calls(path_pattern=TOKENS)) == 2
    assert client.installation_token(INSTALLATION) != first
    assert fake.calls(path_pattern=ISSUE)[-1].status == 200


def test_concurrent_calls_mint_one_token(fake: FakeGitHub, client: GitHubClient) -> None:
    issue = {**WIDGETS, "issue_number": 1}
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: client.get(ISSUE, issue, installation=INSTALLATION), range(8)))
    assert len(fake.calls(path_pattern=TOKENS)) == 1


def test_a_revoked_token_is_replaced_once(fake: FakeGitHub, client: GitHubClient) -> None:
    issue = {**WIDGETS, "issue_number": 1}
    revoked = client.installation_token(INSTALLATION)
    with fake.world.lock:  # GitHub revoked it early (the App was reconfigured, say)
        del fake.world.tokens[revoked]
    assert client.get(ISSUE, issue, installation=INSTALLATION)["number"] == 1
    assert [c.status for c in fake.calls(path_pattern=ISSUE)] == [401, 200]
    assert len(fake.calls(path_pattern=TOKENS)) == 2


def test_a_jwt_github_refuses_is_bad_credentials(fake: FakeGitHub, app_key: bytes) -> None:
    lagging = make_client(fake, app_key, clock=lambda: fake.clock.now() - 3600)
    with pytest.raises(BadCredentials) as refused:
        lagging.installation_id(OWNER, REPO)
    assert "RATCHET_GITHUB_APP_ID and the private key" in str(refused.value)
    assert refused.value.status == 401


def test_reprs_hide_keys_and_tokens(fake: FakeGitHub, app_key: bytes, client: GitHubClient) -> None:
    credentials = app_credentials(fake, app_key)
    token = client.installation_token(INSTALLATION)
    minted = InstallationToken(INSTALLATION, token, expires_at=fake.clock.now() + 3600)
    shown = [
        repr(credentials),
        repr(client),
        repr(AppAuth(credentials, clock=fake.clock.now)),
        repr(minted),
    ]
    assert str(APP_ID) in shown[0] and "installation_id=77" in shown[3]
    for text in shown:
        assert "PRIVATE KEY" not in text and token not in text
