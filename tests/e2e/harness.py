"""Drive the real ``ratchet`` CLI in subprocesses against real git repositories.

Each ``Ratchet`` has its own RATCHET_HOME (ledger, worktrees, run directories) and starts every
command that may take a step in a new session, so a crash point's SIGKILL of the process group
takes down the CLI and its agent but never the test. The read-only commands (``status``,
``runs``, ``export``) of a SQLite home run the CLI's own ``main`` in this process instead: the
same code and output without a second interpreter's start-up, which was most of an end-to-end
test's CPU.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.gitrepo import git, make_repo

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "fixtures" / "scripted_agent.py"
# Commands that only read the ledger and the run directory: no crash point, no agent, no step.
READ_ONLY = frozenset({"status", "runs", "export"})
CONFIG = """\
repair: {max_attempts: 3}
verify:
  checks:
    - {id: unit, kind: test, run: "python3 -m unittest -q", timeout: 600}
"""


# The scripted and hostile agents' switches and report paths: the agents' environment is an
# allowlist, so a test names them in RATCHET_AGENT_ENV as an operator names an API key.
TEST_CHANNELS = ("AGENT_", "HOSTILE")


def with_agent_channels(env: dict[str, str]) -> dict[str, str]:
    """``env`` with RATCHET_AGENT_ENV naming every test channel it sets (beside any names it
    already lists)."""
    names = [name for name in env.get("RATCHET_AGENT_ENV", "").split(",") if name]
    names += sorted(name for name in env if name.startswith(TEST_CHANNELS))
    return {**env, "RATCHET_AGENT_ENV": ",".join(dict.fromkeys(names))}


def make_target_repo(path: Path, *, config: str = CONFIG) -> Path:
    make_repo(path, {".github/ratchet.yml": config, "README.md": "# demo\n"})
    return path


@dataclass
class Ratchet:
    home: Path
    repo: Path
    env: dict[str, str] = field(default_factory=dict)
    lease_seconds: float = 1.0

    @property
    def shared(self) -> Path:
        """The folder the sandbox shares with the agent (RATCHET_SANDBOX_RW): its log, and the
        files tests use to hold it."""
        return self.home.parent / "shared"

    @property
    def agent_log(self) -> Path:
        """Where the scripted agent counts its runs."""
        return self.shared / "agent.log"

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("RATCHET_", "AGENT_", "GIT_"))}
        return with_agent_channels({
            **base,
            "RATCHET_HOME": str(self.home),
            "RATCHET_AGENT_COMMAND": f"{sys.executable} {AGENT}",
            "RATCHET_LEASE_SECONDS": str(self.lease_seconds),
            "AGENT_LOG": str(self.agent_log),
            "RATCHET_SANDBOX_RW": str(self.shared),
            **self.env,
            **(extra or {}),
        })

    def start(self, *args: str, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
        self.shared.mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args], cwd=self.home.parent,
            env=self.environ(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )

    def __call__(self, *args: str, extra: dict[str, str] | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
        environ = self.environ(extra)
        if args and args[0] in READ_ONLY and "RATCHET_STORE_URL" not in environ:
            return self._read(args, environ)
        proc = self.start(*args, extra=extra)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"ratchet {args} timed out\n{out}\n{err}") from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def _read(self, args: tuple[str, ...], environ: dict[str, str]
              ) -> subprocess.CompletedProcess[str]:
        """``ratchet ARGS`` through ``app.cli.main`` in this process, under the command's own
        environment (no crash point armed), with its exit code and output as a subprocess's."""
        from app.cli import main

        self.shared.mkdir(parents=True, exist_ok=True)
        saved = dict(os.environ)
        out, err = io.StringIO(), io.StringIO()
        os.environ.clear()
        os.environ.update({k: v for k, v in environ.items() if k != "RATCHET_CRASH_AT"})
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(list(args))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return subprocess.CompletedProcess(["ratchet", *args], code, out.getvalue(),
                                           err.getvalue())

    def create(self, *, extra: dict[str, str] | None = None,
               title: str = "Add calc") -> subprocess.CompletedProcess[str]:
        return self("run", "--repo", str(self.repo), "--title", title, "--body",
                    "Add calc.add(a, b).", extra=extra)

    def run_id(self) -> str:
        result = self("runs", "--json")
        assert result.returncode == 0, result.stderr
        [run] = json.loads(result.stdout)
        return run["run_id"]

    def status(self, run_id: str) -> dict[str, Any]:
        result = self("status", run_id, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def spec_hash(self, run_id: str) -> str:
        return str(self.status(run_id)["spec_sha256"])[:12]

    def approve(self, run_id: str, *options: str) -> subprocess.CompletedProcess[str]:
        """``ratchet approve-spec`` with the current spec's hash."""
        return self("approve-spec", run_id, "--hash", self.spec_hash(run_id), *options)

    def agent_runs(self) -> list[str]:
        if not self.agent_log.exists():
            return []
        return self.agent_log.read_text().split()

    def export(self, run_id: str, dest: Path) -> Path:
        result = self("export", run_id, str(dest))
        assert result.returncode == 0, result.stderr
        return dest / run_id

    def events(self, run_id: str) -> list[dict[str, Any]]:
        folder = self.export(run_id, self.home.parent / "export")
        return [json.loads(line) for line in (folder / "events.ndjson").read_text().splitlines()]

    def branch_tree(self, run_id: str) -> str:
        return git(self.repo, "rev-parse", f"ratchet/{run_id}^{{tree}}").strip()

    def outbox(self, run_id: str) -> Outbox:
        """Every record the local sink wrote for the run, duplicates kept, oldest first."""
        folder = self.home / "runs" / run_id / "outbox"
        found = Outbox()
        for path in sorted(folder.rglob("*")):
            if not path.is_file():
                continue
            text = path.read_text()
            if path.suffix == ".md":
                name = text.split("ratchet:name=", 1)[1].split(" -->", 1)[0] if (
                    "ratchet:name=" in text) else None
                keys = [k.split(" -->", 1)[0] for k in text.split("ratchet:key=")[1:]]
                found.comments.append({"name": name, "keys": keys, "text": text})
            else:
                record = json.loads(text)
                {"pull-requests": found.pull_requests, "check-runs": found.check_runs,
                 "reactions": found.reactions}[path.parent.name].append(record)
        return found

    def branch_pushes(self, run_id: str) -> list[str]:
        """The commits the run's branch pointed at, oldest first (its reflog)."""
        log = git(self.repo, "reflog", "show", "--format=%H", f"ratchet/{run_id}")
        return list(reversed(log.split()))

    def assert_published_once(self, run_id: str, *, verified_heads: int = 2,
                              spec_heads: int = 1, replies: int = 0) -> None:
        """What a finished run leaves on its forge: one tracking comment (edited in place),
        one pull request (draft, then ready), one check run per head and name, the replies
        its refused signals earned, and a branch that only ever fast-forwarded."""
        outbox = self.outbox(run_id)
        tracking = [c for c in outbox.comments if c["name"] == f"{run_id}/tracking"]
        assert len(tracking) == 1, outbox.comments
        assert f"`{run_id}`: done" in tracking[0]["text"]
        assert len([c for c in outbox.comments if c["name"] is None]) == replies
        [pull] = outbox.pull_requests
        assert pull["branch"] == f"ratchet/{run_id}" and pull["draft"] is False
        assert any(k.endswith(":pull-request") and ":specify." in k for k in pull["keys"])
        ids = Counter(c["external_id"] for c in outbox.check_runs)
        assert set(ids.values()) == {1}, ids
        by_name = Counter(c["name"] for c in outbox.check_runs)
        assert by_name == {"ratchet/spec": spec_heads, "ratchet/verify": verified_heads}, by_name
        pushes = self.branch_pushes(run_id)
        assert len(pushes) == spec_heads + verified_heads, pushes
        for older, newer in itertools.pairwise(pushes):
            assert git(self.repo, "rev-parse", f"{newer}^").strip() == older  # fast-forward
        heads = {c["head_sha"] for c in outbox.check_runs}
        assert heads == set(pushes)
        final = [c for c in outbox.check_runs if c["head_sha"] == pushes[-1]]
        assert [c["conclusion"] for c in final] == ["success"]


@dataclass
class Outbox:
    comments: list[dict[str, Any]] = field(default_factory=list)
    pull_requests: list[dict[str, Any]] = field(default_factory=list)
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)


