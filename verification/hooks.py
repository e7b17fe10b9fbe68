"""The repository's pre-commit hooks as checks: which run here, on which files, and which
cannot.

Pure. `.pre-commit-config.yaml` is read as pre-commit reads it
(https://pre-commit.com/#plugins, #adding-pre-commit-plugins-to-your-project): `repos`, each
with `hooks`; the config's `files`/`exclude` and each hook's `files`, `exclude`, `types`,
`types_or` and `exclude_types` choose the files a hook runs on, `pass_filenames` whether they
are its arguments, `stages` (or `default_stages`) whether a plain `pre-commit run` runs it.

- A `repo: local` hook whose `language` runs its `entry` as it is (`system`, `script`,
  `unsupported`, `unsupported_script`, `fail`) is a check: its entry and `args`, with the
  files it matches as pre-commit would pass them.
- Any other hook is installed by pre-commit first (a clone of its repository, a Python, Node
  or Go environment with its `additional_dependencies`), which needs the network: it is an
  unverified step, listed with the reason, never dropped.

For a change, a hook runs on the changed files it matches; when the config itself changed, on
every tracked file it matches (what `pre-commit run --all-files` does), through `git ls-files`
and `grep -P` (pre-commit's patterns are Python regular expressions).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from posixpath import basename, splitext
from typing import Any

from verification.config import ConfigError
from verification.model import PlannedCheck, UnverifiedStep
from verification.task_runners import TaskLookup
from verification.tools import kinds
from verification.yaml_events import load_yaml

CONFIG_FILE = ".pre-commit-config.yaml"
# Languages whose entry pre-commit runs as it is, with nothing to install.
RUNS_AS_IS = frozenset({"system", "script", "unsupported", "unsupported_script", "fail"})
# Stages a plain `pre-commit run` runs (`commit` is the name before pre-commit 3.2).
_RUN_STAGES = frozenset({"pre-commit", "commit"})
# identify's tags for the common file types, by extension (types pre-commit filters on).
_TYPE_SUFFIXES = {
    "python": (".py", ".pyi"), "pyi": (".pyi",), "cython": (".pyx", ".pxd"),
    "javascript": (".js", ".mjs", ".cjs"), "jsx": (".jsx",), "ts": (".ts", ".mts", ".cts"),
    "tsx": (".tsx",), "vue": (".vue",), "svelte": (".svelte",), "json": (".json",),
    "yaml": (".yml", ".yaml"), "toml": (".toml",), "markdown": (".md", ".markdown"),
    "rst": (".rst",), "rust": (".rs",), "go": (".go",), "shell": (".sh", ".bash"),
    "bash": (".bash", ".sh"), "c": (".c", ".h"), "c++": (".cc", ".cpp", ".cxx", ".hpp", ".hh"),
    "html": (".html", ".htm"), "css": (".css",), "scss": (".scss",), "sql": (".sql",),
    "proto": (".proto",), "java": (".java",), "kotlin": (".kt", ".kts"), "lua": (".lua",),
    "ruby": (".rb",), "swift": (".swift",), "dockerfile": (), "jupyter": (".ipynb",),
}  # fmt: skip
_EVERY_FILE = frozenset({"file", "text", "non-executable", "executable", "non-symlink"})


@dataclass(frozen=True)
class Hook:
    """One hook of the config, with what chooses its files."""

    id: str
    repo: str
    entry: str
    language: str
    args: tuple[str, ...]
    files: tuple[str, ...]  # patterns that must all match (the config's, the hook's)
    exclude: tuple[str, ...]  # patterns any of which excludes
    types: tuple[str, ...]
    types_or: tuple[str, ...]
    exclude_types: tuple[str, ...]
    pass_filenames: bool
    runs: bool  # a plain `pre-commit run` runs it (its stages)
    always_run: bool = False  # runs even when no file matches

    @property
    def local(self) -> bool:
        """True when pre-commit runs its entry as it is (nothing to install)."""
        return self.repo == "local" and self.language in RUNS_AS_IS

    def matches(self, path: str) -> bool:
        """True when pre-commit would run the hook on `path`."""
        try:
            if not all(re.search(p, path) for p in self.files):
                return False
            if any(re.search(p, path) for p in self.exclude):
                return False
        except re.error:
            return False
        tags = _tags(path)
        if self.types and not all(t in tags or t in _EVERY_FILE for t in self.types):
            return False
        if self.types_or and not any(t in tags or t in _EVERY_FILE for t in self.types_or):
            return False
        return not any(t in tags for t in self.exclude_types)

    def command(self, files: Sequence[str] | None) -> str:
        """The command running the hook on `files` (None: every tracked file it matches)."""
        base = " ".join([self.entry, *map(shlex.quote, self.args)])
        if self.language == "fail" and files is not None:
            # pre-commit fails the hook naming its entry (the message) and the files.
            named = " ".join(map(shlex.quote, [self.entry, *files]))
            return f"printf '%s\\n' {named} >&2; exit 1"
        if not self.pass_filenames and self.language != "fail":
            return base
        if files is not None:
            return f"{base} {' '.join(map(shlex.quote, files))}"
        # Every tracked file it matches, as `pre-commit run --all-files` passes them.
        filters = [*(f"grep -zP {shlex.quote(_one_line(p))}" for p in self.files),
                   *(f"grep -zvP {shlex.quote(_one_line(p))}" for p in self.exclude)]
        suffixes = sorted({s for t in (*self.types, *self.types_or) for s in
                           _TYPE_SUFFIXES.get(t, ())})
        if suffixes and not any(t in _EVERY_FILE for t in (*self.types, *self.types_or)):
            pattern = "(" + "|".join(re.escape(s) for s in suffixes) + ")$"
            filters.append(f"grep -zP {shlex.quote(pattern)}")
        piped = " | ".join(["git ls-files -z", *[f for f in filters if f]])
        if self.language == "fail":
            return f"{piped} | tr '\\0' '\\n' | grep . && exit 1 || exit 0"
        return f"{piped} | xargs -0 -r {base}"


@dataclass(frozen=True)
class HookConfig:
    """The hooks of a config, or why it could not be read."""

    hooks: tuple[Hook, ...] = ()
    problem: str | None = None


def read_hooks(text: str) -> HookConfig:
    """The hooks of `.pre-commit-config.yaml` (see the module docstring)."""
    try:
        data = load_yaml(text, path=CONFIG_FILE)
    except ConfigError as exc:
        return HookConfig(problem=str(exc))
    if not isinstance(data, dict):
        return HookConfig(problem=f"{CONFIG_FILE}: not a mapping of repos")
    files, exclude = _text(data.get("files")), _text(data.get("exclude"))
    stages = _strings(data.get("default_stages")) or None
    hooks: list[Hook] = []
    for repo in data.get("repos") or []:
        if not isinstance(repo, dict):
            continue
        url = _text(repo.get("repo")) or ""
        for raw in repo.get("hooks") or []:
            if not isinstance(raw, dict) or not _text(raw.get("id")):
                continue
            hook_stages = _strings(raw.get("stages")) or stages
            hooks.append(Hook(
                id=_text(raw.get("id")) or "", repo=url, entry=_text(raw.get("entry")) or "",
                language=_text(raw.get("language")) or "", args=tuple(_strings(raw.get("args"))),
                files=tuple(p for p in (files, _text(raw.get("files"))) if p),
                exclude=tuple(p for p in (exclude, _text(raw.get("exclude"))) if p),
                types=tuple(_strings(raw.get("types"))),
                types_or=tuple(_strings(raw.get("types_or"))),
                exclude_types=tuple(_strings(raw.get("exclude_types"))),
                pass_filenames=raw.get("pass_filenames") is not False,
                runs=hook_stages is None or bool(_RUN_STAGES & set(hook_stages)),
                always_run=raw.get("always_run") is True,
            ))  # fmt: skip
    return HookConfig(tuple(hooks))


@dataclass(frozen=True)
class HookPlan:
    """The checks the hooks become, each with the changed files it covers and why; the
    hooks listed as not run; the ids of those pre-commit installs from the network first."""

    checks: tuple[tuple[PlannedCheck, dict[str, tuple[str, ...]]], ...] = ()
    unverified: tuple[UnverifiedStep, ...] = ()
    installed: tuple[str, ...] = ()


def plan_hooks(text: str, verifying: Sequence[str], lookup: TaskLookup,
               timeout: float) -> HookPlan:
    """What the config's hooks do for the changed files that need verifying (see the module
    docstring): a local hook running its entry as it is becomes a root check of the kind of
    what it runs; one pre-commit must install, or one rewriting files, a step not run."""
    config = read_hooks(text)
    installed = tuple(h.id for h in config.hooks if h.runs and not h.local)
    if config.problem is not None:
        return HookPlan((), (UnverifiedStep(CONFIG_FILE, "", "", config.problem),), installed)
    if not verifying:
        return HookPlan((), (), installed)
    whole = CONFIG_FILE in verifying
    checks: list[tuple[PlannedCheck, dict[str, tuple[str, ...]]]] = []
    unverified: list[UnverifiedStep] = []
    for hook in config.hooks:
        files = matching(hook, verifying)
        if not hook.runs or not (files or whole or hook.always_run):
            continue
        label = f"hook {hook.id}"
        if not hook.local:
            what = f"a {hook.language} environment" if hook.repo == "local" else hook.repo
            unverified.append(UnverifiedStep(CONFIG_FILE, "", label, (
                f"pre-commit installs it from {what} first, which needs the network: "
                "not run here")))
            continue
        uses = lookup.line_uses(hook.entry, ".")
        if any(use.writes for use in uses):
            unverified.append(UnverifiedStep(CONFIG_FILE, "", label,
                                             "rewrites the files it checks: not verification"))
            continue
        found = kinds(uses)
        check = PlannedCheck(f"pre-commit-{re.sub(r'[^A-Za-z0-9._-]+', '-', hook.id)}", ".",
                             found[0] if found else "lint",
                             hook.command(None if whole else files), timeout, None)
        because = {f: (f"the pre-commit hook {hook.id} runs on it",)
                   for f in (files if files or not hook.always_run else verifying)}
        if whole:
            because[CONFIG_FILE] = (f"{CONFIG_FILE} declares the hook {hook.id}",)
        checks.append((check, because))
    return HookPlan(tuple(checks), tuple(unverified), installed)


def matching(hook: Hook, changed: Iterable[str]) -> list[str]:
    """The changed files `hook` runs on, in order."""
    return [path for path in changed if hook.matches(path)]


def _tags(path: str) -> set[str]:
    """identify's type tags of a path, from its extension (and a Dockerfile's name)."""
    suffix = splitext(path)[1].lower()
    tags = {tag for tag, suffixes in _TYPE_SUFFIXES.items() if suffix in suffixes}
    if basename(path).startswith("Dockerfile"):
        tags.add("dockerfile")
    return tags


def _one_line(pattern: str) -> str:
    """A pattern as one line, for `grep -P` (which reads each line as a pattern of its own):
    a verbose `(?x)` pattern's lines joined without their comments, other newlines escaped."""
    if "\n" not in pattern:
        return pattern
    if pattern.lstrip().startswith("(?x)"):
        return " ".join(re.sub(r"(?<!\\)#.*$", "", line) for line in pattern.splitlines())
    return pattern.replace("\n", "\\n")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
