"""The pure parts of ``ratchet action`` and the ledger's ref, on real payloads and real git.

GitHub's documented payloads (``tests/data``) go through the environment parser, the verify
job's choice of revisions and the run job's plan; the ledger ref is compare-and-swapped on a
local bare repository by two "jobs" at once.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.action.channels import Runner, most_important_first, workflow_command
from app.action.env import ActionEnv, ActionError, ActionInputs, Mode, scrub_environment
from app.action.ledgerref import LedgerRef, LedgerRefMoved, ledger_ref
from app.action.run import JobPlan, Skip, issue_of_branch, plan_job
from app.action.trigger import revisions_for
from app.cli import main
from github.routing import RouteSettings
from tests.action.actions_runner import _read_pairs
from tests.gitrepo import git
from tests.webhook_examples import example

ROUTING = RouteSettings(app_id=None, bot_login="github-actions[bot]",
                        trigger_labels=frozenset({"ratchet"}))
TOKEN = "secret-token-value-123456"


def environ(**extra: str) -> dict[str, str]:
    return {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": "/tmp/event.json",
            "GITHUB_REPOSITORY": "acme/widgets", "INPUT_MODE": "verify",
            "INPUT_GITHUB-TOKEN": TOKEN, "INPUT_BASE": "", **extra}


def test_the_environment_is_read_once_into_a_typed_object_and_then_scrubbed() -> None:
    variables = environ(ACTIONS_RUNTIME_TOKEN="runtime", GITHUB_RUN_ATTEMPT="3", PATH="/bin")
    env = ActionEnv.from_environ(variables)
    assert env.inputs.mode is Mode.VERIFY and env.inputs.token == TOKEN
    assert env.inputs.base is None  # '' is an input nobody gave
    assert (env.owner, env.repo, env.run_attempt) == ("acme", "widgets", 3)
    assert TOKEN not in repr(env)
    scrub_environment(variables)
    assert set(variables) == {"GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY",
                              "GITHUB_RUN_ATTEMPT", "PATH"}


@pytest.mark.parametrize(("variables", "named"), [
    (environ(INPUT_MODE="deploy"), "INPUT_MODE"),
    ({k: v for k, v in environ().items() if k != "GITHUB_EVENT_NAME"}, "GITHUB_EVENT_NAME"),
    (environ(GITHUB_REPOSITORY="widgets"), "GITHUB_REPOSITORY"),
    ({k: v for k, v in environ().items() if k != "INPUT_MODE"}, "INPUT_MODE"),
])
def test_an_unusable_environment_names_the_variable(variables: dict[str, str],
                                                    named: str) -> None:
    with pytest.raises(ActionError, match=named):
        ActionEnv.from_environ(variables)


def test_verify_revisions_come_from_each_event_and_the_inputs_override_them() -> None:
    inputs = ActionInputs(mode=Mode.VERIFY)
    pull = example("pull_request", "opened")
    found = revisions_for("pull_request", pull, inputs, sha=None)
    assert (found.base, found.head) == (pull["pull_request"]["base"]["sha"],
                                        pull["pull_request"]["head"]["sha"])
    assert not found.read_only_token and found.pull_request == pull["number"]
    pull["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
    assert revisions_for("pull_request", pull, inputs, sha=None).read_only_token

    push = example("push", None)
    push["before"] = "0" * 40
    # A new branch: compared with the default branch, as actions/checkout names it.
    assert revisions_for("push", push, inputs, sha=None).base == "origin/master"
    push.pop("repository")
    assert revisions_for("push", push, inputs, sha=None).base is None
    group = example("merge_group", "checks_requested")["merge_group"]
    found = revisions_for("merge_group", example("merge_group", "checks_requested"), inputs,
                          sha=None)
    assert (found.base, found.head) == (group["base_sha"], group["head_sha"])
    dispatched = revisions_for("workflow_dispatch", example("workflow_dispatch", None),
                               ActionInputs(mode=Mode.VERIFY, base="main"), sha="abc123")
    assert (dispatched.base, dispatched.head) == ("main", "abc123")
    with pytest.raises(ActionError, match="verify mode runs on"):
        revisions_for("issues", example("issues", "labeled"), inputs, sha=None)


def test_run_jobs_are_planned_from_the_payload_alone() -> None:
    labeled = example("issues", "labeled")
    assert isinstance(plan_job("issues", labeled, ROUTING), Skip)  # the label is "bug"
    labeled["label"]["name"] = "ratchet"
    assert plan_job("issues", labeled, ROUTING) == JobPlan(
        labeled["issue"]["number"], why=f"issue #{labeled['issue']['number']} labeled ratchet")

    comment = example("issue_comment", "created")
    assert plan_job("issue_comment", comment, ROUTING) == Skip("no /ratchet command")
    comment["comment"]["body"] = "/ratchet approve 0123456789ab"
    plan = plan_job("issue_comment", comment, ROUTING)
    assert isinstance(plan, JobPlan) and plan.issue == comment["issue"]["number"]
    comment["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/9"}
    plan = plan_job("issue_comment", comment, ROUTING)
    assert isinstance(plan, JobPlan) and (plan.issue, plan.pull) == (
        None, comment["issue"]["number"])
    comment["sender"].update(login="github-actions[bot]", type="Bot")
    comment["comment"]["user"].update(login="github-actions[bot]", type="Bot")
    assert isinstance(plan_job("issue_comment", comment, ROUTING), Skip)  # never itself

    dispatch = example("workflow_dispatch", None)
    dispatch["inputs"] = {"issue": "7"}
    assert plan_job("workflow_dispatch", dispatch, ROUTING) == JobPlan(
        7, record=False, why="resume requested")
    dispatch["inputs"] = {}
    with pytest.raises(ActionError, match="`issue` input"):
        plan_job("workflow_dispatch", dispatch, ROUTING)
    with pytest.raises(ActionError, match="run mode runs on"):
        plan_job("pull_request", example("pull_request", "opened"), ROUTING)


def test_a_pull_request_branch_names_its_issue() -> None:
    assert issue_of_branch("ratchet/issue-12") == 12
    assert issue_of_branch("ratchet/issue-x") is None
    assert issue_of_branch("feature/issue-12") is None


def test_outputs_and_workflow_commands_are_written_as_the_runner_reads_them(
        tmp_path: Path) -> None:
    output, summary = tmp_path / "output", tmp_path / "summary"
    runner = Runner(output=output, summary=summary)
    runner.set_output("bundle", "/tmp/x")
    runner.set_output("text", "two\nlines\nname<<EOF")
    runner.summary("## hello")
    assert _read_pairs(output) == {"bundle": "/tmp/x", "text": "two\nlines\nname<<EOF"}
    assert summary.read_text() == "## hello\n"
    assert workflow_command("error", "50% done\nnext", file="a,b.py", line=3, title="x:y") == (
        "::error file=a%2Cb.py,line=3,title=x%3Ay::50%25 done%0Anext")
    assert most_important_first(["::notice::n", "::warning::w", "::error::e"]) == [
        "::error::e", "::warning::w", "::notice::n"]


def make_ledger(path: Path, value: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS t (v TEXT)")
        conn.execute("INSERT INTO t VALUES (?)", (value,))
    conn.close()


def rows(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        found = [r[0] for r in conn.execute("SELECT v FROM t ORDER BY rowid")]
    conn.close()
    return found


def test_the_ledger_ref_is_compare_and_swapped_between_jobs(tmp_path: Path) -> None:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    remote, ref = bare.as_uri(), ledger_ref(7)
    first = LedgerRef(remote, ref, tmp_path / "job1" / "ledger.git")
    second = LedgerRef(remote, ref, tmp_path / "job2" / "ledger.git")
    db1, db2 = tmp_path / "job1" / "ledger.db", tmp_path / "job2" / "ledger.db"
    assert not first.fetch(db1) and not second.fetch(db2)  # both see no ledger yet

    make_ledger(db1, "created by job 1")
    make_ledger(db2, "created by job 2")
    first.push(db1, message="job 1 claims")
    with pytest.raises(LedgerRefMoved, match="another job"):
        second.push(db2, message="job 2 claims")  # it expected the ref to be absent

    assert second.fetch(db2)  # the next job reads what job 1 wrote
    assert rows(db2) == ["created by job 1"]
    make_ledger(db2, "job 2 resumed")
    second.push(db2, message="job 2 step")
    make_ledger(db1, "job 1 is stale")
    with pytest.raises(LedgerRefMoved):
        first.push(db1, message="job 1 step")
    third = LedgerRef(remote, ref, tmp_path / "job3" / "ledger.git")
    db3 = tmp_path / "job3" / "ledger.db"
    assert third.fetch(db3) and rows(db3) == ["created by job 1", "job 2 resumed"]
    # One commit without parents: old snapshots are not kept reachable.
    assert git(bare, "--git-dir", str(bare), "rev-list", "--count", ref).strip() == "1"


def test_run_mode_without_a_token_is_a_usage_error_saying_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    event = tmp_path / "event.json"
    payload = example("issues", "labeled")
    payload["label"]["name"] = "ratchet"
    event.write_text(json.dumps(payload))
    for name, value in {"GITHUB_EVENT_NAME": "issues", "GITHUB_EVENT_PATH": str(event),
                        "GITHUB_REPOSITORY": "acme/widgets", "INPUT_MODE": "run",
                        "RUNNER_TEMP": str(tmp_path), "INPUT_GITHUB-TOKEN": ""}.items():
        monkeypatch.setenv(name, value)
    assert main(["action"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("::error title=Ratchet::run mode needs the `github-token` input")
    assert "github-token" in err
