"""Why a plan is what it is: for each check, the changed files and dependency edges behind it;
for each changed file, the checks that cover it. Rendered for `ratchet verify --explain`.

Pure. The explanation is planning's by-product, never part of the plan or its hash: a plan
stays the same data however it is explained.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from plumbing.files import printable_path
from verification.model import BookkeepingStep, CiStep, Plan, PlannedCheck

# The message for a change that needs verifying and that no planned check covers.
NOTHING_VERIFIES = "nothing verifies this change"
# Changed files listed under one check in the text rendering; the JSON lists all.
SHOWN_FILES = 5
# Folders listed as "not workspaces" in the text rendering.
SHOWN_SKIPPED = 20
# CI steps listed as not run in the text rendering; the JSON lists all.
SHOWN_STEPS = 30


@dataclass(frozen=True)
class FileCoverage:
    """One changed file: how planning read it and which checks cover it."""

    path: str
    kind: str  # ignored, global, runs, documentation, lockfile, shared, code, outside
    detail: str
    checks: tuple[str, ...]

    @property
    def unverified(self) -> bool:
        return not self.checks and self.kind not in ("ignored", "documentation")


@dataclass(frozen=True)
class Explanation:
    """`reasons`: for each check key, each changed file behind it with the steps from it.
    `names`: each workspace's declared name (its package, crate or module), where it has one."""

    plan: Plan
    reasons: dict[str, dict[str, tuple[str, ...]]]
    files: tuple[FileCoverage, ...]
    skipped: dict[str, str]  # manifest folders that are not workspaces, and why
    names: dict[str, str] = field(default_factory=dict)
    # CI steps that only do their workflow's bookkeeping: no checks, so not planned.
    bookkeeping: tuple[BookkeepingStep, ...] = ()

    def label(self, workspace: str) -> str:
        """A workspace as a reader knows it: its declared name and its folder."""
        name = self.names.get(workspace)
        shown = printable_path(workspace)
        return f"{name} ({shown})" if name else shown

    def packages(self) -> list[tuple[str, list[PlannedCheck], tuple[tuple[str, str], ...]]]:
        """Per workspace, in plan order, each group of its checks planned for the same
        reasons, with those reasons as (file, steps) pairs."""
        groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[PlannedCheck]] = {}
        for check in self.plan.checks:
            because = tuple((printable_path(file), " -> ".join(self._named(steps)))
                            for file, steps in sorted(self.reasons.get(check.key, {}).items()))
            groups.setdefault((check.workspace, because), []).append(check)
        return [(workspace, checks, because) for (workspace, because), checks in groups.items()]

    def _named(self, steps: tuple[str, ...]) -> list[str]:
        """Steps with each workspace folder they mention named (``in .`` says which package)."""
        return [_STEP_FOLDER.sub(lambda m: m[1] + self.names.get(m[2], m[2]), step)
                for step in steps]

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.sha256,
            "checks": [
                {
                    "key": check.key,
                    "command": check.command,
                    "because": [
                        {"file": printable_path(f), "steps": list(steps)}
                        for f, steps in sorted(self.reasons.get(check.key, {}).items())
                    ],
                }
                for check in self.plan.checks
            ],
            "packages": [
                {"workspace": printable_path(workspace), "name": self.names.get(workspace),
                 "checks": [check.key for check in checks],
                 "because": [{"file": file, "steps": steps} for file, steps in because]}
                for workspace, checks, because in self.packages()
            ],
            "setup": setup_json(self.plan),
            "order": run_order(self.plan),
            "files": [
                {"path": printable_path(c.path), "kind": c.kind, "detail": c.detail,
                 "checks": list(c.checks)}
                for c in self.files
            ],
            "not_workspaces": dict(sorted(self.skipped.items())),
            "unverified": list(self.plan.unverified),
            "unverified_steps": [step.to_dict() for step in self.plan.unverified_steps],
            "bookkeeping_steps": [step.to_dict() for step in self.bookkeeping],
        }


# A workspace folder in a step: "in FOLDER", "FOLDER depends on FOLDER (...)", "in FOLDER" at
# the end of a shared config's step.
_STEP_FOLDER = re.compile(r"(^in |^|depends on | in )(\S+)(?= \(|$| depends on )")


# The workspace a folder that is not one belongs to, in its reason ("... workspace at FOLDER").
_AT_FOLDER = re.compile(r"(workspace at )(\S+)")


def setup_json(plan: Plan) -> list[dict[str, Any]]:
    """The setups a plan runs before its checks: each workspace's commands, and the setups
    (install roots) it waits for."""
    return [{"workspace": printable_path(w.path), "commands": list(w.setup),
             "after": [f"setup:{printable_path(u)}" for u in w.uses]}
            for w in plan.workspaces if w.setup or w.uses]


