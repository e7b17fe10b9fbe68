"""The evidence bundle of a verification, and its renderings for GitHub.

Pure. A bundle holds the plan, every check's result, the diff stat and artifact hashes; it
renders to a check run's output (title, summary and text within GitHub's 65,535-character
limits, annotations in batches of at most 50 per API call), to Markdown for an Actions step
summary, and to `::error file=...::` workflow commands.
See https://docs.github.com/en/rest/checks/runs#update-a-check-run (output limits) and
https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verification.annotations import (
    Annotation,
    Level,
    junit_annotations,
    parse_annotations,
)
from verification.execute import CheckResult
from verification.explain import NOTHING_VERIFIES
from verification.model import Plan

__all__ = [
    "Annotation",
    "CheckRunOutput",
    "EvidenceBundle",
    "build_bundle",
    "render_check_run",
    "render_markdown",
    "render_workflow_commands",
]

# GitHub's limit on a check run's output.summary and output.text.
CHECK_RUN_TEXT_LIMIT = 65_535
# GitHub accepts at most 50 annotations per create or update call.
ANNOTATION_BATCH = 50
# Annotations rendered in total; past this a reviewer reads the logs, not the diff gutter.
ANNOTATION_LIMIT = 1000
# GitHub's limit on a step summary is 1 MiB; stay under it.
STEP_SUMMARY_LIMIT = 1_000_000
# Log lines shown per failing check.
LOG_TAIL_LINES = 60
# Changed files that no check covers, listed in a summary.
UNVERIFIED_SHOWN = 50

_STATUS_MARK = {
    "passed": "✅",
    "failed": "❌",
    "timed_out": "⏱️",
    "error": "⚠️",
    "skipped": "⏭️",
}
_COMMAND_LEVEL: dict[Level, str] = {"failure": "error", "warning": "warning", "notice": "notice"}


@dataclass(frozen=True)
class EvidenceBundle:
    """Everything a reviewer needs to trust a verification, in one value.

    `root` is the repository's absolute path when known, so annotations can be made from tools
    that print absolute paths.
    """

    plan: Plan
    results: tuple[CheckResult, ...]
    diff_stat: str
    artifacts: dict[str, str] = field(default_factory=dict)
    root: str | None = None

    @property
    def conclusion(self) -> str:
        """ "success" when every planned check has a passed result, "failure" when one did not,
        "neutral" when the change needed verifying and nothing was planned: not verified, and
        never published as verified (`reason` says why)."""
        if self.plan.nothing_verifies:
            return "neutral"
        by_key = {result.key: result for result in self.results}
        passed = all(check.key in by_key and by_key[check.key].passed for check in self.plan.checks)
        return "success" if passed else "failure"

    @property
    def reason(self) -> str | None:
        """Why the conclusion is neither a pass nor a failure of a check; None otherwise."""
        return NOTHING_VERIFIES if self.conclusion == "neutral" else None

    def annotations(self) -> list[Annotation]:
        """Annotations from the checks that did not pass: their logs and JUnit failures."""
        found: list[Annotation] = []
        seen: set[tuple[str, int, str]] = set()
        for result in self.results:
            if result.passed:
                continue
            candidates = parse_annotations(
                result.log, workspace=result.workspace, root=self.root, title=result.key
            )
            if result.junit is not None:
                candidates = (
                    junit_annotations(
                        result.junit, workspace=result.workspace, root=self.root, title=result.key
                    )
                    + candidates
                )
            for annotation in candidates:
                key = (annotation.path, annotation.start_line, annotation.message)
                if key not in seen:
                    seen.add(key)
                    found.append(annotation)
        return found[:ANNOTATION_LIMIT]

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "plan_sha256": self.plan.sha256,
            "results": [result.to_dict() for result in self.results],
            "diff_stat": self.diff_stat,
            "artifacts": dict(sorted(self.artifacts.items())),
            "annotations": [_annotation_payload(a) for a in self.annotations()],
            "conclusion": self.conclusion,
            **({"reason": self.reason, "unverified": list(self.plan.unverified)}
               if self.reason else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=2, ensure_ascii=False)


def build_bundle(
    plan: Plan,
    results: list[CheckResult] | tuple[CheckResult, ...],
    *,
    diff_stat: str = "",
    artifacts: Mapping[str, str] | None = None,
    root: str | None = None,
) -> EvidenceBundle:
    """Assemble the evidence of one verification (see EvidenceBundle)."""
    return EvidenceBundle(plan, tuple(results), diff_stat, dict(artifacts or {}), root)


@dataclass(frozen=True)
class CheckRunOutput:
    """A check run's `output` object, with annotations split into API-sized batches."""

    title: str
    summary: str
    text: str
    annotation_batches: list[list[Annotation]]

    def to_payload(self, batch: int = 0) -> dict[str, Any]:
        """The `output` JSON for one create or update call, carrying annotation batch `batch`."""
        annotations = self.annotation_batches[batch] if self.annotation_batches else []
        return {
            "title": self.title,
            "summary": self.summary,
            "text": self.text,
            "annotations": [_annotation_payload(a) for a in annotations],
        }


