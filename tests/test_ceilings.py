"""The service's limits are ceilings a repository's config can lower, never raise."""

from __future__ import annotations

from runner.budget import Budget
from runner.ceilings import Ceilings, within_ceilings
from runner.config import parse_repository_config

CEILINGS = Ceilings(budget=Budget(max_cost_usd=5.0, max_agent_runs=10), check_concurrency=2,
                    check_timeout=600.0, subagent_concurrency=4)


def test_what_a_repository_asks_above_a_ceiling_is_lowered_with_one_note_each():
    config = parse_repository_config("""
budget: {max_cost_usd: 50, max_agent_runs: 4, max_run_hours: 3}
verify:
  concurrency: 23
  timeout: 7200
  checks:
    - {id: unit, run: "true", timeout: 9000}
    - {id: lint, run: "true", timeout: 60}
  workspaces:
    - path: web
      checks: [{id: e2e, run: "true", timeout: 601}]
research: {concurrency: 16}
""")
    limited, notes = within_ceilings(config, CEILINGS)

    assert limited.budget.max_cost_usd == 5.0  # lowered
    assert limited.budget.max_agent_runs == 4  # lower than the service's: kept
    assert limited.budget.max_run_hours == 3  # no ceiling
    assert limited.verify.concurrency == 2
    assert limited.verify.timeout == 600
    assert [c.timeout for c in limited.verify.checks] == [600, 60]
    assert limited.verify.workspaces[0].checks[0].timeout == 600
    assert limited.research.concurrency == 4
    assert notes == (
        "budget.max_cost_usd asks for $50.00, above the service's ceiling of $5.00"
        " (RATCHET_BUDGET_MAX_COST_USD); the run uses $5.00",
        "verify.concurrency asks for 23 checks at once, above the service's ceiling of 2"
        " (RATCHET_CHECK_CONCURRENCY); the run uses 2",
        "verify.timeout, verify.checks[unit].timeout, verify.workspaces[web].checks[e2e].timeout"
        " ask for longer than the service's ceiling of 600 s per check (RATCHET_CHECK_TIMEOUT);"
        " those checks run with 600 s",
        "research.concurrency asks for 16 subagents at once, above the service's ceiling of 4"
        " (RATCHET_SUBAGENT_CONCURRENCY); the run uses 4",
    )


def test_a_ceiling_bounds_what_the_repository_leaves_unset_without_a_note():
    limited, notes = within_ceilings(parse_repository_config("verify: {}\n"),
                                     Ceilings(check_concurrency=1, check_timeout=300.0,
                                              subagent_concurrency=1))
    assert (limited.verify.concurrency, limited.verify.timeout, notes) == (1, 300, ())
    assert limited.research.concurrency == 1


def test_a_config_within_the_ceilings_is_kept_as_it_is():
    config = parse_repository_config("budget: {max_cost_usd: 1}\nverify: {concurrency: 2}\n")
    limited, notes = within_ceilings(config, Ceilings(budget=Budget(max_cost_usd=5.0),
                                                      check_concurrency=2, check_timeout=900.0))
    assert (limited, notes) == (config, ())


def test_a_repository_cannot_raise_the_size_of_a_change_the_service_allows():
    """A repository asking for bigger changes than the operator's limits gets the operator's
    (they bound what a run publishes and what the ledger stores); it may ask for less."""
    config = parse_repository_config(
        "limits: {max_file_bytes: 1000000000, max_changed_files: 50000, max_change_bytes: 10}\n")
    limited, notes = within_ceilings(config, Ceilings(max_file_bytes=1024,
                                                       max_change_bytes=4096,
                                                       max_changed_files=20))
    assert (limited.limits.max_file_bytes, limited.limits.max_changed_files,
            limited.limits.max_change_bytes) == (1024, 20, 10)
    assert notes == (
        "limits.max_file_bytes asks for 1000000000 bytes, above the service's ceiling of"
        " 1024 bytes (RATCHET_MAX_FILE_BYTES); the run uses 1024 bytes",
        "limits.max_changed_files asks for 50000 files, above the service's ceiling of"
        " 20 files (RATCHET_MAX_CHANGED_FILES); the run uses 20 files",
    )


def test_change_limits_a_repository_leaves_unset_are_the_services():
    limited, notes = within_ceilings(parse_repository_config("limits: {max_file_bytes: 5}\n"),
                                     Ceilings(max_file_bytes=100, max_change_bytes=7,
                                              max_changed_files=3))
    assert (limited.limits.max_file_bytes, limited.limits.max_change_bytes,
            limited.limits.max_changed_files, notes) == (5, 7, 3, ())
