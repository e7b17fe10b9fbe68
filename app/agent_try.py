"""``ratchet agent try``: what a preset still needs before a real issue fails for want of it.

Each piece is one line, ``ok`` or ``MISSING``/``FAILED`` with what to do: the CLI on the
agents' PATH and its version, credentials (a key variable or a seeded login), the seeded
folders, the sandbox, and the hosts its model API needs. Then the CLI itself runs one
read-only step, sandbox and egress proxy as in a run, against Ratchet's trial model on
127.0.0.1 (``runner/agents/trial.py``) instead of the provider: its key variables hold a
placeholder for the trial, so nothing is billed and no real key is sent anywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.agents.base import AgentTask
from runner.agents.command import CommandAgent, agent_environment
from runner.agents.presets import Preset
from runner.agents.trial import TRIAL_KEY, TrialModel
from runner.errors import RatchetError
from runner.network import KEY_VARIABLES, NetworkSettings, model_routes
from runner.sandbox import SandboxUnavailable
from runner.settings import EngineSettings

# The variables that give each preset a model login (one is enough), besides a seeded one.
CREDENTIALS: Mapping[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "gemini": ("GEMINI_API_KEY",),
    "copilot": ("COPILOT_GITHUB_TOKEN", "COPILOT_PROVIDER_TYPE"),
}
_ANY_PROVIDER = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY")
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


@dataclass(frozen=True)
class Finding:
    """One piece of the preset's setup: fine or not, in one line."""

    ok: bool
    text: str

    def line(self) -> str:
        return f"{'ok' if self.ok else 'MISSING':8} {self.text}"


def setup_findings(chosen: Preset, settings: EngineSettings) -> list[Finding]:
    """The preset's setup, piece by piece, without running the CLI on a prompt."""
    environ = settings.environ
    findings = []
    program = shutil.which(chosen.program, path=environ.get("PATH"))
    if program is None:
        findings.append(Finding(False, f"{chosen.program!r} is not on the agents' PATH: install"
                                       f" it ({chosen.install}; {chosen.docs})"))
    else:
        findings.append(Finding(True, f"{chosen.program} is {program} ({_version(program)})"))
    names = CREDENTIALS.get(chosen.name, _ANY_PROVIDER)
    provider = environ.get("COPILOT_PROVIDER_TYPE", "") if chosen.name == "copilot" else ""
    if provider in ("openai", "anthropic"):  # its BYOK provider, on the runner's route
        names = (f"{provider.upper()}_API_KEY",)
    present = [name for name in names if environ.get(name)]
    if present:
        findings.append(Finding(True, f"credentials: {', '.join(present)} set"))
    elif settings.agent_home_seed:
        findings.append(Finding(True, "credentials: a seeded login (RATCHET_AGENT_HOME_SEED);"
                                      f" none of {', '.join(names)} is set"))
    else:
        findings.append(Finding(False, f"credentials: {chosen.credentials}"))
    for seed in settings.agent_home_seed:
        if not os.path.lexists(seed):
            findings.append(Finding(False, f"RATCHET_AGENT_HOME_SEED names {seed}, which does"
                                           " not exist: create it (log the CLI in once) or"
                                           " drop it from the list"))
        else:
            findings.append(Finding(True, f"seed {seed} exists"))
    try:
        settings.sandbox.check()
        findings.append(Finding(True, f"sandbox: {settings.sandbox.mode}"))
    except SandboxUnavailable as exc:
        findings.append(Finding(False, str(exc)))
    findings.append(Finding(True, _hosts(chosen, settings.network)))
    return findings


def _version(program: str) -> str:
    try:
        done = subprocess.run([program, "--version"], capture_output=True, text=True,
                              timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"--version failed: {exc}"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return f"version {lines[0].strip()}" if lines else f"--version exited {done.returncode}"


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
    return f"hosts: {'; '.join(parts) or 'none'}; RATCHET_AGENT_NETWORK_ALLOW adds: {extra}"


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
        return Finding(False, f"trial: {problem}" + (f"; its log ends: {tail}" if tail else ""))
    if not asked:
        return Finding(False, f"trial: {chosen.program} exited 0 without asking the model"
                              f" (its log ends: {tail or 'nothing'})")
    return Finding(True, f"trial: {chosen.program} reached the trial model through the"
                         f" sandbox and the egress proxy ({len(asked)} request(s),"
                         f" {asked[0].api} API) and exited 0")


def _tail(log: Path, lines: int = 3) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])[:600]
