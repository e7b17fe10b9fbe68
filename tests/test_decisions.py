"""The pure decisions, without a database: signals, failures, the next move, rendering."""

from __future__ import annotations

from dataclasses import replace

import pytest

from github.words import GitHubWords
from runner import failures, inbox
from runner.decisions import Limits, MoveKind, decide_failure, next_move
from runner.errors import (
    AmbiguousFailure,
    AuthorityFailure,
    DeterministicFailure,
    PolicyViolation,
    TransientFailure,
)
from runner.ledger.records import Checkpoint, Effect, EffectStatus, Event, Run, Signal
from runner.names import EffectKind, EventType, SignalKind, SignalStatus
from runner.origin import AgentChoice, LocalOrigin
from runner.redact import Redactor
from runner.render import render_reply, render_tracking, say_next_action
from runner.signal_payloads import Approve, CommentRef, SignalPayload, read_payload
from runner.signals import Authorization, Refusal, decide_signal, recorded_before_spec
from runner.views import NextActionKind, describe, next_action, tracking_view
from runner.workflow import Outcome, State

NOW = 1_000_000.0
SPEC = "ab" * 32
ALLOWED = Authorization(True, "write")


def run_in(state: State, step: str = "x.1", **kw: object) -> Run:
    fields: dict[str, object] = dict(
        id="r1", repo="/repo", title="Add calc", body="", workflow="issue", issue=None, pr=None,
        state=state, step=step, attempt=1, version=3, lease_owner=None, lease_epoch=2,
        lease_expires_at=None, base_revision="base", head_revision=None, ready_at=None,
        deadline=None, reason=None, origin=LocalOrigin(), created_at=NOW - 65, updated_at=NOW,
    )
    fields.update(kw)
    return Run(**fields)  # type: ignore[arg-type]


def signal(kind: SignalKind, **payload: str) -> Signal:
    return Signal("cli:1", "r1", kind, "ann", "local", read_payload(kind, payload),
                  SignalStatus.PENDING, None, NOW, None)


class Words:
    def approve(self, run_id: str, spec_prefix: str) -> str:
        return f"/approve {spec_prefix}"

    def approve_diff(self, run_id: str, diff_sha256: str) -> str:
        return f"/approve-diff {diff_sha256}"

    def request_changes(self, run_id: str) -> str:
        return "/changes TEXT"

    def retry(self, run_id: str) -> str:
        return "/retry"

    def retry_with_agent(self, run_id: str) -> str:
        return "/retry --agent-command TEMPLATE"

    def cancel(self, run_id: str) -> str:
        return "/cancel"

    def resume(self, run_id: str) -> str:
        return "/resume"

    def mention(self, author: str) -> str:
        return f"@{author}"

    def budget(self, run_id: str, amount: str) -> str:
        return f"/budget {amount}"

    def closes(self, issue: int) -> str:
        return f"Closes #{issue}"


@pytest.mark.parametrize(("state", "kind", "payload", "outcome", "refusal"), [
    (State.AWAITING_APPROVAL, SignalKind.APPROVE, {"hash": SPEC[:12]}, Outcome.APPROVED, None),
    (State.AWAITING_APPROVAL, SignalKind.APPROVE, {"hash": SPEC[:5]}, None, Refusal.SHORT_HASH),
    (State.AWAITING_APPROVAL, SignalKind.APPROVE, {"hash": SPEC[:11]}, None, Refusal.SHORT_HASH),
    (State.AWAITING_APPROVAL, SignalKind.APPROVE, {"hash": "f" * 12}, None, Refusal.STALE_HASH),
    (State.IMPLEMENT, SignalKind.APPROVE, {"hash": SPEC}, None,
     Refusal.NOT_WAITING_FOR_APPROVAL),
    (State.AWAITING_APPROVAL, SignalKind.REQUEST_CHANGES, {"message": "more tests"},
     Outcome.CHANGES_REQUESTED, None),
    (State.AWAITING_APPROVAL, SignalKind.REQUEST_CHANGES, {"message": "  "}, None,
     Refusal.EMPTY_MESSAGE),
    (State.NEEDS_HUMAN, SignalKind.RETRY, {}, Outcome.RETRIED, None),
    (State.FAILED, SignalKind.RETRY, {}, Outcome.RETRIED, None),
    (State.VERIFY, SignalKind.RETRY, {}, None, Refusal.NOTHING_TO_RETRY),
    (State.IMPLEMENT, SignalKind.CANCEL, {}, Outcome.CANCELLED, None),
    (State.DONE, SignalKind.CANCEL, {}, None, Refusal.ENDED),
    (State.NEEDS_HUMAN, SignalKind.VERIFY_AGAIN, {}, Outcome.VERIFY_AGAIN, None),
])
def test_decide_signal(state, kind, payload, outcome, refusal):
    verdict = decide_signal(run_in(state), signal(kind, **payload), authorization=ALLOWED,
                            spec_sha256=SPEC, has_tree=True)
    assert verdict.outcome is outcome and verdict.refusal is refusal
    assert verdict.accepted is (refusal is None)


