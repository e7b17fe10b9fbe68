"""The repository's `.github/ratchet.yml`: parsed once into typed models.

Errors name the file, the line and the field, so a maintainer can fix the file without guessing:
`.github/ratchet.yml:7: verify.checks[0].timeout: Input should be a valid number`. Line numbers
come from PyYAML's node marks: the file is composed into a node tree, every field path is mapped
to the line of its key (or list item), and a pydantic error's location is looked up there.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

# Where the configuration lives, relative to the repository root.
CONFIG_PATH = ".github/ratchet.yml"

CheckKind = Literal["lint", "format", "typecheck", "test", "build", "custom"]


class ConfigError(Exception):
    """The repository config file cannot be used as written.

    `path` is the file (relative to the repository root), `line` is 1-based (None when the
    problem has no single place), `field` the dotted field path (empty for YAML syntax errors).
    """

    def __init__(self, path: str, line: int | None, field: str, problem: str) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.problem = problem
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


def normalize_workspace_path(value: str) -> str:
    """Return a workspace path as a clean posix path relative to the root ("." for the root).

    Raises ValueError for absolute paths and paths that leave the repository.
    """
    path = PurePosixPath(value.strip() or ".")
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"{value!r} must be a path inside the repository, relative to its root")
    return path.as_posix()


def _require_unique_ids(checks: list[CheckConfig]) -> None:
    ids = [check.id for check in checks]
    for check_id in ids:
        if ids.count(check_id) > 1:
            raise ValueError(f"check id {check_id!r} is used twice in one workspace; rename one")


class _Model(BaseModel):
    # A typo in a config key must not be silently ignored: it would drop a check.
    model_config = ConfigDict(extra="forbid", frozen=True)


class CheckConfig(_Model):
    """One configured check: a shell command run in its workspace folder."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    kind: CheckKind = "custom"
    run: str = Field(min_length=1)
    timeout: float | None = Field(default=None, gt=0)
    junit: str | None = None


class WorkspaceConfig(_Model):
    """A workspace the config names: its setup commands and checks replace detection."""

    path: str
    setup: list[str] = []
    checks: list[CheckConfig] = []

    @field_validator("path")
    @classmethod
    def _normalize_path(cls, value: str) -> str:
        return normalize_workspace_path(value)

    @model_validator(mode="after")
    def _unique_ids(self) -> WorkspaceConfig:
        _require_unique_ids(self.checks)
        return self


class VerifyConfig(_Model):
    """The `verify` section: concurrency, default timeout, root checks and workspaces."""

    concurrency: int | None = Field(default=None, ge=1)
    timeout: float = Field(default=900, gt=0)
    checks: list[CheckConfig] = []
    workspaces: list[WorkspaceConfig] = []

    @model_validator(mode="after")
    def _consistent(self) -> VerifyConfig:
        _require_unique_ids(self.checks)
        paths = [workspace.path for workspace in self.workspaces]
        duplicates = sorted({path for path in paths if paths.count(path) > 1})
        if duplicates:
            raise ValueError(f"workspace {duplicates[0]!r} is listed twice; merge the entries")
        if self.checks and "." in paths:
            raise ValueError(
                "the root workspace is configured twice (verify.checks and a workspace with "
                "path '.'); keep one"
            )
        return self


class RepairConfig(_Model):
    """The `repair` section: how many repair attempts a run may make."""

    max_attempts: int = Field(default=3, ge=0)


class RepositoryConfig(_Model):
    """The whole file. An unknown top-level section is an error."""

    verify: VerifyConfig = VerifyConfig()
    repair: RepairConfig = RepairConfig()


def load_repository_config(repo_root: Path) -> RepositoryConfig:
    """Read `.github/ratchet.yml` under `repo_root`; a missing or empty file gives the defaults.

    Raises ConfigError naming the file, line and field when the file is not valid YAML or does
    not match the schema.
    """
    file = repo_root / CONFIG_PATH
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return RepositoryConfig()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(CONFIG_PATH, None, "", f"cannot read the file: {exc}") from exc
    return parse_repository_config(text)


def parse_repository_config(text: str, *, path: str = CONFIG_PATH) -> RepositoryConfig:
    """Parse the text of a config file (see `load_repository_config`)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(path, line, "", f"invalid YAML: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, "", f"invalid YAML: {exc}") from exc
    if node is None or data is None:
        return RepositoryConfig()
    lines: dict[tuple[Any, ...], int] = {}
    _map_lines(node, (), lines, path)
    if not isinstance(data, dict):
        raise ConfigError(path, 1, "", "the file must be a mapping with sections verify, repair")
    try:
        return RepositoryConfig.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, lines, path) from exc


def _map_lines(
    node: yaml.Node, loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int], path: str
) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                field = _format_loc((*loc, key))
                raise ConfigError(path, key_node.start_mark.line + 1, field, "duplicate key")
            seen.add(key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _map_lines(value_node, (*loc, key), lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*loc, index)] = item.start_mark.line + 1
            _map_lines(item, (*loc, index), lines, path)


def _config_error(
    exc: ValidationError, lines: dict[tuple[Any, ...], int], path: str
) -> ConfigError:
    # Report one error, keeping the message precise. An unknown key first: it is usually a
    # misspelled field, which also makes that field look missing.
    errors = exc.errors()
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(error["loc"])
    line = None
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            line = lines[loc[:end]]
            break
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown key; check the spelling against the documented fields"
    elif message.startswith("Value error, "):
        message = message.removeprefix("Value error, ")
    return ConfigError(path, line if line is not None else 1, _format_loc(loc), message)


def _format_loc(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text
