"""Presets for real agent CLIs: each one's documented non-interactive invocation per phase, and
a parser that reads its own output into a usage record (``runner/usage.py``).

A preset is a command template per phase (``runner/agents/command.py`` runs it) plus the CLI's
install hint, the model API hosts its sandbox may reach, and the variables its documentation
says carry its credentials and model endpoint: an agent of the preset gets those of the
runner's environment, and nothing else of it beyond what the operator names
(RATCHET_AGENT_ENV).

Read-only phases (research, specify, subagent) get each CLI's read-only or permission mode
where it has one, with writes to the output folder allowed; the runner still checks the
worktree after every step, whatever the CLI promised. Output formats, as
documented:

- Claude Code (``claude -p --output-format stream-json --verbose``): JSON lines; the final
  ``result`` object has ``total_cost_usd``, ``num_turns`` and ``usage`` (``input_tokens``,
  ``output_tokens``, ``cache_read_input_tokens``);
  https://docs.anthropic.com/en/docs/claude-code/sdk/sdk-headless
- Codex (``codex exec --json``): JSON lines; each ``turn.completed`` carries ``usage``
  (``input_tokens``, ``cached_input_tokens``, ``output_tokens``);
  https://developers.openai.com/codex/noninteractive
- aider (``--message-file``): prints ``Tokens: 12k sent, 1.3k cache hit, 133 received.`` and
  ``Cost: $0.04 message, $0.10 session.`` per message; https://aider.chat/docs/scripting.html
- goose (``goose run --output-format json``): one object whose ``metadata`` has
  ``total_tokens``; https://block.github.io/goose/docs/guides/goose-cli-commands
- opencode (``opencode run --format json``): JSON lines; each ``step_finish`` part carries
  ``cost`` and ``tokens`` (``input``, ``output``, ``cache.read``); https://opencode.ai/docs/cli/
- Gemini CLI (``gemini --output-format stream-json``): JSON lines; the final ``result`` event's
  ``stats`` has ``input_tokens`` (cached ones included), ``cached``, ``input`` (without them),
  ``output_tokens`` and ``models``; https://geminicli.com/docs/cli/headless/
- Copilot CLI (``copilot --output-format json``): JSON lines; 1.0.102 reports no tokens, only
  ``premiumRequests`` in its ``result`` event; https://docs.github.com/copilot/how-tos/copilot-cli

Parsers are pure and forgiving: the log mixes the CLI's stdout and stderr, so anything that is
not the documented shape is skipped, and a log without it gives an empty record.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from runner.agents.provider import (
    Classifier,
    classify_claude,
    classify_codex,
    classify_copilot,
    classify_gemini,
    classify_opencode,
    classify_text,
)

UsageParser = Callable[[str], dict[str, Any]]
PhaseEnv = Callable[[str, Mapping[str, str]], Mapping[str, str]]
EndpointEnv = Callable[[Mapping[str, str]], Mapping[str, str]]
EndpointArgs = Callable[[Mapping[str, str]], tuple[str, ...]]

# The phases a preset has a template for.
PHASES = ("research", "specify", "implement", "repair", "subagent")
READ_ONLY_PHASES = frozenset({"research", "specify", "subagent"})


@dataclass(frozen=True)
class Preset:
    """A real agent CLI: its program, a template per phase, its usage parser, how to get it."""

    name: str
    program: str
    templates: Mapping[str, str]  # phase -> command template
    parse_usage: UsageParser
    install: str  # what to run to install it
    docs: str
    # The model API hosts it reaches directly when it holds its own login rather than a key the
    # egress proxy adds (runner/network.py); every agent may reach them.
    hosts: tuple[str, ...] = ()
    env: tuple[str, ...] = ()  # its documented credential and endpoint variables
    # Variables its config takes per phase (a permission config), from the phase and the
    # template's placeholder values.
    phase_env: PhaseEnv | None = None
    # The option that caps what one session may spend in dollars (given what the run's budget
    # has left), where the CLI has one.
    budget_option: str | None = None
    # A file in the output folder where the CLI writes its final message: the phase's output
    # when the model wrote none.
    last_message: str | None = None
    # Reads its log's end for its provider's part in a failure (runner/agents/provider.py),
    # and what the operator sets when the provider refuses its credentials.
    classify: Classifier | None = None
    credentials: str = ""
    # Options that point it at its model endpoint, from the agent's environment (the proxy's
    # route inside the sandbox), for a CLI that reads the endpoint from its config only.
    endpoint_args: EndpointArgs | None = None
    # Variables that point it at its model endpoint, from the agent's environment, for a CLI
    # whose endpoint variables are its own (Copilot's BYOK provider).
    endpoint_env: EndpointEnv | None = None
    # Files its fresh home gets unless a seed brought them (path under $HOME -> content).
    home_files: Mapping[str, str] = field(default_factory=dict)

    @property
    def install_hint(self) -> str:
        return (f"the {self.name} preset runs {self.program!r}, which is not installed: install"
                f" it ({self.install}; {self.docs}), or give --agent-command")


def _per_phase(read_only: str, modifying: str) -> Mapping[str, str]:
    return MappingProxyType({phase: read_only if phase in READ_ONLY_PHASES else modifying
                             for phase in PHASES})


def _same(template: str) -> Mapping[str, str]:
    return _per_phase(template, template)


# --- parsers -------------------------------------------------------------------------------


def _json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``text`` that starts a line (single-line or pretty-printed)."""
    decoder = json.JSONDecoder()
    position = 0
    while True:
        start = text.find("{", position)
        if start < 0:
            return
        if start and text[start - 1] != "\n":
            position = start + 1
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            position = start + 1
            continue
        position = end
        if isinstance(value, dict):
            yield value


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _put(record: dict[str, Any], key: str, value: object, *, whole: bool = True) -> None:
    number = _number(value)
    if number is not None and number >= 0:
        record[key] = int(number) if whole else number


