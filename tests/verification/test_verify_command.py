"""`ratchet verify` as the `ratchet` executable runs it (``app.entry``): what it loads, what it
prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from verify_helpers import write

REPO_ROOT = Path(__file__).resolve().parents[2]

# Modules of the rest of Ratchet (the service, the queue, the ledger, the engine, agents,
# GitHub, the operator's settings) that planning never needs.
NOT_FOR_PLANNING = (
    "starlette", "uvicorn", "dramatiq", "redis", "sqlalchemy", "psycopg", "httpx",
    "pydantic_settings", "app.cli", "app.settings", "app.dashboard", "runner.ledger",
    "runner.engine", "runner.agents", "runner.sandbox", "runner.egress", "github",
    "verification.execute", "verification.evidence",
)


def ratchet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app.entry", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)


def test_planning_loads_none_of_the_rest_of_ratchet(monorepo: Path) -> None:
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    code = ("import json, sys; from app.entry import main;"
            f" status = main(['verify', '--repo', {str(monorepo)!r}, '--plan-only']);"
            " print(json.dumps([status, sorted(sys.modules)]))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    status, modules = json.loads(run.stdout.splitlines()[-1])
    assert status == 0
    assert "web:node-test" in run.stdout
    loaded = [m for m in modules
              if any(m == name or m.startswith(name + ".") for name in NOT_FOR_PLANNING)]
    assert loaded == []


def test_checks_run_with_the_operators_settings_loaded_then(monorepo: Path) -> None:
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    run = ratchet("verify", "--repo", str(monorepo), "--json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert [(r["workspace"], r["status"]) for r in document["results"]] == [("web", "passed")]


def test_unusable_settings_stop_verify_before_any_check(monorepo: Path) -> None:
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    code = ("import os, sys; os.environ['RATCHET_SANDBOX'] = 'no-such-mode';"
            " from app.entry import main;"
            f" sys.exit(main(['verify', '--repo', {str(monorepo)!r}]))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2
    assert "RATCHET_SANDBOX" in run.stderr
    assert not (monorepo / "web" / "node_modules").exists()


def test_other_commands_and_help_go_to_the_whole_cli() -> None:
    run = ratchet("--help")
    assert run.returncode == 0
    assert "verify" in run.stdout and "status" in run.stdout
    run = ratchet("-v", "verify", "--help")
    assert run.returncode == 0
    assert "--plan-only" in run.stdout
