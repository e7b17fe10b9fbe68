"""The repository's `.github/ratchet.yml`: reading it safely, and its `verify` section.

The other sections (approval, budget, agent, research, repair, limits, publish) are the
runner's: `runner/config.py` composes the whole file from pydantic models, with `verify` read by
``VerifyConfig.from_dict`` here. ``read_verify_config`` reads only this section (and refuses an
unknown top-level key), without pydantic: `ratchet verify` plans in a fraction of the time the
whole file's models take to load, and both readers validate `verify` with the same code.

Errors name the file, the line and the field, so a maintainer can fix the file without guessing:
`.github/ratchet.yml:7: verify.checks[0].timeout: give a number of seconds greater than 0`.
Line numbers come from PyYAML's node marks (``verification/config_yaml.py``, which loads only
when a repository has the file): every field path is mapped to the line of its key or list item.

The file comes from the repository under review, so it is treated as hostile. Before anything
walks it, the file must be at most `MAX_CONFIG_BYTES` of valid UTF-8, nest at most
`MAX_NESTING_DEPTH` levels, and expand (every use of an alias counting its whole value) to at
most `MAX_EXPANDED_NODES` nodes with no alias inside its own anchor. Each refusal is a
`ConfigError` naming the file, so a "billion laughs" or a recursive alias fails in milliseconds
instead of exhausting memory or the stack. Validation is linear in the number of checks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, get_args

from plumbing.environment import name_problem
from plumbing.files import UnsafePath, read_beneath
from plumbing.git import Git, GitError

# Where the configuration lives, relative to the repository root.
CONFIG_PATH = ".github/ratchet.yml"

# The file's top-level sections, in order: one field of `runner.config.RepositoryConfig` each
# (a test holds them equal). `read_verify_config` refuses any other key without reading them.
SECTIONS = ("trigger_label", "verify", "repair", "limits", "approval", "budget", "agent",
            "research", "publish")

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

# Seconds a check may run when neither it nor `verify.timeout` says.
DEFAULT_CHECK_TIMEOUT = 900.0

# What an unknown key is told: it is usually a misspelled field.
UNKNOWN_KEY = "unknown key; check the spelling against the documented fields"

CheckKind = Literal["lint", "format", "typecheck", "test", "build", "custom"]
CHECK_KINDS: tuple[str, ...] = get_args(CheckKind)
# A configured check's id: it names the check in keys, logs and `needs`.
_CHECK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


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


class FieldProblem(ValueError):
    """A problem at one field of a section: ``loc`` is its path below the value being read
    (keys and list indexes), so the ConfigError names that field and its line."""

    def __init__(self, loc: tuple[Any, ...], problem: str) -> None:
        super().__init__(problem)
        self.loc = loc


def config_error_at(path: str, lines: Mapping[tuple[Any, ...], int], loc: tuple[Any, ...],
                    problem: str) -> ConfigError:
    """The ConfigError for ``problem`` at field ``loc`` of the file at ``path``, at the line of
    that field, else of the nearest field around it that has one (``lines``: the loader's)."""
    line = next((lines[loc[:end]] for end in range(len(loc), 0, -1) if loc[:end] in lines), 1)
    return ConfigError(path, line, format_field(loc), problem)


def format_field(loc: tuple[Any, ...]) -> str:
    """A field path as the error names it: `verify.checks[0].timeout`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


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
    if not valid:
        import ipaddress  # only for a pattern that is no host name: planning rarely meets one

        with contextlib.suppress(ValueError):
            valid = bool(ipaddress.ip_address(pattern))
    if not valid:
        raise ValueError(
            f"{value.strip()!r} is not a host: give a name such as 'pypi.org',"
            " '*.pythonhosted.org' for its subdomains, or '*' for any host (no scheme, port or"
            " path)"
        )
    return pattern


@dataclass(frozen=True)
class CheckConfig:
    """One configured check: a shell command run in its workspace folder.

    `junit`, when set, is the JUnit XML report the check writes, relative to the workspace
    folder; an absolute path or one with `..` is refused, so a check cannot point Ratchet at a
    file outside its workspace.
    """

    id: str
    run: str
    kind: CheckKind = "custom"
    timeout: float | None = None
    junit: str | None = None
    # Checks that must pass before this one starts: an id of the same workspace's checks, or
    # `folder:id` for another configured workspace's (see `VerifyConfig.needs_keys`).
    needs: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: object) -> CheckConfig:
        """A check as the file writes it; raises FieldProblem at the field that is wrong."""
        values = _mapping(data, {f.name for f in dataclasses.fields(cls)},
                          "a check, e.g. {id: unit, kind: test, run: pytest}")
        for key, hint in (("id", "a name such as 'unit'"), ("run", "the command it runs")):
            if key not in values:
                raise FieldProblem((key,), f"required: every check has an id and a run ({hint})")
        check_id = _text(values["id"], ("id",), "a name such as 'unit'")
        if not _CHECK_ID.fullmatch(check_id):
            raise FieldProblem(("id",), f"{check_id!r} is not a check id: start with a letter or "
                                        "digit, then letters, digits, '_', '.' or '-'")
        kind = values.get("kind", "custom")
        if kind not in CHECK_KINDS:
            raise FieldProblem(("kind",), f"{kind!r} is not a kind: give one of "
                                          f"{', '.join(CHECK_KINDS)}")
        timeout = values.get("timeout")
        junit = values.get("junit")
        return cls(
            id=check_id,
            run=_text(values["run"], ("run",), "the shell command the check runs"),
            kind=kind,
            timeout=None if timeout is None else _seconds(timeout, ("timeout",)),
            junit=None if junit is None else _junit_path(junit),
            needs=_texts(values.get("needs", []), ("needs",), "check ids, e.g. [build]"),
        )


@dataclass(frozen=True)
class WorkspaceConfig:
    """A workspace the config names: its setup commands and checks replace detection."""

    path: str
    setup: list[str] = field(default_factory=list)
    checks: list[CheckConfig] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: object) -> WorkspaceConfig:
        """A workspace as the file writes it; raises FieldProblem at the field that is wrong."""
        values = _mapping(data, {"path", "setup", "checks"},
                          "a workspace, e.g. {path: services/api, checks: [...]}")
        if "path" not in values:
            raise FieldProblem(("path",), "required: the workspace's folder, e.g. services/api")
        try:
            path = normalize_workspace_path(_text(values["path"], ("path",), "a folder"))
        except FieldProblem:
            raise
        except ValueError as exc:
            raise FieldProblem(("path",), str(exc)) from None
        checks = _items(values.get("checks", []), ("checks",), CheckConfig.from_dict)
        _require_unique_ids(checks)
        return cls(path=path, setup=_texts(values.get("setup", []), ("setup",), "commands"),
                   checks=checks)


@dataclass(frozen=True)
class VerifyConfig:
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

    concurrency: int | None = None
    timeout: float = DEFAULT_CHECK_TIMEOUT
    network: bool | list[str] = False
    env: list[str] = field(default_factory=list)
    checks: list[CheckConfig] = field(default_factory=list)
    workspaces: list[WorkspaceConfig] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: object) -> VerifyConfig:
        """The section as the file writes it (a mapping; see the class docstring).

        Raises FieldProblem at the field that is wrong: an unknown key first (a misspelled
        field), then each field, then what spans fields (duplicate ids and workspaces, needs).
        """
        values = _mapping(data, {f.name for f in dataclasses.fields(cls)},
                          "verify settings, e.g. {checks: [...]}")
        config = cls(
            concurrency=_concurrency(values.get("concurrency")),
            timeout=_seconds(values.get("timeout", DEFAULT_CHECK_TIMEOUT), ("timeout",)),
            network=_network(values.get("network", False)),
            env=_variable_names(values.get("env", [])),
            checks=_items(values.get("checks", []), ("checks",), CheckConfig.from_dict),
            workspaces=_items(values.get("workspaces", []), ("workspaces",),
                              WorkspaceConfig.from_dict),
            ignore=_ignore_patterns(values.get("ignore", [])),
        )
        config._check_consistent()
        return config

    def to_dict(self) -> dict[str, Any]:
        """The section as ``from_dict`` reads it back (a checkpoint records it so)."""
        return dataclasses.asdict(self)

    def _check_consistent(self) -> None:
        _require_unique_ids(self.checks)
        counts = Counter(workspace.path for workspace in self.workspaces)
        duplicates = sorted(path for path, count in counts.items() if count > 1)
        if duplicates:
            raise FieldProblem((), f"workspace {duplicates[0]!r} is listed twice; merge the "
                                   "entries")
        if self.checks and "." in counts:
            raise FieldProblem((), "the root workspace is configured twice (verify.checks and a "
                                   "workspace with path '.'); keep one")
        _acyclic(*self._needs())

    def needs_keys(self) -> dict[str, list[str]]:
        """Each configured check's key and the keys of the checks it needs. A need names a
        check of the same workspace by its id, another workspace's by `folder:id`."""
        return self._needs()[0]

    def _needs(self) -> tuple[dict[str, list[str]], dict[str, tuple[Any, ...]]]:
        """`needs_keys`, and where each check's `needs` are in the file; a need that names no
        configured check is a FieldProblem at its line."""
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
                        raise FieldProblem((*loc, index, "needs", position),
                                           f"no configured check {need!r}: name a check of the "
                                           "same workspace by its id, or another's as 'folder:id'")
                    resolved.append(key)
        return found, places


def _mapping(data: object, keys: set[str], what: str) -> dict[Any, Any]:
    """``data`` as a mapping of known ``keys``; an unknown key is refused first."""
    if not isinstance(data, dict):
        raise FieldProblem((), f"give a mapping: {what}")
    unknown = next((key for key in data if key not in keys), None)
    if unknown is not None:
        raise FieldProblem((unknown,), UNKNOWN_KEY)
    return data


def _items(data: object, loc: tuple[Any, ...], read: Any) -> list[Any]:
    """Each item of the list ``data`` read by ``read``, a problem located at its index."""
    if not isinstance(data, list):
        raise FieldProblem(loc, "give a list")
    items = []
    for index, item in enumerate(data):
        try:
            items.append(read(item))
        except FieldProblem as problem:
            raise FieldProblem((*loc, index, *problem.loc), str(problem)) from None
    return items


def _text(value: object, loc: tuple[Any, ...], hint: str) -> str:
    if not isinstance(value, str) or not value:
        raise FieldProblem(loc, f"give non-empty text: {hint}")
    return value


def _texts(value: object, loc: tuple[Any, ...], hint: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FieldProblem(loc, f"give a list of text: {hint}")
    return list(value)


def _number(value: object) -> float | None:
    """``value`` as a finite number (an int, a float, or text that reads as one), else None:
    never a boolean."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _seconds(value: object, loc: tuple[Any, ...]) -> float:
    seconds = _number(value)
    if seconds is None or seconds <= 0:
        raise FieldProblem(loc, f"{value!r} is no timeout: give a finite number of seconds "
                                "greater than 0, e.g. 600")
    return seconds


def _concurrency(value: object) -> int | None:
    if value is None:
        return None
    count = _number(value)
    if count is None or count < 1 or not count.is_integer():
        raise FieldProblem(("concurrency",), f"{value!r} is no concurrency: give a whole "
                                             "number of checks at once, 1 or more")
    return int(count)


def _network(value: object) -> bool | list[str]:
    if isinstance(value, bool):
        return value
    if isinstance(value, list) and all(isinstance(host, str) for host in value):
        try:
            return [check_host_pattern(host) for host in value]
        except ValueError as exc:
            raise FieldProblem(("network",), str(exc)) from None
    raise FieldProblem(("network",), "give true, false or a list of hosts, e.g. [pypi.org]")


def _variable_names(value: object) -> list[str]:
    names = _texts(value, ("env",), "variable names, e.g. [NPM_TOKEN]")
    problem = next((p for p in map(name_problem, names) if p), None)
    if problem:
        raise FieldProblem(("env",), problem)
    return names


def _ignore_patterns(value: object) -> list[str]:
    patterns = _texts(value, ("ignore",), "globs, e.g. [scripts/, '*.sh']")
    for pattern in patterns:
        text = pattern.strip()
        if not text or text.startswith("/") or ".." in text.split("/") or "\0" in text:
            raise FieldProblem(("ignore",), f"{pattern!r} must be a glob relative to the "
                                            "repository root, e.g. 'scripts/'")
    return [pattern.strip() for pattern in patterns]


def _junit_path(value: object) -> str:
    if not isinstance(value, str):
        raise FieldProblem(("junit",), "give the report's path in the workspace, e.g. report.xml")
    try:
        path = _normalize_relative(value, inside="the workspace, relative to its folder")
    except ValueError as exc:
        raise FieldProblem(("junit",), str(exc)) from None
    if path == "." or "\0" in path:
        raise FieldProblem(("junit",), f"{value!r} must name a file inside the workspace, e.g. "
                                       "report.xml")
    return path


def _require_unique_ids(checks: list[CheckConfig]) -> None:
    counts = Counter(check.id for check in checks)  # linear: a config may list many checks
    duplicate = next((check_id for check_id, count in counts.items() if count > 1), None)
    if duplicate is not None:
        raise FieldProblem((), f"check id {duplicate!r} is used twice in one workspace; rename "
                               "one")


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
                raise FieldProblem(places[following],
                               f"the checks' needs form a cycle ({cycle}); remove one need")
            elif not state.get(following):
                state[following] = 1
                stack.append((following, iter(needs.get(following, ()))))
                path.append(following)


def read_verify_config(git: Git, revision: str | None) -> VerifyConfig:
    """The `verify` section of the config at commit `revision` of `git` (its work tree's when
    None), read without the other sections' models; a missing file gives the defaults. Raises
    ConfigError as `read_config_at` and `parse_verify_config` do."""
    data = read_config_at(git, revision)
    return VerifyConfig() if data is None else parse_verify_config(data)


def parse_verify_config(source: str | bytes, *, path: str = CONFIG_PATH) -> VerifyConfig:
    """The `verify` section of a config file's content, as `runner.config`'s whole-file reader
    gives it, and the same ConfigError for what is wrong in it or at the top level (not a
    mapping, an unknown section); the other sections are not read."""
    data, lines = load_config(source, path=path)
    if data is None:
        return VerifyConfig()
    try:
        return VerifyConfig.from_dict(data.get("verify", {}))
    except FieldProblem as problem:
        raise config_error_at(path, lines, ("verify", *problem.loc), str(problem)) from None


def load_config(source: str | bytes, *, path: str = CONFIG_PATH
                ) -> tuple[dict[Any, Any] | None, dict[tuple[Any, ...], int]]:
    """A config file's content as data (None for an empty file) and the line of every field.

    Raises ConfigError naming `path` (and the line and field where there is one) when the
    content is over `MAX_CONFIG_BYTES`, bytes that are not UTF-8, not valid YAML, nested or
    expanded beyond the caps (see the module docstring), not a mapping, or has a top-level key
    that is not one of `SECTIONS`.
    """
    from verification.config_yaml import load_yaml  # PyYAML: only for a file that exists

    data, lines = load_yaml(decode_config(source, path), path)
    if data is None:
        return None, lines
    if not isinstance(data, dict):
        raise ConfigError(path, 1, "", f"the file must be a mapping with sections "
                                       f"{', '.join(SECTIONS)}")
    unknown = next((key for key in data if key not in SECTIONS), None)
    if unknown is not None:
        raise config_error_at(path, lines, (unknown,), UNKNOWN_KEY)
    return data, lines


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


def check_config_size(size: int, *, path: str = CONFIG_PATH, limit: int = MAX_CONFIG_BYTES
                      ) -> None:
    """Raise ConfigError when a config file of `size` bytes is over `limit` (a workflow's is
    GitHub's own, `workflows.MAX_WORKFLOW_BYTES`).

    Call it with the size a reader learns before reading (a stat, a git tree entry), so an
    oversized file is never read; `load_config` checks again.
    """
    if size > limit:
        raise ConfigError(
            path,
            None,
            "",
            f"the file is {size} bytes; the limit is {limit} bytes "
            f"({limit // 1024} KiB): move long commands into scripts the checks run",
        )


def decode_config(source: str | bytes, path: str, *, limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of a config file (or a workflow), after the size cap (`limit` bytes); bytes
    must be UTF-8. Raises ConfigError naming `path` (and the line of the first byte that is
    not)."""
    if isinstance(source, str):
        check_config_size(len(source.encode("utf-8", "surrogatepass")), path=path, limit=limit)
        return source
    check_config_size(len(source), path=path, limit=limit)
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            path, line, "", f"not valid UTF-8 at byte {exc.start}; save the file as UTF-8"
        ) from exc
