"""The repository's `.github/ratchet.yml`: its hostile-YAML loader and its `verify` section.

The other sections (approval, budget, agent, research, repair, limits) are the runner's:
`runner/config.py` composes the whole file from them and parses it with ``parse_config``.

Errors name the file, the line and the field, so a maintainer can fix the file without guessing:
`.github/ratchet.yml:7: verify.checks[0].timeout: Input should be a valid number`. Line numbers
come from PyYAML's node marks: the file is composed into a node graph, every field path is mapped
to the line of its key (or list item), and a pydantic error's location is looked up there.

The file comes from the repository under review, so it is treated as hostile. Before anything
walks it, the file must be at most `MAX_CONFIG_BYTES` of valid UTF-8, nest at most
`MAX_NESTING_DEPTH` levels, and expand (every use of an alias counting its whole value) to at
most `MAX_EXPANDED_NODES` nodes with no alias inside its own anchor. Each refusal is a
`ConfigError` naming the file, so a "billion laughs" or a recursive alias fails in milliseconds
instead of exhausting memory or the stack. Validation is linear in the number of checks.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from plumbing.environment import name_problem
from plumbing.files import UnsafePath, read_beneath
from plumbing.git import Git, GitError

# Where the configuration lives, relative to the repository root.
CONFIG_PATH = ".github/ratchet.yml"

# The largest config file accepted, checked before parsing. Real configs are a few KiB; this
# bounds PyYAML's (pure Python, about 1 s for 256 KiB) parse time and the memory of everything
# built from the file.
MAX_CONFIG_BYTES = 256 * 1024

# The most YAML nodes the file may expand to, each use of an alias counting its whole value.
# Aliases are shared when PyYAML composes the file, but validation and line mapping walk the
# expansion, which grows exponentially with nested aliases ("billion laughs"). A config with no
# aliases under MAX_CONFIG_BYTES (at most about 13,000 minimal checks of 5 nodes) stays below.
MAX_EXPANDED_NODES = 100_000

# The deepest nesting accepted, counting the document root and aliases expanded. The schema
# needs 7 levels (root, verify, workspaces, a workspace, checks, a check, a value); PyYAML's
# composer recurses about three Python frames a level, so this also keeps it far below the
# interpreter's recursion limit.
MAX_NESTING_DEPTH = 32

# Opening the config in a checked-out (possibly hostile) tree: never through a symlink, never
# blocking on a FIFO, never becoming a controlling terminal.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

M = TypeVar("M", bound="ConfigModel")

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
    return _normalize_relative(value, inside="the repository, relative to its root")


def _normalize_relative(value: str, *, inside: str) -> str:
    path = PurePosixPath(value.strip() or ".")
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"{value!r} must be a path inside {inside}")
    return path.as_posix()


# A host name's label (a name is checked label by label: linear time).
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def check_host_pattern(value: str) -> str:
    """``value`` as a host pattern (lowercase, no trailing dot): ``pypi.org``,
    ``*.pythonhosted.org`` or ``*``; ValueError saying what one looks like."""
    pattern = value.strip().lower()
    pattern = pattern[:-1] if pattern.endswith(".") and pattern != "*." else pattern
    name = pattern.removeprefix("*.")
    labels = name.split(".")
    valid = pattern == "*" or (len(name) <= 253 and all(_LABEL.fullmatch(x) for x in labels))
    with contextlib.suppress(ValueError):
        valid = valid or bool(ipaddress.ip_address(pattern))
    if not valid:
        raise ValueError(
            f"{value.strip()!r} is not a host: give a name such as 'pypi.org',"
            " '*.pythonhosted.org' for its subdomains, or '*' for any host (no scheme, port or"
            " path)"
        )
    return pattern


def _require_unique_ids(checks: list[CheckConfig]) -> None:
    counts = Counter(check.id for check in checks)  # linear: a config may list many checks
    duplicate = next((check_id for check_id, count in counts.items() if count > 1), None)
    if duplicate is not None:
        raise ValueError(f"check id {duplicate!r} is used twice in one workspace; rename one")


class ConfigModel(BaseModel):
    """A section of the file: unknown keys are errors, values frozen."""

    # A typo in a config key must not be silently ignored: it would drop a check. `.inf` and
    # `.nan` are valid YAML floats but no valid timeout.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class CheckConfig(ConfigModel):
    """One configured check: a shell command run in its workspace folder.

    `junit`, when set, is the JUnit XML report the check writes, relative to the workspace
    folder; an absolute path or one with `..` is refused, so a check cannot point Ratchet at a
    file outside its workspace.
    """

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    kind: CheckKind = "custom"
    run: str = Field(min_length=1)
    timeout: float | None = Field(default=None, gt=0)
    junit: str | None = None
    # Checks that must pass before this one starts: an id of the same workspace's checks, or
    # `folder:id` for another configured workspace's (see `VerifyConfig.needs_keys`).
    needs: list[str] = []

    @field_validator("junit")
    @classmethod
    def _junit_inside_workspace(cls, value: str | None) -> str | None:
        if value is None:
            return None
        path = _normalize_relative(value, inside="the workspace, relative to its folder")
        if path == "." or "\0" in path:
            raise ValueError(f"{value!r} must name a file inside the workspace, e.g. report.xml")
        return path


class WorkspaceConfig(ConfigModel):
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


class VerifyConfig(ConfigModel):
    """The `verify` section: concurrency, default timeout, network, root checks, workspaces
    and the paths deliberately left unverified.

    `network`: the hosts checks may reach through the egress proxy (`[pypi.org,
    files.pythonhosted.org]`); `true` means any host the operator lets a repository open
    (RATCHET_REPOSITORY_NETWORK_ALLOW), `false` (the default) none. Loopback, link-local and
    private addresses are never reachable (``runner/network.py``). `env` names variables of the
    runner's environment the checks need (a registry token); each reaches them only if the
    operator allows it too (RATCHET_CHECK_ENV), else the evidence says it was withheld.
    `ignore` lists glob patterns (gitignore's reading: `scripts/`, `*.sh`, `tools/**/*.py`) of
    files no check needs to cover: a change to them alone concludes `success` instead of
    `neutral` ("nothing verifies this change").
    """

    concurrency: int | None = Field(default=None, ge=1)
    timeout: float = Field(default=900, gt=0)
    network: bool | list[str] = False
    env: list[str] = []
    checks: list[CheckConfig] = []
    workspaces: list[WorkspaceConfig] = []
    ignore: list[str] = []

    @field_validator("network", mode="before")
    @classmethod
    def _hosts(cls, value: object) -> bool | list[str]:
        if isinstance(value, bool):
            return value
        if isinstance(value, list) and all(isinstance(host, str) for host in value):
            return [check_host_pattern(host) for host in value]
        raise ValueError("give true, false or a list of hosts, e.g. [pypi.org]")

    @field_validator("env")
    @classmethod
    def _variable_names(cls, names: list[str]) -> list[str]:
        for name in names:
            problem = name_problem(name)
            if problem:
                raise ValueError(problem)
        return names

    @field_validator("ignore")
    @classmethod
    def _relative_patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            text = pattern.strip()
            if not text or text.startswith("/") or ".." in text.split("/") or "\0" in text:
                raise ValueError(
                    f"{pattern!r} must be a glob relative to the repository root, e.g. 'scripts/'"
                )
        return [pattern.strip() for pattern in patterns]

    @model_validator(mode="after")
    def _consistent(self) -> VerifyConfig:
        _require_unique_ids(self.checks)
        counts = Counter(workspace.path for workspace in self.workspaces)
        duplicates = sorted(path for path, count in counts.items() if count > 1)
        if duplicates:
            raise ValueError(f"workspace {duplicates[0]!r} is listed twice; merge the entries")
        if self.checks and "." in counts:
            raise ValueError(
                "the root workspace is configured twice (verify.checks and a workspace with "
                "path '.'); keep one"
            )
        _acyclic(*self._needs())
        return self

    def needs_keys(self) -> dict[str, list[str]]:
        """Each configured check's key and the keys of the checks it needs. A need names a
        check of the same workspace by its id, another workspace's by `folder:id`."""
        return self._needs()[0]

    def _needs(self) -> tuple[dict[str, list[str]], dict[str, tuple[Any, ...]]]:
        """`needs_keys`, and where each check's `needs` are in the file; a need that names no
        configured check is a `_Located` error at its line."""
        folders: list[tuple[str, list[CheckConfig], tuple[Any, ...]]] = [
            (".", self.checks, ("checks",))]
        folders += [(w.path, w.checks, ("workspaces", i, "checks"))
                    for i, w in enumerate(self.workspaces)]
        keys = {_key(folder, c.id) for folder, checks, _ in folders for c in checks}
        found: dict[str, list[str]] = {}
        places: dict[str, tuple[Any, ...]] = {}
        for folder, checks, loc in folders:
            for index, check in enumerate(checks):
                resolved = found[_key(folder, check.id)] = []
                places[_key(folder, check.id)] = (*loc, index, "needs")
                for position, need in enumerate(check.needs):
                    key = _key(folder, need) if _key(folder, need) in keys else need
                    if key not in keys:
                        raise _Located((*loc, index, "needs", position),
                                       f"no configured check {need!r}: name a check of the same "
                                       "workspace by its id, or another's as 'folder:id'")
                    resolved.append(key)
        return found, places


class _Located(ValueError):
    """A problem at a field below the model that found it (`loc` relative to that model), so
    the error names that field's line."""

    def __init__(self, loc: tuple[Any, ...], problem: str) -> None:
        super().__init__(problem)
        self.loc = loc


def _key(folder: str, check_id: str) -> str:
    return check_id if folder == "." else f"{folder}:{check_id}"


def _acyclic(needs: dict[str, list[str]], places: dict[str, tuple[Any, ...]]) -> None:
    """Refuse a cycle of needs, naming it, at the `needs` of the check it starts from."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in needs:
        stack = [(start, iter(needs[start]))]
        path = [start]
        if state.get(start):
            continue
        state[start] = 1
        while stack:
            node, rest = stack[-1]
            following = next(rest, None)
            if following is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(following) == 1:
                cycle = " -> ".join([*path[path.index(following):], following])
                raise _Located(places[following],
                               f"the checks' needs form a cycle ({cycle}); remove one need")
            elif not state.get(following):
                state[following] = 1
                stack.append((following, iter(needs.get(following, ()))))
                path.append(following)


def read_config_file(repo_root: Path) -> bytes | None:
    """The bytes of `.github/ratchet.yml` in a checked-out tree; None when there is none.

    The tree may be hostile: no component is opened through a symlink, only a regular file is
    read (a FIFO would block, a device never ends), and at most `MAX_CONFIG_BYTES`
    (`plumbing.files.read_beneath`). Raises ConfigError naming the file when any of that
    fails.
    """
    try:
        return read_beneath(repo_root, CONFIG_PATH, limit=MAX_CONFIG_BYTES)
    except UnsafePath as exc:
        if exc.reason == "missing":
            return None
        if exc.reason == "too_large" and exc.size is not None:
            check_config_size(exc.size)
        problem = f"{exc}; commit the config as a plain file"
        raise ConfigError(CONFIG_PATH, None, "", problem) from exc
    except OSError as exc:
        raise ConfigError(
            CONFIG_PATH, None, "", f"cannot open the repository folder {repo_root}: {exc}"
        ) from exc


def read_config_at(git: Git, revision: str | None) -> bytes | None:
    """The bytes of `.github/ratchet.yml` at commit `revision`, or in `git`'s work tree when
    `revision` is None (`read_config_file`); None when there is none.

    Read as bytes, never as the defaults for a config that is present but cannot be used: a
    symlink, a folder or anything but a regular file there, or a parent that is not a folder,
    is a ConfigError naming it. `git ls-tree` gives the entry's mode and size first, so a blob
    over `MAX_CONFIG_BYTES` is never read; listing the parent folders too shows one that is
    not a folder (git lists a folder's entries instead).
    """
    if revision is None:
        assert git.work_tree is not None, "the work tree's config needs a work tree"
        return read_config_file(git.work_tree)
    parents = [p.as_posix() for p in reversed(PurePosixPath(CONFIG_PATH).parents) if p.name]
    wanted = {*parents, CONFIG_PATH}
    try:
        listing = git("ls-tree", "--full-tree", "-l", "-z", revision, "--", *parents, CONFIG_PATH)
        for entry in listing.split(b"\0"):
            meta, _, raw_name = entry.partition(b"\t")
            name = os.fsdecode(raw_name)
            if name not in wanted:
                continue  # a sibling inside a parent folder
            mode, _kind, blob, size = meta.decode("ascii").split()
            if name != CONFIG_PATH or mode not in {"100644", "100755"}:
                what = "a symlink or not a file" if name == CONFIG_PATH else "not a folder"
                raise ConfigError(
                    CONFIG_PATH,
                    None,
                    "",
                    f"{name} is {what} at {revision}; commit the config as a regular file",
                )
            check_config_size(int(size))
            return git("cat-file", "blob", blob)
    except GitError as exc:
        raise ConfigError(CONFIG_PATH, None, "", f"cannot read it at {revision}: {exc}") from exc
    return None


def check_config_size(size: int, *, path: str = CONFIG_PATH) -> None:
    """Raise ConfigError when a config file of `size` bytes is over `MAX_CONFIG_BYTES`.

    Call it with the size a reader learns before reading (a stat, a git tree entry), so an
    oversized file is never read; `parse_repository_config` checks again.
    """
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            path,
            None,
            "",
            f"the file is {size} bytes; the limit is {MAX_CONFIG_BYTES} bytes "
            f"({MAX_CONFIG_BYTES // 1024} KiB): move long commands into scripts the checks run",
        )


def parse_config(source: str | bytes, model: type[M], *, path: str = CONFIG_PATH) -> M:
    """Parse a config file's content, as read (bytes) or already decoded (text), into ``model``.

    An empty file gives ``model()``'s defaults. Raises ConfigError naming `path` (and the line
    and field where there is one) when the content is over `MAX_CONFIG_BYTES`, bytes that are
    not UTF-8, not valid YAML, nested or expanded beyond the caps (see the module docstring),
    or does not match the schema.
    """
    text = decode_config(source, path)
    data, lines = _load(text, path)
    if data is None:
        return model()
    if not isinstance(data, dict):
        sections = ", ".join(model.model_fields)
        raise ConfigError(path, 1, "", f"the file must be a mapping with sections {sections}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, lines, path) from exc


def _load(text: str, path: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """Compose, check, line-map and construct the YAML (None for an empty document).

    Returns the data and the line of every field path. Raises ConfigError for YAML errors and
    for graphs `_check_expansion` refuses.
    """
    try:
        loader = _Loader(text, path)  # the reader refuses control characters right away
        try:
            node = loader.get_single_node()
            if node is None:
                return None, {}
            _check_expansion(node, path)
            # Before construction: constructing merge keys (`<<`) rewrites the node graph.
            lines: dict[tuple[Any, ...], int] = {}
            _map_lines(node, (), lines, path)
            return loader.construct_document(node), lines
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(path, line, "", f"invalid YAML: {exc.problem or exc}") from exc
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        character = f"U+{exc.character:04X}" if isinstance(exc.character, int) else "?"
        raise ConfigError(
            path, line, "", f"the character {character} is not allowed in YAML; remove it"
        ) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, "", f"invalid YAML: {exc}") from exc


def decode_config(source: str | bytes, path: str) -> str:
    """The text of a config file (or a workflow), after the size cap; bytes must be UTF-8.
    Raises ConfigError naming `path` (and the line of the first byte that is not)."""
    if isinstance(source, str):
        check_config_size(len(source.encode("utf-8", "surrogatepass")), path=path)
        return source
    check_config_size(len(source), path=path)
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            path, line, "", f"not valid UTF-8 at byte {exc.start}; save the file as UTF-8"
        ) from exc


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with a nesting cap, and value errors reported as ConfigErrors.

    PyYAML's composer recurses once per nesting level, so 10,000 `[` would end in a
    RecursionError; here the node past `MAX_NESTING_DEPTH` is a ConfigError with its line.
    Scalar constructors raise ValueError for values like `2001-02-30` or an int of 5,000
    digits; they become ConfigErrors at the value's line.
    """

    def __init__(self, stream: str, path: str) -> None:
        super().__init__(stream)
        self._path = path
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self._depth >= MAX_NESTING_DEPTH:
            line = self.peek_event().start_mark.line + 1
            raise ConfigError(
                self._path, line, "", f"values nest more than {MAX_NESTING_DEPTH} levels deep"
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            line = node.start_mark.line + 1
            raise ConfigError(self._path, line, "", f"cannot read this value: {exc}") from exc


@dataclass(slots=True)
class _Frame:
    """A node on the path of `_check_expansion`'s walk, with what its children added so far."""

    node: yaml.Node
    loc: tuple[Any, ...]
    children: Iterator[tuple[Any, yaml.Node]]
    size: int = 1  # expanded nodes: itself plus its children's
    depth: int = 0  # the deepest child's expanded depth


def _check_expansion(root: yaml.Node, path: str) -> None:
    """Refuse a node graph whose expansion is too large, too deep, or infinite.

    PyYAML composes an alias as another reference to its anchor's node: the graph stays as
    small as the file, but its expansion (what validation and `_map_lines` walk) can grow
    exponentially, or never end when an alias sits inside its own anchor. One iterative walk in
    document order computes each node's expanded size and depth once (memoised); meeting a node
    that is still on the current path is a cycle. Raises ConfigError with the line and field.
    """
    finished: dict[yaml.Node, tuple[int, int]] = {}  # node -> (expanded size, expanded depth)
    on_path: set[yaml.Node] = {root}
    stack = [_Frame(root, (), _children(root))]
    while stack:
        frame = stack[-1]
        step = next(frame.children, None)
        if step is not None:
            part, child = step
            if child in on_path:
                raise ConfigError(
                    path,
                    frame.node.start_mark.line + 1,
                    _format_loc((*frame.loc, part)),
                    "an alias here repeats a value that contains it, so it never ends; "
                    "point it at an anchor outside this value",
                )
            if child in finished:
                size, depth = finished[child]
                frame.size += size
                frame.depth = max(frame.depth, depth)
            else:
                on_path.add(child)
                stack.append(_Frame(child, (*frame.loc, part), _children(child)))
            continue
        stack.pop()
        on_path.discard(frame.node)
        depth = frame.depth + 1
        if frame.size > MAX_EXPANDED_NODES or depth > MAX_NESTING_DEPTH:
            problem = (
                f"this value has more than {MAX_EXPANDED_NODES} YAML nodes"
                if frame.size > MAX_EXPANDED_NODES
                else f"this value nests more than {MAX_NESTING_DEPTH} levels deep"
            )
            raise ConfigError(
                path,
                frame.node.start_mark.line + 1,
                _format_loc(frame.loc),
                f"{problem} once aliases are expanded (each use of an alias counts its whole "
                "value); repeat less through aliases, or write a smaller config",
            )
        finished[frame.node] = (frame.size, depth)
        if stack:
            stack[-1].size += frame.size
            stack[-1].depth = max(stack[-1].depth, depth)


def _children(node: yaml.Node) -> Iterator[tuple[Any, yaml.Node]]:
    """A node's children with their location part: list index, or the key's text."""
    if isinstance(node, yaml.SequenceNode):
        yield from enumerate(node.value)
    elif isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            yield key, key_node
            yield key, value_node


def _map_lines(
    node: yaml.Node, loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int], path: str
) -> None:
    # Recursion is bounded: `_check_expansion` has capped the expanded depth and size.
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # a list or mapping as a key: construction refuses it with its line
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
    located = error.get("ctx", {}).get("error")
    if isinstance(located, _Located):
        loc += located.loc
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
