"""``GitHubClient``: the synchronous face of GitHub for the runner's threads.

Each method submits one coroutine to the process's loop thread (``github.loop``), which owns
the aiohttp session, and waits for it with a timeout. Calls name the installation whose token
they use (``installation_id(owner, repo)`` finds it); in token mode there are no installations
and every call passes ``installation=None`` (with an App, ``None`` means the App's own JWT,
for ``/app`` endpoints). Failures are ``github.errors`` classes
(``github.classify`` has the table): transient, deterministic, ambiguous or authority by type.

    client = GitHubClient(AppCredentials.from_values(app_id=..., private_key_file=...))
    installation = client.installation_id("acme", "widgets")
    comment = client.post("/repos/{owner}/{repo}/issues/{number}/comments",
                          {"owner": "acme", "repo": "widgets", "number": 1},
                          data={"body": "hello"}, installation=installation)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

from .auth import AppAuth, Authenticator, TokenAuth
from .classify import Attempt, failure_for_transport
from .credentials import AppCredentials, TokenCredentials
from .errors import BadCredentials
from .loop import LoopThread, LoopTimeout, shared_loop
from .transport import (
    MAX_RATE_LIMIT_WAIT,
    MUTATION_INTERVAL,
    REQUEST_TIMEOUT,
    Clock,
    Credential,
    Limits,
    Monotonic,
    Sleep,
    Transport,
    is_mutation,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Seconds a runner thread waits for one call, pages, pacing and rate-limit waits included: a
# backstop above the per-request timeout, so a wedged loop cannot hold a worker forever.
CALL_TIMEOUT = 300.0
# gidgethub's default list key: search results come as {"items": [...]}; plain lists need none.
ITEMS = "items"

UrlVars = Mapping[str, Any] | None


class GitHubClient:
    """GitHub's REST and GraphQL APIs for one App (or one token), safe to share across threads.

    ``mutation_interval`` spaces the starts of mutating calls of one installation (GitHub asks
    for one at a time, a second apart); ``max_rate_limit_wait`` is how long a call waits out a
    rate limit before raising ``RateLimited``; ``request_timeout`` bounds each HTTP exchange
    and ``call_timeout`` each whole call. ``clock`` (epoch seconds) times token expiry and rate
    limit resets; ``monotonic`` and ``sleep`` (on the loop thread) pace mutations and wait out
    rate limits, so a test can pace on a fake clock instead of measuring wall time.
    """

    def __init__(
        self,
        credentials: AppCredentials | TokenCredentials,
        *,
        mutation_interval: float = MUTATION_INTERVAL,
        request_timeout: float = REQUEST_TIMEOUT,
        max_rate_limit_wait: float = MAX_RATE_LIMIT_WAIT,
        call_timeout: float = CALL_TIMEOUT,
        clock: Clock = time.time,
        monotonic: Monotonic = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        loop: LoopThread | None = None,
    ) -> None:
        if mutation_interval < 0 or request_timeout <= 0 or call_timeout <= 0:
            raise ValueError(
                "mutation_interval must be >= 0 and the timeouts > 0 (seconds); got "
                f"{mutation_interval!r}, {request_timeout!r}, {call_timeout!r}"
            )
        self._loop = loop or shared_loop()
        self._transport = Transport(
            self._loop,
            api_url=credentials.api_url,
            graphql_url=credentials.graphql_url,
            limits=Limits(request_timeout, mutation_interval, max_rate_limit_wait),
            clock=clock,
            monotonic=monotonic,
            sleep=sleep,
        )
        self._auth: Authenticator = (
            AppAuth(credentials, clock=clock)
            if isinstance(credentials, AppCredentials)
            else TokenAuth(credentials)
        )
        self.call_timeout = call_timeout

    def __repr__(self) -> str:
        return f"GitHubClient({self._auth!r}, api_url={self._transport.api_url!r})"

    @property
    def per_installation(self) -> bool:
        """An App's client: each call names the installation it acts through (a plain
        token's client has none)."""
        return isinstance(self._auth, AppAuth)

    # -- credentials ---------------------------------------------------------------------------

    def installation_id(self, owner: str, repo: str) -> int | None:
        """The App installation covering ``owner/repo`` (cached), or None in token mode.

        Raises ``NotInstalled`` when the App is not installed there.
        """
        coroutine = self._auth.installation_id(owner, repo, self._transport)
        return self._wait(coroutine, _describe("GET", f"/repos/{owner}/{repo}/installation", None))

    def installation_token(self, installation: int | None) -> str:
        """The token calls for ``installation`` use (for git over HTTPS; see ``gitauth``).

        Cached and renewed like every call's; never log it.
        """
        if installation is None and isinstance(self._auth, AppAuth):
            raise ValueError("git needs an installation token: pass an installation id")

        async def token() -> str:
            credential = await self._auth.credential(installation, self._transport)
            return credential.secret

        what = _describe("POST", "/app/installations/{id}/access_tokens", installation)
        return self._wait(token(), what)

    # -- REST ----------------------------------------------------------------------------------

    def get(self, url: str, url_vars: UrlVars = None, *, installation: int | None) -> Any:
        """``GET url`` (a path or a URI template filled from ``url_vars``); the JSON answer."""
        return self._rest("GET", url, url_vars, installation=installation)

    def getiter(
        self,
        url: str,
        url_vars: UrlVars = None,
        *,
        installation: int | None,
        iterable_key: str = ITEMS,
    ) -> list[Any]:
        """Every item of a paginated list, following ``Link: rel="next"`` to the last page.

        ``iterable_key`` names the list inside an object answer (``"check_runs"`` for the
        Checks list); a plain list answer needs none.
        """
        items: list[Any] = self._rest(
            "GET", url, url_vars, installation=installation, iterable_key=iterable_key
        )
        return items

    def post(
        self, url: str, url_vars: UrlVars = None, *, data: Any, installation: int | None
    ) -> Any:
        return self._rest("POST", url, url_vars, data=data, installation=installation)

    def patch(
        self, url: str, url_vars: UrlVars = None, *, data: Any, installation: int | None
    ) -> Any:
        return self._rest("PATCH", url, url_vars, data=data, installation=installation)

    def put(
        self, url: str, url_vars: UrlVars = None, *, data: Any = b"", installation: int | None
    ) -> Any:
        return self._rest("PUT", url, url_vars, data=data, installation=installation)

    def delete(
        self, url: str, url_vars: UrlVars = None, *, data: Any = b"", installation: int | None
    ) -> None:
        self._rest("DELETE", url, url_vars, data=data, installation=installation)

    # -- GraphQL -------------------------------------------------------------------------------

    def graphql(
        self,
        query: str,
        *,
        installation: int | None,
        variables: Mapping[str, Any] | None = None,
    ) -> Any:
        """Run a GraphQL query or mutation; returns its ``data``.

        Variables are a mapping rather than keyword arguments so a misspelt option can never
        turn into a GraphQL variable. A mutation is paced and, if its answer is lost,
        ambiguous, like a REST write.
        """
        given = dict(variables or {})

        async def send(credential: Credential) -> Any:
            return await self._transport.graphql(query, given, credential=credential)

        mutating = is_mutation(query)
        what = _describe(
            "POST", self._transport.graphql_url, installation, mutating=mutating, graphql=True
        )
        return self._wait(self._authenticated(installation, send), what)

    # -- plumbing ------------------------------------------------------------------------------

    def _rest(
        self,
        method: str,
        url: str,
        url_vars: UrlVars,
        *,
        installation: int | None,
        data: Any = b"",
        iterable_key: str | None = None,
    ) -> Any:
        mutating = method != "GET"

        async def send(credential: Credential) -> Any:
            return await self._transport.rest(
                method,
                url,
                url_vars,
                credential=credential,
                data=data,
                mutating=mutating,
                iterable_key=iterable_key,
            )

        what = _describe(method, url, installation, mutating=mutating)
        return self._wait(self._authenticated(installation, send), what)

    async def _authenticated(
        self, installation: int | None, send: Callable[[Credential], Awaitable[T]]
    ) -> T:
        """``send`` with the installation's credential; once more with a fresh token when
        GitHub refuses a cached one (revoked early), since a 401 applied nothing."""
        credential = await self._auth.credential(installation, self._transport)
        try:
            return await send(credential)
        except BadCredentials:
            if not self._auth.forget(installation):
                raise
            logger.info("GitHub refused installation %r's token; minting a new one", installation)
            credential = await self._auth.credential(installation, self._transport)
            return await send(credential)

    def _wait(self, coroutine: Coroutine[Any, Any, T], what: Attempt) -> T:
        try:
            return self._loop.run(coroutine, timeout=self.call_timeout)
        except LoopTimeout as exc:
            # The call may be anywhere, even mid-write: a mutating one counts as sent.
            raise failure_for_transport(what, exc, sent=what.mutating) from exc


def _describe(
    method: str,
    url: str,
    installation: int | None,
    *,
    mutating: bool = False,
    graphql: bool = False,
) -> Attempt:
    """The call, as a timeout waiting for it reports it."""
    who = f"installation {installation}" if installation is not None else "the App or token"
    return Attempt(method, url, mutating, who, graphql=graphql)
