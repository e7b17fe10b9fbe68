"""GitHub App authentication: the App's JWT, installations per repository, installation tokens.

An App proves itself with a short-lived JWT (RS256, ``iss`` = app id, issued 60 s in the past
for clock drift, expiring at most 10 minutes ahead: gidgethub's ``apps.get_jwt``), finds the
installation that covers a repository (``GET /repos/{owner}/{repo}/installation``) and trades
the JWT for an installation token (``POST /app/installations/{id}/access_tokens``), valid for an
hour. Installations and tokens are cached; a token is renewed ``TOKEN_REFRESH_MARGIN`` before it
expires, so no request starts with a token about to lapse. Tokens are never logged (the
installation id is) and never shown by ``repr``.

``TokenAuth`` is the App-less mode: one configured token for every call.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from .classify import utc_text
from .credentials import AppCredentials, TokenCredentials
from .errors import NotFound, NotInstalled
from .transport import Clock, Credential, Transport

__all__ = [
    "AppAuth",
    "AppCredentials",
    "Authenticator",
    "InstallationToken",
    "TokenAuth",
    "TokenCache",
    "TokenCredentials",
    "sign_app_jwt",
]

logger = logging.getLogger(__name__)

JWT_BACKDATE = 60  # seconds ``iat`` lies in the past, for clock drift (gidgethub does the same)
JWT_LIFETIME = 600  # seconds from ``iat`` to ``exp``: GitHub refuses an exp over 10 min ahead
TOKEN_REFRESH_MARGIN = 300.0  # seconds before expires_at a token is replaced (calls may be long)
INSTALLATION_TTL = 3600.0  # seconds a repository's installation id is trusted (reinstalls move it)

K = TypeVar("K")
V = TypeVar("V")


def sign_app_jwt(app_id: int, key: RSAPrivateKey, *, now: float) -> str:
    """The App's JWT as gidgethub's ``apps.get_jwt`` makes it, issued against ``now``."""
    issued = int(now) - JWT_BACKDATE
    claims = {"iat": issued, "exp": issued + JWT_LIFETIME, "iss": str(app_id)}
    return jwt.encode(claims, key, algorithm="RS256")


@dataclass(frozen=True)
class InstallationToken:
    """An installation access token and when it expires (epoch seconds); repr hides it."""

    installation_id: int
    token: str = field(repr=False)
    expires_at: float

    @classmethod
    def from_response(cls, installation_id: int, data: Any) -> InstallationToken:
        """Parse GitHub's ``{"token": ..., "expires_at": "2024-01-01T00:00:00Z"}``."""
        try:
            expires = datetime.fromisoformat(str(data["expires_at"]).replace("Z", "+00:00"))
            return cls(installation_id, str(data["token"]), expires.timestamp())
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"GitHub's answer for installation {installation_id}'s token has no token and "
                "expires_at; is RATCHET_GITHUB_API_URL a GitHub API root?"
            ) from None