def parse_claude(text: str) -> dict[str, Any]:
    """Claude Code's result object (``--output-format json``, or the last line of
    ``stream-json``); a session killed before its result counts what its streamed assistant
    messages reported (each message once, by its id)."""
    result = None
    messages: dict[str, dict[str, Any]] = {}
    model = None
    for value in _json_objects(text):
        if value.get("type") == "result":
            result = value
        elif value.get("type") == "assistant" and isinstance(value.get("message"), dict):
            message = value["message"]
            if isinstance(message.get("usage"), dict):
                messages[str(message.get("id") or len(messages))] = message["usage"]
            model = message.get("model") or model
        elif value.get("type") == "system" and value.get("subtype") == "init":
            model = value.get("model") or model
    if result is None:
        return _claude_partial(messages, model)
    record: dict[str, Any] = {}
    _put(record, "cost_usd", result.get("total_cost_usd"), whole=False)
    _put(record, "turns", result.get("num_turns"))
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    _put(record, "input_tokens", usage.get("input_tokens"))
    _put(record, "output_tokens", usage.get("output_tokens"))
    _put(record, "cache_read_tokens", usage.get("cache_read_input_tokens"))
    _put(record, "cache_write_tokens", usage.get("cache_creation_input_tokens"))
    models = result.get("modelUsage")
    if isinstance(models, dict) and len(models) == 1:
        record["model"] = str(next(iter(models)))
    return record


def _claude_partial(messages: Mapping[str, Mapping[str, Any]], model: object
                    ) -> dict[str, Any]:
    """The usage of a Claude session that never printed its result (it was killed): the sum
    of its assistant messages' usage, without a cost (the price table adds one)."""
    if not messages:
        return {}
    sums = dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens",
                          "cache_write_tokens"), 0)
    for usage in messages.values():
        for key, source in (("input_tokens", "input_tokens"),
                            ("output_tokens", "output_tokens"),
                            ("cache_read_tokens", "cache_read_input_tokens"),
                            ("cache_write_tokens", "cache_creation_input_tokens")):
            number = _number(usage.get(source))
            sums[key] += int(number) if number and number > 0 else 0
    record: dict[str, Any] = {**sums, "turns": len(messages), "partial": True}
    if isinstance(model, str) and model:
        record["model"] = model
    return record


# What Codex logs of each model API event it reads (RUST_LOG, ``codex_trace``): one line each.
_CODEX_SSE = re.compile(r"SSE event: (\{.*\})\s*$", re.MULTILINE)


