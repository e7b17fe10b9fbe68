"""An install root's setup runs once for every member that uses it, before their checks."""

from __future__ import annotations

from pathlib import Path

from verification.execute import execute_plan
from verification.plan import Plan, PlannedCheck, PlannedWorkspace


def members_plan(install: str) -> Plan:
    checks = tuple(
        PlannedCheck("test", member, "test", "grep -c installed ../../install.log", 30, None)
        for member in ("packages/a", "packages/b")
    )
    workspaces = (
        PlannedWorkspace(".", (install,)),
        PlannedWorkspace("packages/a", (), uses=(".",)),
        PlannedWorkspace("packages/b", (), uses=(".",)),
    )
    return Plan(workspaces, checks, concurrency=4)


def test_the_install_root_setup_runs_once_before_every_member(tmp_path: Path) -> None:
    for member in ("a", "b"):
        (tmp_path / "packages" / member).mkdir(parents=True)
    plan = members_plan("sleep 0.2; echo installed >> install.log")
    results = execute_plan(plan, tmp_path)
    assert [(r.key, r.status, r.log.strip()) for r in results] == [
        ("packages/a:test", "passed", "1"),
        ("packages/b:test", "passed", "1"),
    ]
    assert (tmp_path / "install.log").read_text() == "installed\n"
    assert Plan.from_json(plan.to_json()) == plan
    assert '"uses":["."]' in plan.to_json()


def test_a_failed_install_is_an_error_for_every_member_and_runs_no_check(tmp_path: Path) -> None:
    for member in ("a", "b"):
        (tmp_path / "packages" / member).mkdir(parents=True)
    results = execute_plan(members_plan("echo no lockfile >&2; exit 3"), tmp_path)
    assert [(r.key, r.status, r.exit_code) for r in results] == [
        ("packages/a:test", "error", 3),
        ("packages/b:test", "error", 3),
    ]
    assert "setup of workspace '.' did not pass" in results[0].log
    assert "no lockfile" in results[1].log
