"""Every preset's command line run for real, in the sandbox, by a scripted program standing in
for its CLI (tests/e2e and `make test-agents` run the real CLIs): how the prompt reaches it,
what it may write, and what the runner makes of what it leaves."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from runner.agents.base import AgentTask
from runner.agents.command import CommandAgent
from runner.agents.presets import CODEX_LAST_MESSAGE, PRESETS, preset
from runner.agents.prompt import PromptContext, render_prompt
from runner.errors import AgentTimedOut

# Larger than one argument may be (MAX_ARG_STRLEN, 128 KiB): as an argument it cannot start.
BIG_PROMPT = "# Ratchet research step\n\n" + "The research note says: çà va. " * 6700

# The stand-in CLI: it finds the prompt where the template gives it (a file option, else
# stdin), compares it with RATCHET_PROMPT_FILE, and writes what it saw to its output.
STAND_IN = """\
#!{python}
import json, os, sys
argv = sys.argv[1:]
got = None
for option in ("--message-file", "--instructions"):
    if option in argv:
        got = open(argv[argv.index(option) + 1], "rb").read()
if got is None:
    got = sys.stdin.buffer.read()
expected = open(os.environ["RATCHET_PROMPT_FILE"], "rb").read()
report = {{"argv": argv, "received": len(got), "same": got == expected,
          "longest_argument": max(map(len, argv), default=0),
          "config": os.environ.get("OPENCODE_CONFIG_CONTENT")}}
