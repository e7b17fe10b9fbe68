"""Where a run came from and what it runs with, typed; the names a run is given.

A run is started on this host (``ratchet run``: a ``LocalOrigin``) or by a GitHub delivery
(a labeled issue, or a pull request head to verify: a ``GitHubOrigin``). Both carry the run's
agent (a command template or a preset) and the branches it works with. The ledger stores an
origin in the run row's ``params`` JSON under the flat keys Ratchet has always written
(``to_params``), so every row, old or new, has one shape; ``parse_origin`` validates one on
read, ignoring keys it does not know.

A run's id (``r-YYYYMMDD-xxxxxxxx``) and its branch (``ratchet/issue-<n>`` for a run on an
issue, ``ratchet/<run-id>`` otherwise) are spelled here only, with the branch's parsing back
to an issue beside it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

# Every branch a run pushes starts with this; a run on an issue pushes ISSUE_BRANCH_PREFIX<n>.
BRANCH_PREFIX = "ratchet/"
ISSUE_BRANCH_PREFIX = f"{BRANCH_PREFIX}issue-"


def new_run_id() -> str:
    """A fresh run id, ``r-<local date>-<8 hex digits>``."""
    return f"r-{time.strftime('%Y%m%d')}-{secrets.token_hex(4)}"


def run_branch(run_id: str, *, issue: int | None = None) -> str:
    """The branch a run pushes: ``ratchet/issue-<n>`` for a run on issue ``n`` (every run on
    that issue shares it: its pull request is found by it), else ``ratchet/<run-id>``."""
    return f"{ISSUE_BRANCH_PREFIX}{issue}" if issue is not None else f"{BRANCH_PREFIX}{run_id}"


def issue_of_branch(branch: str) -> int | None:
    """The issue whose runs push ``branch`` (``run_branch``'s inverse), or None for any other
    branch."""
    number = branch.removeprefix(ISSUE_BRANCH_PREFIX)
    return int(number) if branch.startswith(ISSUE_BRANCH_PREFIX) and number.isdigit() else None


def is_run_branch(branch: str) -> bool:
    """Whether ``branch`` has the form of a branch some run pushes (``run_branch``)."""
    return branch.startswith(BRANCH_PREFIX)


class _Frozen(BaseModel):
    # Frozen: a run's origin never changes once recorded. Unknown keys are ignored: a row may
    # hold keys that are no longer read (``remote``, always the run's repo) or that a newer
    # Ratchet added.
    model_config = ConfigDict(frozen=True, extra="ignore")


class AgentChoice(_Frozen):
    """The run's agent: a command template or a preset's name; neither means the service's
    default agent, read when the agent is started."""

    command: str | None = None
    preset: str | None = None


class _Origin(_Frozen):
    """What every origin carries."""

    agent: AgentChoice = AgentChoice()
    branch: str | None = None  # named at creation (``run_branch``); a verification's: none
    base_branch: str | None = None  # the branch the run starts from and its pull request targets
    diff_base: str | None = None  # a pull request's base commit: what its change is measured by

    @model_validator(mode="before")
    @classmethod
    def _agent_from_params(cls, data: Any) -> Any:
        """The stored row keeps the agent as two flat keys, ``agent_command`` and
        ``agent_preset``."""
        if isinstance(data, Mapping) and "agent" not in data:
            return {**data, "agent": {"command": data.get("agent_command"),
                                      "preset": data.get("agent_preset")}}
        return data

    def to_params(self) -> dict[str, Any]:
        """The row's ``params`` JSON: flat keys, as every Ratchet has written them."""
        data = self.model_dump(mode="json", exclude={"agent"}, exclude_none=True)
        agent = {"agent_command": self.agent.command, "agent_preset": self.agent.preset}
        return {**data, **{key: value for key, value in agent.items() if value is not None}}


class LocalOrigin(_Origin):
    """A run started on this host (``ratchet run``): its effects go to a local outbox."""

    outbox: str | None = None  # the local sink's folder; None: ``<run dir>/outbox``


class GitHubOrigin(_Origin):
    """A run a GitHub delivery started: a labeled issue's run, or the verification of a pull
    request head. Its effects go to GitHub through the App's ``installation``."""

    forge: Literal["github"] = "github"
    owner: str
    repo: str
    installation: int | None = None  # None: a plain token's client, or an Actions job
    clone_url: str
    label: str | None = None  # the label that started an issue's run
    started_by: str | None = None  # the login whose action started it
    source: str | None = None  # a verification's cause (a fork, a push, a re-request)


Origin = LocalOrigin | GitHubOrigin


def parse_origin(params: Mapping[str, Any]) -> Origin:
    """The origin a run row's ``params`` JSON stores: a ``GitHubOrigin`` when it names a
    forge, else a ``LocalOrigin``. Raises pydantic's ``ValidationError`` naming the key that
    does not fit."""
    if params.get("forge") is not None:
        return GitHubOrigin.model_validate(params)
    return LocalOrigin.model_validate(params)
