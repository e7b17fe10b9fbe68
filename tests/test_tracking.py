"""The tracking comment's edit is a pure function of the run, the change and a snapshot of
what the ledger held before it: tested here without a database."""

from __future__ import annotations

from runner import changes
from runner.canonical import sha256_hex
from runner.ledger.records import Change, Checkpoint, Event, NewEvent, Run
from runner.names import EventType
from runner.origin import LocalOrigin
from runner.tracking import TrackingSnapshot, edit_for_change, needs_edit, tracking_key
from runner.workflow import PULL_REQUEST_WORKFLOW, Outcome, State

NOW = 1_000_000.0


def run_in(state: State, step: str, **kw: object) -> Run:
    fields: dict[str, object] = dict(
        id="r1", repo="/repo", title="Add calc", body="", workflow="issue", issue=7, pr=None,
        state=state, step=step, attempt=1, version=3, lease_owner="w", lease_epoch=2,
        lease_expires_at=NOW + 30, base_revision="base", head_revision=None, ready_at=None,
        deadline=None, reason=None, origin=LocalOrigin(branch="ratchet/issue-7"),
        created_at=NOW - 65, updated_at=NOW,
    )
    fields.update(kw)
    return Run(**fields)  # type: ignore[arg-type]


def usage_event(step: str, cost: float) -> Event:
    return Event("r1", 9, str(EventType.AGENT_USAGE), NOW - 10, step, 1, 2, None, None,
                 {"outcome": "completed", "usage": {"cost_usd": cost}})


def test_a_spec_written_edits_the_comment_from_the_snapshot_and_the_change():
    run = run_in(State.SPECIFY, "specify.1")
    change = Change(
        version=3, state=State.AWAITING_APPROVAL, step="awaiting_approval.1",
        checkpoint=Checkpoint("r1", "specify.1", 1, {}, {"outcome": "completed"}),
        artifacts={"spec.md": b"# Spec\n"},
        events=(changes.entry_event(State.AWAITING_APPROVAL, "awaiting_approval.1", None),))
    snapshot = TrackingSnapshot(at=NOW, completed=("queued.1", "research.1"))

    edit = edit_for_change(run, change, snapshot)

    assert edit.key == tracking_key("r1", "awaiting_approval.1", State.AWAITING_APPROVAL)
    view = edit.payload["view"]
    assert view["state"] == "awaiting_approval"
    assert view["spec_sha256"] == sha256_hex(b"# Spec\n")  # from the change, not the ledger
    assert view["branch"] == "ratchet/issue-7"
    assert view["elapsed_s"] == 65.0
    assert {p["phase"]: p["status"] for p in view["phases"]} == {
        "research": "done", "specify": "done", "awaiting_approval": "waiting",
        "implement": "pending", "verify": "pending", "publish": "pending"}
    assert view["next_action"] == {"kind": "review_spec", "spec_sha256": sha256_hex(b"# Spec\n")}
    # The recorded spec stands in when the change does not carry one.
    recorded = TrackingSnapshot(at=NOW, completed=("queued.1",), spec=b"older\n")
    later = edit_for_change(run, Change(version=3, state=State.AWAITING_APPROVAL,
                                        step="awaiting_approval.2"), recorded)
    assert later.payload["view"]["spec_sha256"] == sha256_hex(b"older\n")


def test_a_stop_shows_the_failure_class_and_counts_what_the_change_spends():
    run = run_in(State.IMPLEMENT, "implement.1")
    change = changes.stop(run, Outcome.FAILED, "the agent exited 1", [
        NewEvent(EventType.STEP_FAILED, step="implement.1", attempt=1,
                 data={"class": "deterministic", "error": "the agent exited 1"}),
        NewEvent(EventType.AGENT_USAGE, step="implement.1", attempt=1,
                 data={"outcome": "deterministic", "usage": {"cost_usd": 0.5}})])
    snapshot = TrackingSnapshot(
        at=NOW, completed=("queued.1", "research.1", "specify.1", "awaiting_approval.1"),
        events=(usage_event("research.1", 0.25),), prepared={"budget": {"max_cost_usd": 2.0}})

    view = edit_for_change(run, change, snapshot).payload["view"]

    assert view["state"] == "failed"
    assert view["failure_class"] == "deterministic"
    assert view["usage"]["total"]["agent_runs"] == 2  # the recorded run and this change's
    assert view["usage"]["total"]["cost_usd"] == 0.75
    assert view["usage"]["budget"]["max_cost_usd"]["allowed"] == 2.0
    assert view["next_action"]["kind"] == "fix_and_retry"


def test_the_queued_steps_record_comes_with_the_change_that_completes_it():
    run = run_in(State.QUEUED, "queued.1")
    prepared = {"outcome": "completed", "config": {}, "base": "base", "tree": "t",
                "budget": {"max_agent_runs": 4}}
    change = Change(version=3, state=State.RESEARCH, step="research.1",
                    checkpoint=Checkpoint("r1", "queued.1", 1, {}, prepared))
    # Usage is shown once an agent ran: one did (an imagined earlier one, for the budget).
    snapshot = TrackingSnapshot(at=NOW, events=(usage_event("queued.1", 0.0),))

    view = edit_for_change(run, change, snapshot).payload["view"]

    assert view["usage"]["budget"] == {"max_agent_runs": {"allowed": 4, "spent": 1}}
    assert view["phases"][0] == {"phase": "research", "status": "running"}


def test_a_state_entered_again_at_the_same_step_is_a_new_edit():
    run = run_in(State.NEEDS_HUMAN, "implement.1")
    change = Change(version=3, state=State.IMPLEMENT, step="implement.1")

    first = edit_for_change(run, change, TrackingSnapshot(at=NOW))
    again = edit_for_change(run, change, TrackingSnapshot(at=NOW, edited=True))

    assert first.key == tracking_key("r1", "implement.1", State.IMPLEMENT)
    assert again.key == tracking_key("r1", "implement.1", State.IMPLEMENT, 3)


def test_only_a_change_of_state_of_a_run_with_a_comment_edits_it():
    run = run_in(State.IMPLEMENT, "implement.1")
    assert needs_edit(run, Change(version=3, state=State.FAILED, step="implement.1"))
    assert not needs_edit(run, changes.unchanged(run, ready_at=NOW + 5))
    pull_request = run_in(State.VERIFY, "verify.1", workflow=PULL_REQUEST_WORKFLOW)
    assert not needs_edit(pull_request, Change(version=3, state=State.DONE, step="verify.1"))
