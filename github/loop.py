"""One asyncio event loop thread per process, owning the process's aiohttp session.

gidgethub is async and the runner is synchronous: the runner's threads submit coroutines to
this loop (``LoopThread.run``) and wait for them with a timeout. One loop and one session per
process means one connection pool and one place where GitHub traffic is paced. A process
forked after the loop started (a Dramatiq worker) gets its own loop on first use.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, TypeVar

import aiohttp

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Connections the session keeps open at most; GitHub allows 100 concurrent requests per caller.
MAX_CONNECTIONS = 50
# Seconds ``close`` waits for the session to close and the thread to end.
CLOSE_TIMEOUT = 5.0


class LoopTimeout(TimeoutError):
    """A call submitted to the loop did not finish within the caller's timeout."""


@dataclass
class RequestTrace:
    """Passed as aiohttp's ``trace_request_ctx``: ``sent`` turns true once the request's
    headers were written, after which a lost answer may mean an applied write."""

    sent: bool = False


async def _headers_sent(
    session: aiohttp.ClientSession, context: SimpleNamespace, params: object
) -> None:
    trace = context.trace_request_ctx
    if isinstance(trace, RequestTrace):
        trace.sent = True


class LoopThread:
    """An event loop on a daemon thread; ``run`` submits a coroutine and waits for it."""

    def __init__(self, *, name: str = "ratchet-github-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._session: aiohttp.ClientSession | None = None
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._loop.is_closed()

    def run(self, coroutine: Coroutine[Any, Any, T], *, timeout: float) -> T:
        """Run ``coroutine`` on the loop and return its result.

        Raises what the coroutine raises, or ``LoopTimeout`` after ``timeout`` seconds (the
        coroutine is then cancelled). Calling it from the loop's own thread would wait forever
        for itself, so that raises ``RuntimeError``.
        """
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError(
                "GitHubClient's synchronous methods were called on its own event loop thread; "
                "call them from a worker thread, never from a coroutine on that loop"
            )
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            if future.done():  # finished at the deadline, or raised a TimeoutError of its own
                return future.result()
            future.cancel()
            raise LoopTimeout(f"no result within {timeout!r} s") from None

    def session(self) -> aiohttp.ClientSession:
        """The loop's aiohttp session, created on first use; call only on the loop."""
        if self._session is None or self._session.closed:
            trace = aiohttp.TraceConfig()
            trace.on_request_headers_sent.append(_headers_sent)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS),
                trace_configs=[trace],
                trust_env=True,  # HTTPS_PROXY / NO_PROXY, as git honours them too
            )
        return self._session

    def close(self) -> None:
        """Close the session and stop the loop; the object is unusable afterwards."""
        if not self.running:
            return

        async def close_session() -> None:
            if self._session is not None and not self._session.closed:
                await self._session.close()

        try:
            self.run(close_session(), timeout=CLOSE_TIMEOUT)
        except (LoopTimeout, RuntimeError):
            logger.warning("the GitHub session did not close within %r s", CLOSE_TIMEOUT)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CLOSE_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()


_shared: LoopThread | None = None
_shared_pid: int | None = None
_shared_lock = threading.Lock()


def shared_loop() -> LoopThread:
    """This process's loop thread, started on first use (again in a forked child)."""
    global _shared, _shared_pid
    with _shared_lock:
        if _shared is None or _shared_pid != os.getpid() or not _shared.running:
            _shared, _shared_pid = LoopThread(), os.getpid()
            atexit.register(_shared.close)
        return _shared
