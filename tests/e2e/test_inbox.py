"""The run's inbox through a real engine: who may signal, what a refusal leaves, duplicates.

An in-process engine (real SQLite, git, sandbox and scripted agent, the local sink) takes a
run to its approval wait; signals then arrive as a forge would deliver them.
"""

from __future__ import annotations

import sys
import time

import pytest

from app.compose import build_engine
from app.settings import Settings
from runner.engine import Engine
from runner.errors import TransientFailure
from runner.ledger import open_store
from runner.ledger.records import NewSignal
from runner.names import EffectKind, SignalKind, SignalStatus
from runner.signal_payloads import Approve, CommentRef
from runner.signals import Authorization
from runner.workflow import State
from tests.e2e.harness import AGENT, Ratchet, make_target_repo


@pytest.fixture
def waiting(tmp_path):
    """An engine and a run waiting for approval."""
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    ratchet.shared.mkdir(parents=True)
    settings = Settings(home=ratchet.home, agent_command=f"{sys.executable} {AGENT}",
                        sandbox_rw=str(ratchet.shared))
    store = open_store(settings.ledger_url)
    engine = build_engine(store, settings)
    run = engine.create_local_run(ratchet.repo, title="Add calc", body="Add calc.add(a, b).")
    assert engine.drive(run.id).state is State.AWAITING_APPROVAL
    yield engine, store, ratchet, run.id
    store.close()


def forge_approve(run_id: str, spec_hash: str, delivery: str) -> NewSignal:
    return NewSignal(id=f"github:{delivery}", run_id=run_id, kind=SignalKind.APPROVE,
                     author="mallory", origin="github",
                     payload=Approve(hash=spec_hash, comment=CommentRef(id=99)))


def test_a_refused_author_changes_nothing_and_gets_one_reply(waiting):
    engine, store, ratchet, run_id = waiting
    before = store.get_run(run_id)
    spec_hash = ratchet.spec_hash(run_id)

    # The same delivery five times: one signal in the inbox.
    for _ in range(5):
        engine.receive(forge_approve(run_id, spec_hash, "d-1"))
    assert len(store.signals(run_id)) == 1
    after = engine.drive(run_id)

    assert after.state is State.AWAITING_APPROVAL and after.step == before.step
    assert store.completed_steps(run_id) == ["queued.1", "research.1", "specify.1"]
    [answered] = store.signals(run_id)
    assert answered.status is SignalStatus.REFUSED and "not_permitted" in answered.reason
    replies = [e for e in store.effects(run_id) if e.kind is EffectKind.REPLY]
    assert len(replies) == 1 and replies[0].payload["refusal"] == "not_permitted"
    assert not [e for e in store.effects(run_id) if e.kind is EffectKind.REACTION]
    outbox = ratchet.outbox(run_id)
    [reply] = [c for c in outbox.comments if c["name"] is None]
    assert "mallory" in reply["text"] and "write access" in reply["text"]
    # A redelivery after the answer changes nothing either.
    engine.receive(forge_approve(run_id, spec_hash, "d-1"))
    engine.drive(run_id)
    assert len(ratchet.outbox(run_id).comments) == 2  # the tracking comment and one reply


def test_twenty_refused_commands_from_one_author_get_one_reply(waiting):
    engine, store, ratchet, run_id = waiting
    spec_hash = ratchet.spec_hash(run_id)
    for n in range(20):
        engine.receive(forge_approve(run_id, spec_hash, f"burst-{n}"))
    engine.drive(run_id)

    signals = store.signals(run_id)
    assert len(signals) == 20 and {s.status for s in signals} == {SignalStatus.REFUSED}
    replies = [e for e in store.effects(run_id) if e.kind is EffectKind.REPLY]
    assert len(replies) == 1  # the other nineteen are recorded, not answered
    refused = [e for e in store.events(run_id) if e.type == "SIGNAL_REFUSED"]
    assert [e.data["replied"] for e in refused] == [True] + [False] * 19
    assert len([c for c in ratchet.outbox(run_id).comments if c["name"] is None]) == 1


def test_local_signals_are_answered_in_order_each_once(waiting):
    engine, store, ratchet, run_id = waiting
    spec_hash = ratchet.spec_hash(run_id)
    stale = engine.signal(run_id, SignalKind.APPROVE, author="ann", payload=Approve(hash="abcdef"))
    good = engine.signal(run_id, SignalKind.APPROVE, author="ann",
                         payload=Approve(hash=spec_hash))
    late = engine.signal(run_id, SignalKind.APPROVE, author="ann",
                         payload=Approve(hash=spec_hash))

    assert engine.drive(run_id).state is State.DONE

    decided = {s.id: s for s in store.signals(run_id)}
    assert decided[stale.id].status is SignalStatus.REFUSED
    assert decided[good.id].status is SignalStatus.ACCEPTED
    assert decided[late.id].status is SignalStatus.REFUSED  # no spec waits any more
    assert "not_waiting_for_approval" in decided[late.id].reason
    ratchet.assert_published_once(run_id, replies=2)


class FlakyForge:
    """An authorizer whose forge is down for the first ``outages`` questions."""

    def __init__(self, outages: int) -> None:
        self.outages = outages
        self.asked = 0

    def authorize(self, run, signal):
        self.asked += 1
        if self.asked <= self.outages:
            raise TransientFailure("GitHub answered 502 to the permission check")
        return Authorization(True, "a writer")


def test_a_signal_whose_author_cannot_be_checked_waits_and_the_run_stays(waiting):
    engine, store, ratchet, run_id = waiting
    forge = FlakyForge(outages=1)
    flaky = Engine(store, engine.settings, executor_for=engine.scheduler.parts.executor_for,
                   worktrees=engine.worktrees, authorizer=forge)
    before = store.get_run(run_id)
    engine.receive(forge_approve(run_id, ratchet.spec_hash(run_id), "d-9"))

    woken_at = time.time()
    after = flaky.wake(run_id)

    # The outage decided nothing: the signal waits, the run keeps its state and attempts,
    # and a wake-up is scheduled.
    assert after.state is State.AWAITING_APPROVAL and after.attempt == before.attempt
    [waiting_signal] = store.signals(run_id)
    assert waiting_signal.status is SignalStatus.PENDING
    assert after.ready_at is not None and after.ready_at > woken_at  # later, not now
    assert not [e for e in store.effects(run_id) if e.kind is EffectKind.REPLY]
    assert [r.id for r in store.wake_due(now=after.ready_at + 60)] == [run_id]

    # Once the forge answers, the same signal is accepted and the run goes on.
    time.sleep(max(0.0, after.ready_at - time.time()))
    assert flaky.drive(run_id).state is State.DONE
    [answered] = store.signals(run_id)
    assert answered.status is SignalStatus.ACCEPTED and forge.asked == 2
