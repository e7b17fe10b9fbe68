"""The ledger conformance suite: every backend of ``Store`` must pass all of it."""

from __future__ import annotations

import threading

import pytest

from runner.canonical import sha256_hex
from runner.errors import (
    CorruptArtifact,
    CorruptCheckpoint,
    EffectConflict,
    IllegalTransition,
    LedgerError,
    StaleWrite,
    UnknownRun,
)
from runner.ledger import schema
from runner.ledger.records import (
    EARLY_SIGNAL_SECONDS,
    Change,
    Checkpoint,
    DeliveryOutcome,
    EffectIntent,
    EffectStatus,
    NewDelivery,
    NewEvent,
    NewRun,
    NewSignal,
    SignalDecision,
    SignalFor,
)
from runner.names import EffectKind, SignalKind, SignalStatus
from runner.origin import AgentChoice, LocalOrigin
from runner.signal_payloads import Approve
from runner.workflow import State

T0 = 1_000_000.0


def new_run(store, run_id="r1", **kw):
    return store.create_run(NewRun(id=run_id, repo="/tmp/repo", title="Add a feature", **kw),
                            now=T0)


def raw(store, sql, params=()):
    with store._write() as tx:
        return tx.run(sql, params)


def comment(key="r1:x:c", body="hi", run_id="r1"):
    return EffectIntent(key, run_id, key.split(":")[1], EffectKind.COMMENT, {"body": body})


def same(run, **kw):
    """A change that keeps ``run`` where it is."""
    return Change(run.version, run.state, run.step, attempt=run.attempt, **kw)


def test_create_run_records_run_created(store):
    run = new_run(store, base_revision="abc")
    assert (run.state, run.version, run.attempt, run.lease_epoch) == (State.QUEUED, 1, 1, 0)
    assert store.get_run("r1") == run
    [event] = store.events("r1")
    assert (event.seq, event.type, event.revision) == (1, "RUN_CREATED", "abc")
    with pytest.raises(LedgerError, match="already exists"):
        new_run(store)


def test_unknown_run_names_itself(store):
    with pytest.raises(UnknownRun, match="nope"):
        store.get_run("nope")


def test_lease_is_exclusive_until_it_expires(store):
    new_run(store)
    a = store.acquire_lease("r1", "A", ttl=10, now=T0)
    assert a is not None and a.epoch == 1
    assert store.acquire_lease("r1", "B", ttl=10, now=T0 + 5) is None
    b = store.acquire_lease("r1", "B", ttl=10, now=T0 + 11)
    assert b is not None and b.epoch == 2
    types = [e.type for e in store.events("r1")]
    assert types == ["RUN_CREATED", "LEASE_ACQUIRED", "LEASE_EXPIRED", "LEASE_ACQUIRED"]
    expired = store.events("r1")[2]
    assert expired.data["owner"] == "A" and expired.data["epoch"] == 1
    # Taking up a step that was already held under an earlier lease is a new attempt.
    assert store.get_run("r1").attempt == 2


def test_reentrant_acquire_keeps_the_epoch(store):
    new_run(store)
    a = store.acquire_lease("r1", "A", ttl=10, now=T0)
    again = store.acquire_lease("r1", "A", ttl=10, now=T0 + 1)
    assert again is not None and again.epoch == a.epoch and again.expires_at == T0 + 11


def test_renew_and_release(store):
    new_run(store)
    a = store.acquire_lease("r1", "A", ttl=10, now=T0)
    renewed = store.renew_lease(a, ttl=10, now=T0 + 8)
    assert renewed.expires_at == T0 + 18
    assert store.acquire_lease("r1", "B", ttl=10, now=T0 + 12) is None
    store.release_lease(renewed)
    b = store.acquire_lease("r1", "B", ttl=10, now=T0 + 12)
    assert b is not None
    with pytest.raises(StaleWrite, match="no longer current"):
        store.renew_lease(renewed, ttl=10, now=T0 + 13)


