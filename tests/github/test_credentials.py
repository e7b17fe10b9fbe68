"""Settings validation: every problem names the RATCHET_GITHUB_* variable to fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from github.credentials import (
    GITHUB_API_URL,
    AppCredentials,
    TokenCredentials,
    graphql_url_for,
)
from github.errors import GitHubSettingsError


@pytest.fixture(scope="module")
def pem(app_key: bytes) -> str:
    return app_key.decode()


def test_the_key_as_text_or_as_a_file(pem: str, tmp_path: Path) -> None:
    from_text = AppCredentials.from_values(app_id="42", private_key=pem)
    key_file = tmp_path / "app.pem"
    key_file.write_text(pem)
    from_file = AppCredentials.from_values(app_id=42, private_key_file=str(key_file))
    one_line = AppCredentials.from_values(app_id="42", private_key=pem.strip().replace("\n", "\\n"))
    assert from_text == from_file == one_line
    assert from_text.api_url == GITHUB_API_URL
    assert from_text.graphql_url == "https://api.github.com/graphql"
    assert "PRIVATE KEY" not in repr(from_text)


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"app_id": None}, "RATCHET_GITHUB_APP_ID is not set"),
        ({"app_id": "my-app"}, "RATCHET_GITHUB_APP_ID='my-app' is not an App id"),
        ({"app_id": "1", "private_key": None}, "RATCHET_GITHUB_PRIVATE_KEY_FILE to the .pem"),
        ({"app_id": "1", "private_key": "hello"}, "RATCHET_GITHUB_PRIVATE_KEY is not"),
        (
            {"app_id": "1", "private_key": None, "private_key_file": "/nonexistent/app.pem"},
            "RATCHET_GITHUB_PRIVATE_KEY_FILE='/nonexistent/app.pem' cannot be read",
        ),
        ({"app_id": "1", "api_url": "api.github.com"}, "RATCHET_GITHUB_API_URL='api.github.com'"),
        ({"app_id": "1", "graphql_url": "ftp://x"}, "RATCHET_GITHUB_GRAPHQL_URL='ftp://x'"),
    ],
)
def test_problems_name_the_variable(pem: str, values: dict[str, str | None], named: str) -> None:
    given = {"private_key": pem, **values}
    with pytest.raises(GitHubSettingsError, match=re.escape(named)):
        AppCredentials.from_values(**given)


def test_both_key_settings_at_once_are_refused(pem: str, tmp_path: Path) -> None:
    with pytest.raises(GitHubSettingsError, match="keep one of them"):
        AppCredentials.from_values(app_id="1", private_key=pem, private_key_file=tmp_path / "k")


def test_a_bad_key_is_never_echoed() -> None:
    secretish = "-----BEGIN RSA PRIVATE KEY-----\nnot-really-a-key-but-secret\n-----END"
    with pytest.raises(GitHubSettingsError) as refused:
        AppCredentials.from_values(app_id="1", private_key=secretish)
    assert "not-really" not in str(refused.value)


def test_a_non_rsa_key_is_refused() -> None:
    ec_pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(GitHubSettingsError, match="GitHub Apps sign with RSA keys"):
        AppCredentials.from_values(app_id="1", private_key=ec_pem)


@pytest.mark.parametrize(
    ("api_url", "graphql_url"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://api.github.com/", "https://api.github.com/graphql"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"),
        ("https://ghe.example.com/api/v3/", "https://ghe.example.com/api/graphql"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/graphql"),
    ],
)
def test_graphql_endpoint_derived_from_the_api_url(
    pem: str, api_url: str, graphql_url: str
) -> None:
    assert graphql_url_for(api_url) == graphql_url
    credentials = AppCredentials.from_values(app_id="1", private_key=pem, api_url=api_url)
    assert credentials.api_url == api_url.rstrip("/")
    assert credentials.graphql_url == graphql_url


def test_an_explicit_graphql_url_wins(pem: str) -> None:
    credentials = AppCredentials.from_values(
        app_id="1",
        private_key=pem,
        api_url="https://ghe.example.com/api/v3",
        graphql_url="https://graphql.example.com/",
    )
    assert credentials.graphql_url == "https://graphql.example.com"


def test_token_credentials() -> None:
    credentials = TokenCredentials.from_values(token=" tok-123456 ")
    assert credentials.token == "tok-123456" and "tok-123456" not in repr(credentials)
    with pytest.raises(GitHubSettingsError, match="no GitHub token"):
        TokenCredentials.from_values(token="")
    with pytest.raises(GitHubSettingsError, match="whitespace"):
        TokenCredentials.from_values(token="a b")
