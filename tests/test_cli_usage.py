"""Usage errors are caught where they are made: one line, exit 2, no traceback, nothing created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitrepo import make_repo

BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8)
)


def ratchet(home: Path, *args: str, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RATCHET_", "GIT_"))}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], capture_output=True, text=True,
        env={**base, "RATCHET_HOME": str(home), **(env or {})}, timeout=timeout,
        cwd=home.parent,
    )


def assert_refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) <= 2, result.stderr  # argparse prints its usage line first
    for word in words:
        assert word in result.stderr, result.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    make_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    return tmp_path / "repo"


def no_runs(home: Path) -> bool:
    listed = ratchet(home, "runs", "--json")
    return listed.returncode == 0 and json.loads(listed.stdout) == []


@pytest.mark.parametrize(("template", "words"), [
    ("claude -p {promt}", ("unknown placeholder {promt}", "allowed: {prompt}")),
    ("claude -p 'unbalanced", ("cannot be split",)),
    ("", ("no agent command",)),
])
def test_a_bad_agent_template_is_refused_at_run(tmp_path: Path, repo: Path, template: str,
                                                words: tuple[str, ...]) -> None:
    home = tmp_path / "home"
    result = ratchet(home, "run", "--repo", str(repo), "--title", "t", "--agent-command",
                     template)
    assert_refused(result, *words)
    assert no_runs(home)


def test_a_hostile_config_is_refused_at_run_naming_the_file(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", {".github/ratchet.yml": BILLION_LAUGHS})
    home = tmp_path / "home"
    # ratchet()'s timeout guards against a hang; bench/config.py measures how fast it is refused.
    result = ratchet(home, "run", "--repo", str(tmp_path / "repo"), "--title", "t",
                     "--agent-command", "true {prompt}")
    assert_refused(result, ".github/ratchet.yml", "aliases")
    assert no_runs(home)


@pytest.mark.parametrize(("variable", "value", "words"), [
    ("RATCHET_STORE_URL", "mysql://db/ratchet", ("RATCHET_STORE_URL", "'mysql'")),
    ("RATCHET_LEASE_SECONDS", "inf", ("RATCHET_LEASE_SECONDS", "finite")),
    ("RATCHET_LEASE_SECONDS", "nan", ("RATCHET_LEASE_SECONDS",)),
    ("RATCHET_LEASE_SECONDS", "0.5", ("RATCHET_LEASE_SECONDS", "1")),
    ("RATCHET_LEASE_SECONDS", "90000", ("RATCHET_LEASE_SECONDS", "86400")),
    ("RATCHET_SANDBOX", "docker", ("RATCHET_SANDBOX", "bwrap")),
    ("RATCHET_AGENT_ENV", "ANTHROPIC_API_KEY,RATCHET_STORE_URL",
     ("RATCHET_AGENT_ENV", "RATCHET_STORE_URL configures Ratchet")),
    ("RATCHET_CHECK_ENV", "HOME", ("RATCHET_CHECK_ENV", "HOME is set by Ratchet")),
    ("RATCHET_AGENT_HOME_SEED", ".claude", ("RATCHET_AGENT_HOME_SEED", "not an absolute path")),
])
def test_bad_settings_are_one_line_errors(tmp_path: Path, variable: str, value: str,
                                          words: tuple[str, ...]) -> None:
    result = ratchet(tmp_path / "home", "runs", env={variable: value})
    assert_refused(result, *words)


def test_a_home_that_is_a_file_or_a_shared_folder_inside_it_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    assert_refused(ratchet(tmp_path / "file", "runs"), "RATCHET_HOME", "is a file")
    home = tmp_path / "home"
    inside = ratchet(home, "verify", "--repo", str(tmp_path),
                     env={"RATCHET_SANDBOX_RW": str(home / "cache")})
    assert_refused(inside, "RATCHET_SANDBOX_RW", "inside")


def test_a_shared_or_tool_folder_that_holds_a_cli_config_a_home_or_tmp_is_refused(
        tmp_path: Path) -> None:
    """A folder every agent writes must never be one a CLI reads its config from: a hook
    planted there would run in every later agent."""
    seeded = ratchet(tmp_path / "home", "verify", "--repo", str(tmp_path), env={
        "RATCHET_AGENT_HOME_SEED": str(tmp_path / "cli" / ".claude"),
        "RATCHET_SANDBOX_RW": str(tmp_path / "cli")})
    assert_refused(seeded, "RATCHET_SANDBOX_RW", "overlaps the seeded CLI config")
    shown = ratchet(tmp_path / "home", "verify", "--repo", str(tmp_path),
                    env={"RATCHET_SANDBOX_RO": "/"})
    assert_refused(shown, "RATCHET_SANDBOX_RO", "holds the runner's home")
    private = ratchet(tmp_path / "home", "verify", "--repo", str(tmp_path),
                      env={"RATCHET_SANDBOX_RO": "/run"})
    assert_refused(private, "RATCHET_SANDBOX_RO", "sockets")


def test_export_into_a_file_and_approve_without_a_hash_are_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "target").write_text("a file")
    assert_refused(ratchet(home, "export", "r-1", str(tmp_path / "target")), "is a file")
    assert_refused(ratchet(home, "approve-spec", "r-1"), "--hash")


def test_a_missing_bubblewrap_is_refused_at_run_with_the_remedy(tmp_path: Path,
                                                                repo: Path) -> None:
    home = tmp_path / "home"
    result = ratchet(home, "run", "--repo", str(repo), "--title", "t", "--agent-command",
                     "true {prompt}", env={"PATH": "/nonexistent"})
    assert_refused(result, "bwrap", "apt-get install bubblewrap", "RATCHET_SANDBOX=none")


def test_a_local_command_loads_neither_the_github_stack_nor_the_queue(tmp_path: Path) -> None:
    """Every ``ratchet`` command starts a Python process; on a host without an App, building
    the engine (``resume`` does, then finds no such run) must not pay for the GitHub client
    (aiohttp, JWT) or the queue's (Redis, Dramatiq)."""
    heavy = ("aiohttp", "jwt", "redis", "dramatiq", "github.client", "app.github")
    code = ("import sys, app.cli; code = app.cli.main(['resume', 'r-none']);"
            f" print(code, sorted(m for m in {heavy!r} if m in sys.modules))")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RATCHET_", "GIT_"))}

    def loaded(**env: str) -> str:
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env={**base, "RATCHET_HOME": str(tmp_path / "home"), **env},
                                timeout=60, cwd=tmp_path)
        return result.stdout.splitlines()[-1]

    assert loaded() == "2 []"  # exit 2: unknown run
    # With an App configured, the same engine carries GitHub's runs: the stack is loaded.
    key = tmp_path / "app.pem"
    key.write_text("-----BEGIN RSA PRIVATE KEY-----\n-----END RSA PRIVATE KEY-----\n")
    assert "app.github" in loaded(RATCHET_GITHUB_APP_ID="1",
                                  RATCHET_GITHUB_PRIVATE_KEY_FILE=str(key))


def test_runs_shows_a_titles_control_characters_escaped(tmp_path: Path, repo: Path) -> None:
    home = tmp_path / "home"
    title = "Add calc\x1b[2J\x1b]0;pwned\x07\u202eevil\nsecond line"
    ratchet(home, "run", "--repo", str(repo), "--title", title, "--agent-command", "false",
            env={"RATCHET_SANDBOX": "none"}, timeout=120)
    listed = ratchet(home, "runs")
    assert listed.returncode == 0, listed.stderr
    [line] = listed.stdout.splitlines()
    assert line.endswith("Add calc\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil\\nsecond line"), line
    assert json.loads(ratchet(home, "runs", "--json").stdout)[0]["title"] == title
