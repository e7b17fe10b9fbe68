"""The dashboard's settings, decided once at start-up: who may look, and how.

Three ways to be reached (``Access``): on a loopback address without GitHub sign-in, through
the one-time link ``ratchet serve`` prints (``links.SignInLink``: reaching the port is not
enough); sign-in with GitHub through the App's OAuth client anywhere; or, with only
``RATCHET_API_TOKEN``, the API for bearers of that token. A non-loopback address or public URL
without sign-in is refused with the settings that fix it, and so is a non-loopback address
with an insecure development switch on. Forwarded headers count only from
``RATCHET_TRUSTED_PROXIES``.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from enum import StrEnum
from urllib.parse import urlsplit

from app.dashboard.links import SignInLink
from app.settings import Settings, SettingsError

# Host names that are loopback by definition (RFC 6761), besides loopback IP addresses.
LOOPBACK_NAMES = frozenset({"localhost", "localhost."})
# Keys derived from another secret are tied to this purpose, so they sign nothing else.
_SESSION_KEY_PURPOSE = b"ratchet dashboard session cookie"
CLIENT_ID_VAR = "RATCHET_GITHUB_CLIENT_ID"
CLIENT_SECRET_VAR = "RATCHET_GITHUB_CLIENT_SECRET"
API_TOKEN_VAR = "RATCHET_API_TOKEN"


class Access(StrEnum):
    LINK = "link"  # loopback, no GitHub sign-in: the operator, signed in by the one-time link
    GITHUB = "github"  # sign-in with GitHub; /api/* also by bearer token when one is set
    TOKEN = "token"  # no sign-in configured: /api/* by bearer token only


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class OAuthApp:
    """The GitHub App's OAuth client and where GitHub's pages and API are."""

    client_id: str
    client_secret: str = field(repr=False)
    web_url: str  # https://github.com, or a GitHub Enterprise Server's root
    api_url: str


@dataclass(frozen=True)
class DashboardConfig:
    access: Access
    session_secret: str = field(repr=False)
    web_url: str = "https://github.com"  # repositories under it are GitHub's (links, access)
    api_token: str | None = field(default=None, repr=False)
    oauth: OAuthApp | None = None
    public_url: str | None = None  # https://ratchet.example.com: redirects, origin checks
    poll_seconds: float = 1.0
    operator: str = "local"  # who signals after the one-time link (this host's user)
    link: SignInLink | None = None  # Access.LINK: the one-time sign-in link
    trusted_proxies: tuple[IPNetwork, ...] = ()  # peers whose forwarded headers count

    @property
    def secure_cookies(self) -> bool:
        """Cookies only over HTTPS when the service says it is reached over HTTPS."""
        return bool(self.public_url and self.public_url.startswith("https://"))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name, IPv6 possibly in brackets) is loopback only."""
    name = host.strip().lower().strip("[]")
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def web_url_for(api_url: str) -> str:
    """GitHub's web root beside an API root: api.github.com -> github.com; a GitHub
    Enterprise Server's ``https://HOST/api/v3`` -> ``https://HOST``; anything else (a test
    double serving both) -> itself."""
    root = api_url.rstrip("/")
    parts = urlsplit(root)
    if parts.netloc.startswith("api."):
        return f"{parts.scheme}://{parts.netloc.removeprefix('api.')}"
    return root.removesuffix("/api/v3")