def test_apply_commits_state_event_checkpoint_and_artifacts_together(store):
    run = new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=30, now=T0)
    run = store.get_run("r1")
    cp = Checkpoint("r1", "queued.1", 1, {"revision": "abc"}, {"ok": True})
    after = store.apply(
        lease,
        Change(
            version=run.version, state=State.RESEARCH, step="research.1",
            events=(NewEvent("RESEARCH_STARTED", step="research.1", attempt=1),),
            checkpoint=cp, artifacts={"notes.md": b"hello"},
        ),
        now=T0 + 1,
    )
    assert after.state is State.RESEARCH and after.version == run.version + 1
    assert store.get_run("r1") == after
    [loaded] = store.checkpoints("r1")
    assert loaded.result == {"ok": True} and loaded.sha256 == cp.sealed().sha256
    assert store.read_artifact("r1", "notes.md") == b"hello"
    assert store.events("r1")[-1].type == "RESEARCH_STARTED"
    assert store.events("r1")[-1].lease_epoch == lease.epoch


def test_failed_transaction_leaves_nothing(store):
    new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=30, now=T0)
    run = store.get_run("r1")
    cp = Checkpoint("r1", "queued.1", 1, {}, {})
    run = store.apply(lease, Change(run.version, State.RESEARCH, "research.1", checkpoint=cp))
    events_before = store.events("r1")
    # A second checkpoint for the same step violates the primary key: the whole change rolls back.
    with pytest.raises(Exception):  # noqa: B017 - the driver's integrity error
        store.apply(
            lease,
            Change(run.version, State.SPECIFY, "specify.1",
                   events=(NewEvent("X"),), checkpoint=cp, artifacts={"a": b"a"}),
        )
    assert store.get_run("r1") == run
    assert store.events("r1") == events_before
    assert "a" not in store.artifacts("r1")


def test_stale_version_and_stale_epoch_are_refused(store):
    new_run(store)
    a = store.acquire_lease("r1", "A", ttl=10, now=T0)
    run = store.get_run("r1")
    with pytest.raises(StaleWrite, match="version"):
        store.apply(a, Change(run.version - 1, State.RESEARCH, "research.1"))
    b = store.acquire_lease("r1", "B", ttl=10, now=T0 + 20)
    before = store.events("r1")
    with pytest.raises(StaleWrite, match="no longer current"):
        store.apply(a, Change(store.get_run("r1").version, State.RESEARCH, "research.1",
                              events=(NewEvent("RESEARCH_STARTED"),)))
    with pytest.raises(StaleWrite):
        store.append(a, events=[NewEvent("ZOMBIE")])
    with pytest.raises(StaleWrite):
        store.apply(a, same(store.get_run("r1"), effects=(comment(),)))
    assert store.events("r1") == before
    assert store.effects("r1") == []
    assert store.get_run("r1").state is State.QUEUED
    assert b is not None


def test_transitions_outside_the_table_are_refused(store):
    new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=10, now=T0)
    run = store.get_run("r1")
    with pytest.raises(IllegalTransition):
        store.apply(lease, Change(run.version, State.PUBLISH, "publish.1"))
    assert store.get_run("r1").state is State.QUEUED


def test_ended_run_accepts_no_change_of_state(store):
    new_run(store)
    store.cancel("r1", reason="stop", signal=cancel_signal())
    lease = store.acquire_lease("r1", "A", ttl=10, now=T0)
    run = store.get_run("r1")
    with pytest.raises(IllegalTransition, match="ended"):
        store.apply(lease, Change(run.version, State.RESEARCH, "research.1"))
    # Its outbox may still be sent: recording events keeps the state.
    assert store.apply(lease, same(run, events=(NewEvent("NOTE"),))).state is State.CANCELLED


def cancel_signal(signal_id="cli:1"):
    return NewSignal(signal_id, "r1", SignalKind.CANCEL, author="alice", origin="local")


def test_event_sequence_is_gapless_under_concurrency(store):
    new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=60)
    errors: list[Exception] = []

    def writer(n: int) -> None:
        try:
            for i in range(20):
                store.append(lease, events=[NewEvent(f"T{n}", data={"i": i})])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seqs = [e.seq for e in store.events("r1")]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == 2 + 80