def test_an_author_without_permission_is_refused_whatever_they_ask():
    denied = Authorization(False, "read permission only")
    verdict = decide_signal(run_in(State.AWAITING_APPROVAL),
                            signal(SignalKind.APPROVE, hash=SPEC), authorization=denied,
                            spec_sha256=SPEC, has_tree=False)
    assert verdict.refusal is Refusal.NOT_PERMITTED
    assert verdict.params == {"author": "ann", "detail": "read permission only"}
    reply = render_reply({"run": "r1", "author": "ann", "refusal": verdict.refusal.value,
                          "params": dict(verdict.params)}, Words())
    assert reply.startswith("@ann: ") and "read permission only" in reply


def test_a_signal_is_answered_by_one_change_built_without_io():
    waiting = run_in(State.AWAITING_APPROVAL, "awaiting_approval.1")
    history = [Checkpoint("r1", step, 1, {}, {}) for step in ("queued.1", "research.1",
                                                              "specify.1")]
    approve = replace(signal(SignalKind.APPROVE, hash=SPEC[:12]),
                      payload=Approve(hash=SPEC[:12], comment=CommentRef(id=5, issue=7)))
    verdict = decide_signal(waiting, approve, authorization=ALLOWED, spec_sha256=SPEC,
                            has_tree=False)
    change, taken = inbox.acceptance(
        waiting, approve, verdict.outcome, spec_sha256=SPEC, history=history,
        effects=inbox.acknowledgement(waiting, approve, "eyes"))
    # The approval is checkpointed in the step it answers; the run enters implement.1.
    assert (change.state, change.step, change.version) == (State.IMPLEMENT, "implement.1", 3)
    assert change.checkpoint is not None and change.checkpoint.result["approved"] == SPEC
    assert taken == ["queued.1", "research.1", "specify.1", "awaiting_approval.1"]
    assert [e.type for e in change.events] == [
        EventType.SIGNAL_ACCEPTED, EventType.SPEC_APPROVED, EventType.IMPLEMENTATION_STARTED]
    assert change.artifacts == {"approved-spec.sha256": f"{SPEC}\n".encode()}
    [ack] = change.effects
    assert ack.key.startswith("r1:awaiting_approval.1:ack.approve.") and change.signal
    assert change.signal.status is SignalStatus.ACCEPTED

    # Refused: one reply, keyed by the signal, and the run stays where it is.
    stale = signal(SignalKind.APPROVE, hash="f" * 12)
    refused = inbox.refusal(waiting, stale, decide_signal(
        waiting, stale, authorization=ALLOWED, spec_sha256=SPEC, has_tree=False))
    assert (refused.state, refused.step, refused.checkpoint) == (
        State.AWAITING_APPROVAL, "awaiting_approval.1", None)
    [reply] = refused.effects
    assert reply.payload["refusal"] == "stale_hash" and reply.payload["params"]["current"] == SPEC
    assert refused.signal and refused.signal.status is SignalStatus.REFUSED

    # A cancel stops the run in its step: no steps completed by it.
    cancel = signal(SignalKind.CANCEL)
    stopped, none = inbox.acceptance(waiting, cancel, Outcome.CANCELLED, spec_sha256=SPEC,
                                     history=history, effects=())
    assert (stopped.state, stopped.step, stopped.reason, none) == (
        State.CANCELLED, "awaiting_approval.1", "cancelled by ann", None)


