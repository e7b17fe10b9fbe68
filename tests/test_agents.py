"""The command agent through real subprocesses, and prompt rendering."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runner.agents import (
    CommandAgent,
    FailingCheck,
    FailingTest,
    PromptContext,
    output_path,
    render_prompt,
)
from runner.agents.base import AgentTask
from runner.errors import DeterministicFailure, TransientFailure
from runner.sandbox import Sandbox, SandboxMode

PYTHON = shlex.quote(sys.executable)
# These tests are about the agent protocol and process-group handling on the host (host pids);
# tests/test_sandbox.py runs agents in the real sandbox.
UNCONFINED = Sandbox(mode=SandboxMode.NONE)


def unconfined_agent(template: str, **options: Any) -> CommandAgent:
    return CommandAgent(template, sandbox=UNCONFINED, **options)


def make_task(tmp_path: Path, *, phase: str = "research", timeout: float = 30.0) -> AgentTask:
    worktree = tmp_path / "worktree"
    run_dir = tmp_path / "run"
    worktree.mkdir(exist_ok=True)
    (run_dir / "prompts").mkdir(parents=True, exist_ok=True)
    (run_dir / "research").mkdir(exist_ok=True)
    prompt = "Analyse it's \"quoted\" $(touch pwned) `touch pwned2` ; touch pwned3 {output}"
    prompt_file = run_dir / "prompts" / "research.1.md"
    prompt_file.write_text(prompt)
    return AgentTask(
        run_id="run-1",
        phase=phase,
        step=f"{phase}.1",
        worktree=worktree,
        prompt=prompt,
        prompt_file=prompt_file,
        output_dir=run_dir,
        output=run_dir / "research" / "repository-analysis.md",
        log_file=run_dir / "logs" / f"{phase}.1.log",
        timeout=timeout,
    )


def script(tmp_path: Path, source: str) -> str:
    """Write an agent script and return the command-line prefix that runs it."""
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(source))
    return f"{PYTHON} {shlex.quote(str(path))}"


def process_gone(pid: int) -> bool:
    """Dead or a zombie (killed, awaiting its reaper): it runs no more."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def wait_for_pid(path: Path, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} was never written")
        time.sleep(0.02)
    return int(path.read_text())


# A grandchild that ignores SIGTERM and records its pid, started by the agent.
STUBBORN_GRANDCHILD = """
import signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", (
    "import os, signal, sys, time\\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
    "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\\n"
    "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\\n"
    "time.sleep(600)\\n"
), sys.argv[1]])
"""


