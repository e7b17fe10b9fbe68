"""The queued step: read the repository config at the base and record the base tree."""

from __future__ import annotations

import logging

from runner.budget import Budget
from runner.ceilings import within_ceilings
from runner.config import read_repository_config
from runner.errors import DeterministicFailure
from runner.ledger.records import NewEvent
from runner.names import EventType
from runner.origin import GitHubOrigin
from runner.steps.base import StepInput, StepResult, StepServices
from runner.workflow import PULL_REQUEST_WORKFLOW, Outcome
from verification.config import ConfigError

log = logging.getLogger(__name__)


def prepare(inp: StepInput, services: StepServices) -> StepResult:
    """Read from the base, never from the agent's tree: an agent cannot weaken its checks.

    A pull request's run has its head checked out: its config comes from the pull request's
    base commit, so a fork cannot weaken the checks that verify it.
    """
    pull_request = inp.run.workflow == PULL_REQUEST_WORKFLOW
    try:
        config = read_repository_config(services.worktrees.git(inp.worktree),
                                        inp.diff_base if pull_request else inp.base)
    except ConfigError as exc:
        raise DeterministicFailure(
            f"repository config is invalid: {exc}; fix it on the base branch and start a new run"
        ) from exc
    label = inp.run.origin.label if isinstance(inp.run.origin, GitHubOrigin) else None
    if label and config.trigger_label and label != config.trigger_label:
        # Started by a label the service watches that this repository does not use.
        return StepResult(
            Outcome.CANCELLED,
            reason=(f"{label!r} is not this repository's trigger label"
                    f" ({config.trigger_label!r}, in .github/ratchet.yml)"),
        )
    # The service's limits are ceilings: what the repository asks above them is lowered.
    config, limited = within_ceilings(config, services.settings.ceilings)
    for note in limited:
        log.warning("run %r: %s", inp.run.id, note)
    tree = services.worktrees.tree_of(inp.worktree)
    # The run's budget is fixed here: the repository's (at most the service's), each unset
    # limit the service's.
    budget = Budget.from_dict(config.budget.model_dump()).merged(services.settings.budget)
    return StepResult(
        Outcome.VERIFY_ONLY if pull_request else Outcome.COMPLETED,
        record={"config": config.model_dump(mode="json"), "tree": tree, "base": inp.base,
                "budget": budget.to_dict(), **({"limited": list(limited)} if limited else {})},
        events=(NewEvent(EventType.WORKSPACE_PREPARED, step=inp.run.step, revision=inp.base,
                         data={"tree": tree, **({"limited": list(limited)} if limited else {})}),),
    )
