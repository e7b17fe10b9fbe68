"""The ledger's reads for the dashboard, on every backend: pages of runs, repositories, marks."""

from __future__ import annotations

import pytest

from runner.errors import UnknownRun
from runner.ledger.records import Change, NewEvent, NewRun, NewSignal
from runner.names import EventType, SignalKind
from runner.workflow import State

T0 = 1_000_000.0
ACME, BETA = "https://github.com/acme/widgets.git", "/srv/beta"


def seed(store, count=7):
    """Runs r0..r{count-1}, one a second, alternating between two repositories."""
    for i in range(count):
        store.create_run(NewRun(id=f"r{i}", repo=ACME if i % 2 == 0 else BETA, title=f"t{i}"),
                         now=T0 + i)


def ids(runs):
    return [run.id for run in runs]


def test_runs_page_pages_newest_first_both_ways(store):
    seed(store)
    first = store.runs_page(limit=3)
    assert ids(first) == ["r6", "r5", "r4"]
    second = store.runs_page(limit=3, before="r4")
    assert ids(second) == ["r3", "r2", "r1"]
    assert ids(store.runs_page(limit=3, before="r1")) == ["r0"]
    # Back to newer runs from the top of the second page, still newest first.
    assert ids(store.runs_page(limit=3, after="r3")) == ["r6", "r5", "r4"]
    assert ids(store.runs_page(limit=2, after="r3")) == ["r5", "r4"]
    assert store.runs_page(limit=3, after="r6") == []


def test_runs_page_filters_by_state_and_repository(store):
    seed(store)
    lease = store.acquire_lease("r2", "w", ttl=30, now=T0 + 10)
    run = store.get_run("r2")
    store.apply(lease, Change(run.version, State.RESEARCH, "research.1"), now=T0 + 11)
    assert ids(store.runs_page(states=[State.RESEARCH])) == ["r2"]
    assert ids(store.runs_page(repos=[BETA])) == ["r5", "r3", "r1"]
    assert ids(store.runs_page(repos=[ACME], states=[State.QUEUED])) == ["r6", "r4", "r0"]
    assert ids(store.runs_page(repos=[ACME], before="r4")) == ["r2", "r0"]
    # An empty filter matches nothing: a reader allowed no repository sees no run.
    assert store.runs_page(repos=[]) == []
    assert store.runs_page(states=[]) == []


def test_runs_page_refuses_an_unknown_cursor(store):
    seed(store, 2)
    with pytest.raises(UnknownRun):
        store.runs_page(before="nope")


def test_runs_page_orders_runs_created_at_the_same_time_by_id(store):
    for run_id in ("b", "a", "c"):
        store.create_run(NewRun(id=run_id, repo=ACME, title=run_id), now=T0)
    assert ids(store.runs_page()) == ["c", "b", "a"]
    assert ids(store.runs_page(before="b")) == ["a"]
    assert ids(store.runs_page(after="b")) == ["c"]


def test_repositories_counts_runs(store):
    assert store.repositories() == {}
    seed(store, 5)
    assert store.repositories() == {ACME: 3, BETA: 2}


def test_run_marks_move_with_every_write_a_reader_sees(store):
    seed(store, 2)
    marks = store.run_marks()
    assert set(marks) == {"r0", "r1"}
    assert (marks["r0"].repo, marks["r0"].seq, marks["r0"].holder) == (ACME, 1, None)

    lease = store.acquire_lease("r0", "worker-1", ttl=30, now=T0 + 5)
    after_lease = store.run_marks()["r0"]
    assert after_lease.seq > 1 and after_lease.holder == "worker-1"
    # Events recorded without a state change (a check finishing) move the mark too.
    store.append(lease, events=[NewEvent(EventType.CHECK_COMPLETED, step="queued.1")])
    after_append = store.run_marks()["r0"]
    assert after_append.seq == after_lease.seq + 1
    # A release records no event: the holder is what changes.
    store.release_lease(lease)
    released = store.run_marks()["r0"]
    assert (released.seq, released.holder) == (after_append.seq, None)
    # A signal in the inbox is an event of its own.
    store.add_signal(NewSignal("web:1", "r0", SignalKind.RETRY, "alice", "github"))
    assert store.run_marks()["r0"].seq == released.seq + 1
    assert store.run_marks()["r1"] == marks["r1"]


def test_events_of_type_reads_a_page_of_runs_usage_in_one_query(store):
    seed(store, 3)
    for run_id, cost in (("r0", 0.1), ("r1", 0.2), ("r2", 0.4)):
        lease = store.acquire_lease(run_id, "w", ttl=30, now=T0 + 10)
        store.append(lease, events=[
            NewEvent(EventType.AGENT_USAGE, step="research.1", data={"usage": {"cost_usd": cost}}),
            NewEvent(EventType.CHECK_COMPLETED, step="verify.1"),
            NewEvent(EventType.AGENT_USAGE, step="specify.1", data={"usage": {"cost_usd": cost}}),
        ], now=T0 + 11)
    found = store.events_of_type(EventType.AGENT_USAGE, runs=["r2", "r0"])
    assert [(e.run_id, e.step) for e in found] == [
        ("r0", "research.1"), ("r0", "specify.1"), ("r2", "research.1"), ("r2", "specify.1")]
    assert all(e.type == EventType.AGENT_USAGE for e in found)
    assert len(store.events_of_type(EventType.AGENT_USAGE)) == 6  # every run's, as before
    assert store.events_of_type(EventType.AGENT_USAGE, runs=[]) == []  # nothing, not all
    assert store.events_of_type(EventType.AGENT_USAGE, runs=["nope"]) == []
