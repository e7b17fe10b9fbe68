"""Annotations from real and recorded tool output; a bundle's report and its Markdown (GitHub's
check run limits: tests/github/test_effect_checkruns.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from verification.annotations import parse_annotations
from verification.evidence import (
    EvidenceBundle,
    EvidenceReport,
    build_bundle,
    escape_data,
    escape_property,
    render_markdown,
    render_summary,
    render_title,
    render_workflow_commands,
)
from verification.execute import CheckResult
from verification.junit import parse_junit
from verification.plan import Plan, PlannedCheck, PlannedWorkspace


def result_for(check: PlannedCheck, status: str, log: str) -> CheckResult:
    return CheckResult(
        key=check.key,
        id=check.id,
        workspace=check.workspace,
        kind=check.kind,
        command=check.command,
        status=status,  # type: ignore[arg-type]
        exit_code=0 if status == "passed" else 1,
        duration_s=1.5,
        log_sha256="0" * 64,
        log_size=len(log.encode()),
        log=log,
    )


def single(check: PlannedCheck, status: str, log: str) -> EvidenceBundle:
    plan = Plan((PlannedWorkspace(check.workspace, ()),), (check,), 2)
    return build_bundle(plan, [result_for(check, status, log)], diff_stat=" a.py | 2 +-\n")


def located(log: str, workspace: str = ".", root: str | None = None) -> set[tuple[str, int, str]]:
    return {
        (a.path, a.start_line, a.level)
        for a in parse_annotations(log, workspace=workspace, root=root)
    }


def test_ruff_output_both_formats(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text("import os\n\n\nx = 1\n")
    ruff = Path(sys.executable).parent / "ruff"
    for extra in ([], ["--output-format", "concise"]):
        run = subprocess.run(
            [str(ruff), "check", "--no-cache", *extra, "."],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 1
        assert located(run.stdout, "pkg") == {("pkg/mod.py", 1, "failure")}, run.stdout


def test_pytest_output_and_python_traceback(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "def helper():\n    assert 1 == 2\n\n\ndef test_x():\n    helper()\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert located(run.stdout, "ws") == {("ws/test_x.py", 2, "failure")}, run.stdout
    (tmp_path / "boom.py").write_text("def f():\n    raise ValueError('bad')\n\nf()\n")
    crash = subprocess.run(
        [sys.executable, str(tmp_path / "boom.py")], capture_output=True, text=True
    )
    annotations = parse_annotations(crash.stderr, workspace="ws", root=str(tmp_path.parent))
    assert [(a.path, a.start_line, a.message) for a in annotations] == [
        (f"{tmp_path.name}/boom.py", 2, "ValueError: bad")
    ]
    assert parse_annotations(crash.stderr, workspace="ws") == []  # absolute, root unknown


def test_mypy_tsc_and_eslint_formats() -> None:
    mypy = "src/a.py:3: error: Incompatible types  [assignment]\nsrc/a.py:4: note: See docs\n"
    assert located(mypy, "py") == {("py/src/a.py", 3, "failure"), ("py/src/a.py", 4, "notice")}
    tsc = (
        "src/app.ts(7,3): error TS2322: Type 'string' is not assignable to type 'number'.\n"
        "src/b.tsx:9:1 - error TS2304: Cannot find name 'x'.\n"
    )
    assert located(tsc, "web") == {
        ("web/src/app.ts", 7, "failure"),
        ("web/src/b.tsx", 9, "failure"),
    }
    eslint = (
        "\n/repo/web/src/app.js\n"
        "  3:7  error    'x' is assigned a value but never used  no-unused-vars\n"
        "  5:1  warning  Unexpected console statement  no-console\n\n"
        "✖ 2 problems (1 error, 1 warning)\n"
    )
    assert located(eslint, "web", root="/repo") == {
        ("web/src/app.js", 3, "failure"),
        ("web/src/app.js", 5, "warning"),
    }
    assert located("../../outside.py:1:1: F401 unused\n", "web") == set()


def test_junit_failures_become_annotations() -> None:
    summary = parse_junit(
        '<testsuites><testsuite><testcase classname="tests.test_a" name="test_b" '
        'file="tests/test_a.py" line="3"><failure message="assert 1 == 2">'
        "def test_b():\n&gt;       assert 1 == 2\nE   assert 1 == 2\n\n"
        "tests/test_a.py:5: AssertionError</failure></testcase>"
        '<testcase name="ok"/><testcase name="skip"><skipped/></testcase></testsuite></testsuites>'
    )
    assert (summary.tests, summary.failures, summary.errors, summary.skipped) == (3, 1, 0, 1)
    check = PlannedCheck("unit", "api", "test", "pytest", 60, None)
    bundle = single(check, "failed", "")
    with_junit = {**bundle.results[0].to_dict(), "junit": summary.to_dict()}
    bundle = build_bundle(bundle.plan, [CheckResult.from_dict(with_junit)])
    [annotation] = bundle.annotations()
    assert (annotation.path, annotation.start_line) == ("api/tests/test_a.py", 5)
    assert "assert 1 == 2" in annotation.message


def test_empty_plan_for_documentation_is_a_success() -> None:
    bundle = build_bundle(Plan((), (), 2), [])
    assert bundle.conclusion == "success"
    assert bundle.reason is None
    report = EvidenceReport.from_bundle(bundle)
    assert render_title(report) == "No checks planned"
    assert "no check needed to run" in render_summary(report)
    assert report.annotations == ()
    assert "reason" not in json.loads(bundle.to_json())


def test_empty_plan_with_unverified_files_is_neutral_never_success() -> None:
    bundle = build_bundle(Plan((), (), 2, unverified=("scripts/release.sh",)), [])
    assert bundle.conclusion == "neutral"
    assert bundle.reason == "nothing verifies this change"
    report = EvidenceReport.from_bundle(bundle)
    assert render_title(report) == "Nothing verifies this change"
    assert "`scripts/release.sh`" in render_summary(report)
    assert "verify.ignore" in render_summary(report)
    document = json.loads(bundle.to_json())
    assert (document["conclusion"], document["reason"], document["unverified"]) == (
        "neutral", "nothing verifies this change", ["scripts/release.sh"]
    )


def test_conclusion_needs_every_planned_check_passed() -> None:
    a = PlannedCheck("a", ".", "lint", "true", 60, None)
    b = PlannedCheck("b", ".", "test", "true", 60, None)
    plan = Plan((PlannedWorkspace(".", ()),), (a, b), 2)
    both = [result_for(a, "passed", ""), result_for(b, "passed", "")]
    assert build_bundle(plan, both).conclusion == "success"
    assert build_bundle(plan, [result_for(a, "passed", "")]).conclusion == "failure"
    for status in ("failed", "timed_out", "error", "skipped"):
        results = [result_for(a, "passed", ""), result_for(b, status, "")]
        assert build_bundle(plan, results).conclusion == "failure", status


def test_markdown_and_workflow_commands_escape_their_values() -> None:
    check = PlannedCheck("types", "web", "typecheck", "tsc", 60, None)
    bundle = single(check, "failed", "src/a,b.ts(2,5): error TS1005: 100% wrong\n")
    report = EvidenceReport.from_bundle(bundle)
    [command] = render_workflow_commands(report)
    assert command == (
        "::error file=web/src/a%2Cb.ts,line=2,endLine=2,title=web%3Atypes::TS1005: 100%25 wrong"
    )
    assert escape_data("a\r\nb%") == "a%0D%0Ab%25"
    assert escape_property("x:y,z\n") == "x%3Ay%2Cz%0A"
    markdown = render_markdown(report)
    assert "`web:types`" in markdown
    assert "1 of 1 checks did not pass" in markdown
    assert "a.py | 2 +-" in markdown


def test_a_report_travels_as_json_and_renders_the_same() -> None:
    summary = parse_junit(
        '<testsuite><testcase classname="t" name="a" file="t.py" line="2">'
        '<failure message="boom">t.py:3: AssertionError</failure></testcase></testsuite>'
    )
    check = PlannedCheck("unit", "api", "test", "pytest", 60, None)
    failed = {**result_for(check, "failed", "x\n" * 100).to_dict(), "junit": summary.to_dict()}
    plan = Plan((PlannedWorkspace("api", ()),), (check,), 2, unverified=("docs/x.sh",))
    report = EvidenceReport.from_bundle(
        build_bundle(plan, [CheckResult.from_dict(failed)], diff_stat=" a.py | 2 +-\n",
                     artifacts={"plan.json": "1" * 64}))
    again = EvidenceReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report
    assert render_markdown(again) == render_markdown(report)
    assert len(report.results[0].log_tail.splitlines()) == 60  # the tail, not the log


UNITTEST = ("import unittest\n\n\nclass AddTest(unittest.TestCase):\n"
            "    def test_add(self):\n        self.assertEqual(2 - 3, 5, 'sums differ')\n")


def test_a_check_without_junit_names_its_failing_tests_from_its_log(tmp_path: Path) -> None:
    (tmp_path / "test_calc.py").write_text(UNITTEST)
    log = subprocess.run([sys.executable, "-m", "unittest", "-q"], cwd=tmp_path,
                         capture_output=True, text=True).stderr
    check = PlannedCheck("unit", "api", "test", "python -m unittest", 60, None)
    plan = Plan((PlannedWorkspace("api", ()),), (check,), 2)
    bundle = build_bundle(plan, [result_for(check, "failed", log)], root=str(tmp_path.parent))
    report = EvidenceReport.from_bundle(bundle)
    [failed] = report.results[0].failed_tests
    assert (failed.name, failed.file, failed.line) == (
        "test_calc.AddTest.test_add", f"{tmp_path.name}/test_calc.py", 6)
    assert failed.message == "AssertionError: -1 != 5 : sums differ"
    markdown = render_markdown(report)
    assert f"- `test_calc.AddTest.test_add` at `{tmp_path.name}/test_calc.py:6`" in markdown
    assert "    AssertionError: -1 != 5 : sums differ" not in markdown  # fenced, not indented code
    assert "  AssertionError: -1 != 5 : sums differ" in markdown
    assert "| 1 failed |" in markdown  # the table's tests column
    assert EvidenceReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report
    passed = EvidenceReport.from_bundle(build_bundle(plan, [result_for(check, "passed", log)]))
    assert passed.results[0].failed_tests == ()  # a passing check's log is not read


def test_a_failure_junit_reports_is_annotated_once_not_again_from_the_log(tmp_path: Path) -> None:
    (tmp_path / "test_calc.py").write_text("def test_add():\n    assert 2 - 3 == 5\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--junitxml=report.xml", "test_calc.py"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert "test_calc.py:2: AssertionError" in run.stdout  # the log names the line too
    check = PlannedCheck("unit", ".", "test", "pytest", 60, "report.xml")
    result = {**result_for(check, "failed", run.stdout).to_dict(),
              "junit": parse_junit((tmp_path / "report.xml").read_text()).to_dict()}
    bundle = build_bundle(Plan((PlannedWorkspace(".", ()),), (check,), 2),
                          [CheckResult.from_dict(result)])
    [annotation] = bundle.annotations()
    assert (annotation.path, annotation.start_line) == ("test_calc.py", 2)
    assert annotation.message.startswith("test_calc.test_add failed: assert")
    report = EvidenceReport.from_bundle(bundle)
    [failed] = report.results[0].failed_tests  # from the JUnit report
    assert (failed.name, failed.classname, failed.line) == ("test_add", "test_calc", 2)
    assert report.results[0].junit is not None and report.results[0].junit.failed == ()
    assert "- `test_calc.test_add` at `test_calc.py:2`" in render_markdown(report)


def test_a_report_recorded_before_failed_tests_still_shows_its_junit_cases() -> None:
    check = PlannedCheck("unit", ".", "test", "pytest", 60, None)
    report = EvidenceReport.from_bundle(single(check, "failed", "boom\n"))
    older = report.to_dict()
    [result] = older["results"]
    del result["failed_tests"]
    result["junit"] = {"tests": 2, "failures": 1, "errors": 0, "skipped": 0, "failed": [
        {"name": "test_b", "classname": "t", "file": "t.py", "line": 3, "message": "boom",
         "details": ""}]}
    again = EvidenceReport.from_dict(older)
    assert [c.name for c in again.results[0].failed_tests] == ["test_b"]
    assert "- `t.test_b` at `t.py:3`" in render_markdown(again)