def test_only_one_of_many_racing_workers_gets_the_lease(store):
    new_run(store)
    winners: list[str] = []
    barrier = threading.Barrier(4)

    def race(owner: str) -> None:
        barrier.wait()
        if store.acquire_lease("r1", owner, ttl=60) is not None:
            winners.append(owner)

    threads = [threading.Thread(target=race, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1
    assert store.get_run("r1").lease_epoch == 1


def test_corrupt_checkpoint_is_detected_and_never_returned(store):
    new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=10, now=T0)
    run = store.get_run("r1")
    store.apply(lease, Change(run.version, State.RESEARCH, "research.1",
                              checkpoint=Checkpoint("r1", "queued.1", 1, {}, {"tree": "abc"})))
    body = store.checkpoint("r1", "queued.1").body()
    flipped = body.replace('"abc"', '"abd"')
    raw(store, "UPDATE checkpoints SET body = ? WHERE run_id = ?", (flipped, "r1"))
    with pytest.raises(CorruptCheckpoint, match=r"queued\.1"):
        store.checkpoint("r1", "queued.1")
    with pytest.raises(CorruptCheckpoint):
        store.checkpoints("r1")
    assert store.completed_steps("r1") == ["queued.1"]


def test_artifacts_are_content_addressed_and_verified(store):
    new_run(store)
    sha = store.put_artifact(b"same bytes")
    assert sha == sha256_hex(b"same bytes") and store.put_artifact(b"same bytes") == sha
    with store._read() as tx:
        assert tx.one("SELECT COUNT(*) AS n FROM blobs WHERE sha256 = ?", (sha,))["n"] == 1
    assert store.get_artifact(sha) == b"same bytes"
    raw(store, "UPDATE blobs SET data = ? WHERE sha256 = ?", (b"other bytes", sha))
    with pytest.raises(CorruptArtifact):
        store.get_artifact(sha)


def test_artifact_path_points_at_latest_content(store):
    new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=10)
    store.append(lease, artifacts={"spec.md": b"v1"})
    store.append(lease, artifacts={"spec.md": b"v2"})
    assert store.read_artifact("r1", "spec.md") == b"v2"
    assert store.artifacts("r1") == {"spec.md": sha256_hex(b"v2")}


def test_outbox_is_recorded_with_its_change_then_sent_and_confirmed(store):
    new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=10)
    intent = comment("r1:publish.1:comment", "a")
    store.apply(lease, same(store.get_run("r1"), effects=(intent,)))
    [first] = store.effects("r1")
    assert first.status is EffectStatus.INTENDED and first.attempts == 0  # never sent
    assert first.payload == {"body": "a"} and first.payload_hash == intent.payload_hash
    # The same decision replayed changes nothing; another payload under the key is refused,
    # and with it the whole change.
    store.apply(lease, same(store.get_run("r1"), effects=(intent,)))
    assert store.effects("r1") == [first]
    run = store.get_run("r1")
    with pytest.raises(EffectConflict, match="refused"):
        store.apply(lease, Change(run.version, State.RESEARCH, "research.1",
                                  effects=(comment(intent.key, "b"),)))
    assert store.get_run("r1").state is State.QUEUED
    sent = store.begin_effect(lease, intent.key)
    assert sent.attempts == 1 and sent.status is EffectStatus.INTENDED
    confirmed = store.confirm_effect(lease, intent.key, {"id": 7})
    assert confirmed.status is EffectStatus.CONFIRMED and confirmed.resource == {"id": 7}
    assert store.get_effect(intent.key) == confirmed
    types = [e.type for e in store.events("r1") if e.key == intent.key]
    assert types == ["EFFECT_INTENDED", "EFFECT_ATTEMPTED", "EFFECT_CONFIRMED"]
    with pytest.raises(LedgerError, match="not waiting"):
        store.begin_effect(lease, intent.key)
    with pytest.raises(LedgerError, match="no intent"):
        store.confirm_effect(lease, "r1:x:unknown", {})


def test_effects_keep_their_decision_order_and_can_be_given_up(store):
    new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=10)
    keys = [f"r1:s.1:{name}" for name in ("zeta", "alpha", "mid")]
    store.apply(lease, same(store.get_run("r1"), effects=tuple(comment(k) for k in keys)))
    store.apply(lease, same(store.get_run("r1"), effects=(comment("r1:s.2:aaa"),)))
    assert [e.key for e in store.effects("r1")] == [*keys, "r1:s.2:aaa"]
    failed = store.fail_effect(lease, keys[0], "422 from the forge")
    assert failed.status is EffectStatus.FAILED and failed.resource == {
        "error": "422 from the forge"}
    with pytest.raises(LedgerError, match="not waiting"):
        store.fail_effect(lease, keys[0], "again")


