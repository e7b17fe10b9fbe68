"""Execution with real processes: parallelism, timeouts, setup, reuse, log capture."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from verify_helpers import Files, python_workspace

from verification.config import VerifyConfig
from verification.evidence import build_bundle
from verification.execute import CheckResult, check_environment, execute_plan
from verification.plan import Plan, PlannedCheck, PlannedWorkspace, build_plan
from verification.tree import GitTree


def check(key_id: str, command: str, *, workspace: str = ".", timeout: float = 30) -> PlannedCheck:
    return PlannedCheck(key_id, workspace, "custom", command, timeout, None)


def plan_of(*checks: PlannedCheck, setups: dict[str, tuple[str, ...]] | None = None) -> Plan:
    setups = setups or {}
    folders = sorted({c.workspace for c in checks})
    workspaces = tuple(PlannedWorkspace(f, setups.get(f, ())) for f in folders)
    return Plan(workspaces, checks, concurrency=4)


def process_gone(pid: int, within: float = 3.0) -> bool:
    """True once `pid` no longer runs (absent, or a zombie awaiting its reaper)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in {"Z", "X"}:
            return True
        time.sleep(0.05)
    return False


def meet(me: str, other: str) -> str:
    """A check that says it started, then passes only if ``other`` starts while it waits (both
    run at once), then sleeps a little; alone it gives up after ``RENDEZVOUS`` seconds."""
    return (f"touch ../{me}.up; i=0; until [ -e ../{other}.up ]; do i=$((i+1)); "
            f"[ $i -gt {RENDEZVOUS * 20} ] && exit 1; sleep 0.05; done; sleep 0.2")


RENDEZVOUS = 60  # seconds a check waits for its partner: reached only when a test fails