def render_check_run(bundle: EvidenceBundle) -> CheckRunOutput:
    """Render a bundle as check-run output within GitHub's size limits."""
    annotations = bundle.annotations()
    batches = [
        annotations[start : start + ANNOTATION_BATCH]
        for start in range(0, len(annotations), ANNOTATION_BATCH)
    ]
    return CheckRunOutput(
        title=_title(bundle),
        summary=fit(_summary(bundle), CHECK_RUN_TEXT_LIMIT),
        text=_failure_details(bundle, CHECK_RUN_TEXT_LIMIT),
        annotation_batches=batches,
    )


def render_markdown(bundle: EvidenceBundle) -> str:
    """Render a bundle as Markdown for `$GITHUB_STEP_SUMMARY`."""
    head = f"## Ratchet verification: {_title(bundle)}\n\n{_summary(bundle)}\n"
    details = _failure_details(bundle, STEP_SUMMARY_LIMIT // 2)
    return fit(f"{head}\n{details}" if details else head, STEP_SUMMARY_LIMIT)


def render_workflow_commands(bundle: EvidenceBundle) -> list[str]:
    """One `::error file=F,line=L,...::message` workflow command per annotation."""
    commands = []
    for annotation in bundle.annotations():
        properties = ",".join(
            f"{name}={escape_property(value)}"
            for name, value in (
                ("file", annotation.path),
                ("line", str(annotation.start_line)),
                ("endLine", str(annotation.end_line)),
                ("title", annotation.title),
            )
        )
        level = _COMMAND_LEVEL[annotation.level]
        commands.append(f"::{level} {properties}::{escape_data(annotation.message)}")
    return commands


def escape_data(value: str) -> str:
    """Escape a workflow command's message as the Actions runner expects."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a workflow command property value: as data, plus `:` and `,`."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def fit(text: str, limit: int) -> str:
    """Return `text` cut to at most `limit` UTF-8 bytes, saying so when it was cut.

    Bytes bound characters from above, so the result is within a character limit as well.
    """
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    marker = f"\n\n… {len(encoded) - limit} more bytes not shown; see the full logs.\n"
    room = limit - len(marker.encode("utf-8"))
    return encoded[:room].decode("utf-8", errors="ignore") + marker


def _title(bundle: EvidenceBundle) -> str:
    total = len(bundle.plan.checks)
    if bundle.reason is not None:
        return bundle.reason[:1].upper() + bundle.reason[1:]
    if total == 0:
        return "No checks planned"
    passed = sum(1 for result in bundle.results if result.passed)
    if bundle.conclusion == "success":
        return f"All {total} checks passed"
    return f"{total - passed} of {total} checks did not pass"


def _summary(bundle: EvidenceBundle) -> str:
    lines = [f"Plan `{bundle.plan.sha256[:12]}`: {len(bundle.plan.checks)} checks."]
    if bundle.reason is not None:
        files = bundle.plan.unverified
        lines.append(
            f"\n**Not verified: {bundle.reason}.** No check covers these changed files, so "
            "nothing ran and the change is not verified:\n"
        )
        lines += [f"- `{path}`" for path in files[:UNVERIFIED_SHOWN]]
        if len(files) > UNVERIFIED_SHOWN:
            lines.append(f"- ... and {len(files) - UNVERIFIED_SHOWN} more")
        lines.append(
            "\nAdd a check that covers them in `.github/ratchet.yml` (`verify.checks` or "
            "`verify.workspaces`), or list them in `verify.ignore` if they need no verification."
        )
    elif bundle.plan.is_empty:
        lines.append(
            "\nOnly documentation or paths listed in `verify.ignore` changed, so no check "
            "needed to run."
        )
    else:
        lines += ["", "| | check | kind | duration | exit | tests |", "|---|---|---|---|---|---|"]
        for result in bundle.results:
            mark = _STATUS_MARK.get(result.status, "")
            reused = " (reused)" if result.reused else ""
            lines.append(
                f"| {mark} {result.status}{reused} | `{result.key}` | {result.kind} | "
                f"{result.duration_s:.1f}s | {_text(result.exit_code)} | {_tests(result)} |"
            )
    if bundle.plan.unverified and bundle.reason is None:
        shown = ", ".join(f"`{path}`" for path in bundle.plan.unverified[:UNVERIFIED_SHOWN])
        lines.append(f"\nNo check covers these changed files: {shown}.")
    if bundle.diff_stat.strip():
        stat = _fenced(bundle.diff_stat.strip()[-8000:])
        lines += ["", "<details><summary>Diff stat</summary>", "", stat, "", "</details>"]
    if bundle.artifacts:
        lines += ["", "Artifacts:"]
        lines += [
            f"- `{path}` sha256 `{digest}`" for path, digest in sorted(bundle.artifacts.items())
        ]
    return "\n".join(lines)


def _failure_details(bundle: EvidenceBundle, limit: int) -> str:
    failing = [result for result in bundle.results if not result.passed]
    if not failing:
        return ""
    share = limit // len(failing)
    sections = []
    for result in failing:
        header = (
            f"### `{result.key}`: {result.status} (exit {_text(result.exit_code)}, "
            f"{result.duration_s:.1f}s)\n\n`{result.command}`\n\n"
            f"Log: {result.log_size} bytes, sha256 `{result.log_sha256}`.\n"
        )
        if result.junit is not None and result.junit.failed:
            header += "\nFailing tests:\n" + "".join(
                f"- `{case.classname}.{case.name}`"
                f"{f' at {case.file}:{case.line}' if case.file else ''}: {case.message[:300]}\n"
                for case in result.junit.failed[:50]
            )
        sections.append(fit(f"{header}\n{_fenced(result.log_tail(LOG_TAIL_LINES))}\n", share))
    return fit("\n".join(sections), limit)


def _fenced(text: str) -> str:
    # A fence longer than any backtick run in the text, so a log cannot close it early.
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}\n{text}\n{fence}"


def _longest_backtick_run(text: str) -> int:
    longest = current = 0
    for char in text:
        current = current + 1 if char == "`" else 0
        longest = max(longest, current)
    return longest


def _tests(result: CheckResult) -> str:
    if result.junit is None:
        return ""
    summary = result.junit
    return f"{summary.tests} run, {summary.failures} failed, {summary.errors} errors"


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _annotation_payload(annotation: Annotation) -> dict[str, Any]:
    return {
        "path": annotation.path,
        "start_line": annotation.start_line,
        "end_line": annotation.end_line,
        "annotation_level": annotation.level,
        "message": annotation.message,
        "title": annotation.title,
    }
