"""Who may reach the dashboard, decided at start-up: open on loopback, sign-in elsewhere, and a
public address with neither refused (by ``ratchet serve`` itself, with how to fix it)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from app.dashboard.config import Access, dashboard_config, is_loopback, web_url_for
from app.settings import Settings, SettingsError

APP = {"github_app_id": 1234, "github_private_key": "-----BEGIN RSA PRIVATE KEY-----"}
OAUTH = {"github_client_id": "Iv23li0123", "github_client_secret": "s3cret"}


def settings(tmp_path, **values) -> Settings:
    return Settings(home=tmp_path / "home", **values)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
def test_loopback_without_configuration_is_open(tmp_path, host):
    assert is_loopback(host)
    assert dashboard_config(settings(tmp_path), host=host).access is Access.OPEN


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "ratchet.example.com", ""])
def test_a_public_address_without_sign_in_or_token_is_refused(tmp_path, host):
    with pytest.raises(SettingsError) as refused:
        dashboard_config(settings(tmp_path), host=host)
    message = str(refused.value)
    assert "RATCHET_GITHUB_CLIENT_ID" in message and "RATCHET_API_TOKEN" in message
    assert "--host 127.0.0.1" in message


def test_an_api_token_alone_serves_the_api(tmp_path):
    config = dashboard_config(settings(tmp_path, api_token="t0ken"), host="0.0.0.0")
    assert config.access is Access.TOKEN and config.oauth is None


def test_sign_in_needs_both_halves_of_the_client_and_the_app(tmp_path):
    with pytest.raises(SettingsError, match="RATCHET_GITHUB_CLIENT_SECRET is not set"):
        dashboard_config(settings(tmp_path, github_client_id="Iv23li0123"), host="0.0.0.0")
    with pytest.raises(SettingsError, match="RATCHET_GITHUB_APP_ID"):
        dashboard_config(settings(tmp_path, **OAUTH), host="0.0.0.0")


def test_sign_in_with_github_configured(tmp_path):
    config = dashboard_config(settings(tmp_path, **OAUTH, **APP,
                                       public_url="https://ratchet.example.com/"),
                              host="0.0.0.0")
    assert config.access is Access.GITHUB and config.oauth is not None
    assert config.oauth.web_url == "https://github.com" and config.secure_cookies
    assert config.public_url == "https://ratchet.example.com"
    # Every replica derives the same session key from the client secret, and not the secret.
    again = dashboard_config(settings(tmp_path, **OAUTH, **APP), host="0.0.0.0")
    assert config.session_secret == again.session_secret != OAUTH["github_client_secret"]
    # On loopback too, sign-in once configured is what protects the pages.
    assert dashboard_config(settings(tmp_path, **OAUTH, **APP), host="127.0.0.1").access \
        is Access.GITHUB
    assert "s3cret" not in repr(config)


def test_github_web_root_beside_its_api():
    assert web_url_for("https://api.github.com") == "https://github.com"
    assert web_url_for("https://ghe.example.com/api/v3") == "https://ghe.example.com"
    assert web_url_for("http://127.0.0.1:9999") == "http://127.0.0.1:9999"


def test_ratchet_serve_refuses_a_public_address_without_protection(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "RATCHET_HOME": str(tmp_path / "h"),
           "RATCHET_SANDBOX": "none"}
    result = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--host", "0.0.0.0",
                             "--port", str(port)], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2, result.stderr
    assert "refusing to serve the dashboard on 0.0.0.0" in result.stderr
    assert "RATCHET_GITHUB_CLIENT_ID" in result.stderr