def test_a_wait_an_answer_enters_gets_its_deadline_from_the_config_or_the_service():
    stopped = run_in(State.NEEDS_HUMAN, "awaiting_approval.1")
    retry = signal(SignalKind.RETRY)
    verdict = decide_signal(stopped, retry, authorization=ALLOWED, spec_sha256=SPEC,
                            has_tree=False)
    prepared = Checkpoint("r1", "queued.1", 1, {}, {
        "outcome": "completed", "tree": "t", "base": "base",
        "config": {"approval": {"timeout_hours": 2}}})
    for history, default, deadline in (([prepared], 60, NOW + 7200), ([], 60, NOW + 60),
                                       ([], None, None)):
        change = inbox.answer(stopped, retry, verdict, spec_sha256=SPEC, history=history,
                              approval_timeout=default, now=NOW)
        assert (change.state, change.deadline) == (State.AWAITING_APPROVAL, deadline)
    # A refusal keeps the run where it is, its deadline too.
    waiting = run_in(State.AWAITING_APPROVAL, "awaiting_approval.1", deadline=NOW + 5)
    refused = inbox.answer(waiting, retry, decide_signal(
        waiting, retry, authorization=ALLOWED, spec_sha256=SPEC, has_tree=False),
        spec_sha256=SPEC, history=[prepared], approval_timeout=60, now=NOW)
    assert (refused.state, refused.deadline) == (State.AWAITING_APPROVAL, NOW + 5)


def test_a_failure_is_recorded_by_one_change_built_without_io():
    run = run_in(State.IMPLEMENT, "implement.1", attempt=2)
    limits = Limits(max_attempts=5, backoff_base=2, backoff_max=30)
    retry = failures.fail(run, TransientFailure("502 from the model API token=sekret123"),
                          during="step", limits=limits, redact=Redactor(["sekret123"]),
                          now=NOW, jitter=lambda low, high: high)
    assert (retry.state, retry.step, retry.ready_at) == (State.IMPLEMENT, "implement.1", NOW + 4)
    assert [e.type for e in retry.events] == [EventType.STEP_FAILED,
                                             EventType.STEP_RETRY_SCHEDULED]
    assert "sekret123" not in retry.artifacts["evidence/implement.1.2.json"].decode()
    stop = failures.fail(run, DeterministicFailure("exit 3", usage={"cost_usd": 0.1}),
                         during="step", limits=limits, redact=Redactor(), now=NOW)
    assert (stop.state, stop.reason, stop.ready_at) == (State.FAILED, "exit 3", None)
    assert [e.type for e in stop.events] == [EventType.STEP_FAILED, EventType.AGENT_USAGE,
                                            EventType.RUN_FAILED]
    assert failures.gives_up_effect(replace(run, state=State.FAILED), DeterministicFailure("x"))
    assert not failures.gives_up_effect(replace(run, state=State.FAILED), TransientFailure("x"))
    assert not failures.gives_up_effect(run, DeterministicFailure("x"))


def test_a_short_hash_reply_says_how_many_characters_to_give():
    verdict = decide_signal(run_in(State.AWAITING_APPROVAL),
                            signal(SignalKind.APPROVE, hash=SPEC[:6]), authorization=ALLOWED,
                            spec_sha256=SPEC, has_tree=False)
    assert verdict.refusal is Refusal.SHORT_HASH
    reply = render_reply({"run": "r1", "refusal": verdict.refusal.value,
                          "params": dict(verdict.params)}, Words())
    assert "at least 12 characters" in reply and f"`{SPEC[:6]}` has 6" in reply
    assert f"/approve {SPEC[:12]}" in reply


def test_a_stale_hash_reply_names_the_current_one_in_the_forges_words():
    verdict = decide_signal(run_in(State.AWAITING_APPROVAL),
                            signal(SignalKind.APPROVE, hash="123456abcdef"), authorization=ALLOWED,
                            spec_sha256=SPEC, has_tree=False)
    reply = render_reply({"run": "r1", "refusal": verdict.refusal.value,
                          "params": dict(verdict.params)}, Words())
    assert SPEC in reply and f"/approve {SPEC[:12]}" in reply


