"""Fixtures for the dashboard: a ledger with runs that have a story to tell, dashboards in each
access mode, the fake GitHub with an OAuth client, a live server, and one browser.

Runs are written through the ledger's own API (leases, fenced changes, effects, signals), so
the pages read what a worker would have recorded: a takeover after a lease expired, an effect
found already applied, a failed check with its log, a repair, an approval.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette

from app.dashboard import Dashboard, build_dashboard
from app.dashboard.config import Access, DashboardConfig
from app.dashboard.links import SignInLink
from app.service import create_app
from runner.canonical import sha256_hex
from runner.ledger.records import Change, Checkpoint, EffectIntent, Lease, NewEvent, NewRun, Run
from runner.ledger.sqlite import SqliteStore
from runner.names import EffectKind, EventType
from runner.origin import LocalOrigin
from runner.workflow import State
from tests.conftest import IN_CI
from tests.fakes import conftest as fake_fixtures

app_key = fake_fixtures.app_key  # the fake's session-wide App key (RSA keygen is slow)

T0 = 1_800_000_000.0
WEB = "https://github.com"
LOCAL_HOST = "http://127.0.0.1"  # a dashboard without GitHub sign-in answers loopback only
LOOPBACK_PEER = ("127.0.0.1", 50000)  # TestClient's peer ("testclient" is not this host)
CHROMIUM = Path(os.environ.get("RATCHET_TEST_CHROMIUM", "/usr/bin/chromium"))
SPEC = b"# Spec\n\nAdd calc.add(a, b) returning a + b.\n"
FAILING_LOG = b"FAIL: test_add <b>bold?</b>\nAssertionError: -1 != 5\n"
PASSING_LOG = b"Ran 1 test\n\nOK\n"
# What the story's agents reported: three priced runs ($0.25) and one its CLI did not price.
STORY_USAGE = {
    "research.1": {"cost_usd": 0.12, "input_tokens": 1500, "output_tokens": 300,
                   "agent_seconds": 12.5, "model": "claude-sonnet-4-5"},
    "specify.1": {"cost_usd": 0.08, "input_tokens": 800, "output_tokens": 200,
                  "agent_seconds": 20.0, "model": "claude-sonnet-4-5"},
    "implement.1": {"input_tokens": 2000, "output_tokens": 500, "agent_seconds": 30.0,
                    "model": "local-llm"},
    "repair.1": {"cost_usd": 0.05, "input_tokens": 400, "output_tokens": 100,
                 "agent_seconds": 8.0, "model": "claude-sonnet-4-5"},
}
# The story's budget, as its queued step recorded it.
STORY_BUDGET = {"max_cost_usd": 1.0, "max_agent_runs": 10, "max_agent_minutes": None,
                "max_run_hours": None}


def link_config(**options: Any) -> DashboardConfig:
    """A dashboard without GitHub sign-in: the operator signs in by the one-time link."""
    return DashboardConfig(access=Access.LINK, session_secret="test-session-secret",
                           web_url=WEB, link=SignInLink(LOCAL_HOST, announce=lambda url: None),
                           **options)


def link_path(config: DashboardConfig) -> str:
    """The current one-time sign-in link's path and query (``/?token=...``)."""
    assert config.link is not None
    return config.link.url.removeprefix(config.link.base_url)


def dashboard_app(store: SqliteStore, config: DashboardConfig, *,
                  wake: Callable[[str], None] | None = None, **options: Any
                  ) -> tuple[Starlette, Dashboard]:
    dashboard = build_dashboard(store, config, wake=wake or (lambda run_id: None), **options)
    return create_app(store, dashboard=dashboard), dashboard


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    ledger = SqliteStore(tmp_path / "ledger.db")
    yield ledger
    ledger.close()


