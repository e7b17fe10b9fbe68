"""The agent's checks, shared by ``ratchet doctor`` (and ``serve``/``worker`` at start) and
``ratchet agent try``: its CLI is on the agents' PATH and starts, its credentials are there,
its seeded folders exist, and the sandbox it runs in starts.

The CLI is started with ``--version`` as a step starts it (``CommandAgent.version``: the
agents' environment and PATH, a fresh seeded home, the sandbox, no network), so a CLI found
on the host but unable to run in there (its interpreter in a folder the sandbox does not
show) fails here, not on a real issue.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from app.doctor.findings import Check, Finding, fail, ok, skip, warn
from runner.agents.command import CommandAgent, ProgramVersion
from runner.agents.configured import agent_of
from runner.agents.presets import Preset, preset
from runner.sandbox import SandboxMode, SandboxUnavailable
from runner.settings import EngineSettings

# The variables that give each preset a model login (one is enough), besides a seeded one.
CREDENTIALS: Mapping[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "gemini": ("GEMINI_API_KEY",),
    "copilot": ("COPILOT_GITHUB_TOKEN", "COPILOT_PROVIDER_TYPE"),
}
_ANY_PROVIDER = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY")
# Exit statuses of a program that could not be started (a shell's and env's: not executable,
# not found), and bwrap's own word for a program it could not exec.
_CANNOT_START = (126, 127)
_BWRAP_EXEC = "bwrap: execvp"


def agent_findings(settings: EngineSettings, *, required: bool) -> list[Finding]:
    """The configured agent (RATCHET_AGENT_COMMAND, else RATCHET_AGENT): its CLI, credentials
    and seeds. ``required``: runs will come without an agent of their own (from GitHub), so
    no agent configured is a failure rather than a warning."""
    if settings.default_agent_command:
        try:
            agent = agent_of(settings, command=settings.default_agent_command)
        except ValueError as exc:
            return [fail(Check.AGENT, f"RATCHET_AGENT_COMMAND: {exc}")]
        return [cli_finding(agent, settings),
                skip(Check.CREDENTIALS, "a command template names no credentials variable:"
                                        " RATCHET_AGENT_ENV passes the ones it needs"),
                *seed_findings(settings)]
    if settings.default_agent:
        chosen = preset(settings.default_agent)
        return [cli_finding(agent_of(settings, preset=chosen), settings, chosen=chosen),
                credentials_finding(chosen, settings), *seed_findings(settings)]
    text = "none configured: set RATCHET_AGENT (a preset) or RATCHET_AGENT_COMMAND"
    if required:
        return [fail(Check.AGENT, text + "; runs from GitHub have no other agent")]
    return [warn(Check.AGENT, text + ", or give each `ratchet run` --agent or --agent-command")]


def cli_finding(agent: CommandAgent, settings: EngineSettings, *,
                chosen: Preset | None = None) -> Finding:
    """Whether the agent's program is on the agents' PATH and starts (``--version``)."""
    scratch = settings.home / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="doctor.", dir=scratch))
    try:
        answer = agent.version(folder)
    except SandboxUnavailable:
        return skip(Check.AGENT, f"{agent.program} is on the agents' PATH; not started, as the"
                                 " sandbox does not start (see sandbox)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return _started(answer, chosen)


def _missing(program: str, chosen: Preset | None) -> Finding:
    how = f"install it ({chosen.install}; {chosen.docs})" if chosen else (
        "install it or fix RATCHET_AGENT_COMMAND")
    return fail(Check.AGENT, f"{program!r} is not on the agents' PATH: {how}")


def _started(answer: ProgramVersion, chosen: Preset | None) -> Finding:
    """What ``--version`` said about the program, as one line."""
    if answer.path is None:
        return _missing(answer.program, chosen)
    said = f": {answer.line}" if answer.line else ""
    if answer.timed_out:
        return fail(Check.AGENT, f"{answer.path} did not answer --version in time: run"
                                 f" `{answer.program} --version` as the service's user to see"
                                 " why")
    if answer.returncode == 0:
        return ok(Check.AGENT, f"{answer.program} is {answer.path} (version {answer.line or '?'})")
    if (answer.returncode is None or answer.returncode in _CANNOT_START
            or answer.line.startswith(_BWRAP_EXEC)):
        return fail(Check.AGENT, f"{answer.path} does not start where agents run{said}; show"
                                 " what it needs with RATCHET_SANDBOX_RO (its interpreter's"
                                 " folder) or install it under /usr or /opt")
    if chosen is None:  # not every program has --version
        return warn(Check.AGENT, f"{answer.path} exited {answer.returncode} on --version{said};"
                                 " make sure RATCHET_AGENT_COMMAND runs it as you expect")
    return fail(Check.AGENT, f"{answer.path} exited {answer.returncode} on --version{said}:"
                             f" reinstall it ({chosen.install})")


def credentials_finding(chosen: Preset, settings: EngineSettings) -> Finding:
    """The preset's documented credentials variable is set (or a login is seeded); the
    value is never shown."""
    environ = settings.environ
    names = CREDENTIALS.get(chosen.name, _ANY_PROVIDER)
    provider = environ.get("COPILOT_PROVIDER_TYPE", "") if chosen.name == "copilot" else ""
    if provider in ("openai", "anthropic"):  # its BYOK provider, on the runner's route
        names = (f"{provider.upper()}_API_KEY",)
    present = [name for name in names if environ.get(name)]
    if present:
        return ok(Check.CREDENTIALS, f"{', '.join(present)} set")
    if settings.agent_home_seed:
        return ok(Check.CREDENTIALS, "a seeded login (RATCHET_AGENT_HOME_SEED); none of"
                                     f" {', '.join(names)} is set")
    return fail(Check.CREDENTIALS, chosen.credentials)


def seed_findings(settings: EngineSettings) -> list[Finding]:
    """Each RATCHET_AGENT_HOME_SEED path exists."""
    return [ok(Check.SEED, f"{seed} exists") if os.path.lexists(seed) else
            fail(Check.SEED, f"RATCHET_AGENT_HOME_SEED names {seed}, which does not exist:"
                             " create it (log the CLI in once) or drop it from the list")
            for seed in settings.agent_home_seed]


def sandbox_finding(settings: EngineSettings) -> Finding:
    """Whether the sandbox starts a process here (a real ``bwrap`` start, as steps run)."""
    sandbox = settings.sandbox
    if sandbox.mode is SandboxMode.NONE:
        return warn(Check.SANDBOX, "none (RATCHET_SANDBOX=none): agents and checks run"
                                   " unconfined and can read Ratchet's settings and ledger;"
                                   " install bubblewrap and unset it")
    try:
        sandbox.check()
    except SandboxUnavailable as exc:
        return fail(Check.SANDBOX, str(exc))
    return ok(Check.SANDBOX, f"{sandbox.mode} starts processes here")
