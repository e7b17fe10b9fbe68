"""The workflow table: random outcome and signal sequences never leave it and always stop."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import IllegalTransition
from runner.workflow import (
    ENDS,
    PROFILES,
    TRANSITIONS,
    WAITS,
    Outcome,
    State,
    allowed,
    is_end,
    is_runnable,
    is_wait,
    outcomes,
    transition,
    verify_outcome,
)

SIGNALS = {Outcome.APPROVED, Outcome.CHANGES_REQUESTED, Outcome.TIMED_OUT}


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
    state, repairs, taken = State.QUEUED, 0, 0
    script = iter(choices)
    while True:
        if is_end(state):
            break
        if is_wait(state):
            choice = next(script, None)
            if choice is None:
                break  # the run waits for a signal: a legal place to stop
            options = sorted(SIGNALS | {Outcome.CANCELLED})
            outcome = options[choice % len(options)]
        else:
            options = step_outcomes(state, repairs, max_repairs)
            outcome = options[next(script, 0) % len(options)]
        target = transition(state, outcome)
        assert (state, outcome) in TRANSITIONS and allowed(state, target)
        if state is State.REPAIR and outcome is Outcome.COMPLETED:
            repairs += 1
        state, taken = target, taken + 1
        # Without signals a run reaches a wait or an end in bounded steps: repair is bounded.
        assert taken < 10 + 4 * (max_repairs + 1) + 4 * len(choices)
    assert is_wait(state) or is_end(state)
    assert repairs <= max_repairs


@given(state=st.sampled_from(list(State)), outcome=st.sampled_from(list(Outcome)))
def test_everything_outside_the_table_is_refused(state, outcome):
    if (state, outcome) in TRANSITIONS:
        assert transition(state, outcome) is TRANSITIONS[(state, outcome)]
    else:
        with pytest.raises(IllegalTransition):
            transition(state, outcome)


def test_table_shape():
    assert not any(s in ENDS for s, _ in TRANSITIONS)  # ends are final
    for state in State:
        if is_runnable(state):
            assert state in PROFILES and outcomes(state)
    assert {State.AWAITING_APPROVAL} == WAITS
    assert not PROFILES[State.RESEARCH].modify_worktree
    assert not PROFILES[State.SPECIFY].modify_worktree
    assert PROFILES[State.IMPLEMENT].modify_worktree and PROFILES[State.REPAIR].modify_worktree
    assert not PROFILES[State.VERIFY].agent and not PROFILES[State.PUBLISH].agent
    assert transition(State.AWAITING_APPROVAL, Outcome.CHANGES_REQUESTED) is State.SPECIFY
    assert verify_outcome(passed=False, repairs_done=3, max_repairs=3) is Outcome.REPAIRS_EXHAUSTED
