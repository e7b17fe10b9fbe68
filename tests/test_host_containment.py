"""Nothing of the host reaches an agent or a check: real bubblewrap, real processes.

An agent (``CommandAgent``) and a check (``execute_plan`` confined by the sandbox) each run a
probe that tries the runner user's home, ``/etc/shadow``, the runner's secret variables and the
Unix sockets of host services; what they could do is asserted from outside (the listener got
no connection, the files are as they were), and their own reports only confirm it. The agent's
home is seeded by copy: what one run plants there, the next run does not see, and checks never
see the seed at all.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.agents.base import AgentTask
from runner.agents.command import CommandAgent, agent_environment
from runner.agents.home import SeedTooLarge, fresh_home
from runner.sandbox import Sandbox
from verification.execute import check_environment, execute_plan
from verification.plan import Plan, PlannedCheck, PlannedWorkspace

SECRETS = {"GH_TOKEN": "gh-secret-4b1c", "GITHUB_TOKEN": "ghs-secret-9d2e",
           "ANTHROPIC_API_KEY": "sk-ant-secret-77aa", "OTHER_KEY": "other-secret-1f0c",
           "CLI_LICENSE": "cli-license-5a0e"}
# What the operator names for agents (RATCHET_AGENT_ENV); a model API key among them still
# never enters the sandbox (the egress proxy adds it).
NAMED = ("CLI_LICENSE", "ANTHROPIC_API_KEY")
HOME_SECRET = "runner-home-secret-3e8f"
PROBE = """
import json, os, pathlib, socket, sys

def read(path):
    try:
        return pathlib.Path(path).read_text()[:200]
    except OSError as exc:
        return type(exc).__name__

def connect(path):
    client = socket.socket(socket.AF_UNIX)
    try:
        client.connect(path)
        return "connected"
    except OSError as exc:
        return type(exc).__name__
    finally:
        client.close()

home = pathlib.Path(os.environ["HOME"])
report = {
    "files": [read(path) for path in os.environ["PROBE_FILES"].split(",")],
    "shadow": read("/etc/shadow"),
    "environ": dict(os.environ),
    "sockets": [connect(path) for path in os.environ["PROBE_SOCKETS"].split(",")],
    "seen_in_home": sorted(str(p.relative_to(home)) for p in home.rglob("*")),
    "settings": read(home / ".claude" / "settings.json"),
}
if os.environ.get("PLANT"):
    (home / ".claude" / "hooks.sh").write_text("touch /tmp/pwned\\n")
    (home / ".claude" / "settings.json").write_text('{"hooks": "hooks.sh"}')
out = os.environ.get("RATCHET_OUTPUT")
print(json.dumps(report)) if out is None else pathlib.Path(out).write_text(json.dumps(report))
"""


class Listener:
    """A Unix socket a host service would listen on; ``reached`` says whether anyone
    connected."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(8)
        self.server.setblocking(False)

    def reached(self) -> bool:
        try:
            self.server.accept()[0].close()
        except BlockingIOError:
            return False
        return True

    def close(self) -> None:
        self.server.close()
        self.path.unlink(missing_ok=True)


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[list[Listener]]:
    """A service socket under this test's folder (the host's /tmp) and, where the runner
    may create one, under /run."""
    paths = [tmp_path / "service.sock"]
    if os.access("/run", os.W_OK):
        paths.append(Path("/run") / f"ratchet-test-{uuid.uuid4().hex[:8]}.sock")
    made = [Listener(path) for path in paths]
    yield made
    for listener in made:
        listener.close()


