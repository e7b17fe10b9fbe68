"""The GitHub App's credentials file: what ``ratchet github-app create`` got from GitHub, read
by every later command so ``ratchet serve`` needs no further setup.

One JSON object (``AppCredentialsFile``) at ``RATCHET_GITHUB_CREDENTIALS``, by default
``$XDG_CONFIG_HOME/ratchet/github-app.json`` (``~/.config/...``). It holds the App's private
key and secrets, so it is created with mode 0600 in a folder of mode 0700, written whole under
a temporary name and linked into place (no reader ever sees half of it, nobody else ever sees
any of it), and never replaced unless asked. A ``RATCHET_*`` variable that is set wins over
the file's value (for the key, either key variable).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from plumbing.files import write_atomic

CREDENTIALS_VAR = "RATCHET_GITHUB_CREDENTIALS"
FILE_MODE = 0o600  # the App's private key and secrets: this user only
FOLDER_MODE = 0o700
# Variables that name the App's private key: when either is set, the file's key is not used.
KEY_VARS = ("RATCHET_GITHUB_PRIVATE_KEY", "RATCHET_GITHUB_PRIVATE_KEY_FILE")


class CredentialsFileError(Exception):
    """The credentials file cannot be read or written; the message names it and what to do."""


class AppCredentialsFile(BaseModel):
    """What GitHub handed out for the App (``apps/create-from-manifest``), and which GitHub."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    app_id: int
    slug: str
    # Kept out of repr, so out of every log line and traceback.
    private_key: str = Field(repr=False)  # PEM
    webhook_secret: str | None = Field(None, repr=False)
    client_id: str
    client_secret: str = Field(repr=False)
    api_url: str
    web_url: str
    html_url: str  # the App's page; its installations/new installs it
    public_url: str | None = None  # the service's, where the App's webhook and sign-in go

    def settings_values(self) -> dict[str, Any]:
        """The settings fields (``app/settings.py``) this file supplies."""
        return {"github_app_id": self.app_id, "github_app_slug": self.slug,
                "github_private_key": self.private_key, "webhook_secret": self.webhook_secret,
                "github_client_id": self.client_id, "github_client_secret": self.client_secret,
                "github_api_url": self.api_url, "github_web_url": self.web_url,
                "public_url": self.public_url}

    def secrets(self) -> tuple[str, ...]:
        """The values to mask wherever text is printed."""
        return tuple(value for value in (self.webhook_secret, self.client_secret) if value)


def default_path(environ: Mapping[str, str]) -> Path:
    config = environ.get("XDG_CONFIG_HOME")
    return (Path(config) if config else Path.home() / ".config") / "ratchet" / "github-app.json"


def credentials_path(environ: Mapping[str, str]) -> Path:
    """Where the credentials file is: ``RATCHET_GITHUB_CREDENTIALS`` or the default."""
    given = environ.get(CREDENTIALS_VAR, "").strip()
    return Path(given).expanduser().absolute() if given else default_path(environ)


def read_credentials(path: Path) -> AppCredentialsFile | None:
    """The file's credentials; None when there is no file. ``CredentialsFileError`` when it
    cannot be read or is not one (the message never quotes its content)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CredentialsFileError(
            f"{path} cannot be read ({exc.strerror or exc}): make it readable by this user, or"
            f" set {CREDENTIALS_VAR} to another file") from None
    try:
        return AppCredentialsFile.model_validate_json(data)
    except ValidationError as exc:
        fields = ", ".join(sorted({".".join(map(str, e["loc"])) or "the file" for e in
                                   exc.errors()}))
        raise CredentialsFileError(
            f"{path} is not a GitHub App credentials file ({fields}: missing or unreadable):"
            " write it again with `ratchet github-app create --force`, or set"
            f" {CREDENTIALS_VAR} to another file") from None


def write_credentials(path: Path, credentials: AppCredentialsFile, *,
                      overwrite: bool) -> None:
    """Create the file, mode 0600 from its first byte; an existing file is replaced only with
    ``overwrite`` (``CredentialsFileError`` otherwise, and when it cannot be written)."""
    try:
        path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        write_atomic(path, credentials.model_dump_json(indent=2).encode() + b"\n",
                     mode=FILE_MODE, overwrite=overwrite)
    except FileExistsError:
        raise CredentialsFileError(
            f"{path} already holds an App's credentials: pass --force to replace them, or"
            f" --credentials (or {CREDENTIALS_VAR}) to write another file") from None
    except OSError as exc:
        raise CredentialsFileError(
            f"{path} cannot be written ({exc.strerror or exc}): choose a writable place with"
            f" --credentials (or {CREDENTIALS_VAR})") from None


def settings_from_file(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings the credentials file supplies where ``environ`` names no key variable;
    nothing without a file. The caller lets set variables win for every other field."""
    credentials = read_credentials(credentials_path(environ))
    if credentials is None:
        return {}
    values = credentials.settings_values()
    if any(environ.get(name, "").strip() for name in KEY_VARS):
        del values["github_private_key"]
    return values


__all__ = ["CREDENTIALS_VAR", "AppCredentialsFile", "CredentialsFileError", "credentials_path",
           "read_credentials", "settings_from_file", "write_credentials"]