def _codex_api_events(text: str) -> Iterator[dict[str, Any]]:
    """The Responses API events Codex logged (``response.completed`` names the model and
    carries one answer's usage)."""
    for match in _CODEX_SSE.finditer(text):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("response"), dict):
            yield value


def parse_codex(text: str) -> dict[str, Any]:
    """Codex's JSON events: the usage of every ``turn.completed``, summed. Its
    ``input_tokens`` include the cached ones: the record counts them once, as
    ``cache_read_tokens``. Codex reports no cost (the price table adds one) and its events name
    no model: the model comes from the API's answers Codex logged (``codex_trace``), and so
    does the usage of a session killed before its turn completed (each answer's ``usage``)."""
    turns = [value["usage"] for value in _json_objects(text)
             if value.get("type") == "turn.completed" and isinstance(value.get("usage"), dict)]
    answers = [value["response"] for value in _codex_api_events(text)
               if value.get("type") == "response.completed"]
    partial = not turns and any(isinstance(a.get("usage"), dict) for a in answers)
    usages = turns or [a["usage"] for a in answers if isinstance(a.get("usage"), dict)]
    if not usages:
        return {}
    sums = {"input_tokens": 0, "cache_read_tokens": 0, "output_tokens": 0}
    for usage in usages:
        details = usage.get("input_tokens_details")
        cached_of = (details.get("cached_tokens") if isinstance(details, dict)
                     else usage.get("cached_input_tokens"))
        counts = [int(number) if (number := _number(value)) and number > 0 else 0
                  for value in (usage.get("input_tokens"), cached_of,
                                usage.get("output_tokens"))]
        cached = min(counts[1], counts[0])
        sums["input_tokens"] += counts[0] - cached
        sums["cache_read_tokens"] += cached
        sums["output_tokens"] += counts[2]
    record: dict[str, Any] = {**sums, "turns": len(usages)}
    if partial:
        record["partial"] = True
    models = [a["model"] for a in answers if isinstance(a.get("model"), str) and a["model"]]
    if models:
        record["model"] = models[-1]
    return record


_AIDER_TOKENS = re.compile(
    r"Tokens: (?P<sent>[\d.]+k?) sent(?:, (?P<write>[\d.]+k?) cache write)?"
    r"(?:, (?P<hit>[\d.]+k?) cache hit)?, (?P<received>[\d.]+k?) received\.")
_AIDER_COST = re.compile(r"Cost: \$(?P<message>[\d.]+) message, \$(?P<session>[\d.]+) session\.")


def _aider_count(text: str | None) -> int:
    if not text:
        return 0
    return round(float(text[:-1]) * 1000) if text.endswith("k") else int(float(text))


def parse_aider(text: str) -> dict[str, Any]:
    """aider's per-message reports: tokens summed (as printed, ``12k`` = 12000), cost from the
    last session total."""
    record: dict[str, Any] = {}
    messages = 0
    sent = received = hit = 0
    for match in _AIDER_TOKENS.finditer(text):
        messages += 1
        sent += _aider_count(match.group("sent"))
        received += _aider_count(match.group("received"))
        hit += _aider_count(match.group("hit"))
    if messages:
        record.update(input_tokens=sent, output_tokens=received, cache_read_tokens=hit,
                      turns=messages)
    costs = list(_AIDER_COST.finditer(text))
    if costs:
        record["cost_usd"] = float(costs[-1].group("session"))
    return record


def parse_goose(text: str) -> dict[str, Any]:
    """goose's JSON output (``metadata.total_tokens``) or stream's ``complete`` event; goose
    reports tokens as one total, kept as ``total_tokens``."""
    total = None
    for value in _json_objects(text):
        metadata = value.get("metadata")
        if isinstance(metadata, dict) and "total_tokens" in metadata:
            total = _number(metadata.get("total_tokens"))
        elif value.get("type") == "complete":
            total = _number(value.get("total_tokens"))
    return {} if total is None or total < 0 else {"total_tokens": int(total)}


