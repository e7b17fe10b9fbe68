"""Who is calling: App JWTs verified with the App's public key, tokens looked up, or nobody.

GitHub's rules, with its messages (clients and people match on them):

- ``Authorization: Bearer <jwt>`` (or ``token <jwt>``) authenticates the App on ``/app...``
  endpoints. RS256 only, signed by the key of the App named in ``iss`` (a number or a digit
  string). A bad signature, another algorithm or a garbled token: 401 "A JSON web token could
  not be decoded"; an ``iss`` that names no App: 404 "Integration not found"; ``iat`` more than
  60 s ahead, ``exp`` passed, or ``exp`` more than 10 minutes ahead of GitHub's clock: 401 with
  the claim's own message. (GitHub measures ``exp`` against its clock, not against ``iat``: its
  own documented example, ``iat`` = now - 60 and ``exp`` = now + 600, is accepted.)
- ``token X`` / ``Bearer X`` / Basic with the token as password: an installation token
  (``ghs_...``) or a configured token; unknown or expired: 401 "Bad credentials".
- A token on an App endpoint is read as a JWT and so "could not be decoded".
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt

from .errors import REST_DOCS, ApiError
from .state import ACCESS_LEVELS, App, AuthKind, Repo, Token, User, World

JWT_MAX_LIFETIME = 600  # seconds GitHub lets exp run ahead of its clock
JWT_CLOCK_SKEW = 60  # seconds iat may be ahead of GitHub's clock

_UNDECODABLE = "A JSON web token could not be decoded"
_BAD_IAT = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"  # noqa: E501
_BAD_EXP = "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"  # noqa: E501
_FAR_EXP = "'Expiration time' claim ('exp') is too far in the future"


@dataclass(frozen=True)
class Principal:
    """The authenticated caller of one request."""

    kind: AuthKind
    actor: User | None = None  # the user or bot acting; None for a JWT or nobody
    app: App | None = None  # the App behind a JWT or an installation token
    token: Token | None = None

    @property
    def label(self) -> str | None:
        """What the call records as the actor."""
        if self.actor is not None:
            return self.actor.login
        return self.app.slug if self.app is not None else None

    @property
    def rate_key(self) -> str:
        """Whose rate-limit budget the request spends."""
        if self.token is not None and self.token.installation_id is not None:
            return f"installation:{self.token.installation_id}"
        if self.token is not None:
            return f"token:{self.token.value}"
        if self.app is not None:
            return f"app:{self.app.id}"
        return "anonymous"

    def may(self, resource: str, level: str) -> bool:
        """True when the token's permissions grant ``resource`` at ``level`` or above."""
        if self.token is None:
            return False
        granted = ACCESS_LEVELS.get(self.token.permissions.get(resource, ""), 0)
        return granted >= ACCESS_LEVELS[level]

    def sees(self, world: World, repo: Repo) -> bool:
        """True when the repository is visible to this caller (otherwise GitHub says 404)."""
        if self.token is None:
            return not repo.private
        if self.token.repositories is not None and repo.key not in self.token.repositories:
            return False
        if self.token.installation_id is None:
            return True
        installation = world.installations.get(self.token.installation_id)
        if installation is None:
            return False
        if installation.repositories is None:
            return installation.account.login.lower() == repo.owner.login.lower()
        return repo.key in installation.repositories


def bad_credentials() -> ApiError:
    return ApiError(401, "Bad credentials", documentation_url=REST_DOCS)


def _jwt_error(message: str, status: int = 401) -> ApiError:
    return ApiError(status, message, documentation_url=REST_DOCS)


def read_credential(headers: Mapping[str, str]) -> str | None:
    """The secret in the Authorization header, or None when there is no header."""
    value = headers.get("authorization")
    if value is None:
        return None
    scheme, _, rest = value.strip().partition(" ")
    if scheme.lower() in {"token", "bearer"} and rest.strip():
        return rest.strip()
    if scheme.lower() == "basic":
        try:
            _, _, password = base64.b64decode(rest.strip()).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise bad_credentials() from None
        return password
    raise bad_credentials()


def _looks_like_jwt(credential: str) -> bool:
    return credential.startswith("eyJ") and credential.count(".") == 2


def verify_jwt(world: World, credential: str, *, now: float) -> App:
    """The App that signed ``credential``; raises ApiError with GitHub's message otherwise."""
    try:
        header = jwt.get_unverified_header(credential)
        unverified = jwt.api_jws.decode_complete(credential, options={"verify_signature": False})
        claims: Any = json.loads(unverified["payload"])
    except (jwt.PyJWTError, ValueError):
        raise _jwt_error(_UNDECODABLE) from None
    if header.get("alg") != "RS256" or not isinstance(claims, dict):
        raise _jwt_error(_UNDECODABLE)
    issuer = claims.get("iss")
    if isinstance(issuer, bool) or not (
        isinstance(issuer, int) or (isinstance(issuer, str) and issuer.isdigit())
    ):
        raise _jwt_error(_UNDECODABLE)
    app = world.apps.get(int(issuer))
    if app is None:
        raise _jwt_error("Integration not found", 404)
    if app.public_key is None:
        raise _jwt_error(_UNDECODABLE)
    try:
        jwt.api_jws.decode(credential, app.public_key, algorithms=["RS256"])
    except jwt.PyJWTError:
        raise _jwt_error(_UNDECODABLE) from None
    issued_at, expires = claims.get("iat"), claims.get("exp")
    if not isinstance(issued_at, int) or isinstance(issued_at, bool):
        raise _jwt_error(_BAD_IAT)
    if issued_at > now + JWT_CLOCK_SKEW:
        raise _jwt_error(_BAD_IAT)
    if not isinstance(expires, int | float) or isinstance(expires, bool) or expires <= now:
        raise _jwt_error(_BAD_EXP)
    if expires > now + JWT_MAX_LIFETIME:
        raise _jwt_error(_FAR_EXP)
    return app


def authenticate(world: World, headers: Mapping[str, str], *, app_endpoint: bool) -> Principal:
    """Identify the caller; raises ApiError (401/404) for credentials GitHub would refuse."""
    credential = read_credential(headers)
    if credential is None:
        return Principal(AuthKind.ANONYMOUS)
    now = world.clock.now()
    if app_endpoint or _looks_like_jwt(credential):
        return Principal(AuthKind.JWT, app=verify_jwt(world, credential, now=now))
    with world.lock:
        token = world.tokens.get(credential)
    if token is None or (token.expires_at is not None and token.expires_at <= now):
        raise bad_credentials()
    return Principal(token.kind, actor=token.actor, app=token.app, token=token)