def test_a_delivery_starts_one_run_per_issue_and_is_recorded_once(store):
    def labeled(delivery_id, run_id):
        return store.accept_delivery(
            NewDelivery(delivery_id, "issues", "labeled", "start", "labeled ratchet"),
            start=NewRun(id=run_id, repo="https://x/acme/w.git", title="t", issue=7), now=T0)

    first = labeled("guid-1", "run-a")
    assert (first.recorded, first.decision, first.run_id) == (True, "start", "run-a")
    again = labeled("guid-1", "run-b")  # a redelivery: the first answer, nothing new
    assert (again.recorded, again.run_id) == (False, "run-a")
    second = labeled("guid-2", "run-c")  # another label event while run-a is active
    assert (second.decision, second.run_id) == ("ignore", None)
    assert "run-a is already active for #7" in second.reason
    assert [r.id for r in store.list_runs()] == ["run-a"]
    assert store.delivery("guid-2") == DeliveryOutcome(True, "ignore", second.reason, None)


def test_a_delivery_signals_the_active_run_of_an_issue_or_its_pull_request(store):
    store.create_run(NewRun(id="r1", repo="repo", title="t", issue=7), now=T0)
    lease = store.acquire_lease("r1", "A", ttl=10, now=T0)
    store.link_pull_request(lease, 12)
    command = SignalFor("repo", 12, SignalKind.APPROVE, author="ann", origin="github",
                        payload=Approve(hash="abcdef"))
    outcome = store.accept_delivery(
        NewDelivery("guid-9", "issue_comment", "created", "signal", "approve"), signal=command)
    assert (outcome.decision, outcome.run_id) == ("signal", "r1")
    [signal] = store.signals("r1")
    assert (signal.id, signal.kind, signal.payload.to_stored()) == (
        "delivery:guid-9", SignalKind.APPROVE, {"hash": "abcdef"})
    nobody = store.accept_delivery(
        NewDelivery("guid-10", "issue_comment", "created", "signal", "approve"),
        signal=SignalFor("repo", 99, SignalKind.APPROVE, author="ann", origin="github",
                         payload=Approve(hash="abcdef")))
    assert nobody.decision == "ignore" and "no active run for #99" in nobody.reason


def test_a_command_finds_the_ended_run_of_its_issue_and_records_nothing_on_it(store):
    store.create_run(NewRun(id="r1", repo="repo", title="t", issue=7), now=T0)
    store.cancel("r1", reason="cancelled", now=T0 + 1, signal=NewSignal(
        "cli:1", "r1", SignalKind.CANCEL, "ann", "local"))
    asked = store.accept_delivery(
        NewDelivery("guid-s", "issue_comment", "created", "signal", "status"),
        signal=SignalFor("repo", 7, SignalKind.STATUS, author="ann", origin="github"))
    assert (asked.decision, asked.run_id) == ("ignore", "r1") and "has ended" in asked.reason
    assert [s.kind for s in store.signals("r1")] == [SignalKind.CANCEL]
    approve = store.accept_delivery(
        NewDelivery("guid-a", "issue_comment", "created", "signal", "approve"),
        signal=SignalFor("repo", 7, SignalKind.APPROVE, author="ann", origin="github",
                         payload=Approve(hash="abcdef")))
    assert (approve.decision, approve.run_id) == ("ignore", "r1")
    # On a pull request, only a status request: an approve may be for a run not linked yet.
    store.create_run(NewRun(id="r2", repo="repo", title="t", pr=12), now=T0 + 2)
    store.cancel("r2", reason="cancelled", now=T0 + 3, signal=NewSignal(
        "cli:2", "r2", SignalKind.CANCEL, "ann", "local"))
    on_pull = [store.accept_delivery(
        NewDelivery(f"guid-p{kind.value}", "issue_comment", "created", "signal", "x"),
        signal=SignalFor("repo", 12, kind, author="ann", origin="github", pull_request=True))
        for kind in (SignalKind.STATUS, SignalKind.RETRY)]
    assert [(o.decision, o.run_id) for o in on_pull] == [("ignore", "r2"), ("wait", None)]