@pytest.fixture
def home_file() -> Iterator[Path]:
    """A file in the runner user's home, as an SSH key or a CLI token would be."""
    path = Path.home() / f".ratchet-test-{uuid.uuid4().hex[:8]}"
    path.write_text(HOME_SECRET)
    yield path
    path.unlink()


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / name for name in ("ratchet", "worktree", "seed", "shared")}
    for path in paths.values():
        path.mkdir()
    (paths["seed"] / ".claude").mkdir()
    (paths["seed"] / ".claude" / "settings.json").write_text('{"model": "seeded"}')
    (paths["seed"] / ".claude" / "outside").symlink_to(tmp_path / "not-seeded.txt")
    (tmp_path / "not-seeded.txt").write_text("beside the seed")
    (paths["worktree"] / "probe.py").write_text(PROBE)
    return paths


def host() -> dict[str, str]:
    return {**os.environ, **SECRETS}


def agent_task(layout: dict[str, Path], step: str) -> AgentTask:
    scratch = layout["ratchet"] / "scratch" / step
    scratch.mkdir(parents=True)
    (scratch / "prompt.md").write_text("probe")
    return AgentTask(run_id="r", phase="implement", step=step, worktree=layout["worktree"],
                     prompt="probe", prompt_file=scratch / "prompt.md",
                     output_dir=scratch / "out", output=scratch / "out" / "summary.md",
                     log_file=scratch / "agent.log", timeout=60)


def probes(files: list[Path], listeners: list[Listener]) -> dict[str, str]:
    """Where the probe looks: passed in its environment, so no template names the paths (the
    sandbox shows a file an operator's agent command names)."""
    return {"PROBE_FILES": ",".join(map(str, files)),
            "PROBE_SOCKETS": ",".join(str(listener.path) for listener in listeners)}


def run_agent(layout: dict[str, Path], step: str, probe: dict[str, str], *,
              plant: bool = False) -> dict[str, object]:
    sandbox = Sandbox(hidden=(layout["ratchet"],), shared=(layout["shared"],))
    names = (*NAMED, *probe) + (("PLANT",) if plant else ())
    agent = CommandAgent(
        f"{sys.executable} {layout['worktree'] / 'probe.py'}",
        env=agent_environment({**host(), **probe, "PLANT": "1"}, names), sandbox=sandbox,
        home_seed=(layout["seed"] / ".claude",))
    task = agent_task(layout, step)
    agent.run(task)
    assert [p.name for p in task.log_file.parent.iterdir() if p.name.startswith("home.")] == []
    report: dict[str, object] = json.loads(task.output.read_text())
    return report


def run_check(layout: dict[str, Path], probe: dict[str, str]) -> dict[str, object]:
    sandbox = Sandbox(hidden=(layout["ratchet"],), shared=(layout["shared"],))
    env, notes = check_environment({**host(), **probe}, ["GH_TOKEN", *probe], tuple(probe))
    command = f"{sys.executable} probe.py"
    plan = Plan((PlannedWorkspace(".", ()),),
                (PlannedCheck("probe", ".", "custom", command, 60, None),), concurrency=1)
    [result] = execute_plan(plan, layout["worktree"], env=env, notes=notes,
                            confine=lambda argv, *, cwd, writable: sandbox.command(
                                argv, cwd=cwd, writable=writable))
    assert result.status == "passed", result.log
    note, line = result.log.splitlines()
    assert note.startswith("ratchet: the repository asks for GH_TOKEN in verify.env")
    report: dict[str, object] = json.loads(line)
    return report


def assert_saw_nothing_of_the_host(report: dict[str, object], home_file: Path,
                                   listeners: list[Listener]) -> None:
    # The runner's home is not there (nor, for a check, the agents' folders).
    assert set(report["files"]) == {"FileNotFoundError"}  # type: ignore[arg-type]
    assert report["shadow"] in ("", "PermissionError")  # masked, or unreadable to a user
    assert report["sockets"] == ["FileNotFoundError"] * len(listeners)
    text = json.dumps(report)
    for value in (HOME_SECRET, *(v for k, v in SECRETS.items() if k != "CLI_LICENSE")):
        assert value not in text


