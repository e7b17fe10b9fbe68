"""A fork's pull request gets verification only: its head, checked by the base's config.

The run is recorded the way a ``pull_request`` delivery records it; a real engine (SQLite, git,
sandbox, the local sink) takes it from there. No agent runs, nothing is pushed, no comment is
posted; one ``ratchet/verify`` check run lands on the head.
"""

from __future__ import annotations

import pytest

from app.compose import build_engine
from app.settings import Settings
from runner.ledger import open_store
from runner.ledger.records import NewDelivery, NewRun
from runner.origin import LocalOrigin
from runner.workflow import PULL_REQUEST_WORKFLOW, State
from tests.e2e.harness import Ratchet, make_target_repo
from tests.gitrepo import commit_all, git, write_files

# The base's checks; the fork tries to weaken them in its own copy of the config.
BASE_CONFIG = "verify:\n  checks:\n    - {id: unit, kind: test, run: 'python3 -m unittest -q'}\n"
FORK_CONFIG = "verify:\n  checks:\n    - {id: unit, kind: test, run: 'true'}\n"
FAILING_TEST = (
    "import unittest\n\n\nclass T(unittest.TestCase):\n"
    "    def test_it(self):\n        self.assertEqual(1, 2)\n"
)


@pytest.mark.parametrize(("files", "conclusion"), [
    ({"ok.py": "X = 1\n"}, "success"),
    ({"test_fork.py": FAILING_TEST, ".github/ratchet.yml": FORK_CONFIG}, "failure"),
])
def test_a_fork_pull_request_is_verified_and_reported_once(tmp_path, files, conclusion):
    repo = make_target_repo(tmp_path / "repo", config=BASE_CONFIG)
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "fork-work")
    write_files(repo, files)
    head = commit_all(repo, "a fork's change")
    git(repo, "update-ref", "refs/pull/3/head", head)  # where a forge exposes a PR's head
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-D", "fork-work")

    ratchet = Ratchet(home=tmp_path / "home", repo=repo)
    store = open_store(str(ratchet.home / "ratchet.db"))
    engine = build_engine(store, Settings(home=ratchet.home, agent_command="false"))
    outcome = store.accept_delivery(
        NewDelivery("d-1", "pull_request", "opened", "start", "fork PR"),
        start=NewRun(id="r-fork", repo=str(repo), title="A fork's change", pr=3,
                     workflow=PULL_REQUEST_WORKFLOW, base_revision=head,
                     origin=LocalOrigin(diff_base=base, outbox=str(ratchet.home / "outbox"))))
    assert outcome.run_id == "r-fork"
    again = store.accept_delivery(
        NewDelivery("d-2", "pull_request", "synchronize", "start", "same head"),
        start=NewRun(id="r-other", repo=str(repo), title="t", pr=3,
                     workflow=PULL_REQUEST_WORKFLOW, base_revision=head))
    assert again.decision == "ignore"  # that head is being verified already

    run = engine.drive("r-fork")

    assert run.state is State.DONE and run.head_revision == head
    assert store.completed_steps("r-fork") == ["queued.1", "verify.1"]
    effects = store.effects("r-fork")
    assert [e.kind.value for e in effects] == ["check_run"]
    [check] = effects
    assert check.payload["head_sha"] == head and check.payload["conclusion"] == conclusion
    assert "refs/heads/ratchet/r-fork" not in git(repo, "show-ref")
    store.close()


def test_a_pull_request_head_is_not_run_unconfined(tmp_path):
    """With RATCHET_SANDBOX=none a pull request's tests could read the runner's processes and
    files: its head is not verified, and the run says which setting to change."""
    repo = make_target_repo(tmp_path / "repo", config=BASE_CONFIG)
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "fork-work")
    write_files(repo, {"ok.py": "X = 1\n"})
    head = commit_all(repo, "a fork's change")
    git(repo, "checkout", "-q", "main")
    ratchet = Ratchet(home=tmp_path / "home", repo=repo)
    store = open_store(str(ratchet.home / "ratchet.db"))
    engine = build_engine(store, Settings(home=ratchet.home, agent_command="false",
                                          sandbox="none"))
    store.accept_delivery(
        NewDelivery("d-1", "pull_request", "opened", "start", "fork PR"),
        start=NewRun(id="r-fork", repo=str(repo), title="A fork's change", pr=3,
                     workflow=PULL_REQUEST_WORKFLOW, base_revision=head,
                     origin=LocalOrigin(diff_base=base, outbox=str(ratchet.home / "outbox"))))

    run = engine.drive("r-fork")

    assert run.state is State.FAILED and "RATCHET_SANDBOX=none" in (run.reason or "")
    assert store.effects("r-fork") == []
    store.close()
