"""The evidence of a verification: its bundle, the report a reader is shown, and Markdown.

Pure. A bundle holds the plan, every check's result (its log too), the diff stat and artifact
hashes. Its report (`EvidenceReport`) is the evidence as data, without whole logs: what a
check run, a step summary or a local outbox shows (title, summary, failing checks with their
log tails, annotations), small enough to travel in an effect's payload. The report renders to
Markdown within a size a caller gives (a forge's limit; GitHub's check run limits and its
annotation batches are the GitHub adapter's), and to `::error file=...::` workflow commands.
See https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from plumbing.markdown import code_span, longest_backtick_run
from verification.annotations import (
    Annotation,
    Level,
    junit_annotations,
    parse_annotations,
)
from verification.execute import CheckResult
from verification.explain import NOTHING_VERIFIES
from verification.junit import FailedTest, TestSummary
from verification.model import Plan
from verification.test_failures import parse_test_failures

__all__ = [
    "Annotation",
    "CheckEvidence",
    "EvidenceBundle",
    "EvidenceReport",
    "build_bundle",
    "render_failures",
    "render_markdown",
    "render_summary",
    "render_title",
    "render_workflow_commands",
]

# Annotations rendered in total; past this a reviewer reads the logs, not the diff gutter.
ANNOTATION_LIMIT = 1000
# GitHub's limit on a step summary is 1 MiB; stay under it.
STEP_SUMMARY_LIMIT = 1_000_000
# Log lines shown per failing check.
LOG_TAIL_LINES = 60
# Failing test cases shown per check, and the characters of each one's message.
FAILED_TESTS_SHOWN = 50
FAILED_TEST_MESSAGE = 300
# Changed files that no check covers, listed in a summary.
UNVERIFIED_SHOWN = 50
# Characters of the diff stat shown (its end: the totals).
DIFF_STAT_SHOWN = 8000

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
        """Annotations from the checks that did not pass: their JUnit failures, then what their
        logs say; a line a JUnit failure annotates is not annotated again from the log (the
        same failure, as the runner printed it)."""
        found: list[Annotation] = []
        seen: set[tuple[str, int, str]] = set()
        for result in self.results:
            if result.passed:
                continue
            reported = junit_annotations(
                result.junit, workspace=result.workspace, root=self.root, title=result.key
            ) if result.junit is not None else []
            lines = {(annotation.path, annotation.start_line) for annotation in reported}
            candidates = reported + [
                annotation for annotation in parse_annotations(
                    result.log, workspace=result.workspace, root=self.root, title=result.key)
                if (annotation.path, annotation.start_line) not in lines
            ]
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
class CheckEvidence:
    """One check's result as a reader is shown it: its log's size, hash and (when it did not
    pass) its last `LOG_TAIL_LINES` lines, never the whole log; its JUnit counts; and the
    first `FAILED_TESTS_SHOWN` failing tests (`failed_tests`), their messages cut: from its
    JUnit report where it wrote one, else read from the log (`verification/test_failures.py`).
    """

    key: str
    kind: str
    command: str
    status: str
    exit_code: int | None
    duration_s: float
    log_size: int
    log_sha256: str
    reused: bool = False
    junit: TestSummary | None = None  # its counts; the failing cases are `failed_tests`
    log_tail: str = ""
    failed_tests: tuple[FailedTest, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @classmethod
    def from_result(cls, result: CheckResult, *, root: str | None = None) -> CheckEvidence:
        """``result`` as shown; ``root`` (the repository's absolute path) is taken off the
        paths of failing tests read from its log."""
        junit, failed = result.junit, ()
        if not result.passed:
            found = junit.failed if junit is not None and junit.failed else (
                parse_test_failures(result.log, root=root))
            failed = tuple(_shown_test(case) for case in found[:FAILED_TESTS_SHOWN])
        if junit is not None:
            junit = TestSummary(junit.tests, junit.failures, junit.errors, junit.skipped, ())
        return cls(result.key, result.kind, result.command, result.status, result.exit_code,
                   result.duration_s, result.log_size, result.log_sha256, result.reused, junit,
                   "" if result.passed else result.log_tail(LOG_TAIL_LINES), failed)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "junit": self.junit.to_dict() if self.junit is not None else None,
                "failed_tests": [case.to_dict() for case in self.failed_tests]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckEvidence:
        junit = TestSummary.from_dict(data["junit"]) if data.get("junit") else None
        known = {f.name for f in fields(cls)} - {"junit", "failed_tests"}  # a later version's
        # A report recorded before `failed_tests` kept the failing cases in its JUnit summary.
        failed = (tuple(FailedTest.from_dict(case) for case in data["failed_tests"])
                  if "failed_tests" in data else junit.failed if junit is not None else ())
        return cls(**{k: v for k, v in data.items() if k in known}, junit=junit,
                   failed_tests=failed)

    @property
    def failing_count(self) -> int:
        """How many tests failed: JUnit's counts, else the failing tests named."""
        if self.junit is not None:
            return self.junit.failures + self.junit.errors
        return len(self.failed_tests)


@dataclass(frozen=True)
class EvidenceReport:
    """What a reader is shown of a bundle, as data (a check run effect carries it; each forge
    renders it): the plan's hash and size, the conclusion and why, each check's evidence, the
    changed files no check covers (the first `UNVERIFIED_SHOWN`, and how many), the end of the
    diff stat, artifact hashes, and the annotations found in the failing checks' logs."""

    plan_sha256: str
    planned: int  # checks in the plan
    conclusion: str
    reason: str | None
    results: tuple[CheckEvidence, ...]
    unverified: tuple[str, ...] = ()
    unverified_count: int = 0
    # The CI steps the plan does not run, each as "where: why" (the first UNVERIFIED_SHOWN).
    unverified_steps: tuple[str, ...] = ()
    unverified_steps_count: int = 0
    diff_stat: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)
    annotations: tuple[Annotation, ...] = ()

    @classmethod
    def from_bundle(cls, bundle: EvidenceBundle) -> EvidenceReport:
        unverified = bundle.plan.unverified
        return cls(
            plan_sha256=bundle.plan.sha256,
            planned=len(bundle.plan.checks),
            conclusion=bundle.conclusion,
            reason=bundle.reason,
            results=tuple(CheckEvidence.from_result(result, root=bundle.root)
                          for result in bundle.results),
            unverified=tuple(unverified[:UNVERIFIED_SHOWN]),
            unverified_count=len(unverified),
            unverified_steps=tuple(f"{s.where}: {s.reason}"
                                   for s in bundle.plan.unverified_steps[:UNVERIFIED_SHOWN]),
            unverified_steps_count=len(bundle.plan.unverified_steps),
            diff_stat=bundle.diff_stat.strip()[-DIFF_STAT_SHOWN:],
            artifacts=dict(sorted(bundle.artifacts.items())),
            annotations=tuple(bundle.annotations()),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON types only (lists, not tuples): an effect's payload compares as recorded."""
        return {
            "plan_sha256": self.plan_sha256,
            "planned": self.planned,
            "conclusion": self.conclusion,
            "reason": self.reason,
            "results": [result.to_dict() for result in self.results],
            "unverified": list(self.unverified),
            "unverified_count": self.unverified_count,
            "unverified_steps": list(self.unverified_steps),
            "unverified_steps_count": self.unverified_steps_count,
            "diff_stat": self.diff_stat,
            "artifacts": dict(self.artifacts),
            "annotations": [asdict(annotation) for annotation in self.annotations],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvidenceReport:
        known = {f.name for f in fields(cls)}  # a later version's fields are ignored
        return cls(**{
            **{k: v for k, v in data.items() if k in known},
            "results": tuple(CheckEvidence.from_dict(r) for r in data["results"]),
            "unverified": tuple(data.get("unverified") or ()),
            "unverified_steps": tuple(data.get("unverified_steps") or ()),
            "annotations": tuple(Annotation(**a) for a in data.get("annotations") or ()),
        })


def render_markdown(report: EvidenceReport) -> str:
    """The report as Markdown for a step summary or a bundle's ``summary.md``."""
    head = f"## Ratchet verification: {render_title(report)}\n\n{render_summary(report)}\n"
    details = render_failures(report, limit=STEP_SUMMARY_LIMIT // 2)
    return fit(f"{head}\n{details}" if details else head, STEP_SUMMARY_LIMIT)


def render_workflow_commands(report: EvidenceReport) -> list[str]:
    """One `::error file=F,line=L,...::message` workflow command per annotation."""
    commands = []
    for annotation in report.annotations:
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


def render_title(report: EvidenceReport) -> str:
    """One line: how many checks passed, or why nothing was verified."""
    total = report.planned
    if report.reason is not None:
        return report.reason[:1].upper() + report.reason[1:]
    if total == 0:
        return "No checks planned"
    passed = sum(1 for result in report.results if result.passed)
    if report.conclusion == "success":
        return f"All {total} checks passed"
    return f"{total - passed} of {total} checks did not pass"


def render_summary(report: EvidenceReport) -> str:
    """The plan, a table of the checks (or why none ran), the files no check covers, the diff
    stat and the artifacts."""
    lines = [f"Plan `{report.plan_sha256[:12]}`: {report.planned} checks."]
    if report.reason is not None:
        lines.append(
            f"\n**Not verified: {report.reason}.** No check covers these changed files, so "
            "nothing ran and the change is not verified:\n"
        )
        lines += [f"- `{path}`" for path in report.unverified[:UNVERIFIED_SHOWN]]
        if report.unverified_count > UNVERIFIED_SHOWN:
            lines.append(f"- ... and {report.unverified_count - UNVERIFIED_SHOWN} more")
        lines.append(
            "\nAdd a check that covers them in `.github/ratchet.yml` (`verify.checks` or "
            "`verify.workspaces`), or list them in `verify.ignore` if they need no verification."
        )
    elif report.planned == 0:
        lines.append(
            "\nOnly documentation or paths listed in `verify.ignore` changed, so no check "
            "needed to run."
        )
    else:
        lines += ["", "| | check | kind | duration | exit | tests |", "|---|---|---|---|---|---|"]
        for result in report.results:
            mark = _STATUS_MARK.get(result.status, "")
            reused = " (reused)" if result.reused else ""
            lines.append(
                f"| {mark} {result.status}{reused} | `{result.key}` | {result.kind} | "
                f"{result.duration_s:.1f}s | {_text(result.exit_code)} | {_tests(result)} |"
            )
    if report.unverified and report.reason is None:
        shown = ", ".join(f"`{path}`" for path in report.unverified[:UNVERIFIED_SHOWN])
        lines.append(f"\nNo check covers these changed files: {shown}.")
    if report.unverified_steps:
        lines += ["", "<details><summary>CI steps not run here (not verified): "
                  f"{report.unverified_steps_count}</summary>", ""]
        lines += ["- `" + step.replace("`", "'") + "`" for step in report.unverified_steps]
        if report.unverified_steps_count > len(report.unverified_steps):
            lines.append(f"- ... and {report.unverified_steps_count - len(report.unverified_steps)}"
                         " more")
        lines += ["", "</details>"]
    if report.diff_stat:
        stat = _fenced(report.diff_stat)
        lines += ["", "<details><summary>Diff stat</summary>", "", stat, "", "</details>"]
    if report.artifacts:
        lines += ["", "Artifacts:"]
        lines += [
            f"- `{path}` sha256 `{digest}`" for path, digest in sorted(report.artifacts.items())
        ]
    return "\n".join(lines)


def render_failures(report: EvidenceReport, *, limit: int) -> str:
    """Each check that did not pass, its command, log hash, failing tests and log tail, within
    ``limit`` UTF-8 bytes shared equally among them; empty when every check passed."""
    failing = [result for result in report.results if not result.passed]
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
        if result.failed_tests:
            header += f"\n{_failing_tests(result)}"
        sections.append(fit(f"{header}\nLog tail:\n\n{_fenced(result.log_tail)}\n", share))
    return fit("\n".join(sections), limit)


def _failing_tests(result: CheckEvidence) -> str:
    """The failing tests as a list: each name in code, where it failed, its message fenced."""
    shown, failed = len(result.failed_tests), result.failing_count
    more = f" ({shown} of {failed} shown)" if failed > shown else ""
    lines = [f"Failing tests{more}:", ""]
    for case in result.failed_tests:
        where = f" at `{case.file}:{case.line}`" if case.file and case.line else (
            f" in `{case.file}`" if case.file else "")
        lines.append(f"- {code_span(failed_test_name(case))}{where}")
        if case.message:
            lines += ["", _indented(_fenced(case.message), "  "), ""]
    return "\n".join(lines) + "\n"


def failed_test_name(case: FailedTest) -> str:
    """A failing test's name as its runner writes it (JUnit's class and name joined)."""
    return f"{case.classname}.{case.name}" if case.classname else case.name


def _shown_test(case: FailedTest) -> FailedTest:
    """A failing test as a report carries it: its message cut, without the details."""
    return FailedTest(case.name, case.classname, case.file, case.line,
                      case.message[:FAILED_TEST_MESSAGE], "")


def _indented(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _fenced(text: str) -> str:
    # A fence longer than any backtick run in the text, so a log cannot close it early.
    fence = "`" * max(3, longest_backtick_run(text) + 1)
    return f"{fence}\n{text}\n{fence}"




def _tests(result: CheckEvidence) -> str:
    if result.junit is None:
        return f"{len(result.failed_tests)} failed" if result.failed_tests else ""
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
