"""A local run through the real CLI, a real scripted agent and real git, start to finish."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from tests.e2e.harness import CONFIG, Ratchet, drive_to_done, make_target_repo
from tests.gitrepo import git

LAYOUT = [
    "run.json", "events.ndjson", "state.snapshot.json", "effects.json",
    "prompts/research.1.md", "prompts/specify.1.md", "prompts/implement.1.md",
    "prompts/repair.1.md", "research/repository-analysis.md", "spec.md",
    "approved-spec.sha256", "implementation/summary.md", "implementation/patch.diff",
    "repair/1/summary.md", "verification/plan.json", "verification/unit.log",
    "verification/result.json",
]
EVENT_ORDER = [
    "RUN_CREATED", "RESEARCH_STARTED", "RESEARCH_COMPLETED", "SPEC_CREATED", "SPEC_APPROVED",
    "IMPLEMENTATION_STARTED", "IMPLEMENTATION_COMPLETED", "VERIFICATION_STARTED", "TESTS_FAILED",
    "REPAIR_STARTED", "REPAIR_COMPLETED", "VERIFICATION_PASSED", "PUBLISH_STARTED",
    "PUBLISHED", "RUN_COMPLETED",
]


@pytest.fixture
def ratchet(tmp_path):
    return Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))


def test_local_run_research_to_done(ratchet, tmp_path):
    first = ratchet.create()
    assert first.returncode == 0, first.stderr
    transitions = [line for line in first.stdout.splitlines() if "->" in line]
    assert [t.split(": ", 1)[1].split(" (")[0] for t in transitions] == [
        "queued -> research", "research -> specify", "specify -> awaiting_approval",
    ]
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "awaiting_approval"
    assert status["completed_steps"] == ["queued.1", "research.1", "specify.1"]

    approved = ratchet("approve-spec", run_id, "--hash", ratchet.spec_hash(run_id), "--json")
    assert approved.returncode == 0, approved.stderr
    final = json.loads(approved.stdout.splitlines()[-1])
    assert final["run_id"] == run_id and final["state"] == "done"
    assert final["completed_steps"][-5:] == [
        "implement.1", "verify.1", "repair.1", "verify.2", "publish.1"]

    # Each agent step ran exactly once.
    assert ratchet.agent_runs() == ["research.1", "specify.1", "implement.1", "repair.1"]

    folder = ratchet.export(run_id, tmp_path / "export")
    missing = [p for p in LAYOUT if not (folder / p).is_file()]
    assert missing == []
    spec_sha = hashlib.sha256((folder / "spec.md").read_bytes()).hexdigest()
    assert (folder / "approved-spec.sha256").read_text().strip() == spec_sha
    result = json.loads((folder / "verification/result.json").read_text())
    assert result["conclusion"] == "success"
    assert "test_add" in (folder / "prompts/repair.1.md").read_text()

    # The branch holds the repaired code; the target repository's own branch is untouched.
    assert "return a + b" in git(ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
    assert git(ratchet.repo, "status", "--porcelain") == ""
    assert git(ratchet.repo, "ls-files").split() == [".github/ratchet.yml", "README.md"]

    events = [json.loads(line) for line in (folder / "events.ndjson").read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    types = [e["type"] for e in events]
    positions = [types.index(t) for t in EVENT_ORDER]
    assert positions == sorted(positions), types
    for event in events:
        assert {"type", "at", "run", "step", "attempt", "lease", "revision"} <= event.keys()
    effect_events = [e for e in events if e["type"].startswith("EFFECT_")]
    assert {e["type"] for e in effect_events} == {
        "EFFECT_INTENDED", "EFFECT_ATTEMPTED", "EFFECT_CONFIRMED"}
    for event in effect_events:
        assert event["key"].startswith(f"{run_id}:")
    intended = [e["key"] for e in effect_events if e["type"] == "EFFECT_INTENDED"]
    confirmed = [e["key"] for e in effect_events if e["type"] == "EFFECT_CONFIRMED"]
    assert sorted(intended) == sorted(confirmed) and len(set(intended)) == len(intended)

    effects = json.loads((folder / "effects.json").read_text())
    assert {e["status"] for e in effects} == {"confirmed"}
    # One tracking comment edited at every transition: each edit is an effect in the ledger.
    edits = [e["key"].rsplit(":", 1)[1] for e in effects if e["kind"] == "comment"]
    assert edits == [f"tracking.{state}" for state in (
        "queued", "research", "specify", "awaiting_approval", "implement", "verify", "repair",
        "verify", "publish", "done")]
    ratchet.assert_published_once(run_id)


def test_request_changes_sends_feedback_to_the_next_spec(ratchet, tmp_path):
    ratchet.create()
    run_id = ratchet.run_id()
    first_hash = ratchet.spec_hash(run_id)
    result = ratchet("request-changes", run_id, "--message", "Also cover negative numbers")
    assert result.returncode == 0, result.stderr
    status = ratchet.status(run_id)
    assert status["state"] == "awaiting_approval" and status["step"] == "awaiting_approval.2"
    folder = ratchet.export(run_id, tmp_path / "export")
    assert "Also cover negative numbers" in (folder / "prompts/specify.2.md").read_text()
    assert "with feedback" in (folder / "spec.md").read_text()
    # The old hash no longer approves anything: the spec changed.
    refused = ratchet("approve-spec", run_id, "--hash", first_hash)
    assert refused.returncode == 2
    assert ratchet.spec_hash(run_id) in refused.stderr


@pytest.mark.slow
def test_wrong_hash_is_refused_and_shows_the_current_one(ratchet):
    ratchet.create()
    run_id = ratchet.run_id()
    refused = ratchet("approve-spec", run_id, "--hash", "deadbeefdeadbeef")  # 12+: compared
    assert refused.returncode == 2
    spec_sha = ratchet.spec_hash(run_id)
    assert spec_sha in refused.stderr and "is not the current spec's hash" in refused.stderr
    assert ratchet.status(run_id)["state"] == "awaiting_approval"


@pytest.mark.slow
def test_detached_approval_records_only(ratchet):
    ratchet.create()
    run_id = ratchet.run_id()
    result = ratchet.approve(run_id, "--detach")
    assert result.returncode == 0, result.stderr
    # Recorded in the run's inbox; a worker (here: resume) answers it and continues.
    status = ratchet.status(run_id)
    assert status["state"] == "awaiting_approval" and "implement.1" not in ratchet.agent_runs()
    [pending] = status["pending_signals"]
    assert pending["kind"] == "approve" and status["next_action"]["kind"] == "resume"
    assert ratchet("resume", run_id).returncode == 0
    assert ratchet.status(run_id)["state"] == "done"


@pytest.mark.slow
def test_unknown_run_and_ended_run(ratchet):
    missing = ratchet("status", "r-nope")
    assert missing.returncode == 2 and "r-nope" in missing.stderr
    run_id, _ = drive_to_done(ratchet)
    again = ratchet("resume", run_id)
    assert again.returncode == 0
    assert again.stdout.strip() == f"{run_id}: had already ended (done); resume changed nothing"
    for verb in ("retry", "cancel", "verify-again"):
        late = ratchet(verb, run_id)
        assert late.returncode == 2 and late.stderr.strip() == (
            f"ratchet: run {run_id} has already ended (done), so `ratchet {verb}` changes"
            " nothing; `ratchet run` starts a new run")
    assert ratchet.status(run_id)["state"] == "done"


def test_a_resume_that_finishes_the_run_says_it_finished_it(ratchet):
    """A detached approval, then resume: it runs the rest and says the run is done, in one
    last line; never that it waits or that the run had already ended."""
    ratchet.create()
    run_id = ratchet.run_id()
    detached = ratchet.approve(run_id, "--detach")
    assert detached.returncode == 0, detached.stderr
    assert detached.stdout.strip() == (
        f"run {run_id} is queued in the ledger: a running `ratchet serve` on this ledger picks"
        f" it up within seconds, or `ratchet resume {run_id}` runs it here")
    resumed = ratchet("resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.strip().splitlines()
    assert lines[0].startswith(f"{run_id}: awaiting_approval -> implement")
    head = ratchet.status(run_id)["head_revision"]
    assert lines[-1] == f"{run_id}: done; next: none: the run is done (published {head})"
    assert not any("already ended" in line or "waits" in line for line in lines)


def test_a_refused_command_says_what_the_run_waits_for_and_cancel_sends_its_edit(ratchet):
    ratchet.create()
    run_id = ratchet.run_id()
    prefix = ratchet.spec_hash(run_id)[:12]
    for verb in ("retry", "verify-again"):
        refused = ratchet(verb, run_id)
        assert refused.returncode == 2
        assert refused.stderr.strip().endswith(
            "Next: the run waits for a reviewer with write access: review spec.md, then"
            f" `ratchet approve-spec {run_id} --hash {prefix}` or"
            f" `ratchet request-changes {run_id} --message TEXT`."), refused.stderr
    cancelled = ratchet("cancel", run_id, "--reason", "superseded")
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == f"{run_id}: cancelled (superseded)"
    # The cancellation's tracking edit went out with the command: nothing waits for a worker.
    status = ratchet.status(run_id)
    assert status["next_action"] == {"kind": "none_cancelled", "text": "none: the run was"
                                     " cancelled"}
    assert {e["status"] for e in status["effects"]} == {"confirmed"}
    assert any(e["key"].endswith(":tracking.cancelled") for e in status["effects"])


def test_a_resume_that_waited_for_another_worker_says_that_worker_moved_the_run(ratchet):
    ratchet.lease_seconds = 60  # the holder keeps its lease however slow this host is
    ratchet.create()
    run_id = ratchet.run_id()
    assert ratchet.approve(run_id, "--detach").returncode == 0
    block = ratchet.shared / "block"
    holder = ratchet.start("resume", run_id, extra={"AGENT_BLOCK_FILE": str(block)})
    seen = Path(f"{block}.seen")
    deadline = time.monotonic() + 120
    while not seen.exists():  # the holder's implement step has its lease and waits
        assert time.monotonic() < deadline and holder.poll() is None, holder.communicate()
        time.sleep(0.05)
    waiter = ratchet.start("resume", run_id)
    assert waiter.stderr is not None
    for line in waiter.stderr:  # it says so once it waits on the holder's lease
        if "waiting for it to finish" in line:
            break
    block.write_text("go")
    out, err = waiter.communicate(timeout=120)
    assert holder.wait(timeout=120) == 0 and waiter.returncode == 0, err
    lines = out.strip().splitlines()
    assert lines == [
        f"{run_id}: implement -> done by another worker, which held the run while this command"
        " waited",
        f"{run_id}: done; next: none: the run is done"
        f" (published {ratchet.status(run_id)['head_revision']})"], out
    holder.communicate()


def test_a_run_whose_agent_does_not_start_is_retried_with_another_agent_command(ratchet):
    failed = ratchet("run", "--repo", str(ratchet.repo), "--title", "Add calc",
                     "--agent-command", "no-such-agent -p {prompt}")
    assert failed.returncode == 1
    run_id = ratchet.run_id()
    last = failed.stdout.strip().splitlines()[-1]
    assert "fix its template" not in last and "agent command template" not in last
    assert f"`ratchet retry {run_id} --agent-command TEMPLATE`" in last, last
    assert ratchet.status(run_id)["next_action"]["agent"] is True
    # A template that does not parse is refused before anything is recorded.
    bad = ratchet("retry", run_id, "--agent-command", "  ")
    assert bad.returncode == 2 and ratchet.status(run_id)["state"] == "failed"
    agent = ratchet.environ()["RATCHET_AGENT_COMMAND"]
    retried = ratchet("retry", run_id, "--agent-command", agent)
    assert retried.returncode == 0, retried.stderr
    status = ratchet.status(run_id)
    assert status["state"] == "awaiting_approval" and ratchet.agent_runs() == [
        "research.1", "specify.1"]
    [resumed] = [e for e in ratchet.events(run_id) if e["type"] == "RUN_RESUMED"]
    assert resumed["data"]["agent"] == {"command": agent}
    # The run keeps the agent it was given: the approval's implement step runs it.
    approved = ratchet.approve(run_id)
    assert approved.returncode == 0, approved.stderr
    assert ratchet.status(run_id)["state"] == "done"


@pytest.mark.slow
def test_runs_lists_newest_first(ratchet):
    ratchet.create(title="first")
    ratchet.create(title="second")
    listed = json.loads(ratchet("runs", "--json").stdout)
    assert [r["title"] for r in listed] == ["second", "first"]


def test_not_a_repository_is_a_usage_error(ratchet, tmp_path):
    (tmp_path / "plain").mkdir()
    result = ratchet("run", "--repo", str(tmp_path / "plain"), "--title", "x")
    assert result.returncode == 2 and "not a git repository" in result.stderr


def test_agent_failures_are_classified(ratchet):
    failed = ratchet.create(extra={"AGENT_EXIT": "research:3"})
    assert failed.returncode == 1
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "failed" and status["attempt"] == 1
    assert "exit" in status["reason"]


def test_a_loud_agent_leaves_at_most_the_log_cap_on_disk(ratchet):
    """A megabyte printed under a 64 KiB cap: the log kept is within the cap, and the failure's
    evidence says how much was printed and how much was left out."""
    cap = 65536
    failed = ratchet.create(extra={"AGENT_PRINT": str(1 << 20), "AGENT_EXIT": "research:3",
                                   "RATCHET_MAX_LOG_BYTES": str(cap)})
    assert failed.returncode == 1
    run_id = ratchet.run_id()
    [failure] = [e["data"]["evidence"] for e in ratchet.events(run_id)
                 if e["type"] == "STEP_FAILED"]
    assert failure["log_bytes"] >= 1 << 20
    assert failure["log_bytes"] - cap < failure["log_omitted_bytes"] < failure["log_bytes"]
    logs = list((ratchet.home / "scratch").rglob("agent.*.log"))
    assert logs and all(log.stat().st_size <= cap for log in logs)
    assert all(file.stat().st_size <= cap for file in ratchet.home.rglob("*")
               if file.is_file() and file.name != "ratchet.db")


def test_transient_agent_exit_is_retried_then_gives_up(ratchet):
    result = ratchet.create(extra={"AGENT_EXIT": "research:75", "RATCHET_MAX_ATTEMPTS": "2"})
    assert result.returncode == 1
    run_id = ratchet.run_id()
    status = ratchet.status(run_id)
    assert status["state"] == "failed" and status["attempt"] == 2
    types = [e["type"] for e in ratchet.events(run_id)]
    assert types.count("STEP_RETRY_SCHEDULED") == 1 and types.count("STEP_FAILED") == 2


def test_invalid_setting_names_the_variable(ratchet):
    result = ratchet("runs", extra={"RATCHET_LEASE_SECONDS": "soon"})
    assert result.returncode == 2 and "RATCHET_LEASE_SECONDS" in result.stderr


def test_repair_is_bounded_then_needs_human(tmp_path):
    config = "repair: {max_attempts: 1}\n" + "\n".join(
        line for line in CONFIG.splitlines() if not line.startswith("repair"))
    ratchet = Ratchet(home=tmp_path / "home",
                      repo=make_target_repo(tmp_path / "repo", config=config))
    ratchet.env["AGENT_NO_FIX"] = "1"
    ratchet.create()
    run_id = ratchet.run_id()
    result = ratchet("approve-spec", run_id, "--hash", ratchet.spec_hash(run_id))
    assert result.returncode == 1
    status = ratchet.status(run_id)
    assert status["state"] == "needs_human"
    assert "after 1 repair attempts (unit)" in status["reason"]
    assert status["completed_steps"][-4:] == ["implement.1", "verify.1", "repair.1", "verify.2"]
    assert "NEEDS_HUMAN" in {e["type"] for e in ratchet.events(run_id)}


@pytest.mark.slow
def test_an_unanswered_spec_times_out_to_needs_human(ratchet):
    ratchet.create(extra={"RATCHET_APPROVAL_TIMEOUT": "1"})
    run_id = ratchet.run_id()
    time.sleep(1.2)
    assert ratchet("resume", run_id).returncode == 1
    status = ratchet.status(run_id)
    assert status["state"] == "needs_human" and "approval timeout" in status["reason"]
    assert "APPROVAL_TIMED_OUT" in {e["type"] for e in ratchet.events(run_id)}


def test_a_malformed_repository_config_refuses_the_run_naming_file_and_line(tmp_path):
    broken = "verify:\n  checks:\n    - {id: unit, run: 'true', timeout: soon}\n"
    ratchet = Ratchet(home=tmp_path / "home",
                      repo=make_target_repo(tmp_path / "repo", config=broken))
    result = ratchet.create()
    # Refused where the mistake is made: no run is created on a config it could not read.
    assert result.returncode == 2
    assert ".github/ratchet.yml:3" in result.stderr and "timeout" in result.stderr
    assert json.loads(ratchet("runs", "--json").stdout) == []
    assert ratchet.agent_runs() == []


@pytest.mark.slow
def test_a_change_nothing_verifies_stops_as_not_verified(tmp_path):
    """Checks exist only for lib/; the agent's change is at the root: nothing verifies it, so
    the run is neither repaired nor published as verified, and says so."""
    config = ("verify:\n  workspaces:\n    - path: lib\n      checks:\n"
              "        - {id: unit, kind: test, run: 'true'}\n")
    ratchet = Ratchet(home=tmp_path / "home",
                      repo=make_target_repo(tmp_path / "repo", config=config))
    ratchet.create()
    run_id = ratchet.run_id()
    result = ratchet.approve(run_id)

    assert result.returncode == 1
    status = ratchet.status(run_id)
    assert status["state"] == "needs_human" and status["step"] == "verify.1"
    assert "nothing verifies this change" in status["reason"] and "calc.py" in status["reason"]
    assert "repair.1" not in ratchet.agent_runs()
    outbox = ratchet.outbox(run_id)
    [pull] = outbox.pull_requests
    assert pull["draft"] is True  # never marked ready
    [verify] = [c for c in outbox.check_runs if c["name"] == "ratchet/verify"]
    assert verify["conclusion"] == "neutral"
    assert "VERIFICATION_UNVERIFIED" in {e["type"] for e in ratchet.events(run_id)}


@pytest.mark.slow
def test_verify_again_checks_the_same_tree_once_the_outside_cause_is_fixed(tmp_path):
    """A check that needs something outside the tree (a service) fails; once it is back,
    ``ratchet verify-again`` verifies the checkpointed tree again: no agent runs, and the run
    publishes once."""
    ratchet = Ratchet(home=tmp_path / "home", repo=tmp_path / "repo")
    # What checks see of the host: a folder the operator shows them (RATCHET_SANDBOX_RO).
    outside = tmp_path / "outside"
    outside.mkdir()
    ratchet.env["RATCHET_SANDBOX_RO"] = str(outside)
    service = outside / "service-up"
    make_target_repo(ratchet.repo, config=(
        "repair: {max_attempts: 0}\nverify:\n  checks:\n"
        f'    - {{id: service, kind: test, run: "test -f {service}", timeout: 60}}\n'))
    ratchet.create()
    run_id = ratchet.run_id()

    early = ratchet("verify-again", run_id)  # nothing implemented yet: refused, says why
    assert early.returncode == 2
    assert "only on a stopped run with an implemented tree" in early.stderr
    assert "(the run is awaiting_approval)" in early.stderr

    stopped = ratchet.approve(run_id)
    assert stopped.returncode == 1, stopped.stderr
    assert ratchet.status(run_id)["state"] == "needs_human"
    head = ratchet.status(run_id)["completed_steps"][-1]
    assert head == "verify.1"

    service.write_text("up")
    again = ratchet("verify-again", run_id, "--json")
    assert again.returncode == 0, again.stderr
    final = json.loads(again.stdout.splitlines()[-1])
    assert final["state"] == "done"
    assert final["completed_steps"][-4:] == ["implement.1", "verify.1", "verify.2", "publish.1"]
    assert ratchet.agent_runs() == ["research.1", "specify.1", "implement.1"]  # no agent again
    types = [e["type"] for e in ratchet.events(run_id)]
    assert types.count("TESTS_FAILED") == 1 and types.count("VERIFICATION_PASSED") == 1
    assert types.count("SIGNAL_ACCEPTED") == 2 and types.count("SIGNAL_REFUSED") == 1
    # Each verification pushed its own commit with its check run; both hold the same tree (the
    # implement step's). The early request earned the one reply.
    ratchet.assert_published_once(run_id, verified_heads=2, replies=1)
    first, second = ratchet.branch_pushes(run_id)[-2:]
    assert git(ratchet.repo, "rev-parse", f"{first}^{{tree}}", f"{second}^{{tree}}").split() == [
        ratchet.branch_tree(run_id)] * 2


def test_a_relative_home_is_made_absolute_at_start(tmp_path, monkeypatch):
    """RATCHET_HOME=home, read from the folder the CLI starts in: the run's agents, checks and
    ledger find it there, whichever folder they work in."""
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"),
                      env={"RATCHET_HOME": "home"})
    monkeypatch.chdir(ratchet.home.parent)  # the CLI's folder, for the commands run in-process
    run_id, _ = drive_to_done(ratchet)
    assert ratchet.status(run_id)["state"] == "done"
    assert (tmp_path / "home" / "ratchet.db").is_file()
    assert ratchet.agent_runs()[:3] == ["research.1", "specify.1", "implement.1"]