def test_a_command_on_a_pull_request_no_run_linked_yet_waits_for_the_link(store):
    """The run that opened #12 has not confirmed it (its acknowledgement was lost): a writer's
    approve on #12 waits, and joins the run's inbox when the run links #12."""
    store.create_run(NewRun(id="r1", repo="repo", title="t", issue=7), now=T0)
    early = SignalFor("repo", 12, SignalKind.APPROVE, author="ann", origin="github",
                      payload=Approve(hash="abcdef" * 2), pull_request=True)
    waiting = store.accept_delivery(
        NewDelivery("guid-e", "issue_comment", "created", "signal", "approve"), signal=early,
        now=T0)
    assert (waiting.decision, waiting.run_id) == ("wait", None)
    assert "no run has linked #12 yet" in waiting.reason
    stale = store.accept_delivery(
        NewDelivery("guid-old", "issue_comment", "created", "signal", "approve"),
        signal=SignalFor("repo", 13, SignalKind.CANCEL, author="ann", origin="github",
                         pull_request=True), now=T0 - EARLY_SIGNAL_SECONDS - 1)
    assert stale.decision == "wait"
    assert store.signals("r1") == []

    lease = store.acquire_lease("r1", "A", ttl=10, now=T0)
    store.link_pull_request(lease, 12, now=T0 + 5)
    [signal] = store.signals("r1", status=SignalStatus.PENDING)
    assert (signal.id, signal.author, signal.payload.to_stored()) == (
        "delivery:guid-e", "ann", {"hash": "abcdef" * 2})
    received = [e for e in store.events("r1") if e.type == "SIGNAL_RECEIVED"]
    assert received[-1].data["signal"] == "delivery:guid-e" and received[-1].data["early"]
    # Linked once: a second link adopts nothing twice; a signal older than the wait is gone.
    store.link_pull_request(lease, 12, now=T0 + 6)
    assert len(store.signals("r1")) == 1
    store.link_pull_request(lease, 13, now=T0 + 7)
    assert len(store.signals("r1")) == 1


def test_a_signal_no_run_linked_within_the_wait_is_taken_out_once_for_its_answer(store):
    """A command on a pull request no run ever linked is not dropped: once it has waited
    ``EARLY_SIGNAL_SECONDS`` it is handed, once, to whoever asks its author to repeat it; a
    link of that pull request after the wait does not adopt it."""
    store.create_run(NewRun(id="r1", repo="repo", title="t", issue=7), now=T0)
    for n, (number, at) in enumerate([(12, T0), (13, T0 + 10), (12, T0 + 20)]):
        store.accept_delivery(
            NewDelivery(f"guid-{n}", "issue_comment", "created", "signal", "approve"),
            signal=SignalFor("repo", number, SignalKind.APPROVE, author=f"u{n}", origin="github",
                             payload=Approve(hash="abcdef" * 2), pull_request=True), now=at)
    assert store.expire_early_signals(now=T0 + EARLY_SIGNAL_SECONDS - 1) == []
    # A link after the first has waited a day adopts only the one still within the wait.
    lease = store.acquire_lease("r1", "A", ttl=10, now=T0)
    store.link_pull_request(lease, 12, now=T0 + EARLY_SIGNAL_SECONDS + 1)
    assert [s.author for s in store.signals("r1")] == ["u2"]
    expired = store.expire_early_signals(now=T0 + EARLY_SIGNAL_SECONDS + 15)
    assert [(s.number, s.author, s.kind, s.payload.to_stored(), s.pull_request)
            for s in expired] == [
        (12, "u0", SignalKind.APPROVE, {"hash": "abcdef" * 2}, True),
        (13, "u1", SignalKind.APPROVE, {"hash": "abcdef" * 2}, True)]
    assert store.expire_early_signals(now=T0 + 10 * EARLY_SIGNAL_SECONDS) == []  # once


def test_a_reply_to_one_login_is_claimed_once_a_minute(store):
    assert store.claim_reply("repo", 7, "Rita", interval=60, now=T0)
    assert not store.claim_reply("repo", 7, "rita", interval=60, now=T0 + 59)
    assert store.claim_reply("repo", 8, "rita", interval=60, now=T0 + 59)  # another issue
    assert store.claim_reply("repo", 7, "rita", interval=60, now=T0 + 60)