class Writer:
    """Moves one run through the ledger as a worker would, one fenced change at a time."""

    def __init__(self, store: SqliteStore, run: Run, *, owner: str, at: float) -> None:
        self.store, self.run_id, self.at = store, run.id, at
        self.lease: Lease = self._take(owner)

    def _take(self, owner: str) -> Lease:
        lease = self.store.acquire_lease(self.run_id, owner, ttl=30, now=self.tick())
        assert lease is not None
        return lease

    def tick(self, seconds: float = 1.0) -> float:
        self.at += seconds
        return self.at

    def take_over(self, owner: str, *, after: float) -> None:
        """Another worker takes the run once this one's lease has expired."""
        self.tick(after)
        self.lease = self._take(owner)

    def move(self, state: State, step: str, *, checkpoint: tuple[str, dict[str, Any],
             dict[str, Any]] | None = None, **change: Any) -> Run:
        run = self.store.get_run(self.run_id)
        done = None
        if checkpoint is not None:
            name, given, result = checkpoint
            done = Checkpoint(self.run_id, name, run.attempt, given, result)
        return self.store.apply(self.lease, Change(run.version, state, step, checkpoint=done,
                                                   **change), now=self.tick())

    def effect(self, name: str, step: str, kind: EffectKind, payload: dict[str, Any],
               resource: dict[str, Any], *, reconciled: bool = False) -> str:
        key = f"{self.run_id}:{step}:{name}"
        run = self.store.get_run(self.run_id)
        self.store.apply(self.lease, Change(run.version, run.state, run.step,
                                            attempt=run.attempt, effects=(EffectIntent(
                                                key, self.run_id, step, kind, payload),)),
                         now=self.tick())
        self.store.begin_effect(self.lease, key, now=self.tick())
        self.store.confirm_effect(self.lease, key, resource, reconciled=reconciled,
                                  now=self.tick())
        return key

    def checks(self, step: str, *, status: str, log: bytes, event: EventType) -> str:
        sha = sha256_hex(log)
        result = {"id": "unit", "key": "unit", "kind": "test", "status": status,
                  "exit_code": 0 if status == "passed" else 1, "duration_s": 0.75,
                  "command": "python3 -m unittest -q", "workspace": ".",
                  "log_sha256": sha, "log_size": len(log), "reused": False}
        self.store.append(self.lease, events=[
            NewEvent(EventType.VERIFICATION_STARTED, step=step, attempt=1),
            NewEvent(EventType.CHECK_COMPLETED, step=step, attempt=1, data={"result": result}),
            NewEvent(event, step=step, attempt=1, data={"checks": ["unit"]}),
        ], artifacts={"verification/unit.log": log}, now=self.tick())
        return sha


@dataclass(frozen=True)
class Story:
    run_id: str
    failing_log_sha: str
    passing_log_sha: str


def used(step: str, usage: dict[str, dict[str, Any]] = STORY_USAGE) -> tuple[NewEvent, ...]:
    """The ``AGENT_USAGE`` event a worker records with an agent step's end."""
    if step not in usage:
        return ()
    return (NewEvent(EventType.AGENT_USAGE, step=step, attempt=1,
                     data={"outcome": "completed", "usage": usage[step]}),)


