"""Requests to GitHub on the loop thread: gidgethub for the API, this module for the wire.

gidgethub builds requests (headers, URL templates, JSON, ``Link`` pagination) and parses
answers; it leaves ``_request`` to a backend. Our backend (``_API._request``) adds what
gidgethub leaves to its users: a timeout on every exchange, per-installation pacing of mutating
requests, waiting out rate limits (or raising ``RateLimited`` when the wait is too long), and
turning every failed answer or lost connection into a ``github.errors`` failure
(``classify``). Everything here runs on the ``LoopThread``; its state needs no thread locks.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
import gidgethub
import gidgethub.aiohttp

from .classify import (
    Attempt,
    failure_for_response,
    failure_for_transport,
    failure_for_unexpected,
    rate_limited,
    utc_text,
)
from .loop import LoopThread, RequestTrace
from .ratelimit import RateLimitHit, rate_limit_hit

logger = logging.getLogger(__name__)

Clock = Callable[[], float]  # epoch seconds; tests pass the fake GitHub's clock
# Pacing and rate-limit waits go through these two, so a test can pace on a fake clock that
# moves only when the client sleeps (time.monotonic and asyncio.sleep otherwise).
Monotonic = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

REQUEST_TIMEOUT = 30.0  # seconds for one exchange, connect to last byte
CONNECT_TIMEOUT = 10.0  # seconds to open a connection (a refused one fails at once)
# GitHub asks for mutating requests one at a time, at least a second apart per caller:
# https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api
MUTATION_INTERVAL = 1.0
MAX_RATE_LIMIT_WAIT = 60.0  # seconds a call waits out a rate limit before raising RateLimited
MAX_RATE_LIMIT_RETRIES = 3  # rate-limited answers one call retries before raising RateLimited
API_VERSION = "2022-11-28"  # X-GitHub-Api-Version: the REST version these calls are written for
REQUESTER = "ratchet-runner"  # User-Agent; GitHub refuses requests without one

_COMMENTS = re.compile(r"#[^\n]*")


def is_mutation(query: str) -> bool:
    """True when a GraphQL document is a mutation (and so may change something)."""
    return _COMMENTS.sub("", query).lstrip().startswith("mutation")


@dataclass(frozen=True)
class Credential:
    """What one request authenticates with, and whose traffic it counts as."""

    secret: str = field(repr=False)
    scheme: Literal["token", "jwt"]
    gate: str  # pacing and rate-limit key: "installation:77", "token", "app"
    who: str  # for messages and logs: "installation 77", never the secret


@dataclass(frozen=True)
class Limits:
    """The client's timeouts, pacing and rate-limit patience."""

    request_timeout: float = REQUEST_TIMEOUT
    mutation_interval: float = MUTATION_INTERVAL
    max_rate_limit_wait: float = MAX_RATE_LIMIT_WAIT


