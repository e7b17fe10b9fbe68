"""A hostile agent cannot choose the checks that verify its change (issue 19, item 2).

The target repository's root check (`verify.checks: unit`, `python3 -m unittest`) tests
lib/calc.py. The agent breaks lib/calc.py and puts a manifest beside it, with a check of its own
that passes (tests/fixtures/hostile_agent.py, own_workspace). Asserted from outside: the base's
root check still ran and failed each time, the run never passed verification and stopped for a
human.
"""

from __future__ import annotations

from tests.e2e.test_hostile_agents import Attack
from tests.gitrepo import commit_all, git, write_files

ROOT_TEST = """\
import unittest

from lib.calc import add


class LibTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def test_a_manifest_the_agent_adds_never_replaces_the_root_check(tmp_path):
    attack = Attack(tmp_path, "implement:own_workspace")
    repo = attack.ratchet.repo
    write_files(repo, {"lib/calc.py": "def add(a, b):\n    return a + b\n",
                       "test_lib.py": ROOT_TEST})
    commit_all(repo, "lib and its root test")
    attack.ratchet.env["AGENT_NO_FIX"] = "1"  # repair changes nothing: only verify decides
    assert attack.ratchet.create().returncode == 0
    run_id = attack.ratchet.run_id()

    result = attack.ratchet.approve(run_id)

    assert result.returncode == 1
    attack.seen("own_workspace")
    status = attack.ratchet.status(run_id)
    assert status["state"] == "needs_human", status
    events = attack.ratchet.events(run_id)
    types = [e["type"] for e in events]
    assert "VERIFICATION_PASSED" not in types
    checks = [e["data"]["result"] for e in events if e["type"] == "CHECK_COMPLETED"]
    assert {(c["workspace"], c["id"], c["status"]) for c in checks} == {
        (".", "unit", "failed"), ("lib", "pytest", "passed"),
    }
    # The candidate pushed to the run's branch is the broken one, and it was never verified.
    published = git(repo, "show", f"ratchet/{run_id}:lib/calc.py")
    assert "a - b" in published
