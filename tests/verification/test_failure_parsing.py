"""Failing tests named from the runners' own output (``verification/test_failures.py``).

The output is real: each test runs the real runner on a tiny failing project (pytest and
unittest with this interpreter, ``cargo test``, jest and vitest installed from npm into the
shared cache as the agent CLIs are, or skipped saying why when npm does not answer), with the
colour codes and interleaved output those tools print. go is not installed here: its cases
are output captured in go's documented format (``go help testflag``, ``testing`` package
docs), not generated.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.clis import Cli, cache
from tests.agents.install import install, reachable
from verification.capture import LogCapture
from verification.junit import FailedTest
from verification.test_failures import MAX_FAILED, MESSAGE_LIMIT, NAME_LIMIT, parse_test_failures

JEST = Cli("jest", "npm", "jest", "30.5.2", "jest")
VITEST = Cli("vitest", "npm", "vitest", "4.1.12", "vitest")  # 5.x needs node 22; here is 20

PY_TESTS = """\
import sys
import unittest


def add(a, b):
    return a - b


def test_add():
    assert add(2, 3) == 5


def test_passes():
    assert add(2, 0) == 2


def test_raises():
    print("noise on stdout")
    print("noise on stderr", file=sys.stderr)
    raise RuntimeError("boom")


class TestSums(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(add(1, 1), 2, "sums differ")

    def test_key(self):
        {}["missing"]
"""
JS_TESTS = """\
const add = (a, b) => a - b;
describe('add', () => {
  test('adds two numbers', () => {
    expect(add(2, 3)).toBe(5);
  });
  test('adds zero', () => {
    expect(add(2, 0)).toBe(2);
  });
  test('throws', () => {
    console.log('noise from the test');
    throw new Error('boom');
  });
});
"""
RUST_LIB = """\
pub fn add(a: i32, b: i32) -> i32 { a - b }

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn adds() { assert_eq!(add(2, 3), 5); }
    #[test]
    fn adds_zero() { assert_eq!(add(2, 0), 2); }
    #[test]
    fn panics() { println!("noise from the test"); panic!("boom: {}", 42); }
}
"""
# go test ./... (go is not installed here): the format of the testing package, as go 1.22
# prints it for a failing test, a failing subtest, a panic, a passing package and a package
# that does not build.
GO_OUTPUT = """\
--- FAIL: TestAdd (0.00s)
    calc_test.go:12: add(2, 3) = -1; want 5
--- FAIL: TestTable (0.00s)
    --- FAIL: TestTable/negative (0.00s)
        calc_test.go:20: got -1, want 1
--- FAIL: TestPanic (0.00s)
panic: boom [recovered]
\tpanic: boom

goroutine 7 [running]:
testing.tRunner.func1.2({0x4f7a40, 0x56a8f0})
\t/usr/local/go/src/testing/testing.go:1631 +0x24a
FAIL
FAIL\texample.com/calc\t0.004s
ok  \texample.com/other\t0.002s
# example.com/broken
broken/broken.go:3:9: undefined: missing
FAIL\texample.com/broken [build failed]
FAIL
"""
# go test -v: a test's log lines come before its --- FAIL line.
GO_VERBOSE = """\
=== RUN   TestAdd
    calc_test.go:12: add(2, 3) = -1; want 5
