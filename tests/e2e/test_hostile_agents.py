"""Hostile agents against the real CLI: the agent reaches nothing but its worktree.

Each test runs tests/fixtures/hostile_agent.py, which attacks from inside its worktree and then
does the scripted agent's normal work. What the attacks could not do is asserted from outside:
no code of the agent run by Ratchet (marker files), no file outside the worktree read or
changed, no secret seen by the agent (its own report and the ledger), no descendant alive after
the step, and the run where the policy puts it.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.harness import (
    AGENT,
    ROOT,
    Ratchet,
    drive_to_done,
    make_target_repo,
    processes_with_env,
)
from tests.gitrepo import git

HOSTILE = ROOT / "tests" / "fixtures" / "hostile_agent.py"
CANARY = "canary-7f3e1d9a0b2c"  # in Ratchet's environment under a name no redactor masks
SECRET_FILE_TEXT = "host-secret-5c1d8e"


class Attack:
    """A hostile run's paths: what the agent is pointed at, and what it must never reach."""

    def __init__(self, tmp_path: Path, attacks: str, *, sandbox: str = "bwrap") -> None:
        self.tmp = tmp_path
        self.ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
        self.report = self.ratchet.shared / "report"
        self.mark = tmp_path / "pwned"  # only code run outside the sandbox could create it
        self.outside = tmp_path / "outside"  # a folder the agent must not read or change
        self.outside.mkdir()
        (self.outside / "precious.txt").write_text("untouched\n")
        self.target = tmp_path / "host" / "repository-analysis.md"
        self.target.parent.mkdir()
        self.target.write_text(f"{SECRET_FILE_TEXT}\n")
        self.report.mkdir(parents=True)
        self.ratchet.env.update({
            "RATCHET_AGENT_COMMAND": f"{sys.executable} {HOSTILE} {AGENT}",
            "RATCHET_SANDBOX": sandbox,
            "RATCHET_PLANTED_CANARY": CANARY,
            "HOSTILE": attacks,
            "HOSTILE_REPORT": str(self.report),
            "HOSTILE_MARK": str(self.mark),
            "HOSTILE_OUTSIDE": str(self.outside),
            "HOSTILE_TARGET": str(self.target),
        })

    def seen(self, attack: str) -> str:
        """What the agent reported for ``attack`` (it must have tried)."""
        path = self.report / attack
        assert path.exists(), f"the agent never tried {attack}"
        return path.read_text()

    def ledger_bytes(self) -> bytes:
        return b"".join(p.read_bytes() for p in self.ratchet.home.glob("ratchet.db*"))

    def assert_nothing_escaped(self) -> None:
        assert not self.mark.exists(), "Ratchet ran code the agent planted"
        assert sorted(p.name for p in self.outside.iterdir()) == ["precious.txt"]
        assert (self.outside / "precious.txt").read_text() == "untouched\n"
        ledger = self.ledger_bytes()
        assert SECRET_FILE_TEXT.encode() not in ledger
        assert CANARY.encode() not in ledger
        assert self.target.read_text() == f"{SECRET_FILE_TEXT}\n"


def test_git_attacks_proc_ledger_and_a_daemon_in_research_change_nothing(tmp_path):
    attack = Attack(tmp_path, "research:gitdir,research:fsmonitor,research:proc,"
                              "research:ledger,research:setsid")
    run_id, _ = drive_to_done(attack.ratchet)

    status = attack.ratchet.status(run_id)
    assert status["state"] == "done"
    attack.assert_nothing_escaped()
    # The agent read no secret: Ratchet's settings are in no environment it can see, and
    # Ratchet's home (ledger, mirrors) is an empty folder to it.
    proc = attack.seen("proc")
    assert CANARY not in proc and "RATCHET_STORE_URL" not in proc
    ledger = attack.seen("ledger")
    assert "SQLite format" not in ledger and "ratchet.db: [Errno 2] No such file" in ledger
    assert "home: ['scratch', 'work']" in ledger  # only the mount points of its own folders
    # Its daemon died with the sandbox: nothing wrote into the worktree after the step.
    attack.seen("setsid")
    time.sleep(2.0)
    assert not (attack.report / "setsid-survived").exists()
    assert not processes_with_env("HOSTILE_REPORT", str(attack.report))
    assert "late.txt" not in git(attack.ratchet.repo, "ls-tree", "-r", "--name-only",
                                 f"ratchet/{run_id}")
    attack.seen("gitdir")
    assert Counter(attack.ratchet.agent_runs()) == Counter(
        ["research.1", "specify.1", "implement.1", "repair.1"])


