"""The repository's `.github/ratchet.yml` as the runner reads it: every section of the file.

`verify` is verification's (``verification/config.py``: a dataclass read by its own validator,
so `ratchet verify` can read it without pydantic); approval, budget, agent, research, repair,
limits and publish are the runner's own pydantic models, defined here. The file is loaded by
``verification.config.load_config`` (the hostile-YAML caps, the line of every field).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    field_validator,
    model_validator,
)

from plumbing.git import Git
from verification.config import (
    CONFIG_PATH,
    UNKNOWN_KEY,
    ConfigError,
    FieldProblem,
    VerifyConfig,
    check_host_pattern,
    config_error_at,
    load_config,
    read_config_at,
    read_config_file,
)

# Default for `limits.max_file_bytes`: the largest file a change may add to the worktree.
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
# Defaults for `limits.max_change_bytes` and `limits.max_changed_files`: how big a run's change
# from its base may get (added, changed and deleted files; ignored ones not counted).
DEFAULT_MAX_CHANGE_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_CHANGED_FILES = 2000

# Default for `agent.idle_timeout`: seconds an agent may print nothing and change nothing.
DEFAULT_IDLE_TIMEOUT = 600.0

# A research subagent's name: a slug, as it names its artifact (`subagents/<name>.md`).
SUBAGENT_NAME_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$"
# Defaults and bounds of the `research` section: parallel subagents, and how many a run has.
DEFAULT_SUBAGENT_CONCURRENCY = 3
MAX_SUBAGENT_CONCURRENCY = 16
DEFAULT_MAX_SUBAGENTS = 8
MAX_SUBAGENTS = 32


M = TypeVar("M", bound="ConfigModel")


class ConfigModel(BaseModel):
    """A section of the file: unknown keys are errors, values frozen."""

    # A typo in a config key must not be silently ignored: it would drop a check. `.inf` and
    # `.nan` are valid YAML floats but no valid timeout.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _verify_section(value: object) -> VerifyConfig:
    return value if isinstance(value, VerifyConfig) else VerifyConfig.from_dict(value)


# The `verify` section as a field: read by its own validator (a FieldProblem names the field
# below `verify`), written back as the mapping it reads.
VerifySection = Annotated[VerifyConfig, PlainValidator(_verify_section),
                          PlainSerializer(VerifyConfig.to_dict)]


def check_subagent_name(name: str) -> str:
    """``name`` if it is a subagent name (a slug); ValueError saying what one looks like."""
    if not re.fullmatch(SUBAGENT_NAME_PATTERN, name):
        raise ValueError(
            f"{name!r} is not a subagent name: use lowercase letters, digits and inner hyphens,"
            " at most 40 characters (e.g. 'database', 'front-end')"
        )
    return name



class RepairConfig(ConfigModel):
    """The `repair` section: how many repair attempts a run may make."""

    max_attempts: int = Field(default=3, ge=0)


class LimitsConfig(ConfigModel):
    """The `limits` section: how big a run's change to the repository may get.

    `max_file_bytes`: a step that leaves a file larger than this (default 10 MiB) is a policy
    violation; so is one after which the change from the base holds more than
    `max_changed_files` files (default 2,000) or `max_change_bytes` bytes (default 50 MiB).
    Sizes are read with lstat before anything is hashed. Only parsed here; the runner enforces
    them.
    """

    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1)
    max_change_bytes: int = Field(default=DEFAULT_MAX_CHANGE_BYTES, ge=1)
    max_changed_files: int = Field(default=DEFAULT_MAX_CHANGED_FILES, ge=1)


class ApprovalConfig(ConfigModel):
    """The `approval` section: how long a spec waits for a reviewer before a human is asked
    (unset: the service's default)."""

    timeout_hours: float | None = Field(default=None, gt=0)


class PublishConfig(ConfigModel):
    """The `publish` section: what a person approves before the implementation is published.

    `protected_paths`: globs (the `verify.ignore` dialect) added to the paths every repository
    protects (``runner/protected.py``): a change touching one waits after verification, on a
    ref no workflow triggers on, until a writer approves its diff by hash, then is pushed to the
    run's branch. `review_before_push`: every change waits so (the repository's CI never runs
    unreviewed agent code with its secrets).
    """

    protected_paths: list[str] = Field(default=[], max_length=200)
    review_before_push: bool = False

    @field_validator("protected_paths")
    @classmethod
    def _globs(cls, globs: list[str]) -> list[str]:
        for glob in globs:
            if not glob.strip() or len(glob) > 512:
                raise ValueError(f"{glob[:80]!r} is not a path glob: use a non-empty pattern of"
                                 " at most 512 characters, e.g. 'deploy/**'")
        return globs


class BudgetConfig(ConfigModel):
    """The `budget` section: what one run may spend (unset: the service's default, if any).

    `max_cost_usd`: dollars the agents report; `max_agent_minutes`: agent wall time the runner
    measures; `max_agent_runs`: agent invocations, retries included; `max_run_hours`: time the
    run works, without its waits for people. Only parsed here; the runner enforces it.
    """

    max_cost_usd: float | None = Field(default=None, gt=0)
    max_agent_minutes: float | None = Field(default=None, gt=0)
    max_agent_runs: int | None = Field(default=None, ge=1)
    max_run_hours: float | None = Field(default=None, gt=0)


class AgentNetworkConfig(ConfigModel):
    """`agent.network`: `allow` lists hosts agents may reach through the egress proxy beyond
    the model API (the package registries an install needs: `pypi.org`,
    `*.pythonhosted.org`), each only where the operator's RATCHET_REPOSITORY_NETWORK_ALLOW
    allows it too (``runner/network.py``)."""

    allow: list[str] = []

    @field_validator("allow")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        return [check_host_pattern(host) for host in value]


class AgentConfig(ConfigModel):
    """The `agent` section. `idle_timeout`: seconds an agent may print nothing and change
    nothing in the worktree before its sandbox is ended (a hung agent); `network`: where it
    may connect."""

    idle_timeout: float = Field(default=DEFAULT_IDLE_TIMEOUT, gt=0)
    network: AgentNetworkConfig = AgentNetworkConfig()


class SubagentConfig(ConfigModel):
    """A research subagent: its name (a slug: lowercase letters, digits and inner hyphens, at
    most 40 characters) and the one question it researches."""

    name: str
    focus: str = Field(min_length=1, max_length=2000)

    @field_validator("name")
    @classmethod
    def _slug(cls, value: str) -> str:
        return check_subagent_name(value)


class ResearchConfig(ConfigModel):
    """The `research` section: focused subagents that research in parallel after the research
    agent, each leaving an artifact (`subagents/<name>.md`) and a short note.

    `subagents` are declared here; the research agent may plan more (RATCHET_SUBAGENT_PLAN),
    up to `max_subagents` in all (0: none at all). `concurrency` bounds how many run at once.
    `require_all: true` stops the run for a human when a subagent fails; otherwise a failed
    one is recorded and the run goes on. Only parsed here; the runner runs them.
    """

    subagents: list[SubagentConfig] = []
    concurrency: int = Field(default=DEFAULT_SUBAGENT_CONCURRENCY, ge=1,
                             le=MAX_SUBAGENT_CONCURRENCY)
    max_subagents: int = Field(default=DEFAULT_MAX_SUBAGENTS, ge=0, le=MAX_SUBAGENTS)
    require_all: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> ResearchConfig:
        counts = Counter(subagent.name for subagent in self.subagents)
        duplicate = next((name for name, count in counts.items() if count > 1), None)
        if duplicate is not None:
            raise ValueError(f"subagent {duplicate!r} is declared twice; give each its own name")
        if len(self.subagents) > self.max_subagents:
            raise ValueError(
                f"{len(self.subagents)} subagents are declared but max_subagents is"
                f" {self.max_subagents}; declare fewer or raise research.max_subagents"
            )
        return self


class RepositoryConfig(ConfigModel):
    """The whole file. An unknown top-level section is an error.

    `trigger_label`: the label that starts a run on an issue of this repository (one of the
    labels the service watches; unset: any of them).
    """

    trigger_label: str | None = Field(default=None, min_length=1)
    verify: VerifySection = VerifyConfig()
    repair: RepairConfig = RepairConfig()
    limits: LimitsConfig = LimitsConfig()
    approval: ApprovalConfig = ApprovalConfig()
    budget: BudgetConfig = BudgetConfig()
    agent: AgentConfig = AgentConfig()
    research: ResearchConfig = ResearchConfig()
    publish: PublishConfig = PublishConfig()


def load_repository_config(repo_root: Path) -> RepositoryConfig:
    """Read `.github/ratchet.yml` under `repo_root`; a missing or empty file gives the defaults.

    Raises ConfigError naming the file, line and field when the file cannot be read safely
    (see `read_config_file`), is too large, not UTF-8, not valid YAML, or does not match the
    schema.
    """
    data = read_config_file(repo_root)
    return RepositoryConfig() if data is None else parse_repository_config(data)


def read_repository_config(git: Git, revision: str | None) -> RepositoryConfig:
    """The config at commit `revision` of `git` (its work tree's when None); a missing file
    gives the defaults. Raises ConfigError as `read_config_at` and `parse_repository_config`
    do: a config that is present but unusable is never read as the defaults."""
    data = read_config_at(git, revision)
    return RepositoryConfig() if data is None else parse_repository_config(data)


def parse_repository_config(source: str | bytes, *, path: str = CONFIG_PATH) -> RepositoryConfig:
    """The whole file's content parsed (see ``verification.config.parse_config``)."""
    return parse_config(source, RepositoryConfig, path=path)


def parse_config(source: str | bytes, model: type[M], *, path: str = CONFIG_PATH) -> M:
    """Parse a config file's content, as read (bytes) or already decoded (text), into ``model``.

    An empty file gives ``model()``'s defaults. Raises ConfigError as
    ``verification.config.load_config`` does, and naming the line and field when the content
    does not match the schema.
    """
    data, lines = load_config(source, path=path)
    if data is None:
        return model()
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, lines, path) from exc


def _config_error(exc: ValidationError, lines: Mapping[tuple[Any, ...], int],
                  path: str) -> ConfigError:
    # Report one error, keeping the message precise. An unknown key first: it is usually a
    # misspelled field, which also makes that field look missing.
    errors = exc.errors()
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(error["loc"])
    located = error.get("ctx", {}).get("error")
    if isinstance(located, FieldProblem):
        loc += located.loc
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = UNKNOWN_KEY
    elif message.startswith("Value error, "):
        message = message.removeprefix("Value error, ")
    return config_error_at(path, lines, loc, message)
