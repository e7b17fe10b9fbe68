"""Live pages: one poll of the ledger per interval, shared by every listener.

``Broadcaster`` reads every run's ``RunMark`` (``Store.run_marks``: one query) once per
``interval`` while anyone listens, compares it with the previous reading, and hands the runs
that moved to every subscriber. Fifty open pages cost the ledger what one does. Polling starts
with the first subscriber (its first reading taken before the subscriber is registered, so
nothing that happens after a page subscribed is missed) and stops with the last.

``sse_stream`` turns a subscription into a Server-Sent Events body: a ``change`` event naming
the runs that moved (a page then fetches itself again), a comment now and then to keep proxies
from closing an idle stream, and an end after ``MAX_STREAM_SECONDS`` (the browser reconnects
by itself), so no stream outlives a deploy by long.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from runner.errors import LedgerError
from runner.ledger.records import RunMark

log = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15.0  # a comment on an idle stream, well under proxies' idle timeouts
MAX_STREAM_SECONDS = 300.0  # then the stream ends and the browser opens a new one
RECONNECT_MS = 2000  # what the browser waits before reconnecting (the SSE ``retry`` field)

Changes = dict[str, RunMark]  # run id -> its new mark


@dataclass(eq=False)
class Subscription:
    """One listener's inbox of changed runs (merged while it is busy)."""

    _broadcaster: Broadcaster
    _pending: Changes = field(default_factory=dict)
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    def _push(self, changes: Changes) -> None:
        self._pending.update(changes)
        self._ready.set()

    async def next(self, *, timeout: float) -> Changes | None:
        """The runs that moved since the last call, or None after ``timeout`` seconds."""
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            return None
        self._ready.clear()
        changes, self._pending = self._pending, {}
        return changes

    def close(self) -> None:
        self._broadcaster._subscribers.discard(self)


class Broadcaster:
    """See the module docstring. ``read`` is blocking (it runs in a thread); ``polls``
    counts its calls. ``sleep`` waits out each interval (a test counts the intervals through
    it instead of timing them)."""

    def __init__(self, read: Callable[[], Mapping[str, RunMark]], *, interval: float,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.read = read
        self.interval = interval
        self.sleep = sleep
        self.polls = 0
        self._subscribers: set[Subscription] = set()
        self._marks: Mapping[str, RunMark] = {}
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def listeners(self) -> int:
        return len(self._subscribers)

    @property
    def polling(self) -> bool:
        """Whether the polling task still runs (it ends after the last listener left)."""
        return self._task is not None and not self._task.done()

    async def subscribe(self) -> Subscription:
        """A new listener; the first one starts the polling (after one reading)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (a test client's): start afresh
            self._loop, self._lock, self._task = loop, asyncio.Lock(), None
            self._subscribers.clear()
        assert self._lock is not None
        async with self._lock:
            if self._task is None or self._task.done():
                self._marks = await self._poll()
                self._task = loop.create_task(self._run(), name="ratchet-dashboard-poll")
            subscription = Subscription(self)
            self._subscribers.add(subscription)
        return subscription

    async def _poll(self) -> Mapping[str, RunMark]:
        self.polls += 1
        return await asyncio.to_thread(self.read)

    async def _run(self) -> None:
        while self._subscribers:
            await self.sleep(self.interval)
            if not self._subscribers:
                break
            try:
                marks = await self._poll()
            except LedgerError as exc:
                log.warning("dashboard: ledger unavailable, polling again: %s", exc)
                continue
            except Exception:
                log.exception("dashboard: reading run marks failed; polling again")
                continue
            previous, self._marks = self._marks, marks
            changes = {run_id: mark for run_id, mark in marks.items()
                       if previous.get(run_id) != mark}
            if changes:
                for subscription in list(self._subscribers):
                    subscription._push(changes)


Relevant = Callable[[Changes], Awaitable[list[str]]]


async def sse_stream(subscription: Subscription, relevant: Relevant, *,
                     clock: Callable[[], float] = time.monotonic) -> AsyncIterator[str]:
    """The Server-Sent Events body for one listener; ``relevant`` picks the runs it may know
    of among those that changed. Ends the subscription however the stream ends."""
    started = clock()
    try:
        yield f"retry: {RECONNECT_MS}\n\n"  # sent at once: the browser's ``open`` event
        while clock() - started < MAX_STREAM_SECONDS:
            changes = await subscription.next(timeout=KEEPALIVE_SECONDS)
            if changes is None:
                yield ": keep-alive\n\n"
                continue
            runs = await relevant(changes)
            if runs:
                yield f"event: change\ndata: {json.dumps({'runs': sorted(runs)})}\n\n"
    finally:
        subscription.close()