def test_deliveries_of_some_events_are_counted(store):
    assert store.count_deliveries(["member", "team"]) == 0
    for n, event in enumerate(["member", "issues", "team", "member"]):
        store.accept_delivery(NewDelivery(f"g-{n}", event, None, "ignore", "not used"))
    assert store.count_deliveries(["member", "team"]) == 3
    assert store.count_deliveries([]) == 0


def test_signals_are_recorded_once_per_source_and_decided_once(store):
    new_run(store)
    approve = NewSignal("github:delivery-1", "r1", SignalKind.APPROVE, author="ann",
                        origin="github", payload=Approve(hash="abcdef"))
    first, created = store.add_signal(approve, now=T0)
    again, created_again = store.add_signal(approve, now=T0 + 1)
    assert created and not created_again and again == first
    assert first.status is SignalStatus.PENDING and first.payload.to_stored() == {"hash": "abcdef"}
    assert [s.id for s in store.signals("r1", status=SignalStatus.PENDING)] == [first.id]
    assert [e.type for e in store.events("r1")].count("SIGNAL_RECEIVED") == 1
    lease = store.acquire_lease("r1", "A", ttl=10, now=T0)
    run = store.get_run("r1")
    decision = SignalDecision(first.id, SignalStatus.REFUSED, "no spec yet")
    store.apply(lease, same(run, signal=decision), now=T0 + 2)
    decided = store.get_signal(first.id)
    assert decided.status is SignalStatus.REFUSED and decided.reason == "no spec yet"
    assert decided.decided_at == T0 + 2 and store.signals("r1", status=SignalStatus.PENDING) == []
    with pytest.raises(StaleWrite, match="already decided"):
        store.apply(lease, same(store.get_run("r1"), signal=decision))
    with pytest.raises(UnknownRun):
        store.add_signal(NewSignal("x", "nope", SignalKind.CANCEL, author="a", origin="local"))


def test_wake_due_expires_dead_leases_once_and_throttles_rewakes(store):
    for rid in ("free", "held", "expired", "backoff", "waiting", "overdue", "signalled"):
        new_run(store, rid)
    store.acquire_lease("held", "A", ttl=100, now=T0)
    store.acquire_lease("expired", "A", ttl=1, now=T0)
    lease = store.acquire_lease("backoff", "A", ttl=100, now=T0)
    store.apply(lease, Change(store.get_run("backoff").version, State.QUEUED, "queued.1",
                              attempt=2, ready_at=T0 + 500), now=T0)
    store.release_lease(lease)
    for rid, deadline in (("waiting", T0 + 500), ("overdue", T0 + 5), ("signalled", T0 + 500)):
        lease = store.acquire_lease(rid, "A", ttl=100, now=T0)
        run = store.get_run(rid)
        for state in (State.RESEARCH, State.SPECIFY):
            run = store.apply(lease, Change(run.version, state, f"{state.value}.1"), now=T0)
        store.apply(lease, Change(run.version, State.AWAITING_APPROVAL, "awaiting_approval.1",
                                  deadline=deadline), now=T0)
        store.release_lease(lease)
    # A waiting run with a signal in its inbox is woken too.
    store.add_signal(NewSignal("s1", "signalled", SignalKind.CANCEL, author="a",
                               origin="local"), now=T0)
    woken = store.wake_due(now=T0 + 10, rewake_after=30)
    assert {r.id for r in woken} == {"free", "expired", "overdue", "signalled"}
    assert all(r.lease_owner is None for r in woken)
    expired = store.get_run("expired")
    assert expired.lease_owner is None and expired.lease_epoch == 1
    assert [e.type for e in store.events("expired")][-1] == "LEASE_EXPIRED"
    # Woken runs are not woken again until rewake_after has passed; the lease expired once.
    assert store.wake_due(now=T0 + 20, rewake_after=30) == []
    assert {r.id for r in store.wake_due(now=T0 + 41, rewake_after=30)} == {
        "free", "expired", "overdue", "signalled"}
    assert [e.type for e in store.events("expired")].count("LEASE_EXPIRED") == 1
    # A takeover after the reaper cleared the lease records no second expiry.
    store.acquire_lease("expired", "B", ttl=10, now=T0 + 42)
    assert [e.type for e in store.events("expired")].count("LEASE_EXPIRED") == 1


