"""A run's origin is typed on read from the row's ``params`` JSON; rows written before it was
typed (three shapes: local intake, the webhook's run on an issue, the webhook's verification
of a pull request head) load into it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runner.errors import LedgerError
from runner.intake import new_run
from runner.ledger.records import NewRun
from runner.origin import (
    AgentChoice,
    GitHubOrigin,
    LocalOrigin,
    is_run_branch,
    issue_of_branch,
    new_run_id,
    parse_origin,
    run_branch,
)

T0 = 1_000_000.0
CLONE_URL = "https://github.com/acme/widgets.git"

# What runner/intake.py's create_local_run stored before the origin was typed.
LOCAL_ROW = {
    "agent_command": "claude -p {prompt}", "remote": "/srv/calc",
    "outbox": "/home/ann/.ratchet/runs/r-20250101-0a1b2c3d/outbox",
    "branch": "ratchet/r-20250101-0a1b2c3d", "base_branch": "main",
}
# What app/webhooks.py stored for a labeled issue's run.
ISSUE_ROW = {
    "forge": "github", "owner": "acme", "repo": "widgets", "installation": 77,
    "clone_url": CLONE_URL, "remote": CLONE_URL, "branch": "ratchet/issue-7",
    "base_branch": "main", "agent_command": None, "label": "ratchet", "started_by": "alice",
}
# What app/webhooks.py stored for the verification of a pull request head.
VERIFY_ROW = {
    "forge": "github", "owner": "acme", "repo": "widgets", "installation": None,
    "clone_url": CLONE_URL, "remote": CLONE_URL, "diff_base": "b" * 40,
    "source": "the fork bob/widgets", "started_by": "bob",
}


def stored(store, params: object, *, run_id: str = "r-20250101-0a1b2c3d", **kw):
    """A run whose row holds ``params`` exactly as given, as an older Ratchet wrote it."""
    store.create_run(NewRun(id=run_id, repo=CLONE_URL, title="t", **kw), now=T0)
    with store._write() as tx:
        tx.run("UPDATE runs SET params = ? WHERE id = ?", (json.dumps(params), run_id))
    return store.get_run(run_id)


def test_a_local_run_row_of_before_loads(store) -> None:
    run = stored(store, LOCAL_ROW)
    assert run.origin == LocalOrigin(
        agent=AgentChoice(command="claude -p {prompt}"), outbox=LOCAL_ROW["outbox"],
        branch="ratchet/r-20250101-0a1b2c3d", base_branch="main")
    assert run.branch == "ratchet/r-20250101-0a1b2c3d"
    preset = stored(store, {**LOCAL_ROW, "agent_command": None, "agent_preset": "claude"},
                    run_id="r-preset")
    assert preset.origin.agent == AgentChoice(preset="claude")


def test_an_issue_run_row_of_before_loads(store) -> None:
    run = stored(store, ISSUE_ROW, issue=7)
    assert run.origin == GitHubOrigin(
        owner="acme", repo="widgets", installation=77, clone_url=CLONE_URL,
        branch="ratchet/issue-7", base_branch="main", label="ratchet", started_by="alice")
    assert run.origin.agent == AgentChoice()  # the service's default agent
    assert run.branch == "ratchet/issue-7"


def test_a_verification_run_row_of_before_loads(store) -> None:
    run = stored(store, VERIFY_ROW, workflow="pull_request", pr=4)
    assert run.origin == GitHubOrigin(
        owner="acme", repo="widgets", clone_url=CLONE_URL, diff_base="b" * 40,
        source="the fork bob/widgets", started_by="bob")
    assert run.origin.branch is None and run.branch == "ratchet/r-20250101-0a1b2c3d"


def test_a_row_without_params_is_a_local_origin_and_unknown_keys_are_ignored(store) -> None:
    assert stored(store, {}).origin == LocalOrigin()
    later = stored(store, {**ISSUE_ROW, "added_later": {"x": 1}}, run_id="r-later")
    assert later.origin == parse_origin(ISSUE_ROW)


def test_a_row_that_is_not_an_origin_is_refused_naming_the_run(store) -> None:
    with pytest.raises(LedgerError, match=r"run r-bad.s params .*\(owner: Field required\)"):
        stored(store, {"forge": "github", "repo": "widgets", "clone_url": CLONE_URL},
               run_id="r-bad")


@pytest.mark.parametrize("row", [LOCAL_ROW, ISSUE_ROW, VERIFY_ROW])
def test_an_origin_is_stored_under_the_keys_it_always_had(row) -> None:
    """New rows keep the flat keys, so a Ratchet of before reads them too (``remote`` was
    always the run's repo, which it falls back to)."""
    origin = parse_origin(row)
    assert parse_origin(origin.to_params()) == origin
    assert origin.to_params() == {k: v for k, v in row.items()
                                  if v is not None and k != "remote"}


def test_one_function_names_a_run_branch_and_reads_its_issue_back() -> None:
    assert run_branch("r-20250101-0a1b2c3d") == "ratchet/r-20250101-0a1b2c3d"
    assert run_branch("r-20250101-0a1b2c3d", issue=12) == "ratchet/issue-12"
    assert issue_of_branch(run_branch("r-x", issue=12)) == 12
    assert issue_of_branch(run_branch("r-x")) is None
    assert issue_of_branch("ratchet/issue-x") is None and issue_of_branch("feature/issue-1") is None
    assert is_run_branch(run_branch("r-x")) and is_run_branch(run_branch("r-x", issue=3))
    assert not is_run_branch("feature/ratchet")


def test_a_new_run_gets_a_fresh_id_and_its_branch(tmp_path: Path) -> None:
    assert re.fullmatch(r"r-\d{8}-[0-9a-f]{8}", new_run_id())
    github = GitHubOrigin(owner="acme", repo="widgets", clone_url=CLONE_URL)
    on_issue = new_run(github, repo=CLONE_URL, title="t", issue=7)
    assert on_issue.origin.branch == "ratchet/issue-7" and on_issue.issue == 7
    verify = new_run(github, repo=CLONE_URL, title="t", workflow="pull_request", pr=4)
    assert verify.origin.branch is None  # it pushes nothing
    local = new_run(LocalOrigin(), repo="/srv/calc", title="t", runs_root=tmp_path)
    assert re.fullmatch(r"r-\d{8}-[0-9a-f]{8}", local.id) and local.id != on_issue.id
    assert local.origin == LocalOrigin(branch=f"ratchet/{local.id}",
                                       outbox=str(tmp_path / local.id / "outbox"))