def test_an_agent_sees_nothing_of_the_host_but_what_it_was_given(
        layout: dict[str, Path], home_file: Path, listeners: list[Listener]) -> None:
    report = run_agent(layout, "implement.1", probes([home_file], listeners))

    assert not any(listener.reached() for listener in listeners)
    assert home_file.read_text() == HOME_SECRET
    assert_saw_nothing_of_the_host(report, home_file, listeners)
    environ = report["environ"]
    assert isinstance(environ, dict)
    # What the operator named reaches it; the other keys and Ratchet's settings do not.
    assert environ["CLI_LICENSE"] == SECRETS["CLI_LICENSE"]
    assert not {"GH_TOKEN", "GITHUB_TOKEN", "OTHER_KEY", "PLANT", "RATCHET_HOME"} & set(environ)
    assert environ["HOME"] != str(Path.home()) and environ["TMPDIR"] == "/tmp"
    # Its home holds the copied seed, without the symlink that left it.
    assert report["seen_in_home"] == [".claude", ".claude/settings.json"]


def test_a_check_sees_nothing_of_the_host_nor_the_agents_seed_and_shared_folders(
        layout: dict[str, Path], home_file: Path, listeners: list[Listener]) -> None:
    (layout["shared"] / "cache.txt").write_text("agents only")
    seed = layout["seed"] / ".claude" / "settings.json"
    files = [home_file, layout["shared"] / "cache.txt", seed]

    report = run_check(layout, probes(files, listeners))

    assert not any(listener.reached() for listener in listeners)
    assert_saw_nothing_of_the_host(report, home_file, listeners)
    environ = report["environ"]
    assert isinstance(environ, dict)
    assert not set(SECRETS) & set(environ)  # not even the agents' key, nor what it asked for
    assert report["seen_in_home"] == [] and report["settings"] == "FileNotFoundError"
    assert sorted(p.name for p in layout["shared"].iterdir()) == ["cache.txt"]


def test_what_an_agent_plants_in_its_home_is_gone_for_the_next_run(
        layout: dict[str, Path]) -> None:
    first = run_agent(layout, "implement.1", probes([], []), plant=True)
    second = run_agent(layout, "implement.2", probes([], []))

    assert first["settings"] == second["settings"] == '{"model": "seeded"}'
    assert ".claude/hooks.sh" not in second["seen_in_home"]  # type: ignore[operator]
    # The operator's seed is as it was: the agent only ever had a copy.
    seed = layout["seed"] / ".claude"
    assert sorted(p.name for p in seed.iterdir()) == ["outside", "settings.json"]
    assert (seed / "settings.json").read_text() == '{"model": "seeded"}'


def test_a_seed_past_the_cap_is_refused_naming_the_setting(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("runner.agents.home.MAX_SEED_BYTES", 10)
    seed = tmp_path / ".codex"
    seed.mkdir()
    (seed / "history.jsonl").write_text("x" * 11)

    with pytest.raises(SeedTooLarge, match=r"\.codex holds more than .*RATCHET_AGENT_HOME_SEED"):
        fresh_home(tmp_path / "scratch", (seed,), host_home=tmp_path)
    assert list((tmp_path / "scratch").iterdir()) == []


def test_a_template_naming_a_secret_or_a_link_to_one_shows_nothing(tmp_path: Path) -> None:
    """The sandbox shows a file an operator's agent command names literally; never a hidden
    path, a host secret, or a symlink to one."""
    hidden = tmp_path / "ratchet"
    hidden.mkdir()
    (hidden / "key.pem").write_text("KEY")
    link = tmp_path / "innocent.txt"
    link.symlink_to(hidden / "key.pem")
    sandbox = Sandbox(hidden=(hidden,))
    assert sandbox.hides(link) and sandbox.masks(Path.home() / ".ssh")
    if Path("/etc/shadow").exists():
        assert sandbox.hides(Path("/etc/shadow")) and sandbox.masks(Path("/etc/shadow"))
    assert not sandbox.masks(Path("/usr/bin/env")) and not sandbox.masks(Path(sys.executable))
