"""Presets for real agent CLIs: each one's command line per phase, and each parser on output
samples in the CLI's documented format (tests/data/agents/, described in tests/data/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.agents.command import parse_template, render_argv
from runner.agents.presets import (
    COPILOT_NO_TOKENS,
    PHASES,
    PRESETS,
    codex_endpoint,
    copilot_endpoint,
    opencode_config,
    parse_aider,
    parse_claude,
    parse_codex,
    parse_copilot,
    parse_gemini,
    parse_goose,
    parse_opencode,
    preset,
)

SAMPLES = Path(__file__).parent / "data" / "agents"
VALUES = {
    "prompt": "# Ratchet research step research.1 (run r-1)\n\nDo it.",
    "prompt_file": "/s/research.1/prompt.md",
    "output": "/s/research.1/out/research/repository-analysis.md",
    "output_dir": "/s/research.1/out",
    "phase": "research",
}
PROMPT_FILE, OUTPUT, OUTPUT_DIR = VALUES["prompt_file"], VALUES["output"], VALUES["output_dir"]
# Every preset's argv per phase group: (research and specify, implement and repair).
CLAUDE = ["claude", "-p", "--output-format", "stream-json", "--verbose",
          "--include-partial-messages", "--add-dir", OUTPUT_DIR]
CODEX_EXEC = ["codex", "exec", "--json", "--output-last-message",
              f"{OUTPUT_DIR}/codex.last-message.md", "--disable", "plugins", "-c",
              "analytics.enabled=false"]
CODEX = [*CODEX_EXEC, "--sandbox", "workspace-write", "--add-dir", OUTPUT_DIR, "-"]
# Codex's subagents run without its own sandbox (Ratchet's binds their worktree read-only).
CODEX_SUBAGENT = [*CODEX_EXEC, "--dangerously-bypass-approvals-and-sandbox", "-"]
EXPECTED = {
    "claude": (
        [*CLAUDE, "--permission-mode", "dontAsk", "--allowedTools",
         f"Read,Glob,Grep,Edit(/{OUTPUT_DIR}/**),Write(/{OUTPUT_DIR}/**)"],
        [*CLAUDE, "--permission-mode", "acceptEdits", "--allowedTools",
         "Bash,Read,Glob,Grep,Edit,Write"],
    ),
    "codex": (CODEX, CODEX),
    "aider": 2 * (
        ["aider", "--message-file", PROMPT_FILE, "--yes-always", "--no-git",
         "--analytics-disable", "--no-check-update", "--no-show-release-notes", "--no-pretty",
         "--chat-history-file", f"{OUTPUT_DIR}/aider.chat.history.md", "--input-history-file",
         f"{OUTPUT_DIR}/aider.input.history"],
    ),
    "goose": 2 * (
        ["goose", "run", "--no-session", "--quiet", "--output-format", "json",
         "--instructions", PROMPT_FILE],
    ),
    "opencode": 2 * (["opencode", "run", "--format", "json"],),
    "gemini": tuple(["gemini", "--output-format", "stream-json", "--skip-trust",
                     "--include-directories", OUTPUT_DIR, "--approval-mode", mode]
                    for mode in ("auto_edit", "yolo")),
    "copilot": tuple(["copilot", "--output-format", "json", "--allow-all-tools", "--add-dir",
                      OUTPUT_DIR, "--disable-builtin-mcps", "--no-auto-update", *deny]
                     for deny in (["--deny-tool", "shell"], [])),
}


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("phase", PHASES)
def test_each_preset_runs_its_documented_command_per_phase(name: str, phase: str) -> None:
    chosen = preset(name)
    argv = render_argv(parse_template(chosen.templates[phase]), {**VALUES, "phase": phase})
    read_only, modifying = EXPECTED[name]
    if (name, phase) == ("codex", "subagent"):
        read_only = CODEX_SUBAGENT
    assert argv == (read_only if phase in {"research", "specify", "subagent"} else modifying)
    assert argv[0] == chosen.program
    assert chosen.install in chosen.install_hint and "--agent-command" in chosen.install_hint


@pytest.mark.parametrize("phase", PHASES)
def test_opencode_may_write_only_its_output_folder_in_a_read_only_phase(phase: str) -> None:
    # opencode matches edit rules against the path relative to its project (the worktree):
    # the output folder outside it is named that way as well as absolutely.
    config = opencode_config(phase, {"output_dir": "/s/research.1/out", "worktree": "/w/tree"})
    permission = json.loads(config["OPENCODE_CONFIG_CONTENT"])["permission"]
    read_only = phase in {"research", "specify", "subagent"}
    assert permission["edit"] == {"*": "deny" if read_only else "allow",
                                  "../../s/research.1/out/*": "allow",
                                  "/s/research.1/out/*": "allow"}
    assert permission["bash"] == ("deny" if read_only else "allow")
    assert permission["external_directory"] == {"*": "deny", "/s/research.1/out/*": "allow"}
    assert config["OPENCODE_DISABLE_DEFAULT_PLUGINS"] == "1"


def test_an_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="claude, codex, aider, goose, opencode"):
        preset("cursor")


def noisy(name: str) -> str:
    """A sample as it lands in the agent's log: stdout and stderr interleaved."""
    return ("npm WARN config production Use `--omit=dev` instead.\n"
            + (SAMPLES / name).read_text() + "\n{not json at all\n")


def test_claude_json_result() -> None:
    assert parse_claude(noisy("claude.json")) == {
        "cost_usd": 0.1834275, "turns": 7, "input_tokens": 42, "output_tokens": 2317,
        "cache_read_tokens": 118640, "cache_write_tokens": 9125, "model": "claude-sonnet-4-5",
    }


