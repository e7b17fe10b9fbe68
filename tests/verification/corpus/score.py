"""Scoring a plan against what a repository's maintainers run: a pure function, plan + case ->
verdict with the reasons it is wrong.

A case's expectations are read from the repository's CI at that commit (see README.md):

- `must_run`: checks that must be planned, each a `Want` (the tool it runs, and optionally the
  package it runs over, the exact workspace, the kind);
- `must_not`: checks that must not be planned (a non-member folder's, another language's, an
  unrelated package's), as `Want`s too, `under` matching a folder and everything below;
- `order`: pairs [before, after]: every check matching `after` needs (transitively, through
  `PlannedCheck.needs`) a check matching `before`;
- `unrunnable`: `file:job:step` of CI steps that cannot run in a sandbox, which the plan must
  list in `Plan.unverified_steps` (a reusable workflow's job is `caller/called`; an empty step
  stands for any step of the job; a pre-commit hook has no job:
  `.pre-commit-config.yaml::hook zizmor`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from posixpath import basename
from typing import Any

from verification.model import Plan, PlannedCheck


@dataclass(frozen=True)
class Want:
    """What a check must (or must not) be: every field given must hold.

    `tool`: any of these word sequences appears in the command (`cargo test`, `pnpm run lint`).
    `package`: the check runs in that package's folder (its path or its last part) or names it
    on its command line (`-p hir-ty`, `--filter @vue/shared`). `workspace`: exactly that folder.
    `under`: that folder or one below it. `kind`: the plan's kind (build, lint, test...).
    """

    tool: tuple[str, ...] = ()
    package: str | None = None
    workspace: str | None = None
    under: str | None = None
    kind: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Want:
        unknown = set(data) - {"tool", "package", "workspace", "under", "kind"}
        if unknown or not data:
            raise ValueError(f"a check is described by tool, package, workspace, under, kind;"
                             f" got {dict(data)}")
        tool = data.get("tool", ())
        return cls(tool=(tool,) if isinstance(tool, str) else tuple(tool),
                   package=data.get("package"), workspace=data.get("workspace"),
                   under=data.get("under"), kind=data.get("kind"))

    def __str__(self) -> str:
        parts = [" | ".join(self.tool)] if self.tool else []
        parts += [f"{name}={value}" for name in ("package", "workspace", "under", "kind")
                  if (value := getattr(self, name)) is not None]
        return "{" + ", ".join(parts) + "}"

    def matches(self, check: PlannedCheck) -> bool:
        command = " ".join(check.command.split())
        if self.tool and not any(_mentions(command, tool) for tool in self.tool):
            return False
        if self.kind is not None and check.kind != self.kind:
            return False
        if self.workspace is not None and check.workspace != self.workspace:
            return False
        if self.under is not None and not (self.under in (".", check.workspace)
                                           or check.workspace.startswith(self.under + "/")):
            return False
        return self.package is None or self.package in (check.workspace, basename(
            check.workspace)) or _mentions(command, self.package)


def _mentions(command: str, words: str) -> bool:
    """True when `words` appear in `command` as whole words (not inside a longer name); a
    path may be spelled from the current folder (`./tools/lint.js` is `tools/lint.js`)."""
    pattern = r"\s+".join(re.escape(word) for word in words.split())
    return re.search(rf"(?<![\w@/.-])(?:\./)?{pattern}(?![\w-])", command) is not None


@dataclass(frozen=True)
class Case:
    """One commit of a repository and what its maintainers run for it."""

    repository: str
    commit: str
    categories: tuple[int, ...]
    why: str
    must_run: tuple[Want, ...] = ()
    must_not: tuple[Want, ...] = ()
    order: tuple[tuple[Want, Want], ...] = ()
    unrunnable: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.repository.replace('/', '+')}@{self.commit[:10]}"


@dataclass(frozen=True)
class Verdict:
    case: str
    reasons: tuple[str, ...] = field(default=())

    @property
    def right(self) -> bool:
        return not self.reasons


def score(plan: Plan, case: Case) -> Verdict:
    """Whether `plan` is what the maintainers run for `case`, and every way it is not."""
    reasons: list[str] = []
    for want in case.must_run:
        if not any(want.matches(check) for check in plan.checks):
            reasons.append(f"missing: no check {want}")
    for want in case.must_not:
        found = [check.key for check in plan.checks if want.matches(check)]
        if found:
            reasons.append(f"noise: {want} planned as {', '.join(found[:3])}"
                           + (f" (+{len(found) - 3})" if len(found) > 3 else ""))
    reasons += _order_reasons(plan, case.order)
    listed = [(basename(s.workflow), s.job, s.step) for s in plan.unverified_steps]
    for entry in case.unrunnable:
        workflow, job, step = _step(entry)
        if not any(w == workflow and j == job and (not step or s == step)
                   for w, j, s in listed):
            reasons.append(f"unlisted: CI step {entry} is not in the plan's unverified steps")
    return Verdict(case.id, tuple(reasons))


def _order_reasons(plan: Plan, order: Iterable[tuple[Want, Want]]) -> list[str]:
    by_key = {check.key: check for check in plan.checks}
    reasons = []
    for before, after in order:
        afters = [check for check in plan.checks if after.matches(check)]
        if not afters:
            reasons.append(f"order: no check {after} to run after {before}")
            continue
        for check in afters:
            if not any(before.matches(by_key[key]) for key in _needed(check, by_key)):
                reasons.append(f"order: {check.key} does not wait for a check {before}")
    return reasons


def _needed(check: PlannedCheck, by_key: Mapping[str, PlannedCheck]) -> set[str]:
    """The keys of every check `check` waits for, transitively."""
    seen: set[str] = set()
    pending = list(check.needs)
    while pending:
        key = pending.pop()
        if key in seen or key not in by_key:
            continue
        seen.add(key)
        pending.extend(by_key[key].needs)
    return seen


def _step(entry: str) -> tuple[str, str, str]:
    workflow, _, rest = entry.partition(":")
    job, _, step = rest.partition(":")
    if not workflow or not (job or step):  # no job: a hook (`.pre-commit-config.yaml::hook x`)
        raise ValueError(f"an unrunnable step is file:job:step, got {entry!r}")
    return basename(workflow), job, step