def processes_with_env(name: str, value: str, *, agents_only: bool = True) -> list[int]:
    """Host pids of live processes whose environment holds ``name=value``.

    An agent in its sandbox sees only its own PID namespace, so the pid it reports means
    nothing outside; tests find it (and its sandbox) by a variable they gave it. With
    ``agents_only``, only processes started for an agent step (they carry RATCHET_PHASE) count,
    not the Ratchet processes that passed the variable on.
    """
    wanted = f"{name}={value}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            variables = environ.read_bytes().split(b"\0")
        except OSError:
            continue  # it ended while we looked, or is not ours to read
        is_agent = any(v.startswith(b"RATCHET_PHASE=") for v in variables)
        if wanted in variables and (is_agent or not agents_only):
            pid = int(environ.parent.name)
            if process_alive(pid):
                found.append(pid)
    return sorted(found)


def process_alive(pid: int) -> bool:
    """Running (not a zombie awaiting its reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def ancestor_among(pid: int, candidates: set[int]) -> int:
    """The first ancestor of ``pid`` (itself included) that is one of ``candidates``."""
    while pid > 1:
        if pid in candidates:
            return pid
        pid = parent_of(pid)
    raise AssertionError(f"no ancestor of {pid} among {sorted(candidates)}")


def drive_to_done(ratchet: Ratchet, *, crash: str | None = None,
                  max_commands: int = 12) -> tuple[str, bool]:
    """Run, approve and resume until done; arm ``crash`` until it has fired once.

    Returns the run id and whether the crash point fired (the CLI died of SIGKILL).
    """
    armed = {"RATCHET_CRASH_AT": crash} if crash else {}
    fired = False

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        nonlocal fired
        result = ratchet(*args, extra=None if fired else armed)
        if result.returncode == -signal.SIGKILL:
            assert crash and not fired, f"unexpected SIGKILL of {args}"
            fired = True
        else:
            assert result.returncode == 0, f"{args} -> {result.returncode}\n{result.stderr}"
        return result

    call("run", "--repo", str(ratchet.repo), "--title", "Add calc", "--body",
         "Add calc.add(a, b).")
    run_id = ratchet.run_id()
    for _ in range(max_commands):
        status = ratchet.status(run_id)
        state = status["state"]
        if state == "done" and status["next_action"]["kind"] == "none_done":
            return run_id, fired
        if state == "awaiting_approval" and not status["pending_signals"]:
            call("approve-spec", run_id, "--hash", str(status["spec_sha256"])[:12])
        else:
            assert state not in {"failed", "needs_human"}, ratchet.status(run_id)
            call("resume", run_id)
    raise AssertionError(f"run {run_id} did not finish: {ratchet.status(run_id)}")
