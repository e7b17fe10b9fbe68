"""A verify step taken up again on the same tree reuses the checks that already passed there.

The run is killed (SIGKILL) right after its first check result was recorded; the resumed verify
step plans the same checks on the same tree. The passed check is not run again (its command
appends the tree's calc.py hash to a file outside the worktree: one line per tree), and the
evidence says it was reused.
"""

from __future__ import annotations

from tests.e2e.harness import Ratchet, drive_to_done, make_target_repo


def test_a_resumed_verify_step_reuses_the_check_that_passed_on_its_tree(tmp_path):
    ran = tmp_path / "first-ran.log"
    config = f"""\
repair: {{max_attempts: 3}}
verify:
  checks:
    - {{id: first, kind: lint, run: "sha1sum calc.py >> {ran}"}}
    - {{id: unit, kind: test, run: "python3 -m unittest -q", needs: [first]}}
"""
    # Unconfined, so the check can write outside the worktree (which a rerun rebuilds).
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo",
                                                                    config=config),
                      env={"RATCHET_SANDBOX": "none"})

    run_id, fired = drive_to_done(ratchet, crash="mid_verification:verify.1")

    assert fired
    # verify.1's tree (the buggy calc.py) and verify.2's (the repaired one): each ran once.
    hashes = [line.split()[0] for line in ran.read_text().splitlines()]
    assert len(hashes) == 2 and len(set(hashes)) == 2, hashes
    firsts = [(e["step"], e["data"]["result"]["status"], e["data"]["result"]["reused"])
              for e in ratchet.events(run_id)
              if e["type"] == "CHECK_COMPLETED" and e["data"]["result"]["key"] == "first"]
    assert firsts == [("verify.1", "passed", False), ("verify.1", "passed", True),
                      ("verify.2", "passed", False)]
    assert ratchet.status(run_id)["state"] == "done"