def test_claude_stream_json_takes_the_final_result() -> None:
    assert parse_claude(noisy("claude-stream.jsonl")) == {
        "cost_usd": 0.0079825, "turns": 3, "input_tokens": 3, "output_tokens": 6,
        "cache_read_tokens": 15635,
    }


def test_codex_sums_every_completed_turn() -> None:
    assert parse_codex(noisy("codex.jsonl")) == {
        # Its input_tokens include the cached ones: counted once, as cache reads.
        "input_tokens": 25963 - 25472, "cache_read_tokens": 25472, "output_tokens": 200,
        "turns": 2,
    }


# What Codex 0.171.0 logs of the API's answers with the preset's RUST_LOG (codex_trace).
CODEX_TRACE_LINE = ('2026-12-01T17:38:05.690899Z TRACE codex_api::sse::responses: SSE event: '
                    '{"type":"response.completed","response":{"id":"resp_1","model":'
                    '"gpt-5-codex-2025-09-15","status":"completed","usage":{"input_tokens":900,'
                    '"input_tokens_details":{"cached_tokens":600},"output_tokens":40}}}\n')


def test_codex_names_its_model_from_the_answers_it_logged() -> None:
    record = parse_codex(CODEX_TRACE_LINE + noisy("codex.jsonl"))
    # The turns' usage, not the answers' again; the model for the price table.
    assert record == {"input_tokens": 25963 - 25472, "cache_read_tokens": 25472,
                      "output_tokens": 200, "turns": 2, "model": "gpt-5-codex-2025-09-15"}


def test_a_killed_codex_counts_the_answers_it_logged() -> None:
    # Killed before any turn completed: each answer's usage, cached input once, partial.
    assert parse_codex("{\"type\":\"turn.started\"}\n" + 2 * CODEX_TRACE_LINE) == {
        "input_tokens": 600, "cache_read_tokens": 1200, "output_tokens": 80, "turns": 2,
        "partial": True, "model": "gpt-5-codex-2025-09-15"}


def test_codex_logs_the_api_events_it_reads() -> None:
    # exec --json prints an answer only once whole; its log of each event shows it working.
    assert preset("codex").phase_env is not None
    assert preset("codex").phase_env("research", VALUES) == {
        "RUST_LOG": "error,codex_api::sse::responses=trace"}


def test_aider_sums_messages_and_takes_the_session_cost() -> None:
    assert parse_aider(noisy("aider.txt")) == {
        "input_tokens": 16200, "output_tokens": 1337, "cache_read_tokens": 1300, "turns": 2,
        "cost_usd": 0.03,
    }


def test_goose_reports_one_total() -> None:
    assert parse_goose(noisy("goose.json")) == {"total_tokens": 18342}
    assert parse_goose('{"type":"complete","total_tokens":512}\n') == {"total_tokens": 512}


def test_opencode_sums_every_finished_step() -> None:
    assert parse_opencode(noisy("opencode.jsonl")) == {
        "cost_usd": 0.0168, "input_tokens": 19309, "output_tokens": 245,
        "cache_read_tokens": 29400, "turns": 2,
    }


@pytest.mark.parametrize("parse", [parse_claude, parse_codex, parse_aider, parse_goose,
                                   parse_opencode])
def test_a_log_without_the_documented_output_gives_an_empty_record(parse) -> None:
    assert parse("Error: could not reach the API\n{\"type\": \"result\"\n") == {}


def test_codex_is_pointed_at_its_endpoint_by_config_not_by_variable() -> None:
    # Codex 0.171 reads OPENAI_BASE_URL no more; the proxy's route reaches it as config.
    route = "http://127.0.0.1:3128/_ratchet/openai"
    assert codex_endpoint({"OPENAI_BASE_URL": route}) == (
        "-c", f'openai_base_url="{route}"')
    assert codex_endpoint({}) == ()


def test_gemini_counts_cached_input_once() -> None:
    # Gemini CLI 0.61.0's stream-json, captured against the scripted API (counts edited to
    # show a cache hit): its input_tokens include the cached ones.
    assert parse_gemini(noisy("gemini-stream.jsonl")) == {
        "input_tokens": 29582 - 20480, "cache_read_tokens": 20480, "output_tokens": 72,
        "model": "gemini-2.5-flash"}
    assert parse_gemini('{"type":"init","model":"gemini-2.5-flash"}\n') == {}


def test_copilot_counts_turns_and_says_its_cost_is_unknown() -> None:
    # Copilot CLI 1.0.102's --output-format json, captured against the scripted API.
    assert parse_copilot(noisy("copilot.jsonl")) == {
        "turns": 3, "model": "gpt-4.1", "problems": [COPILOT_NO_TOKENS]}
    assert parse_copilot("nothing\n") == {}


def test_copilot_uses_the_route_of_the_provider_the_operator_names() -> None:
    inside = {"OPENAI_BASE_URL": "http://127.0.0.1:9/_ratchet/openai",
              "OPENAI_API_KEY": "placeholder"}
    assert copilot_endpoint({**inside, "COPILOT_PROVIDER_TYPE": "openai"}) == {
        "COPILOT_PROVIDER_BASE_URL": "http://127.0.0.1:9/_ratchet/openai",
        "COPILOT_PROVIDER_API_KEY": "placeholder", "COPILOT_OFFLINE": "true"}
    # No provider named: its GitHub login; a provider of the operator's own: left alone.
    assert copilot_endpoint(inside) == {}
    assert copilot_endpoint({**inside, "COPILOT_PROVIDER_TYPE": "openai",
                             "COPILOT_PROVIDER_BASE_URL": "https://llm.example"}) == {}
    assert copilot_endpoint({"COPILOT_PROVIDER_TYPE": "anthropic", **inside}) == {}
