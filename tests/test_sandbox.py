"""The bubblewrap sandbox with real processes: what a confined command can see, write and reach."""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.agents.base import AgentTask
from runner.agents.command import CommandAgent
from runner.sandbox import Sandbox, SandboxMode, SandboxUnavailable
from tests.e2e.harness import processes_with_env


def run(sandbox: Sandbox, script: str, *, cwd: Path, env: dict[str, str] | None = None,
        **options: object) -> subprocess.CompletedProcess[str]:
    # The interpreter is shown like an agent's program (a venv under /tmp is masked otherwise).
    interpreter = Path(sys.executable)
    shown = (interpreter,) if sandbox.masks(interpreter) else ()
    readable = (*options.pop("readable", ()), *shown)  # type: ignore[misc]
    argv = sandbox.command([sys.executable, "-c", script], cwd=cwd,  # type: ignore[arg-type]
                           readable=readable, **options)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / name for name in ("home", "worktree", "shared", "objects")}
    for path in paths.values():
        path.mkdir()
    (paths["home"] / "ratchet.db").write_text("ledger")
    (paths["objects"] / "pack").write_text("history")
    (tmp_path / "host-file").write_text("host")
    outside_ledger = tmp_path / "elsewhere.db"
    outside_ledger.write_text("other ledger")
    paths["outside_ledger"] = outside_ledger
    return paths


def sandbox_for(layout: dict[str, Path]) -> Sandbox:
    return Sandbox(hidden=(layout["home"], layout["outside_ledger"]), shared=(layout["shared"],))


def test_a_confined_command_sees_only_what_it_was_given(layout: dict[str, Path],
                                                        tmp_path: Path) -> None:
    sandbox = sandbox_for(layout)
    script = f"""
import os, pathlib
def attempt(what, action):
    try:
        action(); print(what, "ok")
    except OSError as exc:
        print(what, type(exc).__name__)
attempt("write-worktree", lambda: pathlib.Path("{layout['worktree']}/a").write_text("x"))
attempt("write-shared", lambda: pathlib.Path("{layout['shared']}/b").write_text("x"))
attempt("write-objects", lambda: pathlib.Path("{layout['objects']}/c").write_text("x"))
attempt("read-objects", lambda: pathlib.Path("{layout['objects']}/pack").read_text())
attempt("read-host-tmp", lambda: pathlib.Path("{tmp_path}/host-file").read_text())
print("home", sorted(os.listdir("{layout['home']}")))
attempt("read-outside-ledger", lambda: pathlib.Path("{layout['outside_ledger']}").read_text())
attempt("write-usr", lambda: pathlib.Path("/usr/ratchet-probe").write_text("x"))
print("pid", os.getpid())
"""
    result = run(sandbox, script, cwd=layout["worktree"],
                 writable=(layout["worktree"],), readable=(layout["objects"],))

    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert result.returncode == 0, result.stderr
    assert lines["write-worktree"] == "ok"
    # The agents' shared folders are theirs alone: a command the runner confines (a check)
    # does not get them.
    assert lines["write-shared"] == "FileNotFoundError"
    assert lines["write-objects"] == "OSError"  # read-only: EROFS
    assert lines["read-objects"] == "ok"
    assert lines["read-host-tmp"] == "FileNotFoundError"  # /tmp is private
    assert lines["home"] == "[]"  # Ratchet's home is an empty folder inside
    assert lines["read-outside-ledger"] == "PermissionError"  # masked by a device node
    assert lines["write-usr"] != "ok"
    assert int(lines["pid"]) < 10  # a PID namespace of its own: the runner is not in it
    assert (layout["home"] / "ratchet.db").read_text() == "ledger"


def test_ending_the_sandbox_ends_every_descendant_setsid_or_not(layout: dict[str, Path]) -> None:
    marker = f"ratchet-sandbox-test-{os.getpid()}-{time.monotonic_ns()}"
    script = """
import subprocess
subprocess.Popen(["setsid", "sleep", "60"], start_new_session=True)
subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60"])
"""
    result = run(sandbox_for(layout), script, cwd=layout["worktree"],
                 writable=(layout["worktree"],), env={"RATCHET_PHASE": "t", "MARK": marker})

    assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + 30  # a backstop: they die with the sandbox
    while processes_with_env("MARK", marker):
        assert time.monotonic() < deadline, "a daemon outlived its sandbox"
        time.sleep(0.05)