def test_an_approval_recorded_before_its_spec_approves_nothing():
    def event(seq: int, kind: EventType, **data: str) -> Event:
        return Event("r1", seq, kind.value, NOW, None, None, 1, None, None, data)

    # The agent hashed the spec it was still writing and approved it (seq 3); the spec was
    # committed with the wait (seq 4); a human's approval came after it (seq 5).
    history = [event(1, EventType.RUN_CREATED), event(2, EventType.SPEC_CREATED),
               event(3, EventType.SIGNAL_RECEIVED, signal="web:agent"),
               event(4, EventType.AWAITING_APPROVAL),
               event(5, EventType.SIGNAL_RECEIVED, signal="web:human")]
    assert recorded_before_spec(history, "web:agent")
    assert not recorded_before_spec(history, "web:human")
    # Sent back for changes: an approval from the first wait names no later spec.
    again = [*history, event(6, EventType.CHANGES_REQUESTED), event(7, EventType.AWAITING_APPROVAL)]
    assert recorded_before_spec(again, "web:human")

    verdict = decide_signal(run_in(State.AWAITING_APPROVAL),
                            signal(SignalKind.APPROVE, hash=SPEC), authorization=ALLOWED,
                            spec_sha256=SPEC, has_tree=False, before_spec=True)
    assert verdict.refusal is Refusal.BEFORE_SPEC and not verdict.accepted
    reply = render_reply({"run": "r1", "refusal": verdict.refusal.value,
                          "params": dict(verdict.params)}, Words())
    assert "before the spec it names was ready" in reply and f"/approve {SPEC[:12]}" in reply


@pytest.mark.parametrize(("failure", "attempt", "outcome", "retried"), [
    (TransientFailure("502"), 1, None, True),
    (AmbiguousFailure("dropped after send"), 2, None, True),
    (TransientFailure("502"), 5, Outcome.FAILED, False),
    (DeterministicFailure("exit 3"), 1, Outcome.FAILED, False),
    (AuthorityFailure("branch moved"), 1, Outcome.NEEDS_HUMAN, False),
    (PolicyViolation("wrote in research"), 1, Outcome.NEEDS_HUMAN, False),
])
def test_decide_failure(failure, attempt, outcome, retried):
    decision = decide_failure(run_in(State.IMPLEMENT, attempt=attempt), failure,
                              Limits(max_attempts=5, backoff_base=2, backoff_max=30),
                              jitter=lambda low, high: high)
    assert decision.outcome is outcome
    assert (EventType.STEP_RETRY_SCHEDULED in decision.events) is retried
    if retried:
        assert decision.delay == min(30, 2 * 2 ** (attempt - 1))
    assert (EventType.POLICY_VIOLATION in decision.events) is isinstance(failure,
                                                                          PolicyViolation)


def test_next_move():
    assert next_move(run_in(State.DONE), NOW, has_work=False).kind is MoveKind.FINISHED
    assert next_move(run_in(State.DONE), NOW, has_work=True).kind is MoveKind.WORK
    waiting = run_in(State.AWAITING_APPROVAL, deadline=NOW + 10)
    assert next_move(waiting, NOW, has_work=False).kind is MoveKind.WAITING
    assert next_move(waiting, NOW + 11, has_work=False).kind is MoveKind.TIME_OUT
    assert next_move(waiting, NOW, has_work=True).kind is MoveKind.WORK
    held = run_in(State.VERIFY, lease_owner="w", lease_expires_at=NOW + 5)
    assert next_move(held, NOW, has_work=True) == next_move(held, NOW, has_work=False)
    assert next_move(held, NOW, has_work=False).kind is MoveKind.LEASED
    backoff = run_in(State.VERIFY, ready_at=NOW + 3)
    move = next_move(backoff, NOW, has_work=False)
    assert (move.kind, move.at) == (MoveKind.NOT_BEFORE, NOW + 3)
    assert next_move(run_in(State.NEEDS_HUMAN), NOW, has_work=False).kind is MoveKind.WAITING


