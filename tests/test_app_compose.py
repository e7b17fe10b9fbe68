"""How runs are wired to their forge, from settings (``app/compose.py``)."""

from __future__ import annotations

from pathlib import Path

from app.compose import NO_APP, build_engine
from app.settings import Settings
from runner.ledger import open_store
from runner.ledger.records import EffectStatus, NewDelivery, NewRun
from runner.origin import GitHubOrigin
from runner.tracking import with_first_edit
from runner.workflow import State


def test_a_run_from_github_on_a_host_without_the_app_stops_for_a_human_once(
        tmp_path: Path) -> None:
    """Deliveries may arrive before the App is configured: the run they start cannot reach
    GitHub, so it stops saying what to set, and its unsendable effects are given up instead of
    being retried forever."""
    store = open_store(str(tmp_path / "ledger.db"))
    engine = build_engine(store, Settings(home=tmp_path / "home", agent_command="true"))
    new = with_first_edit(NewRun(
        id="r-gh", repo="https://github.com/acme/widgets.git", title="Add calc", issue=7,
        origin=GitHubOrigin(owner="acme", repo="widgets", installation=77,
                            clone_url="https://github.com/acme/widgets.git",
                            branch="ratchet/issue-7", base_branch="main")), at=0.0)
    store.accept_delivery(NewDelivery("d-1", "issues", "labeled", "start", "label"), start=new)

    run = engine.wake("r-gh")
    again = engine.wake("r-gh")

    assert run.state is State.NEEDS_HUMAN and NO_APP in (run.reason or "")
    assert again.state is State.NEEDS_HUMAN and again.version == run.version
    assert {e.status for e in store.effects("r-gh")} == {EffectStatus.FAILED}
    store.close()