def dashboard_config(settings: Settings, *, host: str, port: int = 8000) -> DashboardConfig:
    """The dashboard's configuration for a service bound to ``host``:``port``.

    Raises ``SettingsError`` naming what to set: half an OAuth client, sign-in without the
    App's credentials (needed to ask who may read which repository), a non-loopback address
    with neither sign-in nor an API token, a non-loopback public URL without sign-in, or a
    non-loopback address with an insecure development switch.
    """
    if settings.insecure_dev_webhooks and not is_loopback(host):
        raise SettingsError(
            f"refusing to serve on {host}: RATCHET_INSECURE_DEV_WEBHOOKS=1 accepts unsigned"
            " webhooks and so binds only loopback; serve on --host 127.0.0.1, or unset it and"
            " set RATCHET_WEBHOOK_SECRET")
    public_url = settings.public_url.rstrip("/") if settings.public_url else None
    api_url = settings.github_api_url.rstrip("/")
    web_url = (settings.github_web_url or web_url_for(api_url)).rstrip("/")
    client_id, client_secret = settings.github_client_id, settings.github_client_secret
    if bool(client_id) != bool(client_secret):
        missing = CLIENT_SECRET_VAR if client_id else CLIENT_ID_VAR
        raise SettingsError(f"invalid settings: {missing} is not set; sign-in with GitHub needs"
                            " both the App's client id and its client secret")
    oauth = None
    if client_id and client_secret:
        if settings.github_app_id is None:
            raise SettingsError(
                "invalid settings: sign-in with GitHub needs the App itself"
                " (RATCHET_GITHUB_APP_ID and its private key) to ask GitHub who may read"
                " which repository"
            )
        oauth = OAuthApp(client_id, client_secret, web_url, api_url)
    public_host = urlsplit(public_url).hostname if public_url else None
    if oauth is None and public_host is not None and not is_loopback(public_host):
        raise SettingsError(
            f"refusing to serve the dashboard at RATCHET_PUBLIC_URL={public_url}, which is not"
            " a loopback address, without sign-in: set RATCHET_GITHUB_CLIENT_ID and"
            " RATCHET_GITHUB_CLIENT_SECRET (the GitHub App's OAuth client), or unset"
            " RATCHET_PUBLIC_URL")
    link = None
    if oauth is not None:
        access = Access.GITHUB
    elif is_loopback(host):
        access = Access.LINK
        link = SignInLink(public_url or f"http://{_url_host(host)}:{port}")
    elif settings.api_token:
        access = Access.TOKEN
    else:
        raise SettingsError(
            f"refusing to serve the dashboard on {host}, which is not a loopback address,"
            " without sign-in: set RATCHET_GITHUB_CLIENT_ID and RATCHET_GITHUB_CLIENT_SECRET"
            " (the GitHub App's OAuth client) and/or RATCHET_API_TOKEN, or serve on"
            " --host 127.0.0.1; `ratchet github-app create` writes the App with its OAuth"
            f" client to a credentials file, looked for at {settings.credentials_path}"
            " (RATCHET_GITHUB_CREDENTIALS), where there is none"
        )
    return DashboardConfig(
        access=access,
        session_secret=session_secret(settings),
        web_url=web_url,
        api_token=settings.api_token or None,
        oauth=oauth,
        public_url=public_url,
        poll_seconds=settings.dashboard_poll_seconds,
        operator=_operator(),
        link=link,
        trusted_proxies=trusted_proxies(settings.trusted_proxies),
    )


def trusted_proxies(value: str) -> tuple[IPNetwork, ...]:
    """``RATCHET_TRUSTED_PROXIES``: comma-separated addresses or networks (``10.0.0.0/8``)."""
    networks = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError as exc:
            raise SettingsError(f"invalid settings: RATCHET_TRUSTED_PROXIES lists {item!r},"
                                " which is not an IP address or network (10.0.0.0/8)") from exc
    return tuple(networks)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def session_secret(settings: Settings) -> str:
    """``RATCHET_SESSION_SECRET``; else a key derived from the OAuth client secret (every
    replica of the service derives the same one); else a fresh key for this process."""
    if settings.session_secret:
        return settings.session_secret
    if settings.github_client_secret:
        return hmac.new(settings.github_client_secret.encode(), _SESSION_KEY_PURPOSE,
                        hashlib.sha256).hexdigest()
    return secrets.token_hex(32)


def _operator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"
