"""A repository's config lowers the service's limits but never raises them: through the real
CLI, engine, ledger, sandbox and scripted agent."""

from __future__ import annotations

import json

from tests.e2e.harness import Ratchet, drive_to_done, make_target_repo

# Two checks that fail when they run at the same time (each holds the folder `busy`), a
# concurrency and a timeout above the service's, and a budget above the service's.
GREEDY = """\
repair: {max_attempts: 3}
budget: {max_agent_runs: 50}
verify:
  concurrency: 23
  checks:
    - {id: unit, kind: test, run: "python3 -m unittest -q", timeout: 99999}
    - {id: one, run: "mkdir busy && sleep 0.3 && rmdir busy"}
    - {id: two, run: "mkdir busy && sleep 0.3 && rmdir busy"}
"""


def test_a_repository_asking_more_than_the_service_allows_gets_the_ceiling(tmp_path):
    ratchet = Ratchet(home=tmp_path / "home",
                      repo=make_target_repo(tmp_path / "repo", config=GREEDY),
                      env={"RATCHET_CHECK_CONCURRENCY": "1", "RATCHET_CHECK_TIMEOUT": "300",
                           "RATCHET_BUDGET_MAX_AGENT_RUNS": "20"})
    run_id, _ = drive_to_done(ratchet)  # one and two never ran at once

    folder = ratchet.export(run_id, tmp_path / "export")
    plan = json.loads((folder / "verification/plan.json").read_text())
    assert plan["concurrency"] == 1
    assert {c["id"]: c["timeout"] for c in plan["checks"]}["unit"] == 300
    assert ratchet.status(run_id)["usage"]["budget"]["max_agent_runs"]["allowed"] == 20
    expected = [
        "budget.max_agent_runs asks for 50 agent run(s), above the service's ceiling of 20"
        " agent run(s) (RATCHET_BUDGET_MAX_AGENT_RUNS); the run uses 20 agent run(s)",
        "verify.concurrency asks for 23 checks at once, above the service's ceiling of 1"
        " (RATCHET_CHECK_CONCURRENCY); the run uses 1",
        "verify.checks[unit].timeout ask for longer than the service's ceiling of 300 s per"
        " check (RATCHET_CHECK_TIMEOUT); those checks run with 300 s",
    ]
    [prepared] = [e for e in ratchet.events(run_id) if e["type"] == "WORKSPACE_PREPARED"]
    assert prepared["data"]["limited"] == expected
    tracking = [c["text"] for c in ratchet.outbox(run_id).comments
                if c["name"] == f"{run_id}/tracking"]
    assert all(f"Limited: {note}." in tracking[-1] for note in expected)
