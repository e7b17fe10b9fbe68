"""Who may reach the dashboard, decided at start-up: the one-time link on loopback, sign-in
elsewhere; a public address or public URL without sign-in, and an insecure switch off loopback,
refused (by ``ratchet serve`` itself, with how to fix it)."""

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
def test_loopback_without_configuration_signs_in_by_link(tmp_path, host):
    assert is_loopback(host)
    config = dashboard_config(settings(tmp_path), host=host, port=8123)
    assert config.access is Access.LINK and config.link is not None
    first = config.link.url
    assert first.startswith(f"http://{'[::1]' if '::1' in host else host}:8123/?token=")
    assert not config.link.redeem("guess") and config.link.url == first
    assert config.link.redeem(first.split("=", 1)[1])
    assert config.link.url != first and not config.link.redeem(first.split("=", 1)[1])


@pytest.mark.parametrize("url", ["https://ratchet.example.com", "http://192.0.2.7:8000"])
def test_a_public_url_needs_github_sign_in(tmp_path, url):
    with pytest.raises(SettingsError) as refused:
        dashboard_config(settings(tmp_path, public_url=url, api_token="t0ken"),
                         host="127.0.0.1")
    assert f"RATCHET_PUBLIC_URL={url}" in str(refused.value)
    assert "RATCHET_GITHUB_CLIENT_ID" in str(refused.value)
    local = dashboard_config(settings(tmp_path, public_url="http://localhost:8000/"),
                             host="127.0.0.1")
    assert local.link is not None and local.link.url.startswith("http://localhost:8000/?token=")


def test_trusted_proxies_are_addresses_or_networks(tmp_path):
    config = dashboard_config(settings(tmp_path, trusted_proxies="10.0.0.0/8, ::1,192.0.2.7"),
                              host="127.0.0.1")
    assert [str(n) for n in config.trusted_proxies] == ["10.0.0.0/8", "::1/128",
                                                        "192.0.2.7/32"]
    with pytest.raises(SettingsError, match="RATCHET_TRUSTED_PROXIES lists 'nginx'"):
        dashboard_config(settings(tmp_path, trusted_proxies="nginx"), host="127.0.0.1")


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


def test_ratchet_serve_refuses_an_insecure_switch_off_loopback(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "RATCHET_HOME": str(tmp_path / "h"),
           "RATCHET_SANDBOX": "none", "RATCHET_INSECURE_DEV_WEBHOOKS": "1",
           "RATCHET_API_TOKEN": "t0ken"}
    result = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--host", "0.0.0.0",
                             "--port", "9"], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2, result.stderr
    assert ("refusing to serve on 0.0.0.0: RATCHET_INSECURE_DEV_WEBHOOKS=1 accepts unsigned"
            " webhooks and so binds only loopback") in result.stderr