def test_an_agent_and_its_checks_see_nothing_of_the_host_and_a_planted_hook_dies_with_its_step(
        tmp_path):
    """Through the real CLI: the agent (research) and a check it wrote (implement) look for the
    runner user's home, /etc/shadow, the runner's tokens and the Unix sockets of host services;
    the agent then plants a hook in its seeded CLI config. The next run's agent gets the seed
    as the operator left it, and no check ever sees the seed."""
    home_file = Path.home() / f".ratchet-e2e-{uuid.uuid4().hex[:8]}"
    home_file.write_text(SECRET_FILE_TEXT)
    seed = tmp_path / "seed" / ".claude"
    seed.mkdir(parents=True)
    (seed / "settings.json").write_text('{"model": "seeded"}')
    sockets = [tmp_path / "service.sock"]
    if os.access("/run", os.W_OK):
        sockets.append(Path("/run") / f"ratchet-e2e-{uuid.uuid4().hex[:8]}.sock")
    listeners = []
    for path in sockets:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.listen(8)
        listener.setblocking(False)
        listeners.append(listener)
    attack = Attack(tmp_path, "research:host,implement:check_host")
    token = "ghs_" + "e2eToken1234567890abcdefghijklmnopqr"
    attack.ratchet.env.update({
        "GH_TOKEN": token, "GITHUB_TOKEN": token,
        "RATCHET_AGENT_HOME_SEED": str(seed),
        "HOSTILE_FILES": ",".join([str(home_file), str(seed / "settings.json"), "/etc/shadow"]),
        "HOSTILE_SOCKETS": ",".join(map(str, sockets)),
    })
    try:
        run_id, _ = drive_to_done(attack.ratchet)
        attack.ratchet.env["HOSTILE"] = "research:host"
        attack.ratchet.create()
        for listener in listeners:
            with pytest.raises(BlockingIOError):
                listener.accept()  # no agent and no check reached a host service's socket
    finally:
        home_file.unlink()
        for listener, path in zip(listeners, sockets, strict=True):
            listener.close()
            path.unlink(missing_ok=True)

    assert attack.ratchet.status(run_id)["state"] == "done"
    attack.assert_nothing_escaped()
    assert sorted(p.name for p in seed.iterdir()) == ["settings.json"]
    assert (seed / "settings.json").read_text() == '{"model": "seeded"}'
    first, *_, last = [json.loads(line) for line in attack.seen("host").splitlines()]
    for seen in (first, last):
        # The runner's home is not there and /etc/shadow is masked; the seed is not visible at
        # its own path, only as the copy in the agent's home.
        assert seen["files"][0] == "FileNotFoundError" and seen["files"][1] == "FileNotFoundError"
        assert seen["files"][2] in ("", "PermissionError")
        assert set(seen["sockets"]) == {"FileNotFoundError"}
        assert token not in json.dumps(seen) and SECRET_FILE_TEXT not in json.dumps(seen)
        assert seen["environ"]["HOME"] != str(Path.home())
    # The second run's agent got the operator's seed, not what the first one planted.
    assert first["settings"] == last["settings"] == '{"model": "seeded"}'
    assert ".claude/hooks.sh" not in last["home"] and "hooks.sh" not in json.dumps(last)
    # The check: nothing of the host, and an empty home of its own (no seed).
    log = (attack.ratchet.export(run_id, tmp_path / "export") / "verification/unit.log")
    [line] = [line for line in log.read_text().splitlines() if line.startswith("HOST-PROBE ")]
    check = json.loads(line.removeprefix("HOST-PROBE "))
    assert check["files"][:2] == ["FileNotFoundError", "FileNotFoundError"]
    assert check["files"][2] in ("", "PermissionError")
    assert set(check["sockets"]) == {"FileNotFoundError"}
    assert check["home"] == [] and check["settings"] == "FileNotFoundError"
    assert not {"GH_TOKEN", "GITHUB_TOKEN", "HOSTILE_REPORT"} & set(check["environ"])
    assert token.encode() not in attack.ledger_bytes()