output = os.environ["RATCHET_OUTPUT"]
os.makedirs(os.path.dirname(output), exist_ok=True)
open(output, "w").write(json.dumps(report))
{extra}
"""


def stand_in(bin_dir: Path, program: str, extra: str = "") -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / program
    path.write_text(STAND_IN.format(python=sys.executable, extra=textwrap.dedent(extra)))
    path.chmod(0o755)


def make_task(tmp_path: Path, phase: str, prompt: str, **fields: object) -> AgentTask:
    worktree, folder = tmp_path / "worktree", tmp_path / "scratch"
    worktree.mkdir(exist_ok=True)
    folder.mkdir(exist_ok=True)
    out = folder / "out"
    output = out / ("spec.md" if phase == "specify" else "implementation/summary.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    prompt_file = folder / "prompt.md"
    prompt_file.write_text(prompt)
    return AgentTask(
        run_id="run-1", phase=phase, step=f"{phase}.1", worktree=worktree, prompt=prompt,
        prompt_file=prompt_file, output_dir=out, output=output,
        log_file=folder / "agent.1.log", **{"timeout": 60.0, **fields})  # type: ignore[arg-type]


def agent_for(name: str, bin_dir: Path) -> CommandAgent:
    chosen = preset(name)
    return CommandAgent(chosen.templates, preset=chosen,
                        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})


@pytest.mark.parametrize("phase", ["specify", "implement"])
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_200_kib_prompt_reaches_every_preset(tmp_path: Path, name: str, phase: str) -> None:
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, preset(name).program)
    task = make_task(tmp_path, phase, BIG_PROMPT)

    agent_for(name, bin_dir).run(task)

    report = json.loads(task.output.read_text())
    assert report["same"] and report["received"] == len(BIG_PROMPT.encode()) > 200 * 1024
    assert report["longest_argument"] < 4096  # never the prompt itself


def test_claude_is_capped_at_what_the_budget_has_left(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "claude")
    capped = make_task(tmp_path, "implement", "Do it.", cost_left=0.25)

    agent_for("claude", bin_dir).run(capped)

    argv = json.loads(capped.output.read_text())["argv"]
    assert argv[-2:] == ["--max-budget-usd", "0.250000"]
    unlimited = make_task(tmp_path, "implement", "Do it.")
    agent_for("claude", bin_dir).run(unlimited)
    assert "--max-budget-usd" not in json.loads(unlimited.output.read_text())["argv"]


def test_claude_read_only_phases_may_write_only_the_output_folder(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "claude")
    task = make_task(tmp_path, "specify", "Specify it.")

    agent_for("claude", bin_dir).run(task)

    argv = json.loads(task.output.read_text())["argv"]
    out = str(task.output_dir)
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[argv.index("--add-dir") + 1] == out
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert f"Edit(/{out}/**)" in allowed and "Bash" not in allowed


def test_opencode_gets_a_permission_config_per_phase(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "opencode")
    (tmp_path / "r").mkdir()
    read_only = make_task(tmp_path / "r", "specify", "Specify it.")
    (tmp_path / "w").mkdir()
    modifying = make_task(tmp_path / "w", "implement", "Do it.")

    agent_for("opencode", bin_dir).run(read_only)
    agent_for("opencode", bin_dir).run(modifying)

    out = str(read_only.output_dir)
    config = json.loads(json.loads(read_only.output.read_text())["config"])["permission"]
    assert config["bash"] == "deny"
    assert config["edit"] == {"*": "deny", "../scratch/out/*": "allow", f"{out}/*": "allow"}
    config = json.loads(json.loads(modifying.output.read_text())["config"])["permission"]
    assert config["bash"] == "allow" and config["edit"]["*"] == "allow"


def last_message_option(tmp_path: Path) -> str:
    return f"{tmp_path / 'scratch' / 'out'}/{CODEX_LAST_MESSAGE}"


def test_codex_final_message_never_overwrites_the_output(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    # Codex writes its final chat message where --output-last-message says, after the model
    # wrote the output through its tools.
    stand_in(bin_dir, "codex", """
        path = argv[argv.index("--output-last-message") + 1]
        open(path, "w").write("Done: I wrote the summary.")
    """)
    task = make_task(tmp_path, "implement", "Do it.")

    agent_for("codex", bin_dir).run(task)

    assert json.loads(task.output.read_text())["same"]  # the model's output, as it wrote it
    assert (task.output_dir / CODEX_LAST_MESSAGE).read_text() == "Done: I wrote the summary."


def test_codex_final_message_is_the_output_when_the_model_wrote_none(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "codex", """
        os.remove(output)
        path = argv[argv.index("--output-last-message") + 1]
        open(path, "w").write("# Summary\\n\\nChanged calc.add.")
    """)
    task = make_task(tmp_path, "implement", "Do it.")

    result = agent_for("codex", bin_dir).run(task)

    assert task.output.read_text() == "# Summary\n\nChanged calc.add."
    assert result.exit_code == 0


def test_the_prompt_names_the_absolute_paths_the_agent_writes() -> None:
    research = render_prompt(PromptContext(
        run_id="r", phase="research", step="research.1", title="t", body="b",
        output_path="research/repository-analysis.md", plan_limit=2,
        output_file="/s/out/research/repository-analysis.md",
        plan_file="/s/out/subagent-plan.json"))
    assert "`$RATCHET_OUTPUT` is `/s/out/research/repository-analysis.md`." in research
    assert "`$RATCHET_SUBAGENT_PLAN` is `/s/out/subagent-plan.json`." in research
    subagent = render_prompt(PromptContext(
        run_id="r", phase="subagent", step="research.1", title="t", body="b",
        output_path="subagents/db.md", focus="f", output_file="/s/db/out/subagents/db.md",
        note_file="/s/db/out/note.md"))
    assert "`$RATCHET_NOTE` is `/s/db/out/note.md`." in subagent


def test_a_killed_claude_session_records_what_it_streamed_priced(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    messages = [{"type": "system", "subtype": "init", "model": "claude-sonnet-4-5-20250929"}]
    for number in (1, 2):  # each message streamed twice (one event per content block)
        message = {"type": "assistant", "message": {
            "id": f"msg_{number}", "model": "claude-sonnet-4-5-20250929", "content": [],
            "usage": {"input_tokens": 1000, "output_tokens": 500,
                      "cache_read_input_tokens": 10000}}}
        messages += [message, message]
    stand_in(bin_dir, "claude", f"""
        import time
        for line in {[json.dumps(m) for m in messages]!r}:
            print(line, flush=True)
        time.sleep(600)  # working on, until the timeout kills it
    """)
    task = make_task(tmp_path, "implement", "Do it.", timeout=2.0)

    with pytest.raises(AgentTimedOut) as caught:
        agent_for("claude", bin_dir).run(task)

    usage = caught.value.usage or {}
    assert (usage["input_tokens"], usage["output_tokens"], usage["cache_read_tokens"]) == (
        2000, 1000, 20000)
    assert usage["partial"] is True and usage["cost_priced_as"] == "claude-sonnet-4-5"
    # $3/M in, $15/M out, $0.30/M cache reads.
    assert usage["cost_usd"] == pytest.approx(0.006 + 0.015 + 0.006)
