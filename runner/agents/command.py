"""The command agent: runs any coding-agent CLI from a command-line template.

The template (one, or one per phase for a preset of ``runner/agents/presets.py``) is split once
with ``shlex.split`` and placeholders are substituted inside each argv element; no shell is
involved, so a prompt is never re-parsed or executed. The agent runs in the sandbox
(``runner/sandbox.py``), reaching the network only through an egress proxy of its step
(``runner/egress.py``; what it refused is in the evidence), and in its own process group,
which is killed as a whole on timeout, on cancellation, when it has been idle (no output, no
worktree change) for its idle timeout, and after the agent exits; the sandbox's PID namespace
ends every descendant that left the group. Its output and its usage report are read without
following symlinks and capped; its log (stdout and stderr) is capped on disk
(``plumbing/logfile.py``: head and tail kept, the sizes in the evidence); what it spent
(``runner/usage.py``) travels with its result or with the failure it raised.

Its environment is built by allowlist (``agent_environment``): PATH and the locale, the
variables the operator or the preset names, the protocol's ``RATCHET_*``, ``TMPDIR`` and a
``HOME`` of its own for the step (``runner/agents/home.py``), seeded with the operator's CLI
config and removed when the step ends.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Formatter
from typing import Any

from plumbing.environment import base_environment, pick
from plumbing.files import UnsafePath, read_beneath
from plumbing.logfile import CappedLog
from plumbing.process import stop_group
from runner.agents.base import AgentResult, AgentTask
from runner.agents.home import add_files, fresh_home, remove_home
from runner.agents.presets import Preset
from runner.agents.provider import Trouble
from runner.egress import Egress, egress
from runner.errors import (
    AGENT_DID_NOT_START,
    AgentIdle,
    AgentTimedOut,
    AgentUnauthorized,
    DeterministicFailure,
    PolicyViolation,
    ProviderUnavailable,
    StepFailure,
    TransientFailure,
)
from runner.network import NetworkSettings
from runner.prices import DEFAULT_PRICES, Price, priced
from runner.sandbox import Sandbox
from runner.usage import MAX_USAGE_BYTES, decode_usage, measured, merge_usage

log = logging.getLogger(__name__)

# The placeholders a template may use; anything else is a typo caught at construction.
PLACEHOLDERS = ("prompt", "prompt_file", "output", "output_dir", "phase")
# Exit status an agent uses for "try again later" (EX_TEMPFAIL from sysexits.h).
EXIT_TRANSIENT = 75
# Short enough that a lost lease stops the agent promptly.
POLL_INTERVAL = 0.05
# How much of the log end travels as evidence.
LOG_TAIL_BYTES = 4096
# Default cap on a phase's output file (a setting overrides it).
MAX_OUTPUT_BYTES = 1 << 20
# Default cap on an agent's log on disk (a setting overrides it).
MAX_LOG_BYTES = 8 << 20
# Seconds the log's pipe may take to drain once the agent's process group is gone.
LOG_DRAIN_S = 2.0
# How much of the log end a usage parser reads (a CLI's totals come last).
USAGE_LOG_BYTES = 1 << 20
# How much of it a preset's classifier reads for its provider's error (runner/agents/provider.py).
CLASSIFY_LOG_BYTES = 64 << 10
# Bounds on how often an idle watch walks the worktree: a tenth of the idle timeout, at least
# this often for short timeouts, at most this rarely for long ones (a walk costs a stat a file).
IDLE_WALK_MIN = 0.1
IDLE_WALK_MAX = 15.0

# Seconds ``--version`` may take: a CLI that cannot print its version by then cannot run a step.
VERSION_TIMEOUT_S = 30.0
# How much of its version line is kept, and what a version looks like in it.
VERSION_LINE_CHARS = 200
_VERSION = re.compile(r"\d+\.\d+")

# One argv element: literal text and placeholder names, in order.
_Part = tuple[str, str | None]


@dataclass(frozen=True)
class ProgramVersion:
    """What ``program --version`` did, started as a step starts its agent.

    ``path`` is where the agents' PATH finds the program (None: nowhere, and nothing ran);
    ``returncode`` is None when it did not start or did not finish (``timed_out``); ``line``
    is its version line (the first with a dotted number, else the first it printed), or why
    it could not start.
    """

    program: str
    path: str | None
    returncode: int | None
    line: str
    timed_out: bool = False


def parse_template(template: str) -> tuple[tuple[_Part, ...], ...]:
    """Split ``template`` into argv elements of (literal, placeholder) parts.

    Raises ``ValueError`` naming the problem and the allowed placeholders.
    """
    allowed = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise ValueError(f"agent command template {template!r} cannot be split: {exc}") from exc
    if not words:
        raise ValueError(
            f"agent command template {template!r} is empty; give a command such as "
            "'claude -p {prompt}'"
        )
    argv = []
    for word in words:
        try:
            parsed = list(Formatter().parse(word))
        except ValueError as exc:
            raise ValueError(
                f"agent command template {template!r}: {exc} in {word!r}; "
                "write literal braces as '{{' and '}}'"
            ) from exc
        parts: list[_Part] = []
        for literal, name, spec, conversion in parsed:
            if name is not None and (name not in PLACEHOLDERS or spec or conversion):
                field = "{" + name + (f"!{conversion}" if conversion else "")
                field += (f":{spec}" if spec else "") + "}"
                kind = "unsupported" if name in PLACEHOLDERS else "unknown"
                raise ValueError(
                    f"agent command template {template!r} uses {kind} placeholder {field}; "
                    f"allowed: {allowed} (write literal braces as '{{{{' and '}}}}')"
                )
            parts.append((literal, name))
        argv.append(tuple(parts))
    return tuple(argv)


def agent_environment(host: Mapping[str, str], names: Iterable[str] = ()) -> dict[str, str]:
    """What an agent gets of the runner's environment ``host``: PATH, the locale and the
    terminal, and the variables ``names`` lists (the operator's RATCHET_AGENT_ENV, its preset's
    credentials); nothing else (GITHUB_TOKEN, other keys, Ratchet's own settings)."""
    return {**base_environment(host), **pick(host, names)}


def _named_files(template: str, sandbox: Sandbox) -> tuple[Path, ...]:
    """Files the operator's template names literally after the program (``python3
    /tmp/agent.py``) that the sandbox's private folders would hide: shown read-only. Never a
    path the sandbox hides on purpose, nor anything a placeholder (run data) fills in."""
    named = []
    for word in parse_template(template)[1:]:
        if any(name for _, name in word):
            continue
        path = Path("".join(literal for literal, _ in word))
        if (path.is_absolute() and path.is_file() and sandbox.masks(path)
                and not sandbox.hides(path)):
            named.append(path)
    return tuple(named)


def render_argv(parsed: Sequence[Sequence[_Part]], values: Mapping[str, str]) -> list[str]:
    """Substitute placeholder ``values`` into each argv element of a parsed template."""
    return ["".join(lit + (values[name] if name else "") for lit, name in word) for word in parsed]


def reads_stdin(parsed: Sequence[Sequence[_Part]]) -> bool:
    """Whether a template gets the prompt on stdin: it names neither ``{prompt}`` nor
    ``{prompt_file}`` (a CLI given both would read the prompt twice: ``codex exec`` appends
    piped stdin to its prompt argument)."""
    return not any(name in {"prompt", "prompt_file"} for word in parsed for _, name in word)


class CommandAgent:
    """An ``Agent`` that runs a command-line template as a subprocess.

    The prompt goes on the agent's stdin unless the template passes ``{prompt}`` or
    ``{prompt_file}`` (one argument over 128 KiB cannot start a process). Exit 0 with a
    non-empty output file completes the step; exit 75 raises ``TransientFailure``; any other
    exit raises ``DeterministicFailure`` with the log tail.
    """

    def __init__(
        self,
        template: str | Mapping[str, str],
        *,
        env: Mapping[str, str] | None = None,
        kill_grace: float = 5.0,
        sandbox: Sandbox | None = None,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        max_log_bytes: int = MAX_LOG_BYTES,
        parse_usage: Callable[[str], dict[str, Any]] | None = None,
        install_hint: str | None = None,
        network: NetworkSettings | None = None,
        hosts: Sequence[str] = (),
        home_seed: Sequence[Path] = (),
        preset: Preset | None = None,
        prices: Mapping[str, Price] = DEFAULT_PRICES,
    ) -> None:
        """``template`` is one template, or one per phase (a preset's); ``env`` the variables
        the agent gets besides the protocol's (``agent_environment``; None: that of this
        process, nothing named); ``parse_usage`` reads the CLI's own log into a usage record;
        ``install_hint`` says how to get a missing program; ``network`` and ``hosts`` (a
        preset's model APIs) say where it may connect through the egress proxy
        (``runner/network.py``); ``home_seed`` are the host paths copied into each step's fresh
        HOME. A ``preset`` gives its templates, parser, hint and hosts where those are not
        given, and its per-phase config, spending cap and final-message file; ``prices``
        turn tokens into dollars where the CLI reported none (``runner/prices.py``)."""
        if preset is not None:
            parse_usage = parse_usage or preset.parse_usage
            install_hint = install_hint or preset.install_hint
            hosts = tuple(hosts) or preset.hosts
        self.preset = preset
        self.prices = prices
        self.templates = ({"": template} if isinstance(template, str) else dict(template))
        self.template = next(iter(self.templates.values()))
        self._argv = {phase: parse_template(text) for phase, text in self.templates.items()}
        self._env = dict(agent_environment(os.environ) if env is None else env)
        self.home_seed = tuple(home_seed)
        self.kill_grace = kill_grace
        self.sandbox = sandbox or Sandbox()
        self.max_output_bytes = max_output_bytes
        self.max_log_bytes = max_log_bytes
        self.parse_usage = parse_usage
        self.install_hint = install_hint
        self.network = network or NetworkSettings()
        self.hosts = tuple(hosts)

    @property
    def program(self) -> str:
        """The program its templates start (a preset's CLI, a template's first word)."""
        return "".join(literal for literal, _ in parse_template(self.template_for("implement"))[0])

    def template_for(self, phase: str) -> str:
        """The template ``phase`` runs (a single template runs every phase)."""
        return self.templates.get(phase, self.templates.get("", self.template))

    def run(self, task: AgentTask, *, cancel: threading.Event | None = None) -> AgentResult:
        """Run the agent for ``task`` and validate its output.

        Raises ``TransientFailure`` on exit 75, timeout or cancellation, and
        ``DeterministicFailure`` when the command cannot start, exits non-zero, or exits 0
        without writing ``task.output``.
        """
        template = self.template_for(task.phase)
        parsed = self._argv.get(task.phase) or self._argv.get("") or parse_template(template)
        argv = render_argv(
            parsed,
            {
                "prompt": task.prompt,
                "prompt_file": str(task.prompt_file),
                "output": str(task.output),
                "output_dir": str(task.output_dir),
                "phase": task.phase,
            },
        )
        if task.cost_left is not None and self.preset and self.preset.budget_option:
            # The CLI stops itself at what the run's budget has left: one session cannot
            # overshoot it. Never 0, which Claude reads as no cap.
            argv += [self.preset.budget_option, f"{max(task.cost_left, 1e-6):.6f}"]
        log.info(
            "run %r step %r: starting agent %r in %r (sandbox: %s)",
            task.run_id, task.step, argv[0], str(task.worktree), self.sandbox.mode,
        )
        started = time.monotonic()
        policy = (self.network.for_agents(self.hosts, task.network_allow)
                  if self.sandbox.confined else None)
        home = fresh_home(task.log_file.parent, self.home_seed, host_home=Path.home())
        try:
            if self.preset is not None:
                add_files(home, self.preset.home_files)
            with egress(policy, label=f"run {task.run_id} step {task.step}") as proxy:
                argv += self._endpoint_args(proxy.endpoint if proxy else None)
                proc, printed = self._start(argv, task, template, home,
                                            proxy.endpoint if proxy else None,
                                            stdin=reads_stdin(parsed))
                try:
                    stopped = self._wait(proc, task, cancel, printed,
                                         traffic=(lambda: proxy.traffic) if proxy else None)
                finally:
                    # In every path: kill what is left of the group (all of it on timeout,
                    # idleness or cancellation, leftovers after a normal exit) and reap the
                    # leader.
                    returncode = stop_group(proc, grace=self.kill_grace)
                    printed.finish(drain=LOG_DRAIN_S)
        finally:
            remove_home(home)  # nothing the agent wrote there reaches a later step
        blocked = tuple(proxy.blocked) if proxy else ()
        duration = time.monotonic() - started
        tail = _read_tail(task.log_file)
        usage = self._usage(task, duration)
        evidence = {
            "command": argv[0],
            "template": template,
            "exit_code": returncode,
            "duration_s": round(duration, 3),
            "log_file": str(task.log_file),
            "log_bytes": printed.size,
            "log_omitted_bytes": printed.omitted,
            "log_tail": tail,
            "sandbox": str(self.sandbox.mode),
        }
        if blocked:
            evidence["network_blocked"] = list(blocked)
        try:
            return self._conclude(task, stopped, returncode, duration, tail, evidence, usage)
        except StepFailure as failure:
            failure.usage = failure.usage or usage
            raise

    def _conclude(
        self, task: AgentTask, stopped: str | None, returncode: int, duration: float,
        tail: str, evidence: dict[str, Any], usage: dict[str, Any],
    ) -> AgentResult:
        """The result of a finished agent, or the failure that says why there is none."""
        log.info(
            "run %r step %r: agent ended with %r after %.1fs (%r)",
            task.run_id, task.step, returncode, duration, stopped,
        )
        if stopped == "cancelled":
            raise TransientFailure("cancelled: lease lost", evidence=evidence)
        if stopped == "timeout":
            raise AgentTimedOut(
                f"agent timed out after {task.timeout:g}s in step {task.step!r} of run "
                f"{task.run_id!r}; its process group was killed; the step will be retried "
                f"(raise the timeout if it needs longer; log: {task.log_file})",
                evidence={**evidence, "stopped": "timeout", "timeout_s": task.timeout},
            )
        if stopped == "idle":
            raise AgentIdle(
                f"agent printed nothing and changed nothing in the worktree for"
                f" {task.idle_timeout:g}s in step {task.step!r} of run {task.run_id!r}; its"
                f" sandbox was ended (agent.idle_timeout in .github/ratchet.yml; log:"
                f" {task.log_file})",
                evidence={**evidence, "stopped": "idle", "idle_timeout_s": task.idle_timeout},
            )
        if returncode > 0 and returncode != EXIT_TRANSIENT:
            self._blame_provider(task, evidence)
        if returncode == EXIT_TRANSIENT:
            raise TransientFailure(
                f"agent exited {EXIT_TRANSIENT} (temporary failure) in step {task.step!r} of "
                f"run {task.run_id!r}; the step will be retried (log: {task.log_file})",
                evidence=evidence,
            )
        if returncode != 0:
            blocked = evidence.get("network_blocked")
            raise DeterministicFailure(
                f"agent {_describe_exit(returncode)} in step {task.step!r} of run "
                f"{task.run_id!r}; see the log tail in the evidence or {task.log_file}"
                f"{f'; the sandbox {blocked[0]}' if blocked else ''}",
                evidence=evidence,
            )
        if self.preset is not None and self.preset.last_message:
            adopt_last_message(task, self.preset.last_message, limit=self.max_output_bytes,
                               evidence=evidence)
        try:
            output = read_output(task, limit=self.max_output_bytes, evidence=evidence)
        except DeterministicFailure:
            # A CLI that exits 0 after its provider refused (aider) leaves no output either.
            self._blame_provider(task, evidence)
            raise
        return AgentResult(
            exit_code=0,
            duration_s=duration,
            output_sha256=hashlib.sha256(output).hexdigest(),
            log_tail=tail,
            usage=usage,
            log_bytes=int(evidence["log_bytes"]),
            log_omitted_bytes=int(evidence["log_omitted_bytes"]),
            network_blocked=tuple(evidence.get("network_blocked", ())),
        )

    def _blame_provider(self, task: AgentTask, evidence: dict[str, Any]) -> None:
        """Raise what the preset's CLI says its model provider did, if anything: a refusal
        for now is transient (backoff, no attempt charged), refused credentials stop the
        run until the operator sets them."""
        if self.preset is None or self.preset.classify is None:
            return
        verdict = self.preset.classify(_read_tail(task.log_file, CLASSIFY_LOG_BYTES))
        if verdict is None:
            return
        evidence = {**evidence, "provider_error": verdict.to_dict()}
        where = f"in step {task.step!r} of run {task.run_id!r} (log: {task.log_file})"
        if verdict.trouble is Trouble.CREDENTIALS:
            raise AgentUnauthorized(
                f"the {self.preset.name} agent has no credentials its model API accepts"
                f" ({verdict.reason}) {where}; {self.preset.credentials}, then retry the run",
                evidence=evidence)
        raise ProviderUnavailable(
            f"{verdict.reason} {where}; the step will be retried after a backoff, not counted"
            " as an attempt", evidence=evidence)

    def _usage(self, task: AgentTask, duration: float) -> dict[str, Any]:
        """What the agent spent: its CLI's own report (a preset's parser reads the log, what
        a killed agent printed so far too), its RATCHET_USAGE file over it, priced by the
        table where neither says a cost, and the wall time measured here."""
        parsed: dict[str, Any] = {}
        if self.parse_usage is not None:
            try:
                parsed = self.parse_usage(_read_tail(task.log_file, USAGE_LOG_BYTES))
            except Exception as exc:  # a parser bug must not lose the step
                log.warning("run %r step %r: usage parser failed: %r", task.run_id, task.step,
                            exc)
                parsed = {"problems": [f"the CLI's output could not be read: {exc!r}"]}
        return measured(priced(merge_usage(read_usage_file(task), parsed), self.prices),
                        seconds=duration)

    def _start(self, argv: list[str], task: AgentTask, template: str,
               home: Path, network: Egress | None, *, stdin: bool
               ) -> tuple[subprocess.Popen[bytes], CappedLog]:
        """Start the agent in its own session with stdout and stderr going to its capped
        log, and the prompt file on its stdin when ``stdin``."""
        env = {
            **self._env,
            **self._phase_env(task),
            **self._endpoint_env(network),
            **task.env,
            "HOME": str(home),
            "TMPDIR": "/tmp",
            "RATCHET_RUN_ID": task.run_id,
            "RATCHET_PHASE": task.phase,
            "RATCHET_STEP": task.step,
            "RATCHET_PROMPT_FILE": str(task.prompt_file),
            "RATCHET_OUTPUT": str(task.output),
            "RATCHET_USAGE": str(task.usage_file),
            "RATCHET_WORKTREE": str(task.worktree),
        }
        program = shutil.which(argv[0], path=env.get("PATH"))
        if self.sandbox.confined and program is None:
            # Inside the sandbox the failure would only show as bwrap's exit 1.
            raise DeterministicFailure(
                f"cannot start agent command {argv[0]!r} from template {template!r}: not "
                f"found on the agent's PATH; {self.install_hint or _start_hint(None)}",
                evidence={"command": argv[0], "template": template,
                          "cause": AGENT_DID_NOT_START},
            )
        task.output_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            task.usage_file.unlink()  # an earlier run's report is not this one's
        program_path = self._program_paths(program, template)
        # A read-only worktree is bound like the prompt: visible, though under Ratchet's home.
        tree = (task.worktree,)
        # The operator's shared folders (RATCHET_SANDBOX_RW) are for agents only.
        shared = tuple(folder for folder in self.sandbox.shared if folder.is_dir())
        command = self.sandbox.command(
            argv, cwd=task.worktree,
            writable=(*(tree if task.worktree_writable else ()), task.output_dir, home,
                      *shared),
            readable=(task.prompt_file, *program_path, *task.readable,
                      *(() if task.worktree_writable else tree)),
            network=network,
        )
        printed = CappedLog(task.log_file, self.max_log_bytes)
        prompt = task.prompt_file.open("rb") if stdin else None
        try:
            proc = subprocess.Popen(
                command,
                cwd=task.worktree,
                env=env,
                stdin=prompt or subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            printed.close()
            raise DeterministicFailure(
                f"cannot start agent command {argv[0]!r} from template {template!r} "
                f"in {str(task.worktree)!r}: {exc.strerror or exc}"
                f"{f' ({exc.filename})' if exc.filename else ''};"
                f" {self._hint(exc)}",
                evidence={"command": argv[0], "template": template,
                          "cause": AGENT_DID_NOT_START},
            ) from exc
        finally:
            if prompt is not None:
                prompt.close()  # the agent holds its own copy of the descriptor
        assert proc.stdout is not None
        printed.follow(proc.stdout)
        return proc, printed

    def _program_paths(self, program: str | None, template: str) -> tuple[Path, ...]:
        """What of the program must be shown read-only inside the sandbox: the program itself
        where the sandbox masks its folder (/tmp), and the files the template names literally
        (a script after its interpreter)."""
        location = Path(program).absolute() if program else None
        shown = (location,) if location and self.sandbox.masks(location) else ()
        return shown + _named_files(template, self.sandbox)

    def version(self, scratch: Path, *, timeout: float = VERSION_TIMEOUT_S) -> ProgramVersion:
        """Start the template's program with ``--version`` as a step starts its agent (its
        environment and PATH, a fresh seeded home under ``scratch``, the sandbox, no network)
        and say what happened: whether an agent can start here at all, before a run finds out.

        Raises ``SandboxUnavailable`` when the sandbox cannot start processes here.
        """
        template = self.template_for("implement")
        program = self.program
        path = shutil.which(program, path=self._env.get("PATH"))
        if path is None:
            return ProgramVersion(program, None, None, "")
        home = fresh_home(scratch, self.home_seed, host_home=Path.home())
        try:
            if self.preset is not None:
                add_files(home, self.preset.home_files)
            command = self.sandbox.command([program, "--version"], cwd=home, writable=(home,),
                                           readable=self._program_paths(path, template))
            env = {**self._env, "HOME": str(home), "TMPDIR": "/tmp"}
            try:
                proc = subprocess.Popen(command, cwd=home, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            except OSError as exc:
                return ProgramVersion(program, path, None, exc.strerror or str(exc))
            try:
                out, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop_group(proc, grace=self.kill_grace)
                proc.communicate()
                return ProgramVersion(program, path, None, "", timed_out=True)
            stop_group(proc, grace=self.kill_grace)  # what it left running
        finally:
            remove_home(home)
        lines = [line.strip() for line in out.decode("utf-8", "replace").splitlines()
                 if line.strip()]
        # Its version, not a notice printed beside it on stderr (Copilot's "Package
        # extraction took 13091ms" in a fresh home): the first line with a dotted number.
        line = next((line for line in lines if _VERSION.search(line)), lines[0] if lines else "")
        return ProgramVersion(program, path, proc.returncode, line[:VERSION_LINE_CHARS])

    def _endpoint_args(self, network: Egress | None) -> list[str]:
        """The preset's options naming its model endpoint as the agent sees it: the proxy's
        route when it has one, else the runner's variable it was given."""
        if self.preset is None or self.preset.endpoint_args is None:
            return []
        return list(self.preset.endpoint_args(
            {**self._env, **(network.environment() if network else {})}))

    def _endpoint_env(self, network: Egress | None) -> Mapping[str, str]:
        """The preset's variables naming its model endpoint as the agent sees it."""
        if self.preset is None or self.preset.endpoint_env is None:
            return {}
        return self.preset.endpoint_env(
            {**self._env, **(network.environment() if network else {})})

    def _phase_env(self, task: AgentTask) -> Mapping[str, str]:
        """The preset's config for the task's phase (a permission config naming the output
        folder)."""
        if self.preset is None or self.preset.phase_env is None:
            return {}
        return self.preset.phase_env(task.phase, {
            "output": str(task.output), "output_dir": str(task.output_dir),
            "prompt_file": str(task.prompt_file), "phase": task.phase,
            "worktree": str(task.worktree)})

    def _hint(self, exc: OSError) -> str:
        """What to do about an agent that could not start: a preset's install hint when its
        program is missing."""
        if self.install_hint and exc.errno == errno.ENOENT:
            return self.install_hint
        return _start_hint(exc)

    def _wait(
        self, proc: subprocess.Popen[bytes], task: AgentTask, cancel: threading.Event | None,
        printed: CappedLog, *, traffic: Callable[[], int] | None = None,
    ) -> str | None:
        """Wait for the agent to exit; say why it must be stopped instead, if it must.

        Returns None when it exited, "timeout", "idle" or "cancelled" when the caller must
        stop it.
        """
        deadline = time.monotonic() + task.timeout
        watch = Activity(task, printed, traffic) if task.idle_timeout else None
        while True:
            if cancel is not None and cancel.is_set():
                log.warning("run %r step %r: cancelled, killing agent", task.run_id, task.step)
                return "cancelled"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                log.warning("run %r step %r: agent timed out", task.run_id, task.step)
                return "timeout"
            if watch is not None and watch.idle_for() >= (task.idle_timeout or 0):
                log.warning("run %r step %r: agent idle for %rs, ending it", task.run_id,
                            task.step, task.idle_timeout)
                return "idle"
            try:
                proc.wait(timeout=min(POLL_INTERVAL, remaining))
                return None
            except subprocess.TimeoutExpired:
                continue


class Activity:
    """Watches an agent for signs of life: its output growing, bytes through its egress proxy
    (``traffic``: a model streaming a long answer to a CLI that prints only whole parts), or a
    change in its worktree or output folder (a file's size or modification time, a file added
    or removed). A hung model stream is none of these.

    The output is looked at on every poll (its count of bytes printed: the log on disk stops
    growing at its cap); the folders, which cost a walk, about ten times per
    idle timeout (``IDLE_WALK_MIN`` to ``IDLE_WALK_MAX`` seconds apart).
    """

    def __init__(self, task: AgentTask, printed: CappedLog,
                 traffic: Callable[[], int] | None = None) -> None:
        self.task = task
        self.printed = printed
        self.traffic = traffic or (lambda: 0)
        self.relayed = self.traffic()
        self.interval = min(max((task.idle_timeout or 0) / 10, IDLE_WALK_MIN), IDLE_WALK_MAX)
        now = time.monotonic()
        self.last_change = now
        self.next_walk = now + self.interval
        self.log_size = printed.size
        self.tree = _fingerprint((task.worktree, task.output_dir))

    def idle_for(self) -> float:
        """Seconds since the agent last showed a sign of life."""
        now = time.monotonic()
        size, relayed = self.printed.size, self.traffic()
        if size != self.log_size or relayed != self.relayed:
            self.log_size, self.relayed, self.last_change = size, relayed, now
        if now >= self.next_walk:
            self.next_walk = now + self.interval
            tree = _fingerprint((self.task.worktree, self.task.output_dir))
            if tree != self.tree:
                self.tree, self.last_change = tree, now
        return now - self.last_change


def _fingerprint(roots: Sequence[Path]) -> str:
    """A digest of every path, size and modification time under ``roots`` (symlinks not
    followed): it changes when the agent writes, creates or removes anything there."""
    digest = hashlib.blake2b(digest_size=16)
    for root in roots:
        for folder, dirs, files in os.walk(root, followlinks=False):
            dirs.sort()
            for name in sorted(files) + dirs:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue  # removed while we looked: the next walk sees it gone
                size = info.st_size if stat.S_ISREG(info.st_mode) else 0
                digest.update(f"{path}\0{size}\0{info.st_mtime_ns}\n".encode(
                    errors="surrogateescape"))
    return digest.hexdigest()


def read_usage_file(task: AgentTask) -> dict[str, Any]:
    """The agent's RATCHET_USAGE report: read beneath its output folder without following a
    symlink and capped at ``MAX_USAGE_BYTES``; none is an empty record, a bad one a problem
    noted in it."""
    relative = task.usage_file.relative_to(task.output_dir).as_posix()
    try:
        raw = read_beneath(task.output_dir, relative, limit=MAX_USAGE_BYTES)
    except UnsafePath as exc:
        if exc.reason == "missing":
            return {}
        return {"problems": [f"the usage file cannot be used: {exc}"]}
    except OSError as exc:
        return {"problems": [f"the usage file cannot be read: {exc}"]}
    return decode_usage(raw)


def adopt_last_message(task: AgentTask, name: str, *, limit: int,
                       evidence: dict[str, Any]) -> None:
    """Where the model wrote no output, the CLI's final message (the file ``name`` in the
    output folder) becomes it; what the model wrote is never replaced. Called once the agent
    has ended: nothing can swap a folder while the file is written."""
    relative = task.output.relative_to(task.output_dir).as_posix()
    try:
        read_beneath(task.output_dir, relative, limit=limit)
        return  # written (or refused later by read_output for what it is)
    except UnsafePath as exc:
        if exc.reason != "missing":
            return
    try:
        message = read_beneath(task.output_dir, name, limit=limit)
    except UnsafePath:
        return
    if not message.strip():
        return
    # Every existing folder on the way is a real one (read_beneath said "missing", not
    # "symlink"): create what is missing and the file, never following a link.
    task.output.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(task.output, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                 | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as fp:
        fp.write(message)
    evidence["output_from"] = f"the CLI's final message ({name})"


def read_output(
    task: AgentTask, *, limit: int, evidence: dict[str, object] | None = None
) -> bytes:
    """The phase's output, which exit 0 promises is a non-empty regular file.

    Read beneath ``task.output_dir`` without following a symlink on the way, and capped at
    ``limit`` bytes: the agent controls that folder. Raises ``DeterministicFailure`` saying
    what is wrong with the file.
    """
    relative = task.output.relative_to(task.output_dir)
    try:
        data = read_beneath(task.output_dir, relative.as_posix(), limit=limit)
    except UnsafePath as exc:
        problem = (
            f"did not write {task.output} (RATCHET_OUTPUT): it does not exist"
            if exc.reason == "missing"
            else f"its output {task.output} (RATCHET_OUTPUT) cannot be used: {exc}"
        )
        # A symlink or a special file where the output belongs points the runner at something
        # else (a host file, a FIFO): that is an agent acting outside its profile.
        failure = (DeterministicFailure if exc.reason in {"missing", "too_large"}
                   else PolicyViolation)
        raise failure(
            f"agent exited 0 but {problem}, in step {task.step!r} of run {task.run_id!r}; the "
            f"{task.phase} phase must write its artifact there as a regular file",
            evidence={**(evidence or {}), "output_problem": exc.reason},
        ) from exc
    if not data:
        raise DeterministicFailure(
            f"agent exited 0 but did not write {task.output} (RATCHET_OUTPUT) in step "
            f"{task.step!r} of run {task.run_id!r}: the file is empty; the {task.phase} phase "
            "must write its artifact there",
            evidence=evidence,
        )
    return data


def _read_tail(path: Path, size: int = LOG_TAIL_BYTES) -> str:
    """The last ``size`` bytes of the log, decoded leniently; empty if there is none."""
    try:
        with path.open("rb") as fp:
            fp.seek(0, os.SEEK_END)
            fp.seek(max(0, fp.tell() - size))
            return fp.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (exit {returncode})"
    return f"exited {returncode}"


def _start_hint(exc: OSError | None) -> str:
    if exc is not None and exc.errno == errno.E2BIG:
        return "the prompt is too long for a command-line argument: use {prompt_file} instead"
    return "install the command, or retry the run with another agent command"