def parse_opencode(text: str) -> dict[str, Any]:
    """opencode's JSON events: the cost and tokens of every ``step_finish``, summed."""
    record = {"cost_usd": 0.0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0}
    steps = 0
    for value in _json_objects(text):
        part = value.get("part")
        if value.get("type") != "step_finish" or not isinstance(part, dict):
            continue
        steps += 1
        record["cost_usd"] += max(0.0, _number(part.get("cost")) or 0.0)
        tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
        cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
        for key, value_ in (("input_tokens", tokens.get("input")),
                            ("output_tokens", tokens.get("output")),
                            ("cache_read_tokens", cache.get("read"))):
            number = _number(value_)
            record[key] += int(number) if number and number > 0 else 0
    if not steps:
        return {}
    record["cost_usd"] = round(record["cost_usd"], 8)
    return {**record, "turns": steps}


def parse_gemini(text: str) -> dict[str, Any]:
    """Gemini CLI's ``result`` event: its ``input_tokens`` include the cached ones, counted
    once here as ``cache_read_tokens``. Gemini CLI reports no cost (the price table adds
    one)."""
    stats = None
    for value in _json_objects(text):
        if value.get("type") == "result" and isinstance(value.get("stats"), dict):
            stats = value["stats"]
    if stats is None:
        return {}
    total = int(_number(stats.get("input_tokens")) or 0)
    cached = min(total, int(_number(stats.get("cached")) or 0))
    record: dict[str, Any] = {"input_tokens": total - cached, "cache_read_tokens": cached}
    _put(record, "output_tokens", stats.get("output_tokens"))
    models = stats.get("models")
    if isinstance(models, dict) and len(models) == 1:
        record["model"] = str(next(iter(models)))
    return record


COPILOT_NO_TOKENS = ("Copilot CLI reports no tokens: what it spent is not counted, and a"
                     " dollar budget cannot stop it (agent.max_turns and the timeouts still do)")


def parse_copilot(text: str) -> dict[str, Any]:
    """Copilot CLI's JSON events: one turn per successful model call, the model it named.
    It reports no tokens (its ``result`` has ``premiumRequests`` only), so the record says
    its cost is unknown rather than zero."""
    turns = 0
    model = None
    ended = False
    for value in _json_objects(text):
        data = value.get("data") if isinstance(value.get("data"), dict) else {}
        if value.get("type") == "model.call_finished" and data.get("outcome") == "success":
            turns += 1
        elif value.get("type") == "model.call_final_result":
            model = data.get("model") or model
        elif value.get("type") == "result":
            ended = True
    if not turns and not ended:
        return {}
    record: dict[str, Any] = {"turns": turns, "problems": [COPILOT_NO_TOKENS]}
    if isinstance(model, str) and model:
        record["model"] = model
    return record


# --- the presets ---------------------------------------------------------------------------

# The prompt reaches every preset by stdin or by file, never as an argument: one argument over
# 128 KiB cannot start a process at all (E2BIG), and a research note makes prompts that large.
# A template that names neither {prompt} nor {prompt_file} reads it on stdin
# (runner/agents/command.py).

# Claude Code in print mode, reading the prompt on stdin and streaming its events (stream-json
# prints as it works, so the idle watch sees a healthy session; --verbose is required with
# it; --include-partial-messages prints the model's stream as it arrives, else nothing shows
# while one long answer streams, and 2.1.332 was ended as idle mid-answer). The output folder
# is a working directory of the session (--add-dir): a path rule alone grants nothing outside
# them. Read-only phases may read, and edit only the output folder
# (an absolute path rule is written //path; Edit rules cover Write); dontAsk denies the rest
# instead of prompting. Others may edit and run commands in the worktree.
_CLAUDE = ("claude -p --output-format stream-json --verbose --include-partial-messages"
           " --add-dir {output_dir}")
# Codex exec reads the prompt on stdin ("-") and streams JSON events. Its final message goes
# to a file of its own in the output folder, read only when the model wrote no output
# (``Preset.last_message``): it must never overwrite what the model wrote. Codex's read-only
# sandbox cannot write the output, a plan or a note, so every phase runs workspace-write with
# the output folder added as a writable root; the runner refuses worktree changes after a
# read-only phase. Codex's own sandbox (a bubblewrap it ships) nests in Ratchet's, except for
# a subagent: its worktree is bound read-only by Ratchet's sandbox, where Codex 0.171 cannot
# make the mount points it protects (``.agents``, ``.codex``), so every command failed.
# Subagents run with Codex's sandbox off: Ratchet's already lets them write only the output
# folder.
# Its plugins (fetched from github.com and chatgpt.com) and its analytics (ab.chatgpt.com) are
# off: the egress proxy refuses those hosts, and each refusal was logged as the step's.
CODEX_LAST_MESSAGE = "codex.last-message.md"
_CODEX_EXEC = ("codex exec --json --output-last-message {output_dir}/" + CODEX_LAST_MESSAGE
               + " --disable plugins -c analytics.enabled=false")