def test_a_status_request_answered_by_the_lease_holder_says_the_run_waits_for_a_reviewer():
    # The worker answering holds the lease and the request is still pending: neither is
    # what the run waits for; its reviewer is.
    held = run_in(State.AWAITING_APPROVAL, step="awaiting_approval.1", lease_owner="w",
                  lease_expires_at=NOW + 5)
    asked = Signal("s1", "r1", SignalKind.STATUS, "rita", "github", SignalPayload(),
                   SignalStatus.PENDING, None, NOW, None)
    status = describe(held, [], [], [asked], spec_sha256=SPEC, now=NOW, answering="s1")
    assert status.next_action.kind is NextActionKind.REVIEW_SPEC
    assert status.pending_signals == []
    said = say_next_action(status.next_action.to_dict(), "r1", Words())
    assert said.startswith("the run waits for a reviewer with write access")
    assert "lease" not in said
    # Asked by anyone else, the holder is still named.
    assert describe(held, [], [], [asked], spec_sha256=SPEC, now=NOW).next_action.kind is (
        NextActionKind.WAIT_FOR_HOLDER)


def test_next_action_and_tracking_view_are_data_said_by_the_edge():
    action = next_action(run_in(State.AWAITING_APPROVAL), [], spec_sha256=SPEC, now=NOW)
    assert action.kind is NextActionKind.REVIEW_SPEC and action.params == {"spec_sha256": SPEC}
    assert say_next_action(action.to_dict(), "r1", Words()) == (
        "the run waits for a reviewer with write access: review spec.md, then"
        f" `/approve {SPEC[:12]}` or `/changes TEXT`")
    view = tracking_view(run_in(State.AWAITING_APPROVAL, step="awaiting_approval.1"),
                         ["queued.1", "research.1", "specify.1"], spec_sha256=SPEC,
                         branch="ratchet/issue-7", at=NOW)
    assert [p["status"] for p in view["phases"]] == [
        "done", "done", "waiting", "pending", "pending", "pending"]
    text = render_tracking(view, Words())
    assert "- [x] research" in text and f"Spec sha256: `{SPEC}`" in text
    assert "`ratchet/issue-7`" in text and "elapsed 1m 5s" in text


def test_a_stopped_runs_tracking_says_the_failure_class_and_what_to_decide():
    run = run_in(State.FAILED, step="implement.1")
    run = replace(run, reason="implement failed 5 times, last: the agent timed out")
    view = tracking_view(run, ["queued.1", "research.1", "specify.1"], spec_sha256=None,
                         branch="ratchet/issue-7", at=NOW, failure="transient")
    text = render_tracking(view, Words(), [("pull request #4", "https://gh/acme/w/pull/4"),
                                           ("ratchet/verify", "https://gh/acme/w/runs/9")])
    assert "Failure class: transient" in text
    assert "Reason: implement failed 5 times" in text
    assert "[pull request #4](https://gh/acme/w/pull/4) · [ratchet/verify]" in text
    assert "Next: the run waits for a person with write access to fix the cause" in text


@pytest.mark.parametrize(("run", "budget", "waits_for"), [
    (run_in(State.IMPLEMENT, step="implement.1", lease_owner="host-a:1",
            lease_expires_at=NOW + 5), None, "worker host-a:1, which holds the lease on"),
    (run_in(State.IMPLEMENT, step="implement.1", ready_at=NOW + 30), None,
     "its scheduled retry of implement.1"),
    (run_in(State.IMPLEMENT, step="implement.1"), None,
     "a worker (or `/resume`) to continue from implement.1"),
    (run_in(State.AWAITING_APPROVAL, step="awaiting_approval.1"), None,
     "a reviewer with write access: review spec.md, then `/approve"),
    (run_in(State.AWAITING_DIFF_APPROVAL, step="awaiting_diff_approval.1",
            reason=f"the diff sha256 {'d' * 64} waits"), None,
     "a reviewer with write access: review the diff, then `/approve-diff"),
    (run_in(State.NEEDS_HUMAN, step="implement.1", reason="the branch moved"), None,
     "a person with write access to decide: the branch moved; then `/retry`"),
    (run_in(State.NEEDS_HUMAN, step="implement.1", reason="the budget is spent"),
     {"limit": "max_cost_usd", "raise": "+1"},
     "someone with write access to raise its budget (max_cost_usd is spent) with `/budget +1`"),
    (run_in(State.FAILED, step="implement.1", reason="agent exited 2"), None,
     "a person with write access to fix the cause of its failure (agent exited 2), then"
     " `/retry`"),
], ids=["lease-holder", "retry", "worker", "reviewer", "diff-reviewer", "decision", "budget",
        "failed"])