def test_an_agent_and_its_checks_reach_nothing_of_the_host_and_the_run_says_what_was_blocked(
        tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    attack = Attack(tmp_path, "research:network,implement:check_network")
    attack.ratchet.env["HOSTILE_PORT"] = str(listener.getsockname()[1])
    try:
        run_id, _ = drive_to_done(attack.ratchet)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing reached the host's loopback
    finally:
        listener.close()

    assert attack.ratchet.status(run_id)["state"] == "done"
    seen = attack.seen("network")
    assert "direct: [Errno 111] Connection refused" in seen
    assert "pypi.org:443: HTTP/1.1 403 Forbidden" in seen
    with sqlite3.connect(attack.ratchet.home / "ratchet.db") as db:
        bodies = dict(db.execute("SELECT step, body FROM checkpoints WHERE run_id = ?",
                                 (run_id,)))
    research = json.loads(bodies["research.1"])
    verify = [json.loads(body) for step, body in bodies.items() if step.startswith("verify")]
    assert "blocked a connection to pypi.org:443: add it to agent.network.allow in" \
        " .github/ratchet.yml" in json.dumps(research)
    assert "loopback address" in json.dumps(research)
    assert "blocked a connection to pypi.org:443: add it to verify.network in" \
        " .github/ratchet.yml" in json.dumps(verify)


@pytest.mark.slow
def test_git_attacks_fail_without_the_sandbox_too(tmp_path):
    """The git hardening alone (explicit git dir, safe settings, neutral attributes) holds
    when an operator opts out of the sandbox: the agent's .git is never read."""
    attack = Attack(tmp_path, "research:gitdir,research:fsmonitor,implement:filter",
                    sandbox="none")
    run_id, _ = drive_to_done(attack.ratchet)

    assert attack.ratchet.status(run_id)["state"] == "done"
    assert not attack.mark.exists(), "Ratchet ran a filter, hook or fsmonitor the agent set"
    assert (attack.outside / "precious.txt").read_text() == "untouched\n"
    assert "wrote" in attack.seen("fsmonitor")  # unconfined, it did reach the mirror's config
    assert_published_byte_for_byte(attack.ratchet, run_id)
    events = {e["type"] for e in attack.ratchet.events(run_id)}
    assert "POLICY_VIOLATION" not in events


@pytest.mark.slow
def test_filters_and_attributes_do_not_change_what_is_verified_and_published(tmp_path):
    attack = Attack(tmp_path, "implement:filter,implement:fsmonitor")
    run_id, _ = drive_to_done(attack.ratchet)

    assert attack.ratchet.status(run_id)["state"] == "done"
    attack.assert_nothing_escaped()
    assert_published_byte_for_byte(attack.ratchet, run_id)


def assert_published_byte_for_byte(ratchet: Ratchet, run_id: str) -> None:
    """The published commit holds the agent's bytes: no clean filter, no eol conversion."""
    branch = f"ratchet/{run_id}"
    assert git(ratchet.repo, "show", f"{branch}:planted.py") == "PLANTED = True\n"
    lf = git(ratchet.repo, "cat-file", "blob", f"{branch}:lf.txt")
    assert lf == "one\ntwo\n"
    assert "filter=evil" in git(ratchet.repo, "show", f"{branch}:.gitattributes")


@pytest.mark.parametrize("attack_name", ["output_symlink", "output_dir_symlink"])
def test_an_output_symlink_is_a_policy_violation_and_is_never_followed(tmp_path, attack_name):
    attack = Attack(tmp_path, f"research:{attack_name}")
    result = attack.ratchet.create()

    assert result.returncode == 1
    run_id = attack.ratchet.run_id()
    status = attack.ratchet.status(run_id)
    assert status["state"] == "needs_human"
    assert "RATCHET_OUTPUT" in status["reason"] and "symlink" in status["reason"]
    attack.seen(attack_name)
    attack.assert_nothing_escaped()
    assert "research/repository-analysis.md" not in export_names(attack, run_id)


def test_symlinks_out_of_the_worktree_and_huge_files_stop_the_run_unread(tmp_path):
    attack = Attack(tmp_path, "implement:symlink_out,implement:big_file")
    assert attack.ratchet.create().returncode == 0
    run_id = attack.ratchet.run_id()
    result = attack.ratchet.approve(run_id)

    assert result.returncode == 1
    status = attack.ratchet.status(run_id)
    assert status["state"] == "needs_human"
    for name in ("escape", "escape-relative", "huge.bin"):
        assert name in status["reason"]
    attack.assert_nothing_escaped()
    # The 200 MB file was refused by its size, never hashed into the ledger or the mirror.
    assert len(attack.ledger_bytes()) < 20 * 1024 * 1024
    mirror_size = sum(p.stat().st_size for p in (attack.ratchet.home / "work").rglob("*")
                      if p.is_file() and ".git" in str(p.parent))
    assert mirror_size < 20 * 1024 * 1024
    events = attack.ratchet.events(run_id)
    violation = next(e for e in events if e["type"] == "STEP_FAILED")
    kinds = {f["path"]: f["kind"] for f in violation["data"]["evidence"]["findings"]}
    assert kinds == {"escape": "symlink_out", "escape-relative": "symlink_out",
                     "huge.bin": "too_large"}
    # The worktree was reset to the last checkpoint without reading them.
    worktree = next((attack.ratchet.home / "work" / "runs" / run_id).iterdir())
    assert not (worktree / "huge.bin").exists() and not (worktree / "escape").is_symlink()


@pytest.mark.slow
def test_a_file_name_that_is_not_utf8_is_verified_published_and_shown(tmp_path):
    attack = Attack(tmp_path, "implement:binary_name")
    run_id, _ = drive_to_done(attack.ratchet)

    assert attack.ratchet.status(run_id)["state"] == "done"
    names = subprocess.run(["git", "-C", str(attack.ratchet.repo), "ls-tree", "-z", "-r",
                            "--name-only", f"ratchet/{run_id}"], capture_output=True, check=True)
    assert b"caf\xe9.txt" in names.stdout.split(b"\0")
    folder = attack.ratchet.export(run_id, tmp_path / "export")
    assert "caf\\xe9.txt" in json.loads((folder / "verification/result.json").read_text())[
        "diff_stat"]


def test_an_ended_runs_scratch_keeps_only_redacted_agent_logs(tmp_path):
    attack = Attack(tmp_path, "research:leak_and_fail")
    token = "tok-91c2e7d4a8b3"
    # The operator gives the agent its key (RATCHET_AGENT_ENV); the agent prints it.
    attack.ratchet.env.update({"MY_API_TOKEN": token, "RATCHET_AGENT_ENV": "MY_API_TOKEN"})
    assert attack.ratchet.create().returncode == 1
    run_id = attack.ratchet.run_id()

    assert attack.ratchet.status(run_id)["state"] == "failed"
    left = [p for p in (attack.ratchet.home / "scratch" / run_id).rglob("*") if p.is_file()]
    assert left and all(p.suffix == ".log" for p in left), left
    logs = "".join(p.read_text() for p in left)
    assert "debug token=***" in logs and token not in logs


@pytest.mark.slow
def test_a_corrupt_artifact_stops_the_run_naming_it_and_commands_still_work(tmp_path):
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    assert ratchet.create().returncode == 0
    run_id = ratchet.run_id()
    spec_hash = ratchet.spec_hash(run_id)
    with sqlite3.connect(ratchet.home / "ratchet.db") as db:
        [(sha,)] = db.execute("SELECT sha256 FROM artifacts WHERE run_id = ? AND path = ?",
                              (run_id, "research/repository-analysis.md"))
        db.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (b"tampered\n", sha))
    actual = hashlib.sha256(b"tampered\n").hexdigest()

    approved = ratchet("approve-spec", run_id, "--hash", spec_hash)  # implement reads research

    assert approved.returncode == 1, approved.stderr
    status = ratchet.status(run_id)
    assert status["state"] == "needs_human"
    for part in (run_id, "research/repository-analysis.md", sha, actual):
        assert part in status["reason"]
    assert "implement.1" not in ratchet.agent_runs()
    exported = ratchet("export", run_id, str(tmp_path / "export"))
    assert exported.returncode == 0, exported.stderr
    note = (tmp_path / "export" / run_id / "research/repository-analysis.md.corrupt").read_text()
    assert sha in note and actual in note
    cancelled = ratchet("cancel", run_id)  # a stopped run can still be cancelled
    assert cancelled.returncode == 0, cancelled.stderr
    assert ratchet.status(run_id)["state"] == "cancelled"
    assert "ended" in ratchet("cancel", run_id).stderr


def export_names(attack: Attack, run_id: str) -> set[str]:
    folder = attack.ratchet.export(run_id, attack.tmp / "export")
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}