--- FAIL: TestAdd (0.00s)
=== RUN   TestSub
--- PASS: TestSub (0.00s)
FAIL
FAIL\texample.com/calc\t0.003s
FAIL
"""


def run(argv: list[str], cwd: Path, **env: str) -> str:
    """What ``argv`` printed, stdout and stderr in one stream as a check's log holds them."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTEST_", "CI", "FORCE_COLOR", "NO_COLOR", "RUST_"))}
    done = subprocess.run(argv, cwd=cwd, env={**base, **env}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert done.returncode != 0, done.stdout  # the project fails: that is the point
    return done.stdout


def without_blocks(log: str, first_block: str) -> str:
    """``log`` as a check's capture keeps it when the middle, from ``first_block`` on, was
    left out: the head and the last lines."""
    data = log.encode()
    capture = LogCapture(head_limit=data.index(first_block.encode()), tail_limit=200)
    capture.write(data)
    assert capture.omitted > 0
    return capture.text()


def shown(found: tuple[FailedTest, ...]) -> list[tuple[str, str | None, int | None]]:
    return [(t.name, t.file, t.line) for t in found]


def first_lines(found: tuple[FailedTest, ...]) -> list[str]:
    return [t.message.splitlines()[0] if t.message else "" for t in found]


@pytest.fixture
def python_project(tmp_path: Path) -> Path:
    (tmp_path / "test_calc.py").write_text(PY_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return tmp_path


def pytest_output(project: Path, *flags: str) -> str:
    return run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *flags, "test_calc.py"],
               project, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")


PYTEST_FOUND = [
    ("test_calc.py::test_add", "test_calc.py", 10),
    ("test_calc.py::test_raises", "test_calc.py", 20),
    ("test_calc.py::TestSums::test_equal", "test_calc.py", 25),
    ("test_calc.py::TestSums::test_key", "test_calc.py", 28),
]


@pytest.mark.parametrize("flags", [
    ("-q",),
    ("--color=yes",),  # colour codes in every line
    ("-v", "-s", "--tb=short"),  # progress and the tests' own prints interleaved
    ("-rA",),
], ids=["quiet", "colour", "verbose-interleaved", "rA"])
def test_pytest_names_each_failure_from_its_summary_and_sections(python_project: Path,
                                                                  flags: tuple[str, ...]) -> None:
    found = parse_test_failures(pytest_output(python_project, *flags))
    assert shown(found) == PYTEST_FOUND
    assert first_lines(found) == ["assert -1 == 5", "RuntimeError: boom",
                                  "AssertionError: 0 != 2 : sums differ", "KeyError: 'missing'"]
    assert "where -1 = add(2, 3)" in found[0].message  # the assertion's whole explanation


def test_pytest_without_a_short_summary_is_read_from_its_sections(python_project: Path) -> None:
    found = parse_test_failures(pytest_output(python_project, "-rN", "--color=yes"))
    assert shown(found) == [("test_add", "test_calc.py", 10), ("test_raises", "test_calc.py", 20),
                            ("TestSums.test_equal", "test_calc.py", 25),
                            ("TestSums.test_key", "test_calc.py", 28)]
    assert first_lines(found)[0] == "assert -1 == 5"


def test_pytest_with_no_traceback_keeps_the_summarys_message(python_project: Path) -> None:
    found = parse_test_failures(pytest_output(python_project, "--tb=no", "-rf"))
    assert [t.name for t in found] == [name for name, _, _ in PYTEST_FOUND]
    assert first_lines(found)[0] == "assert -1 == 5"


@pytest.mark.parametrize("verbosity", ["-q", "-v"])
def test_unittest_names_failures_and_errors_at_the_tests_line(python_project: Path,
                                                               verbosity: str) -> None:
    log = run([sys.executable, "-m", "unittest", verbosity, "test_calc"], python_project)
    found = parse_test_failures(log, root=str(python_project))
    assert sorted(shown(found)) == [("test_calc.TestSums.test_equal", "test_calc.py", 25),
                                    ("test_calc.TestSums.test_key", "test_calc.py", 28)]
    messages = {t.name: t.message for t in found}
    assert messages["test_calc.TestSums.test_equal"] == "AssertionError: 0 != 2 : sums differ"
    assert messages["test_calc.TestSums.test_key"] == "KeyError: 'missing'"


def test_a_module_unittest_cannot_import_is_named(python_project: Path) -> None:
    (python_project / "test_broken.py").write_text("import not_a_module\n")
    log = run([sys.executable, "-m", "unittest", "test_broken"], python_project)
    [found] = parse_test_failures(log, root=str(python_project))
    assert (found.name, found.file, found.line) == ("test_broken", "test_broken.py", 1)
    assert "ModuleNotFoundError" in found.message


@pytest.fixture(scope="module")
def rust_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    root = tmp_path_factory.mktemp("rust")
    (root / "Cargo.toml").write_text(
        '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "src").mkdir()
    (root / "src/lib.rs").write_text(RUST_LIB)
    (root / "tests").mkdir()
    (root / "tests/integration.rs").write_text(
        '#[test]\nfn integration_adds() { assert_eq!(calc::add(1, 2), 3, "integration"); }\n')
    return root


CARGO_FOUND = [("tests::adds", "src/lib.rs", 7), ("tests::panics", "src/lib.rs", 11),
               ("integration_adds", "tests/integration.rs", 2)]


@pytest.mark.parametrize("extra", [
    {"CARGO_TERM_COLOR": "always"},
    {"CARGO_TERM_COLOR": "always", "RUST_BACKTRACE": "1"},  # a backtrace after each panic
], ids=["colour", "backtrace"])
def test_cargo_test_names_each_panic_with_its_location_and_message(rust_project: Path,
                                                                   extra: dict[str, str]) -> None:
    log = run(["cargo", "test", "--offline", "--no-fail-fast"], rust_project, **extra)
    found = parse_test_failures(log)
    assert sorted(shown(found)) == sorted(CARGO_FOUND)
    messages = {t.name: t.message for t in found}
    assert messages["tests::adds"] == "assertion `left == right` failed\n  left: -1\n right: 5"
    assert messages["tests::panics"] == "boom: 42"
    assert messages["integration_adds"].startswith("assertion `left == right` failed: integration")


def test_cargo_test_with_nocapture_reads_the_panics_where_the_threads_said_them(
        rust_project: Path) -> None:
    log = run(["cargo", "test", "--offline", "--no-fail-fast", "-q", "--", "--nocapture",
               "--test-threads=1"], rust_project)
    assert "---- tests::adds stdout ----" not in log  # no captured blocks: interleaved
    found = parse_test_failures(log)
    assert sorted(shown(found)) == sorted(CARGO_FOUND)
    assert {t.name: t.message for t in found}["tests::panics"] == "boom: 42"


def node_tool(cli: Cli) -> Path:
    """The pinned runner's program, installed into the shared cache once (one installer at a
    time across test workers); a skip saying why when npm does not answer."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    cache().mkdir(parents=True, exist_ok=True)
    with open(cache() / f".{cli.preset}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cli.installed:
            if not reachable(cli):
                pytest.skip(f"npm does not answer for {cli.package} {cli.version}")
            install(cli)
    return cli.bin / cli.program


@pytest.fixture
def js_project(tmp_path: Path) -> Path:
    (tmp_path / "package.json").write_text('{"name": "calc", "version": "1.0.0"}\n')
    return tmp_path


@pytest.mark.parametrize("extra", [{}, {"FORCE_COLOR": "1"}], ids=["plain", "colour"])
def test_jest_names_each_failure_by_its_blocks(js_project: Path, extra: dict[str, str]) -> None:
    jest = node_tool(JEST)
    (js_project / "calc.test.js").write_text(JS_TESTS)
    (js_project / "other.test.js").write_text("test('also fails', () => { expect(1).toBe(2); });\n")
    log = run([str(jest), "--ci"], js_project, **extra)
    found = parse_test_failures(log)
    assert sorted(shown(found)) == [
        ("calc.test.js › add › adds two numbers", "calc.test.js", 4),
        ("calc.test.js › add › throws", "calc.test.js", 11),
        ("other.test.js › also fails", "other.test.js", 1),
    ]  # named once, though the closing summary of two files repeats every block
    # One file's run prints its tree: a long log's capture, which keeps the head and the tail,
    # may leave the blocks out, and the ✕ lines still name the tests.
    one = run([str(jest), "--ci", "calc.test.js"], js_project, **extra)
    assert sorted(t.name for t in parse_test_failures(without_blocks(one, "●"))) == sorted(
        t.name for t in found if t.file == "calc.test.js")
    messages = {t.name: t.message for t in found}
    assert messages["calc.test.js › add › adds two numbers"] == (
        "expect(received).toBe(expected) // Object.is equality\nExpected: 5\nReceived: -1")
    assert messages["calc.test.js › add › throws"] == "boom"


@pytest.mark.parametrize("extra", [{"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}],
                         ids=["plain", "colour"])
def test_vitest_names_each_failure_by_its_blocks(js_project: Path, extra: dict[str, str]) -> None:
    vitest = node_tool(VITEST)
    (js_project / "calc.spec.js").write_text(JS_TESTS)
    log = run([str(vitest), "run", "--globals"], js_project, **extra)
    found = parse_test_failures(log)
    assert shown(found) == [("calc.spec.js > add > adds two numbers", "calc.spec.js", 4),
                            ("calc.spec.js > add > throws", "calc.spec.js", 11)]
    # Without the blocks, the file's tree names the tests (without their suites: it shows none).
    assert [t.name for t in parse_test_failures(without_blocks(log, "Failed Tests"))] == [
        "calc.spec.js > adds two numbers", "calc.spec.js > throws"]
    assert first_lines(found) == ["AssertionError: expected -1 to be 5 // Object.is equality",
                                  "Error: boom"]


def test_go_test_names_tests_subtests_panics_and_packages_that_do_not_build() -> None:
    found = parse_test_failures(GO_OUTPUT)
    assert shown(found) == [("TestAdd (example.com/calc)", "calc_test.go", 12),
                            ("TestTable/negative (example.com/calc)", "calc_test.go", 20),
                            ("TestPanic (example.com/calc)", None, None),
                            ("example.com/broken", None, None)]
    assert [t.message for t in found] == ["add(2, 3) = -1; want 5", "got -1, want 1",
                                          "panic: boom [recovered]", "build failed"]
    [verbose] = parse_test_failures(GO_VERBOSE)
    assert (verbose.name, verbose.file, verbose.line, verbose.message) == (
        "TestAdd (example.com/calc)", "calc_test.go", 12, "add(2, 3) = -1; want 5")


def test_names_messages_and_the_count_are_bounded(tmp_path: Path) -> None:
    long_name = "test_" + "x" * 400
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_calc.py").write_text(
        "import pytest\n\n"
        f"@pytest.mark.parametrize('n', range({MAX_FAILED + 20}))\n"
        "def test_many(n):\n    assert n < 0\n\n"
        f"def {long_name}():\n    assert 'y' * 5000 == ''\n")
    found = parse_test_failures(pytest_output(tmp_path, "-q"))
    assert len(found) == MAX_FAILED
    assert all(len(t.name) <= NAME_LIMIT and len(t.message) <= MESSAGE_LIMIT for t in found)
    assert found[0].name == "test_calc.py::test_many[0]" and found[0].line == 5


def test_a_log_without_a_runners_failures_names_none() -> None:
    assert parse_test_failures("") == ()
    assert parse_test_failures("Ran 3 tests in 0.1s\n\nOK\n") == ()
    assert parse_test_failures("FAILED (failures=1)\nerror: build failed\n") == ()