def test_every_waiting_state_says_who_the_run_waits_for(run, budget, waits_for) -> None:
    action = next_action(run, [], spec_sha256=SPEC, now=NOW, budget_stop=budget)
    said = say_next_action(action.to_dict(), "r1", Words())
    assert "the run waits for" in said and waits_for in said, said


def test_a_retry_gives_the_run_another_agent_only_from_this_hosts_cli():
    failed = run_in(State.FAILED, "research.1", reason="cannot start agent command 'nope'",
                    origin=LocalOrigin(agent=AgentChoice(command="nope {prompt}")))
    retry = signal(SignalKind.RETRY, agent_command="claude -p {prompt}")
    verdict = decide_signal(failed, retry, authorization=ALLOWED, spec_sha256=None,
                            has_tree=False)
    assert verdict.outcome is Outcome.RETRIED
    change, _ = inbox.acceptance(failed, retry, Outcome.RETRIED, spec_sha256=None,
                                 history=[Checkpoint("r1", "queued.1", 1, {}, {})], effects=())
    assert change.origin is not None and change.origin.agent == AgentChoice(
        command="claude -p {prompt}")
    [resumed] = [e for e in change.events if e.type == EventType.RUN_RESUMED]
    assert resumed.data["agent"] == {"command": "claude -p {prompt}"}
    # A plain retry keeps the run's agent.
    plain, _ = inbox.acceptance(failed, signal(SignalKind.RETRY), Outcome.RETRIED,
                                spec_sha256=None, history=[], effects=())
    assert plain.origin is None
    # From a forge (whoever wrote it), what a run executes is never changed.
    from_github = replace(retry, origin="github")
    refused = decide_signal(failed, from_github, authorization=ALLOWED, spec_sha256=None,
                            has_tree=False)
    assert refused.refusal is Refusal.NOT_PERMITTED and "CLI" in refused.params["detail"]


def test_a_failure_of_an_agent_that_did_not_start_says_to_retry_with_another_agent():
    failed = run_in(State.FAILED, "research.1", reason="cannot start agent command 'nope'")
    action = next_action(failed, [], spec_sha256=None, now=NOW, agent_did_not_start=True)
    said = say_next_action(action.to_dict(), "r1", Words())
    assert "/retry --agent-command TEMPLATE" in said and "make its agent start" in said
    # On a forge, whose words name no agent: the operator still, the forge's retry after.
    forge = say_next_action(action.to_dict(), "r1", GitHubWords())
    assert "waits for the operator to make its agent start" in forge
    assert "`/ratchet retry`" in forge and "another agent command at the host" in forge
    # Another failure: whoever has write access fixes it, then retries.
    plain = say_next_action(next_action(failed, [], spec_sha256=None, now=NOW).to_dict(), "r1",
                            Words())
    assert "--agent-command" not in plain and "fix the cause of its failure" in plain


def test_an_ended_run_with_effects_left_to_send_continues_nothing():
    cancelled = run_in(State.CANCELLED, "awaiting_approval.1", reason="cancelled by ann")
    effect = Effect("r1:awaiting_approval.1:tracking.cancelled", "r1", "awaiting_approval.1",
                    EffectKind.COMMENT, "h", {}, EffectStatus.INTENDED, None, 0, NOW, NOW)
    action = next_action(cancelled, [effect], spec_sha256=None, now=NOW)
    assert action.to_dict() == {"kind": "resume", "step": "awaiting_approval.1", "unsent": 1,
                                "signals": 0, "ended": "cancelled"}
    said = say_next_action(action.to_dict(), "r1", Words())
    assert said == "none: the run is cancelled; a worker (or `/resume`) still sends 1 recorded" \
                   " effect(s)", said