class _Expiring(Generic[K, V]):
    """A thread-safe map whose entries lapse at a time given when each is stored."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[K, tuple[V, float]] = {}

    def get(self, key: K, *, now: float) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or now >= entry[1]:
            return None
        return entry[0]

    def put(self, key: K, value: V, *, until: float) -> None:
        with self._lock:
            self._entries[key] = (value, until)

    def pop(self, key: K) -> bool:
        with self._lock:
            return self._entries.pop(key, None) is not None


class TokenCache:
    """Installation tokens by installation id, handed out until ``margin`` before expiry."""

    def __init__(self, *, margin: float = TOKEN_REFRESH_MARGIN) -> None:
        self.margin = margin
        self._tokens: _Expiring[int, InstallationToken] = _Expiring()

    def fresh(self, installation_id: int, *, now: float) -> InstallationToken | None:
        return self._tokens.get(installation_id, now=now)

    def store(self, token: InstallationToken) -> None:
        self._tokens.put(token.installation_id, token, until=token.expires_at - self.margin)

    def forget(self, installation_id: int) -> bool:
        return self._tokens.pop(installation_id)


class Authenticator(Protocol):
    """Turns an installation id (or None) into the credential a request is sent with."""

    async def credential(self, installation: int | None, transport: Transport) -> Credential:
        """The credential for ``installation``; raises a ``github.errors`` failure."""
        ...

    async def installation_id(self, owner: str, repo: str, transport: Transport) -> int | None:
        """The installation covering ``owner/repo`` (None without an App)."""
        ...

    def forget(self, installation: int | None) -> bool:
        """Drop a cached credential GitHub refused; True when a fresh one may be had."""
        ...


class AppAuth:
    """Credentials of a GitHub App: its JWT, and cached installation ids and tokens.

    Lookups and minting run on the client's loop thread; one installation's token is minted
    once even when many calls want it at the same moment. The caches are thread-safe.
    """

    def __init__(
        self,
        credentials: AppCredentials,
        *,
        clock: Clock,
        refresh_margin: float = TOKEN_REFRESH_MARGIN,
    ) -> None:
        self.credentials = credentials
        self._clock = clock
        # from_values validated the key; skip the costly RSA consistency check here.
        key = load_pem_private_key(
            credentials.private_key.encode(), password=None, unsafe_skip_rsa_key_validation=True
        )
        if not isinstance(key, RSAPrivateKey):
            raise ValueError("GitHub Apps sign with RSA keys; build AppCredentials.from_values")
        self._key = key
        self.tokens = TokenCache(margin=refresh_margin)
        self._installations: _Expiring[str, int] = _Expiring()
        self._minting: dict[int, asyncio.Lock] = {}  # loop-confined: one mint at a time

    def __repr__(self) -> str:
        return f"AppAuth(app_id={self.credentials.app_id!r})"

    def app_credential(self) -> Credential:
        """The App's own JWT, for ``/app`` endpoints and installation lookups."""
        token = sign_app_jwt(self.credentials.app_id, self._key, now=self._clock())
        return Credential(token, "jwt", gate="app", who=f"App {self.credentials.app_id}")

    async def installation_id(self, owner: str, repo: str, transport: Transport) -> int:
        """The installation covering ``owner/repo``; ``NotInstalled`` when there is none."""
        key = f"{owner}/{repo}".lower()
        known = self._installations.get(key, now=self._clock())
        if known is not None:
            return known
        try:
            data = await transport.rest(
                "GET",
                "/repos/{owner}/{repo}/installation",
                {"owner": owner, "repo": repo},
                credential=self.app_credential(),
                mutating=False,
            )
        except NotFound as exc:
            raise NotInstalled(
                f"App {self.credentials.app_id} is not installed on {owner}/{repo}; install it "
                "there (the App's public page, 'Install'), then retry the run",
                evidence=exc.evidence,
            ) from exc
        installation = int(data["id"])
        self._installations.put(key, installation, until=self._clock() + INSTALLATION_TTL)
        logger.info("%s/%s is served by installation %r", owner, repo, installation)
        return installation

    async def credential(self, installation: int | None, transport: Transport) -> Credential:
        """The installation's token (cached or minted), or the App's JWT for ``None``."""
        if installation is None:
            return self.app_credential()
        token = await self._token(installation, transport)
        return Credential(
            token.token,
            "token",
            gate=f"installation:{installation}",
            who=f"installation {installation}",
        )

    async def _token(self, installation: int, transport: Transport) -> InstallationToken:
        token = self.tokens.fresh(installation, now=self._clock())
        if token is not None:
            return token
        lock = self._minting.setdefault(installation, asyncio.Lock())
        async with lock:
            token = self.tokens.fresh(installation, now=self._clock())
            if token is not None:  # minted by the call this one waited for
                return token
            data = await transport.rest(
                "POST",
                "/app/installations/{installation_id}/access_tokens",
                {"installation_id": str(installation)},
                credential=self.app_credential(),
                mutating=False,  # a lost answer costs one unused token, never a duplicate effect
            )
            token = InstallationToken.from_response(installation, data)
            self.tokens.store(token)
        logger.info(
            "minted a token for installation %r, expiring at %s",
            installation,
            utc_text(token.expires_at),
        )
        return token

    def forget(self, installation: int | None) -> bool:
        return installation is not None and self.tokens.forget(installation)


class TokenAuth:
    """One configured token (e.g. an Actions ``GITHUB_TOKEN``) for every call; no installations."""

    def __init__(self, credentials: TokenCredentials) -> None:
        self.credentials = credentials

    def __repr__(self) -> str:
        return "TokenAuth(token=***)"

    async def credential(self, installation: int | None, transport: Transport) -> Credential:
        if installation is not None:
            raise ValueError(
                "this client uses a plain token and has no installations: pass installation="
                "None (GitHubClient.installation_id returns None for it)"
            )
        return Credential(self.credentials.token, "token", gate="token", who="the token")

    async def installation_id(self, owner: str, repo: str, transport: Transport) -> None:
        return None

    def forget(self, installation: int | None) -> bool:
        return False  # the token is what it is: a refusal is final