_CODEX = _CODEX_EXEC + " --sandbox workspace-write --add-dir {output_dir} -"
_CODEX_SUBAGENT = _CODEX_EXEC + " --dangerously-bypass-approvals-and-sandbox -"
# aider (0.86.2): message-file mode, edits applied without asking, its history files and
# analytics kept out of the worktree. It runs with --no-git: with git, a file outside the
# repository (the output) cannot be edited at all (it is "not in the subpath" of the repo), and
# its repo map writes a tags cache into the worktree that the runner would take as the agent's
# change; without git its root is the working directory (the worktree) and the model writes the
# output by its absolute path. No repo map, so the model sees what the prompt and its edits
# name. It streams its reply (the idle watch sees it). It has no read-only mode: a read-only
# phase relies on the runner's check after the step.
_AIDER = (
    "aider --message-file {prompt_file} --yes-always --no-git --analytics-disable"
    " --no-check-update --no-show-release-notes --no-pretty"
    " --chat-history-file {output_dir}/aider.chat.history.md"
    " --input-history-file {output_dir}/aider.input.history"
)


def opencode_config(phase: str, values: Mapping[str, str]) -> dict[str, str]:
    """opencode's config for ``phase``: its permission rules (OPENCODE_CONFIG_CONTENT,
    https://opencode.ai/docs/permissions/) and the switches that keep it off the network
    beyond its model API.

    ``opencode run`` rejects whatever would ask, and a write outside its project asks
    (``external_directory``), so the output folder is allowed outright. opencode has no
    read-only mode: a read-only phase may edit only the output folder and runs no shell. Edit
    rules match the path relative to the project (1.18.33; the documentation's examples are
    all relative), so the folder is named both ways. The sandbox bounds what any rule can
    reach; the runner still checks the worktree after the step."""
    output_dir = values["output_dir"]
    relative = os.path.relpath(output_dir, values["worktree"])
    read_only = phase in READ_ONLY_PHASES
    permission = {
        "edit": {"*": "deny" if read_only else "allow", f"{relative}/*": "allow",
                 f"{output_dir}/*": "allow"},
        "bash": "deny" if read_only else "allow",
        "external_directory": {"*": "deny", f"{output_dir}/*": "allow"},
    }
    # A call that would ask (reading a .env file, say) is rejected and ends opencode's session
    # by default (1.18.33: it exits 0 with no output); continue_loop_on_deny hands the refusal
    # to the model, which goes on with its task.
    config = {"permission": permission, "experimental": {"continue_loop_on_deny": True}}
    return {
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        # Its default plugins install from npm and its model list comes from models.dev at
        # start (a snapshot ships with it): hosts the sandbox refuses anyway.
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }


# Codex's own log of every Responses API event it reads, on stderr: ``exec --json`` prints an
# answer only once it is whole, so a long answer streaming showed nothing and the idle watch
# ended a working session (0.171.0); the events also name the model, which its JSON never
# does, for the price table. Errors stay at Codex's default level.
CODEX_TRACE = "error,codex_api::sse::responses=trace"


def codex_trace(phase: str, values: Mapping[str, str]) -> dict[str, str]:
    """Codex's log filter (RUST_LOG), the same in every phase."""
    return {"RUST_LOG": CODEX_TRACE}


def codex_endpoint(env: Mapping[str, str]) -> tuple[str, ...]:
    """Codex 0.171 ignores OPENAI_BASE_URL: its endpoint is the ``openai_base_url`` config key
    (a TOML string; https://developers.openai.com/codex/config-reference)."""
    base = env.get("OPENAI_BASE_URL", "")
    return ("-c", f"openai_base_url={json.dumps(base)}") if base else ()


