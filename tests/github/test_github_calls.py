"""API economy: ``bench/github_calls.py`` measures every effect's calls; they meet the targets."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import github_calls  # noqa: E402


def test_every_effect_costs_what_the_design_says(tmp_path: Path) -> None:
    rows = {row.scenario.name: row for row in github_calls.measure(tmp_path)}
    text = github_calls.report(list(rows.values()))
    assert f"{len(rows)}/{len(rows)} scenarios within target" in text, text

    def calls(name: str, *, retry: bool = False) -> tuple[int, int]:
        cost = rows[name].retry if retry else rows[name].first
        assert cost is not None, name
        return len(cost.lookups), len(cost.writes)

    # Happy path: a create is one write and no lookup; an update reads its id from the ledger.
    for name in (
        "comment: post the tracking comment",
        "comment: edit it",
        "reply: post",
        "reaction: add",
        "pull_request: open as draft",
        "pull_request: update",
        "check_run: create (3 annotations)",
        "check_run: update (1 new annotation)",
    ):
        assert calls(name) == (0, 1), name
    assert calls("pull_request: update and mark ready") == (0, 2)  # PATCH + GraphQL
    assert calls("check_run: create (120 annotations)") == (0, 3)  # 50 + 50 + 20
    assert calls("push: create the branch (git push)") == (0, 0)
    assert rows["push: create the branch (git push)"].git_pushes == 1
    # After a lost acknowledgement the effect had landed: one lookup finds it, nothing resent.
    lost = [name for name, row in rows.items() if row.scenario.target == github_calls.RETRY]
    assert len(lost) == 8
    for name in lost:
        assert calls(name, retry=True) == (1, 0), name