def test_placeholders_are_substituted_per_argv_element_without_a_shell(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    prefix = script(
        tmp_path,
        """
        import json, os, sys
        assert sys.stdin.read() == ""  # the prompt is an argument here: not given twice
        open(os.environ["RATCHET_OUTPUT"], "w").write(json.dumps(sys.argv[1:]))
        """,
    )
    template = "{prompt} pre-{phase}-post {prompt_file} {output} '{{x}}'"
    agent = unconfined_agent(f"{prefix} {template}")

    agent.run(task)

    argv = json.loads(task.output.read_text())
    assert argv == [
        task.prompt, "pre-research-post", str(task.prompt_file), str(task.output), "{x}"
    ]
    assert sorted(p.name for p in task.worktree.iterdir()) == []


def test_environment_cwd_and_stdin(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    prefix = script(
        tmp_path,
        """
        import json, os, sys
        dump = {k: v for k, v in os.environ.items() if k.startswith(("RATCHET_", "EXTRA", "HOME"))}
        dump["cwd"] = os.getcwd()
        dump["stdin"] = sys.stdin.read()
        open(os.environ["RATCHET_OUTPUT"], "w").write(json.dumps(dump))
        """,
    )
    agent = unconfined_agent(prefix, env={"PATH": os.environ.get("PATH", ""), "EXTRA": "yes"})

    agent.run(task)

    dump = json.loads(task.output.read_text())
    home = Path(dump.pop("HOME"))  # a fresh folder of the step's, removed when it ended
    assert home.parent == task.log_file.parent and not home.exists()
    assert dump == {
        "RATCHET_RUN_ID": "run-1",
        "RATCHET_PHASE": "research",
        "RATCHET_STEP": "research.1",
        "RATCHET_PROMPT_FILE": str(task.prompt_file),
        "RATCHET_OUTPUT": str(task.output),
        "RATCHET_USAGE": str(task.usage_file),
        "RATCHET_WORKTREE": str(task.worktree),
        "EXTRA": "yes",
        "cwd": str(task.worktree.resolve()),
        "stdin": task.prompt,  # a template that passes no prompt reads it on stdin
    }


def test_exit_zero_with_output_returns_its_sha256_and_log_tail(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    prefix = script(
        tmp_path,
        """
        import os, sys
        print("to stdout", flush=True)
        print("to stderr", file=sys.stderr, flush=True)
        open(os.environ["RATCHET_OUTPUT"], "wb").write(b"# Analysis\\n")
        """,
    )

    result = unconfined_agent(prefix).run(task)

    assert result.exit_code == 0
    assert result.output_sha256 == hashlib.sha256(b"# Analysis\n").hexdigest()
    assert "to stdout" in result.log_tail and "to stderr" in result.log_tail
    assert task.log_file.read_text() == result.log_tail
    assert result.duration_s > 0


@pytest.mark.parametrize("write", ["", "open(os.environ['RATCHET_OUTPUT'], 'w')"])
def test_exit_zero_without_output_is_deterministic(tmp_path: Path, write: str) -> None:
    task = make_task(tmp_path)
    prefix = script(tmp_path, f"import os\n{write}\n")

    with pytest.raises(DeterministicFailure, match="agent exited 0 but did not write") as info:
        unconfined_agent(prefix).run(task)

    assert str(task.output) in str(info.value)


def test_exit_75_is_transient(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    prefix = script(tmp_path, "import sys\nprint('rate limited')\nsys.exit(75)\n")

    with pytest.raises(TransientFailure) as info:
        unconfined_agent(prefix).run(task)

    assert info.value.evidence["exit_code"] == 75
    assert "rate limited" in info.value.evidence["log_tail"]


def test_other_exit_is_deterministic_with_the_log_tail(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    prefix = script(
        tmp_path,
        """
        import sys
        for i in range(5000):
            print(f"line {i}")
        sys.stdout.flush()
        print("fatal: the end", file=sys.stderr)
        sys.exit(3)
        """,
    )

    with pytest.raises(DeterministicFailure, match="exited 3") as info:
        unconfined_agent(prefix).run(task)

    assert not isinstance(info.value, TransientFailure)
    tail = info.value.evidence["log_tail"]
    assert info.value.evidence["exit_code"] == 3
    assert tail.endswith("fatal: the end\n")
    assert "line 0\n" not in tail and len(tail.encode()) <= 4096


@pytest.mark.parametrize("exit_code", [0, 3])
def test_an_agent_printing_past_the_log_cap_leaves_the_cap_on_disk(
    tmp_path: Path, exit_code: int
) -> None:
    """Ten times the cap printed: the log on disk keeps its head and its tail within the cap,
    and the evidence says how much was printed and how much was left out."""
    cap = 64 * 1024
    task = make_task(tmp_path)
    prefix = script(
        tmp_path,
        f"""
        import os, sys
        print("first line", flush=True)
        for i in range(10 * {cap} // 64):
            sys.stdout.write(f"{{i:>63}}\\n")
        print("last line", file=sys.stderr, flush=True)
        open(os.environ["RATCHET_OUTPUT"], "wb").write(b"# Analysis\\n")
        sys.exit({exit_code})
        """,
    )
    agent = unconfined_agent(prefix, max_log_bytes=cap)

    if exit_code:
        with pytest.raises(DeterministicFailure) as info:
            agent.run(task)
        printed, omitted = (info.value.evidence["log_bytes"],
                            info.value.evidence["log_omitted_bytes"])
    else:
        result = agent.run(task)
        printed, omitted = result.log_bytes, result.log_omitted_bytes

    kept = task.log_file.read_bytes()
    assert len(kept) <= cap
    assert printed == len("first line\n") + 10 * cap + len("last line\n")
    assert printed - cap < omitted < printed - cap // 2
    assert kept.startswith(b"first line\n") and kept.endswith(b"last line\n")
    assert f"ratchet: {omitted} of {printed} bytes omitted".encode() in kept
    assert b"RATCHET_MAX_LOG_BYTES" in kept


def test_timeout_kills_the_whole_group_including_a_stubborn_grandchild(tmp_path: Path) -> None:
    task = make_task(tmp_path, timeout=1.0)
    pid_file = tmp_path / "grandchild.pid"
    prefix = script(
        tmp_path,
        STUBBORN_GRANDCHILD
        + "signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)\n",
    )
    agent = unconfined_agent(f"{prefix} {shlex.quote(str(pid_file))}", kill_grace=0.5)

    # Both ignore SIGTERM and would sleep 600 s: only the SIGKILL after the grace lets run()
    # return (a test that hangs here has lost that SIGKILL).
    with pytest.raises(TransientFailure, match="agent timed out after 1s"):
        agent.run(task)

    assert process_gone(wait_for_pid(pid_file, timeout=0))


def test_cancel_kills_promptly(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    pid_file = tmp_path / "grandchild.pid"
    prefix = script(tmp_path, STUBBORN_GRANDCHILD + "time.sleep(600)\n")
    agent = unconfined_agent(f"{prefix} {shlex.quote(str(pid_file))}", kill_grace=0.5)
    cancel = threading.Event()
    grandchild: list[int] = []

    def lose_lease() -> None:
        grandchild.append(wait_for_pid(pid_file))
        cancel.set()

    thread = threading.Thread(target=lose_lease)
    thread.start()
    # Cancelled, not timed out (the task's timeout is 30 s, the agent would sleep 600 s).
    with pytest.raises(TransientFailure, match="cancelled: lease lost"):
        agent.run(task, cancel=cancel)
    thread.join()

    # The grandchild ignores SIGTERM, so the group needs the SIGKILL after the grace.
    assert grandchild and process_gone(grandchild[0])


def test_leftover_processes_are_killed_after_a_normal_exit(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    pid_file = tmp_path / "grandchild.pid"
    prefix = script(
        tmp_path,
        STUBBORN_GRANDCHILD
        + textwrap.dedent(
            """
            import os
            while not os.path.exists(sys.argv[1]):
                time.sleep(0.02)
            open(os.environ["RATCHET_OUTPUT"], "w").write("done")
            """
        ),
    )

    result = unconfined_agent(f"{prefix} {shlex.quote(str(pid_file))}", kill_grace=0.5).run(task)

    assert result.exit_code == 0
    assert process_gone(wait_for_pid(pid_file, timeout=0))  # it would have slept 600 s


def test_missing_executable_is_deterministic(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    template = "no-such-agent-cli-ratchet --prompt {prompt_file}"

    with pytest.raises(DeterministicFailure, match="cannot start agent command") as info:
        unconfined_agent(template).run(task)

    assert "no-such-agent-cli-ratchet" in str(info.value)
    assert repr(template) in str(info.value)


def test_prompt_too_long_for_argv_points_at_prompt_file(tmp_path: Path) -> None:
    task = replace(make_task(tmp_path), prompt="x" * 200_000)

    with pytest.raises(DeterministicFailure, match=r"use \{prompt_file\} instead"):
        unconfined_agent(f"{PYTHON} -c pass {{prompt}}").run(task)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("claude -p {promt}", r"unknown placeholder \{promt\}; allowed: \{prompt\}"),
        ("claude -p {prompt!r}", r"unsupported placeholder \{prompt!r\}"),
        ("claude -p {}", r"unknown placeholder \{\}"),
        ("claude -p {prompt", "literal braces"),
        ("claude -p 'unterminated", "cannot be split"),
        ("   ", "is empty"),
    ],
)
def test_bad_template_is_refused_at_construction(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        unconfined_agent(template)


# --- prompts -------------------------------------------------------------------------------

def context(phase: str, **overrides: object) -> PromptContext:
    number = 2 if phase == "repair" else None
    fields: dict[str, object] = {
        "run_id": "run-1",
        "phase": phase,
        "step": f"{phase}.1",
        "title": "Add a --verbose flag",
        "body": "The CLI should print more.",
        "output_path": output_path(phase, number),
        "repair_number": number,
    }
    fields.update(overrides)
    return PromptContext(**fields)  # type: ignore[arg-type]


def test_output_paths() -> None:
    assert output_path("research") == "research/repository-analysis.md"
    assert output_path("specify") == "spec.md"
    assert output_path("implement") == "implementation/summary.md"
    assert output_path("repair", 2) == "repair/2/summary.md"
    with pytest.raises(ValueError, match="repair number"):
        output_path("repair")
    with pytest.raises(ValueError, match="unknown phase 'verify'"):
        output_path("verify")


@pytest.mark.parametrize(
    ("phase", "rule"),
    [
        ("research", "do NOT modify"),
        ("specify", "approves the specification against its sha256"),
        ("implement", "Do not commit, push"),
        ("repair", "Fix the failing checks"),
    ],
)
def test_prompt_has_each_section(phase: str, rule: str) -> None:
    ctx = context(
        phase,
        artifacts=(("research/repository-analysis.md", "# Analysis\nsmall CLI\n"),),
        feedback=("Also document the flag.", "And test it."),
        salvage_path="salvage/implement.1.patch",
        failing_checks=(
            (FailingCheck("unit", "python3 -m unittest -q", "failed", 1, "FAILED (errors=1)"),)
            if phase == "repair"
            else ()
        ),
    )

    text = render_prompt(ctx)

    assert "## Task: Add a --verbose flag" in text and "The CLI should print more." in text
    assert f"## Rules for the {phase} phase" in text and rule in text
    assert "$RATCHET_OUTPUT" in text and f"`{ctx.output_path}`" in text
    assert "### `research/repository-analysis.md`" in text and "small CLI" in text
    assert text.index("Also document the flag.") < text.index("And test it.")
    assert "`salvage/implement.1.patch`" in text and "was reset" in text
    if phase == "repair":
        assert "### Check `unit`" in text and "python3 -m unittest -q" in text
        assert "- exit code: 1" in text and "FAILED (errors=1)" in text
    else:
        assert "## Failing checks" not in text
    assert render_prompt(ctx) == text


def test_prompt_omits_empty_sections() -> None:
    text = render_prompt(context("research"))

    for heading in ("Interrupted", "Failing checks", "Reviewer feedback", "Artifacts"):
        assert heading not in text


def test_prompt_fences_survive_backticks_in_a_log_tail() -> None:
    tail = "before\n```\n## Not a heading\n````python\nafter"
    ctx = context(
        "repair", failing_checks=(FailingCheck("lint", "ruff check .", "failed", None, tail),)
    )

    text = render_prompt(ctx)

    lines = text.splitlines()
    start = lines.index("before") - 1
    fence = lines[start]
    assert fence == "`````"
    end = lines.index(fence, start + 1)
    assert "\n".join(lines[start + 1 : end]) == tail
    assert "- exit code: none" in text


def test_a_repair_prompt_names_the_failing_tests_where_they_failed_and_why() -> None:
    tests = (FailingTest("test_calc.AddTest.test_add", "test_calc.py", 8,
                         "AssertionError: -1 != 5\n```\n## Not a heading"),
             FailingTest("tests::adds", "src/lib.rs", None, ""))
    ctx = context("repair", failing_checks=(
        FailingCheck("unit", "python3 -m unittest -q", "failed", 1, "FAILED (failures=1)",
                     tests),))

    text = render_prompt(ctx)

    assert "Failing tests:\n\n- `test_calc.AddTest.test_add` at `test_calc.py:8`\n" in text
    assert "- `tests::adds` at `src/lib.rs`\n" in text
    fenced = text[text.index("test_calc.py:8`"):text.index("- `tests::adds`")]
    assert "  ````\n  AssertionError: -1 != 5\n  ```\n  ## Not a heading\n  ````" in fenced
    assert text.index("Failing tests:") < text.index("Log tail:")
