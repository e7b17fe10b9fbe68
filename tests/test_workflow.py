"""The workflow table: random outcome and signal sequences never leave it and always stop."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import IllegalTransition
from runner.names import StepId
from runner.workflow import (
    ENDS,
    PROFILES,
    STOPS,
    TRANSITIONS,
    WAITS,
    Outcome,
    State,
    allowed,
    is_end,
    is_runnable,
    is_stopped,
    is_wait,
    outcomes,
    transition,
    verify_outcome,
)

SIGNALS = {Outcome.APPROVED, Outcome.CHANGES_REQUESTED, Outcome.TIMED_OUT}
# What a person may do with a stopped run.
STOP_SIGNALS = (Outcome.RETRIED, Outcome.VERIFY_AGAIN, Outcome.CANCELLED)


def step_outcomes(state: State, repairs_done: int, max_repairs: int) -> list[Outcome]:
    """What a step in ``state`` can report, as the engine derives it."""
    if state is State.VERIFY:
        return [verify_outcome(passed=p, repairs_done=repairs_done, max_repairs=max_repairs)
                for p in (True, False)] + [Outcome.FAILED, Outcome.NEEDS_HUMAN]
    return [Outcome.COMPLETED, Outcome.FAILED, Outcome.NEEDS_HUMAN, Outcome.CANCELLED]


@settings(max_examples=500, deadline=None)
@given(choices=st.lists(st.integers(min_value=0, max_value=1000), max_size=200),
       max_repairs=st.integers(min_value=0, max_value=5))
def test_random_runs_stay_in_the_table_and_stop(choices, max_repairs):
    state, repairs, taken, signals = State.QUEUED, 0, 0, 0
    stopped_in = State.QUEUED  # the state of the step a stop stopped in
    script = iter(choices)
    while True:
        if is_end(state):
            break
        step = None
        if is_wait(state):
            choice = next(script, None)
            if choice is None:
                break  # the run waits for a signal: a legal place to stop
            signals += 1
            options = (sorted(STOP_SIGNALS) if is_stopped(state)
                       else sorted(SIGNALS | {Outcome.CANCELLED}))
            outcome = options[choice % len(options)]
            step = StepId(stopped_in.value, 1)
            if outcome is Outcome.RETRIED:
                repairs = 0 if stopped_in is State.VERIFY else repairs
        else:
            options = step_outcomes(state, repairs, max_repairs)
            outcome = options[next(script, 0) % len(options)]
            stopped_in = state
        target = transition(state, outcome, step=step)
        assert allowed(state, target)
        if outcome is not Outcome.RETRIED:
            assert (state, outcome) in TRANSITIONS
        if state is State.REPAIR and outcome is Outcome.COMPLETED:
            repairs += 1
        state, taken = target, taken + 1
        # Between signals a run reaches a wait or an end in bounded steps: repair is bounded.
        assert taken < (signals + 1) * (10 + 4 * (max_repairs + 1))
    assert is_wait(state) or is_end(state)


@given(state=st.sampled_from(list(State)), outcome=st.sampled_from(list(Outcome)))
def test_everything_outside_the_table_is_refused(state, outcome):
    if (state, outcome) in TRANSITIONS:
        assert transition(state, outcome) is TRANSITIONS[(state, outcome)]
    else:
        with pytest.raises(IllegalTransition):
            transition(state, outcome)


def test_table_shape():
    assert not any(s in ENDS for s, _ in TRANSITIONS)  # ends are final
    assert {State.DONE, State.CANCELLED} == ENDS and {State.FAILED, State.NEEDS_HUMAN} == STOPS
    for state in State:
        if is_runnable(state):
            assert state in PROFILES and outcomes(state)
    assert {State.AWAITING_APPROVAL, State.AWAITING_DIFF_APPROVAL, *STOPS} == WAITS
    # A stopped run goes back to the state of the step it stopped in, or is cancelled.
    assert transition(State.NEEDS_HUMAN, Outcome.RETRIED, step=StepId("publish", 1)) is (
        State.PUBLISH)
    assert transition(State.FAILED, Outcome.RETRIED, step=StepId("awaiting_approval", 1)) is (
        State.AWAITING_APPROVAL)
    assert transition(State.FAILED, Outcome.VERIFY_AGAIN) is State.VERIFY
    with pytest.raises(IllegalTransition):
        transition(State.NEEDS_HUMAN, Outcome.APPROVED)
    assert not PROFILES[State.RESEARCH].modify_worktree
    assert not PROFILES[State.SPECIFY].modify_worktree
    assert PROFILES[State.IMPLEMENT].modify_worktree and PROFILES[State.REPAIR].modify_worktree
    assert not PROFILES[State.VERIFY].agent and not PROFILES[State.PUBLISH].agent
    assert transition(State.AWAITING_APPROVAL, Outcome.CHANGES_REQUESTED) is State.SPECIFY
    assert verify_outcome(passed=False, repairs_done=3, max_repairs=3) is Outcome.REPAIRS_EXHAUSTED


def test_a_protected_change_waits_for_its_diff_before_publishing():
    """Verified is not published when a person must approve the diff: only the diff's
    approval leads to publish, and a spec approval does nothing there."""
    assert transition(State.VERIFY, Outcome.DIFF_APPROVAL_NEEDED) is (
        State.AWAITING_DIFF_APPROVAL)
    assert transition(State.AWAITING_DIFF_APPROVAL, Outcome.DIFF_APPROVED) is State.PUBLISH
    assert [target for (state, _), target in TRANSITIONS.items()
            if state is State.AWAITING_DIFF_APPROVAL and target is State.PUBLISH] == [
        State.PUBLISH]
    for outcome in (Outcome.APPROVED, Outcome.CHECKS_PASSED, Outcome.COMPLETED):
        with pytest.raises(IllegalTransition):
            transition(State.AWAITING_DIFF_APPROVAL, outcome)
    with pytest.raises(IllegalTransition):
        transition(State.AWAITING_APPROVAL, Outcome.DIFF_APPROVED)
    assert transition(State.AWAITING_DIFF_APPROVAL, Outcome.CANCELLED) is State.CANCELLED
    assert transition(State.NEEDS_HUMAN, Outcome.RETRIED,
                      step=StepId("awaiting_diff_approval", 1)) is State.AWAITING_DIFF_APPROVAL
    assert is_wait(State.AWAITING_DIFF_APPROVAL) and not is_runnable(State.AWAITING_DIFF_APPROVAL)
