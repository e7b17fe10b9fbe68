"""Hostile agents against a repository with a submodule: Ratchet's git never looks inside.

The target repository records a submodule (a gitlink) at vendor/lib. The agent
(tests/fixtures/hostile_agent.py) fills that folder with a nested repository whose filter
would run as the runner, plants FIFOs where git reads a HEAD, writes a fix git never records,
or leaves trees too big, too many or too deep for git. Asserted from outside: the run reaches
a stopped state naming the path and the setting, no marker file, no daemon, nothing hashed,
nothing published as verified that fails its own test.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.e2e.harness import drive_to_done
from tests.e2e.test_hostile_agents import Attack
from tests.gitrepo import add_gitlink, git

SUBMODULE = "vendor/lib"


def hostile(tmp_path, attacks: str) -> Attack:
    attack = Attack(tmp_path, attacks)
    add_gitlink(attack.ratchet.repo, SUBMODULE)
    return attack


def stopped(attack: Attack, run_id: str) -> dict:
    """The run's status: it must have stopped for a human, with one violation recorded."""
    status = attack.ratchet.status(run_id)
    assert status["state"] == "needs_human", status
    events = attack.ratchet.events(run_id)
    assert [e["type"] for e in events].count("POLICY_VIOLATION") == 1
    return status


def assert_no_filter_ran(attack: Attack) -> None:
    """Nothing the nested repository configured ran: no marker now, no daemon writing later."""
    attack.assert_nothing_escaped()
    time.sleep(2.0)  # the daemon would have written 1.5 s after the filter ran
    assert not (attack.report / "filter-daemon").exists(), "a daemon the filter left survived"
    assert not attack.mark.exists()


def test_a_nested_repository_and_fifo_heads_in_research_stop_the_run_unread(tmp_path):
    attack = hostile(tmp_path, "research:submodule_filter,research:fifo_head")

    result = attack.ratchet.create()

    assert result.returncode == 1, result.stderr  # it ended: no git call blocked on a FIFO
    run_id = attack.ratchet.run_id()
    status = stopped(attack, run_id)
    assert f"{SUBMODULE}/.git" in status["reason"] and "nested/.git" in status["reason"]
    attack.seen("submodule_filter")
    attack.seen("fifo_head")
    assert_no_filter_ran(attack)
    worktree = next((attack.ratchet.home / "work" / "runs" / run_id).iterdir())
    assert list((worktree / SUBMODULE).iterdir()) == []  # removed unread
    assert not (worktree / "nested").exists()


@pytest.mark.slow
def test_a_nested_repository_left_by_implement_never_runs_its_filter(tmp_path):
    attack = hostile(tmp_path, "implement:submodule_filter")
    assert attack.ratchet.create().returncode == 0
    run_id = attack.ratchet.run_id()

    result = attack.ratchet.approve(run_id)

    assert result.returncode == 1
    status = stopped(attack, run_id)
    assert f"{SUBMODULE}/.git" in status["reason"]
    attack.seen("submodule_filter")
    assert_no_filter_ran(attack)


@pytest.mark.slow
def test_a_fix_under_a_submodule_path_never_ends_done_and_verified(tmp_path):
    attack = hostile(tmp_path, "repair:submodule_fix")
    attack.ratchet.env["AGENT_NO_FIX"] = "1"  # the only fix is the one git never records
    assert attack.ratchet.create().returncode == 0
    run_id = attack.ratchet.run_id()

    result = attack.ratchet.approve(run_id)

    assert result.returncode == 1
    status = stopped(attack, run_id)
    assert f"{SUBMODULE}/calc_impl.py" in status["reason"]
    assert "submodule" in status["reason"]
    attack.seen("submodule_fix")
    types = [e["type"] for e in attack.ratchet.events(run_id)]
    assert "VERIFICATION_PASSED" not in types
    published = git(attack.ratchet.repo, "ls-tree", "-r", "--name-only", f"ratchet/{run_id}")
    assert "calc_impl.py" not in published


@pytest.mark.slow
@pytest.mark.parametrize(("attack_name", "path", "kind", "setting"), [
    ("huge_sparse", "data.bin", "too_large", "limits.max_file_bytes"),
    ("many_files", "gen", "too_many_changes", "limits.max_changed_files"),
    ("deep_tree", "d/d/d", "too_deep", "256 levels"),
])
def test_trees_too_big_too_many_or_too_deep_stop_the_run_unhashed(
        tmp_path, attack_name, path, kind, setting):
    attack = hostile(tmp_path, f"implement:{attack_name}")
    assert attack.ratchet.create().returncode == 0
    run_id = attack.ratchet.run_id()

    result = attack.ratchet.approve(run_id)

    assert result.returncode == 1
    status = stopped(attack, run_id)
    assert path in status["reason"] and setting in status["reason"]
    attack.seen(attack_name)
    violation = next(e for e in attack.ratchet.events(run_id) if e["type"] == "STEP_FAILED")
    assert {f["kind"] for f in violation["data"]["evidence"]["findings"]} == {kind}
    # Nothing of it was hashed: no object in the run's git dirs or the mirror is that big.
    work = attack.ratchet.home / "work"
    for gitdir in [*work.glob("gitdirs/*/*.git"), *work.glob("mirrors/*.git")]:
        sizes = subprocess.run(
            ["git", f"--git-dir={gitdir}", "cat-file", "--batch-all-objects",
             "--batch-check=%(objectsize)"], capture_output=True, text=True, check=True)
        assert max(map(int, sizes.stdout.split() or ["0"])) < 1024 * 1024
    worktree = next((work / "runs" / run_id).iterdir())
    assert not (worktree / path.split("/")[0]).exists()  # removed unread by the rebuild


@pytest.mark.slow
def test_a_check_that_plants_a_nested_repository_never_makes_ratchets_git_run_it(tmp_path):
    """What a check leaves (a filtered repository in the submodule's folder, a FIFO HEAD) is
    removed unread after verification: the run goes on, and no git of Ratchet's looked."""
    attack = hostile(tmp_path, "implement:check_plants")

    run_id, _ = drive_to_done(attack.ratchet)

    assert attack.ratchet.status(run_id)["state"] == "done"
    attack.seen("check_plants")
    folder = attack.ratchet.export(run_id, tmp_path / "export")
    logs = "".join(p.read_text() for p in (folder / "verification").glob("*.log"))
    assert "CHECK-PLANTED" in logs  # the check did plant them, each time it ran
    assert_no_filter_ran(attack)
    published = git(attack.ratchet.repo, "ls-tree", "-r", "--name-only", f"ratchet/{run_id}")
    assert "test_plant.py" in published and "nested" not in published
