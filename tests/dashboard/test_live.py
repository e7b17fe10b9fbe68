"""Live pages at scale: 1,000 runs in the ledger, a page of the list costs the ledger calls of
its 50 rows whatever the number of runs, and a change reaches 50 open pages over Server-Sent
Events while the ledger is polled once per interval, whatever the number of listeners (every
ledger call is counted, and every interval: the poller's waits go through a counting
``sleep``; nothing here is timed, so a loaded machine changes no answer)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx

from app.dashboard.live import Broadcaster
from runner.ledger.records import NewRun, NewSignal
from runner.ledger.sqlite import SqliteStore
from runner.names import SignalKind
from tests.dashboard.conftest import T0, LiveServer, dashboard_app, link_config, link_path

RUNS = 1000
PAGE = 50  # runs on one page of the list
LISTENERS = 50
INTERVAL = 0.1  # seconds between polls of the ledger
WATCHED = "r-0500"
MORE_INTERVALS = 10  # intervals watched with fifty listeners after the change reached them
PATIENCE = 60.0  # seconds to wait for what must happen: reached only when a test fails


class CountingStore:
    """The ledger, counting every call made through it, by method."""

    def __init__(self, inner: SqliteStore) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls[name] += 1
            return found(*args, **kwargs)

        return counted

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.calls)


def seed(store: SqliteStore) -> None:
    for i in range(RUNS):
        store.create_run(NewRun(id=f"r-{i:04d}", repo=f"https://github.com/acme/repo{i % 9}.git",
                                title=f"Task {i}", issue=i + 1), now=T0 + i)


def test_a_thousand_runs_and_fifty_live_pages_cost_one_poll_per_interval(tmp_path):
    store = SqliteStore(tmp_path / "ledger.db")
    seed(store)
    counting = CountingStore(store)
    config = link_config(poll_seconds=INTERVAL)
    app, dashboard = dashboard_app(counting, config)  # type: ignore[arg-type]
    waits: list[float] = []  # every interval the poller waited out, as it began

    async def counted_sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(seconds)

    dashboard.broadcaster.sleep = counted_sleep
    with LiveServer(app) as server:
        signed_in = httpx.get(f"{server.url}{link_path(config)}", timeout=PATIENCE)
        cookies = signed_in.cookies
        before = counting.snapshot()
        page = httpx.get(f"{server.url}/", cookies=cookies, timeout=PATIENCE)
        assert page.status_code == 200
        assert len(re.findall(r'<tr data-run="', page.text)) == PAGE
        assert 'data-run="r-0999"' in page.text and "Older →" in page.text
        # A page of the list costs ledger calls by the rows it shows, not by the runs there are.
        calls = counting.snapshot() - before
        assert sum(calls.values()) <= PAGE + 3, calls
        last = httpx.get(f"{server.url}/", params={"before": "r-0050"}, cookies=cookies,
                         timeout=PATIENCE)
        assert re.findall(r'<tr data-run="([^"]+)">', last.text)[-1] == "r-0000"

        report = asyncio.run(_listen(server.url, cookies, store, counting,
                                     dashboard.broadcaster, waits))
    print(f"\n{report}")
    store.close()


async def _listen(url: str, cookies: httpx.Cookies, store: SqliteStore, counting: CountingStore,
                  broadcaster: Broadcaster, waits: list[float]) -> str:
    connected = asyncio.Semaphore(0)
    reached = 0
    everyone = asyncio.Event()

    async def page(http: httpx.AsyncClient, path: str) -> None:
        async with http.stream("GET", path) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            event = None
            async for line in response.aiter_lines():
                if line.startswith("retry:"):
                    connected.release()
                elif line.startswith("event:"):
                    event = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and event == "change" and (
                        WATCHED in json.loads(line.split(":", 1)[1])["runs"]):
                    nonlocal reached
                    reached += 1
                    if reached == LISTENERS:
                        everyone.set()

    async def until(condition: Callable[[], bool], what: str) -> None:
        for _ in range(int(PATIENCE / INTERVAL)):
            if condition():
                return
            await asyncio.sleep(INTERVAL)
        raise AssertionError(f"{what} never happened")

    limits = httpx.Limits(max_connections=LISTENERS + 5)
    async with httpx.AsyncClient(base_url=url, cookies=cookies, timeout=PATIENCE,
                                 limits=limits) as http:
        # Half watch the list, half the watched run's own page.
        tasks = [asyncio.create_task(page(http, "/live" if i % 2 else f"/runs/{WATCHED}/live"))
                 for i in range(LISTENERS)]
        for _ in range(LISTENERS):
            await asyncio.wait_for(connected.acquire(), timeout=PATIENCE)
        assert broadcaster.listeners == LISTENERS
        before, waited_before = counting.snapshot(), len(waits)
        await asyncio.to_thread(store.add_signal, NewSignal(
            "web:live-test", WATCHED, SignalKind.STATUS, "alice", "local"))
        await asyncio.wait_for(everyone.wait(), timeout=PATIENCE)
        target = len(waits) + MORE_INTERVALS
        await until(lambda: len(waits) >= target, f"{MORE_INTERVALS} more intervals")
        after, waited_after = counting.snapshot(), len(waits)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # Pages gone, polling stops: the ledger is not read for nobody.
        await until(lambda: not broadcaster.polling, "the poller's end")
        assert broadcaster.listeners == 0
        idle = counting.snapshot()["run_marks"]
        await asyncio.sleep(5 * INTERVAL)
        assert counting.snapshot()["run_marks"] == idle

    polls = after["run_marks"] - before["run_marks"]
    other = sum((after - before).values()) - polls
    intervals = waited_after - waited_before
    # The poller alternates a wait and a read; the two counters are read one after the other,
    # so they may differ by the read in flight at each end. Fifty pages polling on their own
    # would make fifty reads an interval.
    assert intervals > MORE_INTERVALS, intervals
    assert intervals - 2 <= polls <= intervals + 2, f"{polls} polls in {intervals} intervals"
    assert set(waits) == {INTERVAL}, "the poller waits one interval between reads"
    assert other == 0, f"listeners read the ledger themselves: {after - before}"
    return (f"a change reached {LISTENERS} pages; {polls} polls of the ledger in {intervals}"
            " intervals")
