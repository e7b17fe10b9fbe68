"""Live pages at scale: 1,000 runs in the ledger, the list renders in well under a second, and
a change reaches 50 open pages over Server-Sent Events while the ledger is polled once per
interval, whatever the number of listeners (every ledger call is counted)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx

from runner.ledger.records import NewRun, NewSignal
from runner.ledger.sqlite import SqliteStore
from runner.names import SignalKind
from tests.dashboard.conftest import T0, LiveServer, dashboard_app, open_config

RUNS = 1000
LISTENERS = 50
INTERVAL = 0.1  # seconds between polls of the ledger
WATCHED = "r-0500"


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
    app, dashboard = dashboard_app(counting, open_config(poll_seconds=INTERVAL))  # type: ignore[arg-type]
    with LiveServer(app) as server:
        started = time.monotonic()
        page = httpx.get(f"{server.url}/")
        took = time.monotonic() - started
        assert page.status_code == 200
        assert len(re.findall(r'<tr data-run="', page.text)) == 50
        assert 'data-run="r-0999"' in page.text and "Older →" in page.text
        assert took < 2.0, f"the list of {RUNS} runs took {took:.2f}s"
        last = httpx.get(f"{server.url}/", params={"before": "r-0050"})
        assert re.findall(r'<tr data-run="([^"]+)">', last.text)[-1] == "r-0000"

        report = asyncio.run(_listen(server.url, store, counting,
                                     lambda: dashboard.broadcaster.listeners))
    print(f"\nlist of {RUNS} runs rendered in {took * 1000:.0f} ms; {report}")
    store.close()


async def _listen(url: str, store: SqliteStore, counting: CountingStore,
                  listeners: Callable[[], int]) -> str:
    connected = asyncio.Semaphore(0)
    reached: list[float] = []
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
                    reached.append(time.monotonic())
                    if len(reached) == LISTENERS:
                        everyone.set()

    limits = httpx.Limits(max_connections=LISTENERS + 5)
    async with httpx.AsyncClient(base_url=url, timeout=10, limits=limits) as http:
        # Half watch the list, half the watched run's own page.
        tasks = [asyncio.create_task(page(http, "/live" if i % 2 else f"/runs/{WATCHED}/live"))
                 for i in range(LISTENERS)]
        for _ in range(LISTENERS):
            await asyncio.wait_for(connected.acquire(), timeout=10)
        assert listeners() == LISTENERS
        before = counting.snapshot()
        changed_at = time.monotonic()
        await asyncio.to_thread(store.add_signal, NewSignal(
            "web:live-test", WATCHED, SignalKind.STATUS, "alice", "local"))
        await asyncio.wait_for(everyone.wait(), timeout=5)
        await asyncio.sleep(1.0)  # ten more intervals with fifty listeners
        window = time.monotonic() - changed_at
        after = counting.snapshot()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # Pages gone, polling stops: the ledger is not read for nobody.
        deadline = time.monotonic() + 5
        while listeners() and time.monotonic() < deadline:
            await asyncio.sleep(INTERVAL)
        assert listeners() == 0
        await asyncio.sleep(2 * INTERVAL)
        idle = counting.snapshot()["run_marks"]
        await asyncio.sleep(5 * INTERVAL)
        assert counting.snapshot()["run_marks"] == idle

    polls = after["run_marks"] - before["run_marks"]
    other = sum((after - before).values()) - polls
    intervals = window / INTERVAL
    assert polls <= intervals + 1, f"{polls} polls in {intervals:.1f} intervals"
    assert polls >= intervals / 2, f"only {polls} polls in {intervals:.1f} intervals"
    assert other == 0, f"listeners read the ledger themselves: {after - before}"
    slowest = max(reached) - changed_at
    return (f"a change reached {LISTENERS} pages within {slowest * 1000:.0f} ms;"
            f" {polls} polls of the ledger in {intervals:.1f} intervals")