def test_recovery_stats(store):
    new_run(store, "a")
    new_run(store, "b")
    store.acquire_lease("a", "A", ttl=5, now=T0)
    store.wake_due(now=T0 + 6)
    store.acquire_lease("a", "B", ttl=5, now=T0 + 8)
    lease = store.acquire_lease("b", "A", ttl=5, now=T0)
    store.apply(lease, Change(store.get_run("b").version, State.RESEARCH, "research.1",
                              checkpoint=Checkpoint("b", "queued.1", 2, {}, {})), now=T0 + 1)
    store.apply(lease, same(store.get_run("b"), effects=(comment("b:x:c", "1", "b"),)))
    store.begin_effect(lease, "b:x:c")
    store.confirm_effect(lease, "b:x:c", {"id": 1}, reconciled=True)
    stats = store.recovery_stats(now=T0 + 11)
    assert stats.runs_by_state == {"queued": 1, "research": 1}
    assert stats.lease_expirations == 1 and stats.effect_reconciliations == 1
    assert stats.resume_seconds == [3.0]
    assert stats.checkpoint_ages == [10.0] and stats.step_attempts == [2]


def test_list_runs_newest_first_and_by_state(store):
    for i in range(3):
        store.create_run(NewRun(id=f"r{i}", repo="x", title="t"), now=T0 + i)
    assert [r.id for r in store.list_runs()] == ["r2", "r1", "r0"]
    assert [r.id for r in store.list_runs(limit=1)] == ["r2"]
    assert store.list_runs(states=[State.DONE]) == []


def test_a_change_may_give_the_run_a_new_origin_and_keeps_it_otherwise(store):
    new_run(store, origin=LocalOrigin(agent=AgentChoice(command="nope {prompt}")))
    lease = store.acquire_lease("r1", "A", ttl=30, now=T0)
    run = store.get_run("r1")
    given = run.origin.model_copy(update={"agent": AgentChoice(preset="claude")})
    after = store.apply(lease, same(run, origin=given), now=T0 + 1)
    assert after.origin == given and store.get_run("r1").origin == given
    kept = store.apply(lease, same(after), now=T0 + 2)
    assert kept.origin == given and store.get_run("r1").origin.agent.preset == "claude"


def test_pickups_are_handed_out_once_oldest_first(store):
    assert store.take_pickups() == []
    store.request_pickup("r2", now=T0)
    store.request_pickup("r1", now=T0 + 1)
    store.request_pickup("r2", now=T0 + 2)  # asked again: still one pickup, now the newest
    assert store.take_pickups() == ["r1", "r2"]
    assert store.take_pickups() == []


def test_migrations_are_idempotent_and_newer_schema_is_refused(store):
    store.migrate()
    assert store.schema_version() == schema.LATEST == 6
    raw(store, "INSERT INTO ledger_schema (version) VALUES (99)")
    with pytest.raises(LedgerError, match="newer than this Ratchet"):
        store.migrate()


def test_cancel_fences_out_the_holder(store):
    new_run(store)
    lease = store.acquire_lease("r1", "A", ttl=30, now=T0)
    cancelled = store.cancel("r1", reason="not needed", signal=cancel_signal(), now=T0 + 1)
    assert cancelled.state is State.CANCELLED and cancelled.lease_owner is None
    assert cancelled.lease_epoch == lease.epoch + 1 and cancelled.reason == "not needed"
    with pytest.raises(StaleWrite):
        store.renew_lease(lease, ttl=30)
    with pytest.raises(StaleWrite):
        store.append(lease, events=[NewEvent("ZOMBIE")])
    event = store.events("r1")[-1]
    assert event.type == "RUN_CANCELLED" and event.data["fenced_owner"] == "A"
    [signal] = store.signals("r1")
    assert signal.status is SignalStatus.ACCEPTED and signal.kind is SignalKind.CANCEL
    with pytest.raises(IllegalTransition, match="already ended"):
        store.cancel("r1", reason="again", signal=cancel_signal("cli:2"))
