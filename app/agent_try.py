"""``ratchet agent try``: what a preset still needs before a real issue fails for want of it.

Each piece is one line, ``ok``, ``warn`` or ``FAIL`` with what to do: the CLI on the agents'
PATH, started with ``--version`` as a step starts it, credentials (a key variable or a seeded
login), the seeded folders, the sandbox (the checks ``ratchet doctor`` makes of an agent,
``app/doctor/agent.py``), and the hosts its model API needs. Then the CLI itself runs one
read-only step, sandbox and egress proxy as in a run, against Ratchet's trial model on
127.0.0.1 (``runner/agents/trial.py``) instead of the provider: its key variables hold a
placeholder for the trial, so nothing is billed and no real key is sent anywhere.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from app.doctor.agent import cli_finding, credentials_finding, sandbox_finding, seed_findings
from app.doctor.findings import Check, Finding, fail, ok
from runner.agents.base import AgentTask
from runner.agents.command import CommandAgent, agent_environment
from runner.agents.configured import agent_of
from runner.agents.presets import Preset
from runner.agents.trial import TRIAL_KEY, TrialModel
from runner.errors import RatchetError
from runner.network import KEY_VARIABLES, NetworkSettings, model_routes
from runner.settings import EngineSettings

# Where the trial model stands in for each preset's API: the variable and the path suffix.
_TRIAL_ENDPOINT: Mapping[str, tuple[str, str, str]] = {
    "claude": ("ANTHROPIC_BASE_URL", "", "ANTHROPIC_API_KEY"),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", "", "GEMINI_API_KEY"),
}
_OPENAI = ("OPENAI_BASE_URL", "/v1", "OPENAI_API_KEY")
# Variables that would send the trial elsewhere or with a real login.
_LOGINS = ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CODEX_API_KEY",
           "COPILOT_GITHUB_TOKEN", "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY",
           "OPENROUTER_API_KEY")
TRIAL_TIMEOUT_S = 180.0
PROMPT = ("# Ratchet trial\n\nThis is a setup check. Change nothing, write nothing, call no"
          " tool: answer with one short sentence and exit.\n")


def setup_findings(chosen: Preset, settings: EngineSettings) -> list[Finding]:
    """The preset's setup, piece by piece (the checks ``ratchet doctor`` makes of it, and
    the hosts it reaches), without running the CLI on a prompt."""
    return [cli_finding(agent_of(settings, preset=chosen), settings, chosen=chosen),
            credentials_finding(chosen, settings), *seed_findings(settings),
            sandbox_finding(settings), ok(Check.HOSTS, _hosts(chosen, settings.network))]


def _hosts(chosen: Preset, network: NetworkSettings) -> str:
    routed = {route.host: route for route in network.routes if route.headers}
    direct = [host for host in chosen.hosts if host not in routed]
    through = [f"{route.host} (the proxy adds {route.key_env})" for route in routed.values()]
    parts = []
    if through:
        parts.append("routed: " + ", ".join(through))
    if direct:
        parts.append("reached directly (allowed for this preset): " + ", ".join(direct))
    extra = ", ".join(network.agent_allow) or "none"
    return f"{'; '.join(parts) or 'none'}; RATCHET_AGENT_NETWORK_ALLOW adds: {extra}"


def trial_environment(chosen: Preset, environ: Mapping[str, str], url: str) -> dict[str, str]:
    """The runner's environment for the trial: the preset's API pointed at the trial model
    with a placeholder key, every real key and login removed."""
    variable, suffix, key = _TRIAL_ENDPOINT.get(chosen.name, _OPENAI)
    env = {name: value for name, value in environ.items()
           if name not in KEY_VARIABLES and name not in _LOGINS
           and not name.endswith("_BASE_URL")}
    env.update({variable: url + suffix, key: TRIAL_KEY})
    if chosen.name == "copilot":  # its GitHub endpoint cannot be moved: its BYOK provider
        env.update(COPILOT_PROVIDER_TYPE="openai",
                   COPILOT_MODEL=environ.get("COPILOT_MODEL") or "gpt-4.1")
    return env


def run_trial(chosen: Preset, settings: EngineSettings) -> Finding:
    """The CLI on a tiny read-only prompt against the trial model, as a run's step runs it."""
    with TrialModel() as model:
        env = trial_environment(chosen, settings.environ, model.url)
        network = NetworkSettings(agent_allow=settings.network.agent_allow,
                                  repository_allow=settings.network.repository_allow,
                                  routes=model_routes(env))
        agent = CommandAgent(chosen.templates, preset=chosen,
                             env=agent_environment(env, (*chosen.env, *settings.agent_env)),
                             sandbox=settings.sandbox, network=network,
                             home_seed=settings.agent_home_seed, prices=settings.agent_prices,
                             max_output_bytes=settings.max_output_bytes,
                             max_log_bytes=settings.max_log_bytes)
        scratch = settings.home / "scratch"
        scratch.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="agent-try.", dir=scratch))
        try:
            return _verdict(chosen, agent, folder, model)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _verdict(chosen: Preset, agent: CommandAgent, folder: Path, model: TrialModel) -> Finding:
    worktree = folder / "worktree"
    worktree.mkdir()
    (worktree / "README.md").write_text("A trial worktree.\n")
    subprocess.run(["git", "init", "-q", str(worktree)], check=False,
                   capture_output=True, timeout=60)
    out = folder / "out"
    task = AgentTask(run_id="trial", phase="research", step="trial.1", worktree=worktree,
                     prompt=PROMPT, prompt_file=folder / "prompt.md", output_dir=out,
                     output=out / "research" / "repository-analysis.md",
                     log_file=folder / "agent.log", timeout=TRIAL_TIMEOUT_S)
    task.prompt_file.write_text(PROMPT)
    try:
        agent.run(task)
        problem = None
    except RatchetError as exc:
        problem = exc
    asked = [entry for entry in model.asked if entry.api != "other"]
    tail = _tail(task.log_file)
    if problem is not None and getattr(problem, "evidence", {}).get("output_problem") != "missing":
        return fail(Check.TRIAL, f"{problem}" + (f"; its log ends: {tail}" if tail else ""))
    if not asked:
        return fail(Check.TRIAL, f"{chosen.program} exited 0 without asking the model"
                                 f" (its log ends: {tail or 'nothing'})")
    return ok(Check.TRIAL, f"{chosen.program} reached the trial model through the sandbox and"
                           f" the egress proxy ({len(asked)} request(s), {asked[0].api} API)"
                           " and exited 0")


def _tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])[:600]