def test_two_checks_in_two_workspaces_run_in_parallel(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plan = plan_of(check("meet", meet("a", "b"), workspace="a"),
                   check("meet", meet("b", "a"), workspace="b"))
    results = execute_plan(plan, tmp_path)
    # Each passed only by seeing the other start while it waited: they ran at the same time.
    assert [r.status for r in results] == ["passed", "passed"]
    assert all(r.duration_s >= 0.2 for r in results)  # measured around the whole check


def test_failing_test_gives_failed_result_and_annotation_at_its_line(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(python_workspace("pkg", "pkg", failing=True))
    plan = build_plan(["pkg/app_pkg.py"], GitTree.discover(root), VerifyConfig(concurrency=2))
    [result] = execute_plan(plan, root)
    assert (result.key, result.status, result.exit_code) == ("pkg:pytest", "failed", 1)
    assert result.junit is not None
    assert (result.junit.tests, result.junit.failures) == (1, 1)
    assert result.junit.failed[0].line == 5
    annotations = build_bundle(plan, [result]).annotations()
    assert ("pkg/tests/test_pkg.py", 5, "failure") in {
        (a.path, a.start_line, a.level) for a in annotations
    }
    assert not (root / "pkg" / ".pytest_cache").exists()


def test_hanging_check_is_killed_with_its_child_at_the_timeout(tmp_path: Path) -> None:
    plan = plan_of(check("hang", "sleep 60 & echo $! > child.pid; wait", timeout=1))
    [result] = execute_plan(plan, tmp_path)
    assert result.status == "timed_out"
    assert "timed out after 1s" in result.log
    assert process_gone(int((tmp_path / "child.pid").read_text()))


def test_check_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    command = "trap '' TERM; sleep 60 & echo $! > child.pid; wait"
    [result] = execute_plan(plan_of(check("stubborn", command, timeout=0.5)), tmp_path)
    assert result.status == "timed_out"
    assert result.exit_code == -signal.SIGKILL  # it ignored the SIGTERM; the SIGKILL ended it
    assert process_gone(int((tmp_path / "child.pid").read_text()))


def test_statuses_for_pass_fail_missing_command_and_missing_folder(tmp_path: Path) -> None:
    plan = plan_of(
        check("ok", "echo fine"),
        check("bad", "echo broken; exit 3"),
        check("missing", "no-such-tool-ratchet --version"),
        check("nowhere", "true", workspace="absent"),
    )
    by_id = {r.id: r for r in execute_plan(plan, tmp_path)}
    assert (by_id["ok"].status, by_id["ok"].exit_code, by_id["ok"].log) == ("passed", 0, "fine\n")
    assert (by_id["bad"].status, by_id["bad"].exit_code) == ("failed", 3)
    assert by_id["missing"].status == "error"
    assert "is it installed" in by_id["missing"].log
    assert (by_id["nowhere"].status, by_id["nowhere"].exit_code) == ("error", None)
    assert "could not start" in by_id["nowhere"].log


def test_setup_runs_once_per_workspace_before_its_checks(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "broken").mkdir()
    plan = plan_of(
        check("one", "cat ready", workspace="w"),
        check("two", "cat ready", workspace="w"),
        check("three", "true", workspace="broken"),
        setups={"w": ("echo run >> setup.count", "echo ok > ready"), "broken": ("exit 4",)},
    )
    results = execute_plan(plan, tmp_path)
    assert [r.status for r in results] == ["passed", "passed", "error"]
    assert (tmp_path / "w" / "setup.count").read_text() == "run\n"
    broken = results[2]
    assert (broken.key, broken.exit_code) == ("broken:three", 4)
    assert "setup of workspace 'broken' did not pass" in broken.log


def test_results_reported_on_the_caller_thread_in_completion_order(tmp_path: Path) -> None:
    # "slow" ends only once "fast" was reported (or gives up after RENDEZVOUS seconds and fails).
    slow = (f"i=0; until [ -e fast.reported ]; do i=$((i+1)); [ $i -gt {RENDEZVOUS * 20} ] "
            "&& exit 1; sleep 0.05; done")
    plan = plan_of(check("slow", slow), check("fast", "true"))
    seen: list[tuple[str, str]] = []
    caller = threading.current_thread().name

    def on_result(result: CheckResult) -> None:
        seen.append((result.id, threading.current_thread().name))
        (tmp_path / f"{result.id}.reported").touch()

    results = execute_plan(plan, tmp_path, on_result=on_result)
    assert seen == [("fast", caller), ("slow", caller)]
    assert [r.id for r in results] == ["slow", "fast"]
    assert [r.status for r in results] == ["passed", "passed"]


def test_reused_result_skips_the_check(tmp_path: Path) -> None:
    plan = plan_of(check("cached", "touch ran-cached"), check("fresh", "touch ran-fresh"))
    [first, _] = execute_plan(plan, tmp_path)
    (tmp_path / "ran-cached").unlink()

    def reuse(planned: PlannedCheck) -> CheckResult | None:
        return first if planned.key == first.key else None

    cached, fresh = execute_plan(plan, tmp_path, reuse=reuse)
    assert not (tmp_path / "ran-cached").exists()
    assert (cached.reused, cached.status, cached.log_sha256) == (True, "passed", first.log_sha256)
    assert (fresh.reused, fresh.status) == (False, "passed")
    assert CheckResult.from_dict(cached.to_dict()) == cached


def test_large_output_is_capped_head_and_tail_and_hashed_in_full(tmp_path: Path) -> None:
    # 10 MB of numbered lines, generated by the check itself.
    script = tmp_path / "emit.py"
    script.write_text(
        "import sys\nfor i in range(1_000_000):\n    sys.stdout.write(f'line {i:09d}\\n')\n"
    )
    expected = "".join(f"line {i:09d}\n" for i in range(1_000_000)).encode()
    [result] = execute_plan(plan_of(check("loud", f"python {script}")), tmp_path)
    assert result.status == "passed"
    assert result.log_size == len(expected)
    assert result.log_sha256 == hashlib.sha256(expected).hexdigest()
    assert len(result.log.encode()) < 300_000
    assert result.log.startswith("line 000000000\n")
    assert result.log.endswith("line 000999999\n")
    assert "bytes omitted ..." in result.log
    assert result.log_tail(2) == "line 000999998\nline 000999999"


def test_a_lower_log_cap_keeps_head_and_tail_within_it_and_says_what_was_dropped(
    tmp_path: Path,
) -> None:
    cap = 16 * 1024
    script = tmp_path / "emit.py"
    script.write_text(
        "import sys\nfor i in range(20_000):\n    sys.stdout.write(f'line {i:09d}\\n')\n"
    )
    [result] = execute_plan(plan_of(check("loud", f"python {script}")), tmp_path,
                            max_log_bytes=cap)
    kept = result.log.encode()
    assert len(kept) <= cap
    assert result.log_size == 20_000 * 15
    assert result.log.startswith("line 000000000\n") and result.log.endswith("line 000019999\n")
    assert f"... {result.log_omitted} bytes omitted ..." in result.log
    assert result.log_size - cap < result.log_omitted < result.log_size - cap // 2
    # Both cuts fall between lines: every line kept is whole.
    head, tail = result.log.split(f"\n... {result.log_omitted} bytes omitted ...\n")
    assert all(re.fullmatch(r"line \d{9}", line) for line in (head + tail).splitlines())
    assert CheckResult.from_dict(result.to_dict()) == result


def test_redact_applies_to_the_log_and_env_replaces_the_environment(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "TOKEN": "s3cret"}
    [result] = execute_plan(
        plan_of(check("leak", 'echo "token=$TOKEN user=${USER:-unset}"')),
        tmp_path,
        env=env,
        redact=lambda text: text.replace("s3cret", "***"),
    )
    assert result.log == "token=*** user=unset\n"
    assert result.log_sha256 == hashlib.sha256(b"token=s3cret user=unset\n").hexdigest()


def test_checks_get_a_fresh_empty_home_and_no_variable_nobody_allowed(tmp_path: Path) -> None:
    host = {"PATH": os.environ["PATH"], "LC_ALL": "C", "GH_TOKEN": "gh-secret",
            "NPM_TOKEN": "npm-secret", "HOME": str(tmp_path)}
    (tmp_path / ".npmrc").write_text("//registry/:_authToken=host")
    env, notes = check_environment(host, ["NPM_TOKEN", "GH_TOKEN"], {"NPM_TOKEN", "OTHER"})
    assert env == {"PATH": os.environ["PATH"], "LC_ALL": "C", "NPM_TOKEN": "npm-secret"}

    [result] = execute_plan(
        plan_of(check("env", 'echo "gh=$GH_TOKEN npm=$NPM_TOKEN home=$HOME"; ls -A "$HOME"')),
        tmp_path, env=env, notes=notes)

    first, second = result.log.splitlines()
    assert first == ("ratchet: the repository asks for GH_TOKEN in verify.env, but the operator"
                     " does not allow it (RATCHET_CHECK_ENV), so the checks run without it")
    assert second.startswith("gh= npm=npm-secret home=/")
    assert second.split("home=")[1] != str(tmp_path)  # a folder of its own, empty
    assert not Path(second.split("home=")[1]).exists()  # removed after the plan



def test_a_pull_request_head_gets_no_variable_whatever_the_operator_allows() -> None:
    host = {"PATH": "/usr/bin", "NPM_TOKEN": "npm-secret", "GH_TOKEN": "gh-secret"}
    env, notes = check_environment(host, ["NPM_TOKEN"], {"NPM_TOKEN"}, untrusted=True)
    assert env == {"PATH": "/usr/bin"}
    assert notes == ("the repository asks for NPM_TOKEN in verify.env, but a pull request's"
                     " head is verified without the repository's secrets, so the checks run"
                     " without it",)

def test_declared_junit_report_is_read(tmp_path: Path) -> None:
    xml = (
        '<testsuite><testcase classname="t" name="a"/>'
        '<testcase classname="t" name="b"><failure message="boom">'
        "src/t.py:12: AssertionError</failure></testcase></testsuite>"
    )
    (tmp_path / "report.xml.in").write_text(xml)
    planned = PlannedCheck("unit", ".", "test", "cp report.xml.in out.xml; exit 1", 30, "out.xml")
    [result] = execute_plan(plan_of(planned), tmp_path)
    assert result.junit is not None
    assert (result.junit.tests, result.junit.failures) == (2, 1)
    assert (result.junit.failed[0].file, result.junit.failed[0].line) == ("src/t.py", 12)



def test_a_junit_report_is_redacted_as_the_log_is(tmp_path: Path) -> None:
    xml = ('<testsuite><testcase classname="t" name="leak s3cret"><failure message="s3cret">'
           "t.py:3: s3cret</failure></testcase></testsuite>")
    (tmp_path / "report.xml.in").write_text(xml)
    planned = PlannedCheck("unit", ".", "test", "cp report.xml.in out.xml; exit 1", 30, "out.xml")
    [result] = execute_plan(plan_of(planned), tmp_path,
                            redact=lambda text: text.replace("s3cret", "***"))
    assert result.junit is not None
    assert "s3cret" not in json.dumps(result.to_dict())
    assert result.junit.failed[0].message == "***"

def test_verification_imports_nothing_from_runner_app_or_github() -> None:
    code = (
        "import pkgutil, sys, importlib, verification\n"
        "for m in pkgutil.iter_modules(verification.__path__):\n"
        "    importlib.import_module('verification.' + m.name)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'runner', 'app', 'github'}))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
