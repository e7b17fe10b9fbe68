"""JUnit XML test reports reduced to a summary: counts and the failing test cases.

Pure. The failing location is taken from the failure text when it names one (pytest's
`path.py:12: AssertionError`, a Python traceback's `File "path.py", line 12`), because that is
the line a reviewer needs, not the line where the test function starts.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, ClassVar

# Failure text kept per test case; the full output is in the check's log.
DETAILS_LIMIT = 4000

_PYTEST_LOCATION = re.compile(r"^([^\s:]+\.\w+):(\d+): ", re.MULTILINE)
_TRACEBACK_LOCATION = re.compile(r'File "([^"]+)", line (\d+)')


class JUnitError(Exception):
    """A JUnit report is not well-formed XML; the check's log still holds the evidence."""


@dataclass(frozen=True)
class FailedTest:
    """One failing or erroring test case, with the file and line of the failure when known."""

    name: str
    classname: str
    file: str | None
    line: int | None
    message: str
    details: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "classname": self.classname,
            "file": self.file,
            "line": self.line,
            "message": self.message,
            "details": self.details,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FailedTest:
        return cls(**data)


@dataclass(frozen=True)
class TestSummary:
    """Counts of a test run and its failing cases."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    tests: int
    failures: int
    errors: int
    skipped: int
    failed: tuple[FailedTest, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "tests": self.tests,
            "failures": self.failures,
            "errors": self.errors,
            "skipped": self.skipped,
            "failed": [case.to_dict() for case in self.failed],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestSummary:
        return cls(
            tests=data["tests"],
            failures=data["failures"],
            errors=data["errors"],
            skipped=data["skipped"],
            failed=tuple(FailedTest.from_dict(case) for case in data["failed"]),
        )


def parse_junit(xml_text: str) -> TestSummary:
    """Summarize a JUnit XML report (one `<testsuite>` or a `<testsuites>` of them).

    Counts come from the test cases themselves, not the suite attributes, which producers
    fill in inconsistently. Raises JUnitError when the text is not well-formed XML.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise JUnitError(f"the JUnit report is not well-formed XML: {exc}") from exc
    tests = failures = errors = skipped = 0
    failed: list[FailedTest] = []
    for case in root.iter("testcase"):
        tests += 1
        failure = case.find("failure")
        error = case.find("error")
        if case.find("skipped") is not None:
            skipped += 1
        problem = failure if failure is not None else error
        if problem is None:
            continue
        if failure is not None:
            failures += 1
        else:
            errors += 1
        failed.append(_failed_test(case, problem))
    return TestSummary(tests, failures, errors, skipped, tuple(failed))


def _failed_test(case: ET.Element, problem: ET.Element) -> FailedTest:
    details = (problem.text or "").strip()
    file = case.get("file")
    line: int | None = None
    locations = _PYTEST_LOCATION.findall(details) or _TRACEBACK_LOCATION.findall(details)
    if locations:
        # Prefer a frame in the test's own file: the assertion a reviewer looks at.
        own = [loc for loc in locations if file and loc[0] == file]
        file, line_text = (own or locations)[-1]
        line = int(line_text)
    elif case.get("line", "").isdigit():
        line = int(case.get("line", "0")) + 1  # pytest writes the 0-based definition line
    return FailedTest(
        name=case.get("name", ""),
        classname=case.get("classname", ""),
        file=file,
        line=line,
        message=problem.get("message", "").strip() or problem.tag,
        details=details[-DETAILS_LIMIT:],
    )