# Gemini CLI headless: a stdin that is not a terminal is the prompt; stream-json prints each
# event as it happens. The output folder joins the workspace (--include-directories);
# --skip-trust trusts the worktree for this session only (an untrusted folder refuses the
# approval modes). Read-only phases run auto_edit (file edits approved, the shell tool not
# offered headless), the others yolo.
_GEMINI = ("gemini --output-format stream-json --skip-trust --include-directories {output_dir}"
           " --approval-mode")
# 0.61 takes GOOGLE_GEMINI_BASE_URL (the proxy's route) as a "gateway" login that headless
# mode refuses ("Invalid auth method selected."): the key login must be chosen in its
# settings. Usage statistics off: they would go to a Google host the proxy refuses.
GEMINI_SETTINGS = json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}},
                              "privacy": {"usageStatisticsEnabled": False},
                              "general": {"enableAutoUpdate": False}}, indent=2) + "\n"
# Copilot CLI in prompt mode reads the prompt on stdin; --allow-all-tools is required
# headless. Read-only phases may not run the shell (--deny-tool shell); the output folder is
# a directory it may write (--add-dir). No built-in GitHub MCP server (it would reach
# GitHub with the agent's token), no auto-update.
_COPILOT = ("copilot --output-format json --allow-all-tools --add-dir {output_dir}"
            " --disable-builtin-mcps --no-auto-update")


def copilot_endpoint(env: Mapping[str, str]) -> dict[str, str]:
    """Copilot's BYOK provider on the proxy's route: when the operator names the provider's
    kind (COPILOT_PROVIDER_TYPE ``openai`` or ``anthropic``) and the runner routes that API,
    the CLI talks to the route with the placeholder key (the proxy adds the real one) and
    needs no GitHub login (COPILOT_OFFLINE)."""
    base, key = {"openai": ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
                 "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}.get(
        env.get("COPILOT_PROVIDER_TYPE", ""), ("", ""))
    if not env.get(base) or env.get("COPILOT_PROVIDER_BASE_URL"):
        return {}  # its GitHub login, or the provider the operator configured
    return {"COPILOT_PROVIDER_BASE_URL": env[base],
            "COPILOT_PROVIDER_API_KEY": env.get(key, ""), "COPILOT_OFFLINE": "true"}