def test_the_host_network_is_out_of_reach(layout: dict[str, Path]) -> None:
    """Without an egress endpoint a sandbox has only its own loopback (runner/egress.py and
    tests/test_egress.py cover the way out through the proxy)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    port = server.getsockname()[1]
    script = f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close(); print("connected")
except OSError as exc:
    print("refused", exc)
"""
    worktree = layout["worktree"]
    try:
        result = run(sandbox_for(layout), script, cwd=worktree, writable=(worktree,))
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()
    assert result.stdout.startswith("refused"), result.stderr


def test_a_missing_bubblewrap_says_how_to_install_it_or_opt_out() -> None:
    sandbox = Sandbox(program="no-such-bwrap-ratchet", remedy="install it, or opt out")
    with pytest.raises(SandboxUnavailable, match=r"not installed.*install it, or opt out"):
        sandbox.check()
    with pytest.raises(SandboxUnavailable):
        sandbox.command(["true"], cwd=Path("/"))


def test_a_shared_folder_inside_a_hidden_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"inside .*home"):
        Sandbox(hidden=(tmp_path / "home",), shared=(tmp_path / "home" / "cache",))


def test_none_runs_commands_as_they_are(tmp_path: Path) -> None:
    sandbox = Sandbox(mode=SandboxMode.NONE)
    assert sandbox.command(["echo", "x"], cwd=tmp_path) == ["echo", "x"]
    sandbox.check()
    assert not sandbox.masks(Path("/tmp/x"))
    assert Sandbox().masks(Path("/tmp/x")) and not Sandbox().masks(Path("/usr/bin/x"))


def test_the_sandbox_bench_runs_and_reports_its_added_cost() -> None:
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, str(root / "bench" / "sandbox.py"), "--steps", "5"],
                            cwd=root, capture_output=True, text=True, timeout=120)
    # Exit 1 is the bench's verdict that the target was not met: on a busy test machine that
    # is not this test's business (a smoke test of the bench, not a measurement).
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert "sandbox added cost per agent step at p50" in result.stdout
    assert "Traceback" not in result.stderr, result.stderr


def test_a_script_the_agent_command_names_in_tmp_runs_and_nothing_beside_it_shows(
        layout: dict[str, Path], tmp_path: Path) -> None:
    """A checkout under /tmp (CI clones there) runs its agent script in the sandbox: the file
    the template names literally is shown read-only; its neighbours, and hidden paths even when
    the template names them, stay out of sight."""
    script = tmp_path / "agent.py"
    neighbour = tmp_path / "notes.txt"
    neighbour.write_text("private")
    secret = layout["home"] / "key.pem"
    secret.write_text("-----BEGIN KEY-----")
    script.write_text(
        "import os, pathlib, sys\n"
        "def seen(p):\n"
        "    try:\n        return pathlib.Path(p).read_text()\n"
        "    except OSError as exc:\n        return type(exc).__name__\n"
        f"report = [seen({str(neighbour)!r}), seen(sys.argv[1])]\n"
        "pathlib.Path(os.environ['RATCHET_OUTPUT']).write_text(repr(report))\n")
    agent = CommandAgent(f"{sys.executable} {script} {secret}", sandbox=sandbox_for(layout))
    out = layout["shared"] / "out"
    prompt = layout["shared"] / "prompt.md"
    prompt.write_text("p")
    task = AgentTask(run_id="r", phase="research", step="research.1",
                     worktree=layout["worktree"], prompt="p", prompt_file=prompt,
                     output_dir=out, output=out / "analysis.md",
                     log_file=layout["shared"] / "agent.log", timeout=60)

    agent.run(task)

    neighbour_seen, secret_seen = ast.literal_eval(task.output.read_text())
    assert neighbour_seen == "FileNotFoundError"  # /tmp stays private
    assert "BEGIN KEY" not in secret_seen  # hidden, though the template names it
