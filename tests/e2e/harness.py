"""Drive the real ``ratchet`` CLI in subprocesses against real git repositories.

Each ``Ratchet`` has its own RATCHET_HOME (ledger, worktrees, run directories) and starts every
command in a new session, so a crash point's SIGKILL of the process group takes down the CLI
and its agent but never the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.gitrepo import git, make_repo

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "fixtures" / "scripted_agent.py"
CONFIG = """\
repair: {max_attempts: 3}
verify:
  checks:
    - {id: unit, kind: test, run: "python3 -m unittest -q", timeout: 600}
"""


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
    def agent_log(self) -> Path:
        return self.home.parent / f"{self.home.name}-agent.log"

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("RATCHET_", "AGENT_", "GIT_"))}
        return {
            **base,
            "RATCHET_HOME": str(self.home),
            "RATCHET_AGENT_COMMAND": f"{sys.executable} {AGENT}",
            "RATCHET_LEASE_SECONDS": str(self.lease_seconds),
            "AGENT_LOG": str(self.agent_log),
            **self.env,
            **(extra or {}),
        }

    def start(self, *args: str, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args], cwd=self.home.parent,
            env=self.environ(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )

    def __call__(self, *args: str, extra: dict[str, str] | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
        proc = self.start(*args, extra=extra)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"ratchet {args} timed out\n{out}\n{err}") from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

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
        return self.status(run_id)["next_action"].split("--hash ")[1].split("`")[0]

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

    def outbox_records(self, run_id: str) -> list[tuple[str, str]]:
        """(kind folder, effect key) for every record the local sink wrote, duplicates kept."""
        outbox = self.home / "runs" / run_id / "outbox"
        found = []
        for path in sorted(outbox.rglob("*")):
            if not path.is_file():
                continue
            text = path.read_text()
            if path.suffix == ".md":
                key = text.split("ratchet:key=", 1)[1].split(" -->", 1)[0]
            else:
                key = json.loads(text)["key"]
            found.append((path.parent.name, key))
        return found


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
        state = ratchet.status(run_id)["state"]
        if state == "done":
            return run_id, fired
        if state == "awaiting_approval":
            call("approve-spec", run_id, "--hash", ratchet.spec_hash(run_id))
        else:
            assert state not in {"failed", "needs_human"}, ratchet.status(run_id)
            call("resume", run_id)
    raise AssertionError(f"run {run_id} did not finish: {ratchet.status(run_id)}")