PRESETS: Mapping[str, Preset] = MappingProxyType({
    "claude": Preset(
        name="claude", program="claude", hosts=("api.anthropic.com",),
        templates=_per_phase(
            f"{_CLAUDE} --permission-mode dontAsk"
            " --allowedTools Read,Glob,Grep,Edit(/{output_dir}/**),Write(/{output_dir}/**)",
            f"{_CLAUDE} --permission-mode acceptEdits"
            " --allowedTools Bash,Read,Glob,Grep,Edit,Write",
        ),
        parse_usage=parse_claude,
        install="npm install -g @anthropic-ai/claude-code",
        docs="https://docs.anthropic.com/en/docs/claude-code/cli-reference",
        # https://docs.anthropic.com/en/docs/claude-code/settings#environment-variables
        env=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
             "ANTHROPIC_MODEL", "CLAUDE_CODE_OAUTH_TOKEN"),
        budget_option="--max-budget-usd",
        classify=classify_claude,
        credentials="set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the runner's"
                    " environment, or give the agents a login with"
                    " RATCHET_AGENT_HOME_SEED=~/.claude:~/.claude.json",
    ),
    "codex": Preset(
        name="codex", program="codex", hosts=("api.openai.com",),
        templates=MappingProxyType({**_same(_CODEX), "subagent": _CODEX_SUBAGENT}),
        parse_usage=parse_codex,
        install="npm install -g @openai/codex",
        docs="https://developers.openai.com/codex/noninteractive",
        env=("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"),
        phase_env=codex_trace,
        last_message=CODEX_LAST_MESSAGE,
        classify=classify_codex,
        endpoint_args=codex_endpoint,
        credentials="set OPENAI_API_KEY (or CODEX_API_KEY) in the runner's environment, or"
                    " give the agents a login with RATCHET_AGENT_HOME_SEED=~/.codex",
    ),
    "aider": Preset(
        name="aider", program="aider", hosts=("api.anthropic.com", "api.openai.com"),
        templates=_same(_AIDER), parse_usage=parse_aider,
        install="python -m pip install aider-install && aider-install",
        docs="https://aider.chat/docs/scripting.html",
        # https://aider.chat/docs/config/api-keys.html
        env=("OPENAI_API_KEY", "OPENAI_API_BASE", "ANTHROPIC_API_KEY", "GEMINI_API_KEY",
             "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "AIDER_MODEL"),
        classify=classify_text,
        credentials="set its provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) in the"
                    " runner's environment",
    ),
    "goose": Preset(
        name="goose", program="goose", hosts=("api.anthropic.com", "api.openai.com"),
        templates=_same("goose run --no-session --quiet --output-format json"
                        " --instructions {prompt_file}"),
        parse_usage=parse_goose,
        install="curl -fsSL https://github.com/block/goose/releases/download/stable/"
                "download_cli.sh | bash",
        docs="https://block.github.io/goose/docs/guides/goose-cli-commands",
        # https://block.github.io/goose/docs/guides/environment-variables
        env=("GOOSE_PROVIDER", "GOOSE_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
             "GOOGLE_API_KEY", "OPENROUTER_API_KEY"),
        classify=classify_text,
        credentials="set its provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) in the"
                    " runner's environment, or seed its config with RATCHET_AGENT_HOME_SEED",
    ),
    "opencode": Preset(
        name="opencode", program="opencode", hosts=("api.anthropic.com", "api.openai.com"),
        # The prompt on stdin (https://opencode.ai/docs/cli/#run).
        templates=_same("opencode run --format json"),
        parse_usage=parse_opencode,
        install="npm install -g opencode-ai",
        docs="https://opencode.ai/docs/cli/",
        # https://opencode.ai/docs/providers/
        env=("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY"),
        phase_env=opencode_config,
        classify=classify_opencode,
        credentials="set its provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) in the"
                    " runner's environment, or seed a login with"
                    " RATCHET_AGENT_HOME_SEED=~/.local/share/opencode",
    ),
    "gemini": Preset(
        name="gemini", program="gemini", hosts=("generativelanguage.googleapis.com",),
        templates=_per_phase(f"{_GEMINI} auto_edit", f"{_GEMINI} yolo"),
        parse_usage=parse_gemini,
        install="npm install -g @google/gemini-cli",
        docs="https://geminicli.com/docs/cli/headless/",
        # https://geminicli.com/docs/reference/configuration/#environment-variables
        env=("GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_MODEL"),
        home_files=MappingProxyType({".gemini/settings.json": GEMINI_SETTINGS}),
        classify=classify_gemini,
        credentials="set GEMINI_API_KEY in the runner's environment, or give the agents a"
                    " Google login with RATCHET_AGENT_HOME_SEED=~/.gemini",
    ),
    "copilot": Preset(
        name="copilot", program="copilot",
        hosts=("api.githubcopilot.com", "*.githubcopilot.com", "api.github.com", "github.com"),
        templates=_per_phase(f"{_COPILOT} --deny-tool shell", _COPILOT),
        parse_usage=parse_copilot,
        install="npm install -g @github/copilot",
        docs="https://docs.github.com/copilot/how-tos/copilot-cli",
        # `copilot help environment`
        env=("COPILOT_GITHUB_TOKEN", "COPILOT_MODEL", "COPILOT_PROVIDER_TYPE",
             "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY",
             "COPILOT_PROVIDER_WIRE_API", "COPILOT_PROVIDER_MODEL_ID",
             "COPILOT_PROVIDER_WIRE_MODEL"),
        endpoint_env=copilot_endpoint,
        classify=classify_copilot,
        credentials="set COPILOT_GITHUB_TOKEN (a token with the Copilot Requests permission)"
                    " in the runner's environment, seed a login with"
                    " RATCHET_AGENT_HOME_SEED=~/.copilot, or name a provider the runner routes"
                    " with COPILOT_PROVIDER_TYPE=openai|anthropic",
    ),
})


def preset(name: str) -> Preset:
    """The preset called ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown agent preset {name!r}; the presets are"
                         f" {', '.join(PRESETS)} (or give an agent command template)") from None
