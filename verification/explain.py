"""Why a plan is what it is: for each check, the changed files and dependency edges behind it;
for each changed file, the checks that cover it. Rendered for `ratchet verify --explain`.

Pure. The explanation is planning's by-product, never part of the plan or its hash: a plan
stays the same data however it is explained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plumbing.files import printable_path
from verification.model import Plan

# The message for a change that needs verifying and that no planned check covers.
NOTHING_VERIFIES = "nothing verifies this change"
# Changed files listed under one check in the text rendering; the JSON lists all.
SHOWN_FILES = 5
# Folders listed as "not workspaces" in the text rendering.
SHOWN_SKIPPED = 20


@dataclass(frozen=True)
class FileCoverage:
    """One changed file: how planning read it and which checks cover it."""

    path: str
    kind: str  # ignored, global, documentation, lockfile, shared, code, outside
    detail: str
    checks: tuple[str, ...]

    @property
    def unverified(self) -> bool:
        return not self.checks and self.kind not in ("ignored", "documentation")


@dataclass(frozen=True)
class Explanation:
    """`reasons`: for each check key, each changed file behind it with the steps from it."""

    plan: Plan
    reasons: dict[str, dict[str, tuple[str, ...]]]
    files: tuple[FileCoverage, ...]
    skipped: dict[str, str]  # manifest folders that are not workspaces, and why

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
            "setup": [
                {"workspace": w.path, "setup": list(w.setup), "uses": list(w.uses)}
                for w in self.plan.workspaces if w.setup or w.uses
            ],
            "files": [
                {"path": printable_path(c.path), "kind": c.kind, "detail": c.detail,
                 "checks": list(c.checks)}
                for c in self.files
            ],
            "not_workspaces": dict(sorted(self.skipped.items())),
            "unverified": list(self.plan.unverified),
        }


def render_text(explanation: Explanation) -> str:
    """The explanation as lines for a terminal."""
    plan = explanation.plan
    lines = [f"plan {plan.sha256[:12]}: {len(plan.checks)} checks in "
             f"{len({c.workspace for c in plan.checks})} workspaces", ""]
    if plan.checks:
        lines.append("why each check:")
        for check in plan.checks:
            lines.append(f"  {check.key}  ({check.command})")
            because = sorted(explanation.reasons.get(check.key, {}).items())
            for file, steps in because[:SHOWN_FILES]:
                lines.append(f"    {printable_path(file)}: {' -> '.join(steps)}")
            if len(because) > SHOWN_FILES:
                lines.append(f"    ... and {len(because) - SHOWN_FILES} more changed files")
        lines.append("")
    setups = [w for w in plan.workspaces if w.setup or w.uses]
    if setups:
        lines.append("setup, before the checks:")
        for workspace in setups:
            for command in workspace.setup:
                lines.append(f"  {workspace.path}: {command}")
            if workspace.uses:
                lines.append(f"  {workspace.path}: after the setup of {', '.join(workspace.uses)}")
        lines.append("")
    lines.append("what covers each changed file:")
    for coverage in explanation.files:
        name = printable_path(coverage.path)
        if coverage.checks:
            lines.append(f"  {name}: {', '.join(coverage.checks)}")
        elif coverage.unverified:
            lines.append(f"  {name}: {NOTHING_VERIFIES.upper()} ({coverage.detail}); add a "
                         "check in .github/ratchet.yml, or list it in verify.ignore")
        else:
            lines.append(f"  {name}: {coverage.kind} ({coverage.detail})")
    if explanation.skipped:
        lines += ["", "folders with a manifest that are not workspaces:"]
        skipped = sorted(explanation.skipped.items())
        lines += [f"  {printable_path(folder)}: {why}" for folder, why in skipped[:SHOWN_SKIPPED]]
        if len(skipped) > SHOWN_SKIPPED:
            lines.append(f"  ... and {len(skipped) - SHOWN_SKIPPED} more")
    return "\n".join(lines) + "\n"
