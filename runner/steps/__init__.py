"""What each runnable state's step does; the session owns leases, commits and failure policy."""

from __future__ import annotations

from collections.abc import Callable

from runner.steps.agent import run_agent
from runner.steps.base import StepInput, StepResult, StepServices
from runner.steps.prepare import prepare
from runner.steps.publish import publish
from runner.steps.verify import verify
from runner.workflow import State

Step = Callable[[StepInput, StepServices], StepResult]

STEPS: dict[State, Step] = {
    State.QUEUED: prepare,
    State.RESEARCH: run_agent,
    State.SPECIFY: run_agent,
    State.IMPLEMENT: run_agent,
    State.REPAIR: run_agent,
    State.VERIFY: verify,
    State.PUBLISH: publish,
}

__all__ = ["STEPS", "Step", "StepInput", "StepResult", "StepServices"]