def run_order(plan: Plan) -> list[list[str]]:
    """The order a plan runs in, as stages: each setup (``setup:FOLDER``) and check key in the
    first stage after everything it needs (a setup, the setups it uses; a check, its
    ``setups`` and the checks it ``needs``). Within a stage, anything may run at once, but
    for checks writing overlapping folders, which take turns."""
    workspaces = {w.path: w for w in plan.workspaces}
    checks = {c.key: c for c in plan.checks}
    stage: dict[str, int] = {}

    def setup_stage(path: str, seen: frozenset[str] = frozenset()) -> int:
        """The stage after ``path``'s setup (and those it uses): 0 when there is none."""
        workspace = workspaces.get(path)
        if workspace is None or path in seen:
            return 0
        after = max((setup_stage(u, seen | {path}) for u in workspace.uses), default=0)
        if not workspace.setup:
            return after
        stage[f"setup:{printable_path(path)}"] = after
        return after + 1

    def check_stage(key: str, seen: frozenset[str] = frozenset()) -> int:
        """The stage after check ``key``."""
        if key not in stage and key in checks and key not in seen:
            check = checks[key]
            stage[key] = max([*(setup_stage(s) for s in (check.workspace, *check.setups)),
                              *(check_stage(n, seen | {key}) for n in check.needs)], default=0)
        return stage.get(key, -1) + 1

    for key in checks:
        check_stage(key)
    stages: list[list[str]] = [[] for _ in range(max(stage.values(), default=-1) + 1)]
    for name, index in stage.items():
        stages[index].append(name)
    return [sorted(names) for names in stages]


def render_text(explanation: Explanation) -> str:
    """The explanation as lines for a terminal: per package, its checks and why (packages
    planned for the same reasons under one heading), the commands once each, the setups,
    what covers each changed file, then the CI steps not run here and those that are no
    checks."""
    plan = explanation.plan
    packages = explanation.packages()
    lines = [f"plan {plan.sha256[:12]}: {len(plan.checks)} checks in "
             f"{len({c.workspace for c in plan.checks})} packages", ""]
    by_reason: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for workspace, checks, because in packages:
        ids = ", ".join(check.id for check in checks)
        by_reason.setdefault(because, []).append(f"{explanation.label(workspace)}: {ids}")
    if by_reason:
        lines.append("why each package is checked:")
        for because, members in by_reason.items():
            for index, (file, steps) in enumerate(because[:SHOWN_FILES]):
                lines.append(f"  {'because' if index == 0 else 'and'} {file}: {steps}")
            if len(because) > SHOWN_FILES:
                lines.append(f"  and {len(because) - SHOWN_FILES} more changed files")
            lines += [f"    {member}" for member in members]
        lines.append("")
        commands: dict[tuple[str, str], set[str]] = {}
        for check in plan.checks:
            commands.setdefault((check.id, check.command), set()).add(check.workspace)
        lines.append("commands:")
        for (check_id, command), where in commands.items():
            count = f" ({len(where)} packages)" if len(where) > 1 else ""
            lines.append(f"  {check_id}: {command}{count}")
        lines.append("")
    setups = [w for w in plan.workspaces if w.setup]
    if setups:
        lines.append("setup, before the checks:")
        for workspace in setups:
            users = sum(1 for w in plan.workspaces if workspace.path in w.uses)
            for_whom = f", for {users} packages" if users else ""
            lines.append(f"  {explanation.label(workspace.path)}{for_whom}: "
                         + "; ".join(workspace.setup))
        lines.append("")
    lines.append("what covers each changed file:")
    for coverage in explanation.files:
        name = printable_path(coverage.path)
        if coverage.checks:
            folders = {key.rpartition(":")[0] or "." for key in coverage.checks}
            shown = (", ".join(coverage.checks) if len(coverage.checks) <= SHOWN_FILES
                     else f"{len(coverage.checks)} checks in {len(folders)} packages")
            lines.append(f"  {name}: {shown}")
        elif coverage.unverified:
            lines.append(f"  {name}: {NOTHING_VERIFIES.upper()} ({coverage.detail}); add a "
                         "check in .github/ratchet.yml, or list it in verify.ignore")
        else:
            lines.append(f"  {name}: {coverage.kind} ({coverage.detail})")
    lines += _steps_listed("CI steps not run here (not verified):", plan.unverified_steps)
    lines += _steps_listed("CI steps that are no checks (not planned):", explanation.bookkeeping)
    if explanation.skipped:
        lines += ["", "folders with a manifest that are not workspaces:"]
        skipped = sorted(explanation.skipped.items())
        lines += [f"  {explanation.label(folder)}: "
                  + _AT_FOLDER.sub(lambda m: m[1] + explanation.label(m[2]), why)
                  for folder, why in skipped[:SHOWN_SKIPPED]]
        if len(skipped) > SHOWN_SKIPPED:
            lines.append(f"  ... and {len(skipped) - SHOWN_SKIPPED} more")
    return "\n".join(lines) + "\n"


def _steps_listed(title: str, steps: Sequence[CiStep]) -> list[str]:
    """A titled section of CI steps with why each is as it is, the first SHOWN_STEPS of them."""
    if not steps:
        return []
    lines = ["", title, *(f"  {step.where}: {step.reason}" for step in steps[:SHOWN_STEPS])]
    if len(steps) > SHOWN_STEPS:
        lines.append(f"  ... and {len(steps) - SHOWN_STEPS} more")
    return lines