def tell_story(store: SqliteStore, *, run_id: str = "r-story", repo: str = "/srv/calc",
               title: str = "Add calc <script>alert('x')</script> & more",
               at: float = T0, usage: dict[str, dict[str, Any]] = STORY_USAGE) -> Story:
    """A run from queued to done: a takeover, an effect reconciled, a spec approved, a failed
    check repaired, a pull request made ready; its agents report ``usage`` (by step) against
    a budget of $1 and 10 agent runs."""
    run = store.create_run(NewRun(id=run_id, repo=repo, title=title, issue=7,
                                  origin=LocalOrigin(branch="ratchet/issue-7")), now=at)
    w = Writer(store, run, owner="host-a:101", at=at)
    agent = {"profile": {"agent": True, "modify_worktree": False}}
    w.move(State.RESEARCH, "research.1", checkpoint=("queued.1", {"revision": "abc"},
                                                      {"outcome": "completed",
                                                       "budget": STORY_BUDGET}))
    w.take_over("host-b:202", after=45)  # host-a died; its lease (30 s) ran out
    w.move(State.SPECIFY, "specify.1", checkpoint=("research.1", agent,
                                                    {"duration_s": 12.5, "outcome": "done"}),
           events=used("research.1", usage))
    w.move(State.AWAITING_APPROVAL, "awaiting_approval.1", artifacts={"spec.md": SPEC},
           checkpoint=("specify.1", agent, {"duration_s": 20.0, "outcome": "done"}),
           events=used("specify.1", usage))
    w.effect("pull-request", "specify.1", EffectKind.PULL_REQUEST,
             {"branch": "ratchet/issue-7", "draft": True},
             {"number": 12, "url": f"{WEB}/acme/widgets/pull/12"}, reconciled=True)
    spec_sha = sha256_hex(SPEC)
    w.move(State.IMPLEMENT, "implement.1", checkpoint=(
        "awaiting_approval.1", {"spec": spec_sha}, {"approved": spec_sha, "by": "alice"}),
        events=(NewEvent(EventType.SPEC_APPROVED, data={"by": "alice", "sha256": spec_sha}),))
    w.move(State.VERIFY, "verify.1", checkpoint=(
        "implement.1", {"profile": {"agent": True, "modify_worktree": True}},
        {"duration_s": 30.0}), events=used("implement.1", usage))
    failing = w.checks("verify.1", status="failed", log=FAILING_LOG,
                       event=EventType.TESTS_FAILED)
    w.move(State.REPAIR, "repair.1", checkpoint=("verify.1", {}, {"results": [
        {"id": "unit", "duration_s": 0.75}]}))
    w.move(State.VERIFY, "verify.2", checkpoint=("repair.1", agent, {"duration_s": 8.0}),
           events=used("repair.1", usage))
    passing = w.checks("verify.2", status="passed", log=PASSING_LOG,
                       event=EventType.VERIFICATION_PASSED)
    w.move(State.PUBLISH, "publish.1", checkpoint=("verify.2", {}, {"results": [
        {"id": "unit", "duration_s": 0.75}]}))
    w.move(State.DONE, "done.1", checkpoint=("publish.1", {}, {"outcome": "completed"}),
           events=(NewEvent(EventType.RUN_COMPLETED, step="done.1"),))
    store.release_lease(w.lease)
    return Story(run_id, failing, passing)


def waiting_run(store: SqliteStore, run_id: str, *, repo: str = "/srv/calc",
                at: float = T0) -> str:
    """A run waiting for its spec's approval; returns the spec's sha256."""
    run = store.create_run(NewRun(id=run_id, repo=repo, title=f"Waiting {run_id}"), now=at)
    w = Writer(store, run, owner="host-a:101", at=at)
    w.move(State.RESEARCH, "research.1")
    w.move(State.SPECIFY, "specify.1")
    w.move(State.AWAITING_APPROVAL, "awaiting_approval.1", artifacts={"spec.md": SPEC},
           events=(NewEvent(EventType.AWAITING_APPROVAL, step="awaiting_approval.1"),))
    store.release_lease(w.lease)
    return sha256_hex(SPEC)


class LiveServer:
    """A Starlette app under a real uvicorn on a free loopback port, in a thread."""

    def __init__(self, app: Starlette) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, name="dashboard-test-server",
                                       daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 60  # a backstop: it starts in well under a second
        while not self.server.started:
            assert time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Debian chromium for a module's browser tests (Playwright drives it; it
    never downloads a browser of its own). Not for the session: while Playwright's sync API
    is open, its event loop counts as running in this thread, and tests that call
    ``asyncio.run`` afterwards would fail."""
    if not CHROMIUM.exists():
        message = (f"no chromium at {CHROMIUM}: `make browser-deps` (apt-get install chromium)"
                   " installs it")
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
        ])
        yield chromium
        chromium.close()
