"""Kill the run's process group (SIGKILL) at every step boundary, inside every step, and on
both sides of every effect (after it was counted as sent, after the forge applied it).

After each crash a fresh ``ratchet resume`` (or the approval) finishes the run; completed agent
steps ran exactly once, no effect was recorded or applied twice, the outbox holds exactly what
a fault-free run leaves (one tracking comment, one pull request, one check run per head, a
branch that only fast-forwarded), and the published tree equals the fault-free run's.

``make test-fast`` runs one crash point of each kind (``FAST``); ``make test`` runs them all.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.e2e.harness import Ratchet, drive_to_done, make_target_repo

AGENT_STEPS = ["research.1", "specify.1", "implement.1", "repair.1"]
EFFECTS = [
    "specify.1:push", "specify.1:pull-request", "specify.1:spec-check",
    "verify.1:push", "verify.1:verify-check", "verify.2:push", "verify.2:verify-check",
    "publish.1:pull-request",
    # edits of the tracking comment: the first (a create), one mid-run, the last
    "queued.1:tracking.queued", "awaiting_approval.1:tracking.awaiting_approval",
    "done.1:tracking.done",
]
CRASH_POINTS = (
    [f"after_commit:{s}" for s in ["queued.1", *AGENT_STEPS, "verify.1", "verify.2",
                                   "publish.1"]]
    + [f"after_agent_output:{s}" for s in AGENT_STEPS]
    + [f"after_effect_intent:{e}" for e in EFFECTS]
    + [f"after_effect_applied:{e}" for e in EFFECTS]
    + ["mid_verification:verify.1", "mid_verification:verify.2"]
)
# One point of each kind for the inner loop: a step committed, an agent's output not yet
# adopted, an effect sent but not confirmed, an effect applied but not recorded, verification
# interrupted. The others are marked slow (same code paths at other steps and effects).
FAST = {"after_commit:implement.1", "after_agent_output:implement.1",
        "after_effect_intent:verify.1:push", "after_effect_applied:specify.1:pull-request",
        "mid_verification:verify.1"}
assert FAST.issubset(CRASH_POINTS), FAST - set(CRASH_POINTS)


@pytest.fixture(scope="module")
def reference_tree(tmp_path_factory) -> str:
    base = tmp_path_factory.mktemp("reference")
    ratchet = Ratchet(home=base / "home", repo=make_target_repo(base / "repo"))
    run_id, _ = drive_to_done(ratchet)
    return ratchet.branch_tree(run_id)


@pytest.mark.parametrize("crash", [
    pytest.param(crash, marks=() if crash in FAST else pytest.mark.slow) for crash in CRASH_POINTS])
def test_crash_and_resume(crash, tmp_path, reference_tree):
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    run_id, fired = drive_to_done(ratchet, crash=crash)
    assert fired, f"crash point {crash} was never reached"

    # Completed agent steps ran exactly once (a step killed after its agent finished adopts
    # that result instead of running the agent again).
    assert Counter(ratchet.agent_runs()) == Counter(AGENT_STEPS)

    folder = ratchet.export(run_id, tmp_path / "export")
    events = [json.loads(line) for line in (folder / "events.ndjson").read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert "LEASE_EXPIRED" in {e["type"] for e in events} or crash.startswith("after_commit")

    effects = json.loads((folder / "effects.json").read_text())
    assert {f"{run_id}:{e}" for e in EFFECTS} <= {e["key"] for e in effects}
    assert {e["status"] for e in effects} == {"confirmed"}
    confirmations = Counter(e["key"] for e in events
                            if e["type"] in {"EFFECT_CONFIRMED", "EFFECT_RECONCILED"})
    assert set(confirmations.values()) == {1}, confirmations
    # Applied once on the remote side: one record per key, one update of the branch.
    ratchet.assert_published_once(run_id)

    assert ratchet.branch_tree(run_id) == reference_tree
    assert ratchet.status(run_id)["state"] == "done"


def test_a_step_that_kills_its_worker_every_time_is_failed_not_retried_forever(tmp_path):
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    poison = {"RATCHET_CRASH_AT": "after_agent_output:research.1", "RATCHET_MAX_ATTEMPTS": "2"}
    assert ratchet.create(extra=poison).returncode == -9
    run_id = ratchet.run_id()
    assert ratchet("resume", run_id, extra=poison).returncode == -9
    final = ratchet("resume", run_id, extra=poison)
    assert final.returncode == 1, final.stderr
    status = ratchet.status(run_id)
    assert status["state"] == "failed" and "taken up 3 times" in status["reason"]
    assert ratchet.agent_runs() == ["research.1"]  # the finished agent was adopted, not rerun