class Gate:
    """One caller's traffic (an installation, the token, the App): mutating requests one at
    a time and ``interval`` apart from start to start; every request held while a rate limit
    this caller hit still holds."""

    def __init__(
        self, *, monotonic: Monotonic = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        self._turn = asyncio.Lock()
        self._monotonic = monotonic
        self._sleep = sleep
        self._last_start = float("-inf")  # monotonic
        self.held: RateLimitHit | None = None

    @asynccontextmanager
    async def turn(self, mutating: bool) -> AsyncIterator[None]:
        if not mutating:
            yield
            return
        async with self._turn:
            yield

    async def pace(self, interval: float) -> None:
        """Wait until ``interval`` has passed since the last mutating request started."""
        wait = self._last_start + interval - self._monotonic()
        if wait > 0:
            await self._sleep(wait)
        self._last_start = self._monotonic()

    def hold(self, hit: RateLimitHit) -> None:
        if self.held is None or hit.retry_at > self.held.retry_at:
            self.held = hit


@dataclass
class _Call:
    """One API call (maybe several exchanges: pages, rate-limit retries)."""

    credential: Credential
    mutating: bool
    graphql: bool = False
    attempt: Attempt | None = None
    status: int | None = None


class _API(gidgethub.aiohttp.GitHubAPI):
    """gidgethub on the loop's session, sending through ``Transport.exchange``."""

    def __init__(self, transport: Transport, call: _Call, **kwargs: Any) -> None:
        super().__init__(transport.loop.session(), transport.requester, **kwargs)
        self._transport = transport
        self._call = call

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        return await self._transport.exchange(self._call, method, url, headers, body)


class Transport:
    """Sends REST and GraphQL calls for one set of credentials' endpoints."""

    def __init__(
        self,
        loop: LoopThread,
        *,
        api_url: str,
        graphql_url: str,
        limits: Limits,
        clock: Clock = time.time,
        monotonic: Monotonic = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        requester: str = REQUESTER,
    ) -> None:
        self.loop = loop
        self.api_url = api_url
        self.graphql_url = graphql_url
        self.limits = limits
        self.clock = clock
        self.monotonic = monotonic
        self.sleep = sleep
        self.requester = requester
        self._gates: dict[str, Gate] = {}

    async def rest(
        self,
        method: str,
        url: str,
        url_vars: Mapping[str, Any] | None = None,
        *,
        credential: Credential,
        data: Any = b"",
        mutating: bool,
        iterable_key: str | None = None,
    ) -> Any:
        """One REST call; with ``iterable_key`` a GET that follows every page into a list.

        ``mutating`` says whether a lost answer may hide an applied change (POST that mints a
        token is not mutating in that sense: minting again is harmless).
        """
        call = _Call(credential, mutating=mutating)
        api = self._api(call)
        variables = dict(url_vars or {})
        auth: dict[str, Any] = {"jwt": credential.secret} if credential.scheme == "jwt" else {}
        try:
            if iterable_key is not None:
                pages = api.getiter(url, variables, iterable_key=iterable_key, **auth)
                return [item async for item in pages]
            if method == "GET":
                return await api.getitem(url, variables, **auth)
            if method == "POST":
                return await api.post(url, variables, data=data, **auth)
            if method == "PATCH":
                return await api.patch(url, variables, data=data, **auth)
            if method == "PUT":
                return await api.put(url, variables, data=data, **auth)
            if method == "DELETE":
                return await api.delete(url, variables, data=data, **auth)
            raise ValueError(f"unsupported method {method!r}: use GET, POST, PATCH, PUT, DELETE")
        except (gidgethub.GitHubException, UnicodeDecodeError, json.JSONDecodeError) as exc:
            if call.attempt is None or call.status is None:
                raise  # refused before anything was sent: a programming error, kept as it is
            raise failure_for_unexpected(call.attempt, call.status, exc) from exc

    async def graphql(
        self, query: str, variables: Mapping[str, Any], *, credential: Credential
    ) -> Any:
        """One GraphQL call; returns its ``data``."""
        if credential.scheme != "token":
            raise ValueError("GraphQL needs an installation token: pass an installation id")
        call = _Call(credential, mutating=is_mutation(query), graphql=True)
        # gidgethub's graphql() sends only the constructor's token: a per-call oauth_token
        # would silently become a GraphQL variable.
        api = self._api(call)
        try:
            return await api.graphql(query, endpoint=self.graphql_url, **variables)
        except (gidgethub.GitHubException, UnicodeDecodeError, json.JSONDecodeError) as exc:
            if call.attempt is None or call.status is None:
                raise
            raise failure_for_unexpected(call.attempt, call.status, exc) from exc

    def _api(self, call: _Call) -> _API:
        token = call.credential.secret if call.credential.scheme == "token" else None
        return _API(self, call, oauth_token=token, base_url=self.api_url)

    def gate(self, key: str) -> Gate:
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = Gate(monotonic=self.monotonic, sleep=self.sleep)
        return gate

    async def exchange(
        self, call: _Call, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        """Send one request (again after a rate limit it may wait out) and check the answer.

        Returns a success or 304 for gidgethub to parse; raises a ``github.errors`` failure
        for anything else.
        """
        credential = call.credential
        attempt = Attempt(
            method,
            url,
            call.mutating,
            credential.who,
            graphql=call.graphql,
            secrets=(credential.secret,),
        )
        call.attempt = attempt
        gate = self.gate(credential.gate)
        sent_headers = {**headers, "x-github-api-version": API_VERSION}
        async with gate.turn(call.mutating):
            for tries in itertools.count(1):
                await self._wait_out(gate, attempt)
                if call.mutating:
                    await gate.pace(self.limits.mutation_interval)
                status, answer, payload = await self._send(attempt, sent_headers, body)
                call.status = status
                hit = rate_limit_hit(status, answer, payload, now=self.clock())
                if hit is None:
                    break
                gate.hold(hit)
                logger.warning(
                    "%s rate limit on %s for %s until %s",
                    hit.limit,
                    attempt.call,
                    credential.who,
                    utc_text(hit.retry_at),
                )
                if tries > MAX_RATE_LIMIT_RETRIES:
                    raise rate_limited(attempt, hit, now=self.clock())
        failure = failure_for_response(attempt, status, answer, payload)
        if failure is not None:
            logger.info("%s for %s: %s", attempt.call, credential.who, type(failure).__name__)
            raise failure
        return status, answer, payload

    async def _wait_out(self, gate: Gate, attempt: Attempt) -> None:
        """Sleep until the caller's rate limit lifts, or raise when that is too far away."""
        hit = gate.held
        if hit is None:
            return
        wait = hit.retry_at - self.clock()
        if wait <= 0:
            gate.held = None
            return
        if wait > self.limits.max_rate_limit_wait:
            raise rate_limited(attempt, hit, now=self.clock())
        logger.info("waiting %.1f s for the %s rate limit of %s", wait, hit.limit, attempt.who)
        await self.sleep(wait)

    async def _send(
        self, attempt: Attempt, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP exchange under the request timeout; headers come back lower-cased."""
        trace = RequestTrace()
        total = self.limits.request_timeout
        timeout = aiohttp.ClientTimeout(total=total, connect=min(CONNECT_TIMEOUT, total))
        session = self.loop.session()
        try:
            async with session.request(
                attempt.method,
                attempt.url,
                headers=dict(headers),
                data=body,
                timeout=timeout,
                trace_request_ctx=trace,
            ) as response:
                payload = await response.read()
                answer = {k.lower(): v for k, v in response.headers.items()}
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            logger.info(
                "%s for %s got no answer (%s, sent=%r)",
                attempt.call,
                attempt.who,
                type(exc).__name__,
                trace.sent,
            )
            raise failure_for_transport(attempt, exc, sent=trace.sent) from exc
        logger.debug("%s for %s -> %d", attempt.call, attempt.who, status)
        return status, answer, payload
