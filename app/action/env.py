"""The Actions environment and the action's inputs, read once into one typed object.

The runner sets ``GITHUB_*`` and ``RUNNER_*`` variables for every step; ``action.yml`` maps the
action's inputs into ``INPUT_<NAME>`` variables, upper-cased as ``@actions/core`` reads them
(``INPUT_MODE``, ``INPUT_GITHUB-TOKEN``), so ``ratchet action`` also runs by hand or in another
CI with the same variables. An input set to the empty string is unset (Actions passes ``''``
for an input nobody gave). See
https://docs.github.com/en/actions/reference/variables-reference#default-environment-variables.

Once read, ``scrub_environment`` removes the token and the runner's own credentials from the
process environment, so no agent, check or git call started later can inherit them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, MutableMapping
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

INPUT_PREFIX = "INPUT_"
# The runner's own credentials (cache, artifacts, OIDC): nothing Ratchet starts may see them.
RUNNER_SECRETS = (
    "GITHUB_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_RESULTS_URL",
    "ACTIONS_CACHE_URL",
)


class Mode(StrEnum):
    VERIFY = "verify"  # verify a pull request, push, merge group or dispatched revision
    RUN = "run"  # a durable Ratchet run across Actions jobs


class ActionError(Exception):
    """A usage or configuration error: the message names the variable or input to fix."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class ActionInputs(_Model):
    """The action's inputs (``action.yml``), as ``INPUT_<NAME>`` variables."""

    mode: Mode = Field(alias="INPUT_MODE")
    github_token: SecretStr | None = Field(None, alias="INPUT_GITHUB-TOKEN")
    agent_command: str | None = Field(None, alias="INPUT_AGENT-COMMAND")
    base: str | None = Field(None, alias="INPUT_BASE")
    head: str | None = Field(None, alias="INPUT_HEAD")
    trigger_label: str = Field("ratchet", alias="INPUT_TRIGGER-LABEL")
    config: str | None = Field(None, alias="INPUT_CONFIG")

    @property
    def token(self) -> str | None:
        return self.github_token.get_secret_value() if self.github_token else None

    @property
    def trigger_labels(self) -> frozenset[str]:
        return frozenset(label.strip() for label in self.trigger_label.split(",")
                         if label.strip())


class ActionEnv(_Model):
    """What ``ratchet action`` reads from the job's environment (read once, then scrubbed)."""

    event_name: str = Field(alias="GITHUB_EVENT_NAME")
    event_path: Path = Field(alias="GITHUB_EVENT_PATH")
    repository: str = Field(alias="GITHUB_REPOSITORY")
    api_url: str = Field("https://api.github.com", alias="GITHUB_API_URL")
    graphql_url: str | None = Field(None, alias="GITHUB_GRAPHQL_URL")
    server_url: str = Field("https://github.com", alias="GITHUB_SERVER_URL")
    run_id: str = Field("local", alias="GITHUB_RUN_ID")
    run_attempt: int = Field(1, ge=1, alias="GITHUB_RUN_ATTEMPT")
    checkout: Path = Field(default_factory=Path.cwd, alias="GITHUB_WORKSPACE")
    sha: str | None = Field(None, alias="GITHUB_SHA")
    output: Path | None = Field(None, alias="GITHUB_OUTPUT")
    step_summary: Path | None = Field(None, alias="GITHUB_STEP_SUMMARY")
    runner_temp: Path = Field(default_factory=lambda: Path(tempfile.gettempdir()),
                              alias="RUNNER_TEMP")
    inputs: ActionInputs

    @field_validator("repository")
    @classmethod
    def _owner_and_name(cls, value: str) -> str:
        owner, _, name = value.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"{value!r} is not OWNER/REPO")
        return value

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    @property
    def repo(self) -> str:
        return self.repository.split("/", 1)[1]

    @property
    def clone_url(self) -> str:
        """Where git reaches this job's repository: the runner's word, never a ledger's."""
        return f"{self.server_url.rstrip('/')}/{self.repository}.git"

    @property
    def run_url(self) -> str:
        """This workflow run's page: check runs and the summary link to it."""
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"

    @property
    def work_dir(self) -> Path:
        """Ratchet's own folder in this job (ledger, worktrees, bundle); never the checkout."""
        return self.runner_temp / "ratchet"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ActionEnv:
        """Read the environment; ``ActionError`` naming each variable that cannot be used."""
        given = {k: v for k, v in environ.items() if v != ""}
        inputs = {k.upper(): v for k, v in given.items() if k.upper().startswith(INPUT_PREFIX)}
        try:
            return cls.model_validate({**given, "inputs": ActionInputs.model_validate(inputs)})
        except ValidationError as exc:
            raise ActionError(_explain(exc)) from None


def _explain(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        name = str(error["loc"][-1]) if error["loc"] else "?"
        if error["type"] == "missing":
            hint = ("; give the action's `mode` input (verify or run)" if name == "INPUT_MODE"
                    else "; the Actions runner sets it: run `ratchet action` inside a job or"
                    " export it")
            problems.append(f"{name} is not set{hint}")
        else:
            problems.append(f"{name}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(problems)


def scrub_environment(environ: MutableMapping[str, str]) -> None:
    """Remove the inputs (the token among them) and the runner's credentials from
    ``environ``: agents, checks and git are started from it."""
    for name in list(environ):
        if name.upper().startswith(INPUT_PREFIX) or name in RUNNER_SECRETS:
            del environ[name]


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """Values to mask everywhere Ratchet writes (before ``scrub_environment``)."""
    return [v for k, v in environ.items() if v and (k in RUNNER_SECRETS or k.upper() in {
        "INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN"})]

