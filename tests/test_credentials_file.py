"""The App's credentials file as settings read it: it fills what no variable sets (a key
variable keeps its key out), a bad file is an error naming it, its secrets are masked and
hidden from sandboxes, and writing it never replaces a file unless asked."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.credentials_file import AppCredentialsFile, CredentialsFileError, write_credentials
from app.github import app_credentials
from app.settings import SettingsError, load_settings


def pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption()).decode()


@pytest.fixture(scope="module")
def saved() -> AppCredentialsFile:
    return AppCredentialsFile(
        app_id=31, slug="ratchet-file", private_key=pem(), webhook_secret="whsec-from-file-1",
        client_id="Iv23li00000000000031", client_secret="client-secret-from-file-2",
        api_url="http://127.0.0.1:9/api", web_url="http://127.0.0.1:9",
        html_url="http://127.0.0.1:9/apps/ratchet-file", public_url="https://r.example.com")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No RATCHET_* variable but the credentials file's path under ``tmp_path``."""
    for name in list(os.environ):
        if name.startswith("RATCHET_"):
            monkeypatch.delenv(name)
    path = tmp_path / "github-app.json"
    monkeypatch.setenv("RATCHET_GITHUB_CREDENTIALS", str(path))
    monkeypatch.setenv("RATCHET_HOME", str(tmp_path / "home"))
    return path


def test_the_file_fills_what_no_variable_sets(env: Path, saved: AppCredentialsFile,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    write_credentials(env, saved, overwrite=False)
    settings = load_settings()
    assert (settings.github_app_id, settings.github_app_slug, settings.webhook_secret,
            settings.github_client_id, settings.github_client_secret, settings.github_api_url,
            settings.github_web_url, settings.public_url) == (
        31, "ratchet-file", "whsec-from-file-1", "Iv23li00000000000031",
        "client-secret-from-file-2", "http://127.0.0.1:9/api", "http://127.0.0.1:9",
        "https://r.example.com")
    credentials = app_credentials(settings)
    assert credentials is not None and credentials.private_key.strip() == saved.private_key.strip()
    # Its secrets are masked wherever Ratchet prints, and no sandbox sees the file.
    assert {"whsec-from-file-1", "client-secret-from-file-2"} <= set(settings.secret_values())
    assert settings.sandbox_policy().hides(env)

    monkeypatch.setenv("RATCHET_GITHUB_APP_SLUG", "from-variable")
    monkeypatch.setenv("RATCHET_WEBHOOK_SECRET", "whsec-from-variable")
    key_file = env.with_name("other.pem")
    key_file.write_text(pem())
    monkeypatch.setenv("RATCHET_GITHUB_PRIVATE_KEY_FILE", str(key_file))
    settings = load_settings()
    assert (settings.github_app_slug, settings.webhook_secret, settings.github_app_id) == (
        "from-variable", "whsec-from-variable", 31)
    # The key variable's key, not the file's (and not both: that would be refused).
    assert settings.github_private_key is None
    credentials = app_credentials(settings)
    assert credentials is not None and credentials.private_key == key_file.read_text()


def test_a_file_that_is_no_credentials_file_is_an_error_naming_it(env: Path) -> None:
    env.write_text('{"app_id": 1, "private_key": "-----BEGIN RSA PRIVATE KEY----- MIIsecret"}')
    with pytest.raises(SettingsError) as raised:
        load_settings()
    message = str(raised.value)
    assert message.startswith(f"invalid settings: {env} is not a GitHub App credentials file (")
    assert "ratchet github-app create --force" in message and "MIIsecret" not in message


def test_a_key_in_the_file_that_does_not_parse_is_an_error_naming_the_file(
        env: Path, saved: AppCredentialsFile) -> None:
    broken = saved.model_copy(update={"private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIsecret"
                                                     "\n-----END RSA PRIVATE KEY-----\n"})
    write_credentials(env, broken, overwrite=False)
    with pytest.raises(SettingsError) as raised:
        app_credentials(load_settings())
    message = str(raised.value)
    # The file holds the key, so the file is what to fix: no variable is named.
    assert message.startswith(f"invalid settings: the private key in {env} is not an "
                              "unencrypted PEM private key")
    assert "RATCHET_GITHUB_PRIVATE_KEY" not in message and "MIIsecret" not in message


def test_writing_never_replaces_a_file_unless_asked(tmp_path: Path,
                                                    saved: AppCredentialsFile) -> None:
    path = tmp_path / "config" / "github-app.json"
    write_credentials(path, saved, overwrite=False)
    first = path.read_bytes()
    other = saved.model_copy(update={"slug": "second"})
    with pytest.raises(CredentialsFileError, match="already holds an App's credentials"):
        write_credentials(path, other, overwrite=False)
    assert path.read_bytes() == first and list(path.parent.iterdir()) == [path]
    path.chmod(0o644)
    write_credentials(path, other, overwrite=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert AppCredentialsFile.model_validate_json(path.read_bytes()).slug == "second"
    assert "client-secret-from-file-2" not in repr(other) and "PRIVATE" not in repr(other)
