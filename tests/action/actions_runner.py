"""Execute a composite ``action.yml`` as the GitHub Actions runner does, for tests.

What the runner does and this does too
(https://docs.github.com/en/actions/sharing-automations/creating-actions/metadata-syntax-for-github-actions):

- inputs take their ``default`` (an expression: ``${{ github.token }}``) when not given;
- steps run in order; each ``if:`` is evaluated (``success()`` implied), a failed step skips
  the rest; ``${{ }}`` in ``run``, ``env``, ``with`` and ``outputs`` is substituted from the
  ``inputs``, ``github``, ``runner``, ``steps`` and ``env`` contexts (``expressions.py``);
- ``shell:`` is honoured (bash as ``bash --noprofile --norc -eo pipefail {0}``, sh, python),
  the script is a file, the working directory is the workspace;
- ``GITHUB_OUTPUT``, ``GITHUB_ENV``, ``GITHUB_PATH`` and ``GITHUB_STEP_SUMMARY`` are files
  read after each step (``name=value`` and ``name<<DELIMITER`` forms); outputs become
  ``steps.<id>.outputs``, the summary parts are joined into the job's summary;
- workflow commands on stdout (``::error file=F,line=L::message``) become annotations;
- the action's ``outputs`` are evaluated at the end.

``uses:`` steps: only ``actions/cache`` (its restore, and its save after the job), backed by
``FakeActionsCache`` (a stand-in for the Actions cache service, as the fake GitHub is for
the API). Each step runs in a new session, so ``ActionRun.kill()`` SIGKILLs the step's whole
process group, like a runner that loses its machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.action.expressions import condition, substitute

SHELLS = {
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"],
    "sh": ["sh", "-e", "{0}"],
    "python": ["python3", "{0}"],
}
_COMMAND = re.compile(
    r"^::(?P<level>error|warning|notice|debug)(?: (?P<props>[^:]*))?::(?P<msg>.*)$")


@dataclass(frozen=True)
class Annotation:
    level: str
    message: str
    properties: dict[str, str]


@dataclass
class Job:
    """The job the action runs in: what the runner puts in the ``github`` and ``runner``
    contexts and the ``GITHUB_*`` / ``RUNNER_*`` variables."""

    workspace: Path
    temp: Path
    event_name: str
    event: dict[str, Any]
    token: str
    repository: str
    api_url: str
    server_url: str
    run_id: str = "1001"
    run_attempt: int = 1
    sha: str = ""
    actor: str = "octocat"
    env: dict[str, str] = field(default_factory=dict)  # the job's env (and the runner's)

    def variables(self, action_path: Path, event_path: Path) -> dict[str, str]:
        return {
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": self.event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": self.repository,
            "GITHUB_REPOSITORY_OWNER": self.repository.split("/")[0],
            "GITHUB_API_URL": self.api_url,
            "GITHUB_GRAPHQL_URL": f"{self.api_url}/graphql",
            "GITHUB_SERVER_URL": self.server_url,
            "GITHUB_RUN_ID": self.run_id,
            "GITHUB_RUN_ATTEMPT": str(self.run_attempt),
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_SHA": self.sha,
            "GITHUB_ACTOR": self.actor,
            "GITHUB_ACTION_PATH": str(action_path),
            "GITHUB_JOB": "ratchet",
            "RUNNER_OS": "Linux",
            "RUNNER_ARCH": "X64",
            "RUNNER_TEMP": str(self.temp),
            "RUNNER_TOOL_CACHE": str(self.temp / "toolcache"),
        }

    def github_context(self, action_path: Path) -> dict[str, Any]:
        return {
            "token": self.token, "event_name": self.event_name, "event": self.event,
            "repository": self.repository, "repository_owner": self.repository.split("/")[0],
            "api_url": self.api_url, "server_url": self.server_url, "run_id": self.run_id,
            "run_attempt": str(self.run_attempt), "workspace": str(self.workspace),
            "sha": self.sha, "actor": self.actor, "action_path": str(action_path),
        }


class FakeActionsCache:
    """The Actions cache service: entries by exact key, with ``warm`` to seed hits."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.saved: list[str] = []
        self.restored: list[str] = []
        self._seeds: list[tuple[Callable[[str], bool], Path]] = []

    def warm(self, matches: Callable[[str], bool], folder: Path) -> None:
        """Keys for which ``matches`` holds restore ``folder`` (an entry saved earlier)."""
        self._seeds.append((matches, folder))

    def restore(self, key: str, path: Path) -> bool:
        entry = self.root / key
        source = entry if entry.is_dir() else next(
            (folder for matches, folder in self._seeds if matches(key)), None)
        if source is None:
            return False
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(source, path, symlinks=True)
        self.restored.append(key)
        return True

    def save(self, key: str, path: Path) -> None:
        if path.is_dir() and not (self.root / key).exists():
            shutil.copytree(path, self.root / key, symlinks=True)
            self.saved.append(key)


@dataclass
class StepRecord:
    id: str | None
    name: str
    outcome: str  # success, failure, skipped
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""


@dataclass
class ActionResult:
    exit_code: int  # the first failing step's, else 0
    outputs: dict[str, str]
    summary: str
    annotations: list[Annotation]
    steps: list[StepRecord]
    killed: bool = False

    @property
    def stdout(self) -> str:
        return "".join(s.stdout for s in self.steps)

    @property
    def stderr(self) -> str:
        return "".join(s.stderr for s in self.steps)

    def annotations_at(self, level: str) -> list[Annotation]:
        return [a for a in self.annotations if a.level == level]

    def step(self, step_id: str) -> StepRecord:
        return next(s for s in self.steps if s.id == step_id)


class ActionRun:
    """One execution of the action (``ActionsRunner.start``): wait for it, or kill it."""

    def __init__(self, runner: ActionsRunner, job: Job, inputs: Mapping[str, str],
                 timeout: float) -> None:
        self._runner = runner
        self._job = job
        self._inputs = dict(inputs)
        self._timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._killed = threading.Event()
        self._lock = threading.Lock()
        self._result: ActionResult | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self._result = self._runner._execute(self)
        except BaseException as exc:  # re-raised by wait()
            self._error = exc

    def _popen(self, argv: list[str], **options: Any) -> subprocess.Popen[bytes] | None:
        with self._lock:
            if self._killed.is_set():
                return None
            self._process = subprocess.Popen(argv, start_new_session=True, **options)
            return self._process

    def kill(self) -> None:
        """SIGKILL the running step's process group (the machine went away)."""
        with self._lock:
            self._killed.set()
            if self._process is not None and self._process.poll() is None:
                os.killpg(self._process.pid, signal.SIGKILL)

    @property
    def killed(self) -> bool:
        return self._killed.is_set()

    def wait(self, timeout: float | None = None) -> ActionResult:
        self._thread.join(timeout if timeout is not None else self._timeout + 30)
        if self._thread.is_alive():
            self.kill()
            self._thread.join(30)
            raise AssertionError("the action did not finish in time")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


class ActionsRunner:
    """Runs the composite action at ``action_dir`` (see the module docstring)."""

    def __init__(self, action_dir: Path, cache: FakeActionsCache) -> None:
        self.action_dir = action_dir
        self.cache = cache
        self.metadata = yaml.safe_load((action_dir / "action.yml").read_text())
        if self.metadata["runs"]["using"] != "composite":
            raise ValueError("only composite actions run here")

    def run(self, job: Job, inputs: Mapping[str, str], *, timeout: float = 180) -> ActionResult:
        return self.start(job, inputs, timeout=timeout).wait()

    def start(self, job: Job, inputs: Mapping[str, str], *, timeout: float = 180) -> ActionRun:
        return ActionRun(self, job, inputs, timeout)

    # -- the runner's work -------------------------------------------------------------------

    def _execute(self, run: ActionRun) -> ActionResult:
        job = run._job
        files = job.temp / f"_runner_file_commands_{uuid.uuid4().hex[:8]}"
        files.mkdir(parents=True)
        event_path = files / "event.json"
        event_path.write_text(json.dumps(job.event))
        github = job.github_context(self.action_dir)
        runner_ctx = {"os": "Linux", "arch": "X64", "temp": str(job.temp),
                      "tool_cache": str(job.temp / "toolcache")}
        contexts: dict[str, Any] = {"github": github, "runner": runner_ctx, "steps": {},
                                    "env": dict(job.env)}
        contexts["inputs"] = self._inputs(run._inputs, contexts)
        base_env = {**job.env, **job.variables(self.action_dir, event_path)}
        added_env: dict[str, str] = {}
        added_path: list[str] = []
        summary: list[str] = []
        annotations: list[Annotation] = []
        records: list[StepRecord] = []
        failed_code: int | None = None
        post_saves: list[tuple[str, Path]] = []
        status = {"failed": False}
        functions = {"success": lambda: not status["failed"] and not run.killed,
                     "failure": lambda: status["failed"], "always": lambda: True,
                     "cancelled": lambda: run.killed}
        for index, step in enumerate(self.metadata["runs"]["steps"]):
            step_id = step.get("id")
            name = step.get("name") or step.get("uses") or f"step {index}"
            if run.killed or not condition(step.get("if"), contexts, functions):
                records.append(StepRecord(step_id, name, "skipped", None))
                if step_id:
                    contexts["steps"][step_id] = {"outputs": {}, "outcome": "skipped",
                                                  "conclusion": "skipped"}
                continue
            step_files = {k: files / f"{k}_{index}" for k in
                          ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")}
            for path in step_files.values():
                path.write_text("")
            env = {**base_env, **added_env, **{k: str(v) for k, v in step_files.items()}}
            if added_path:
                env["PATH"] = os.pathsep.join([*reversed(added_path), env.get("PATH", "")])
            contexts["env"] = {**job.env, **added_env}
            step_env = {k: substitute(str(v), contexts, functions)
                        for k, v in (step.get("env") or {}).items()}
            env.update(step_env)
            if "uses" in step:
                record, outputs = self._uses(step, contexts, functions, post_saves)
            else:
                record, outputs = self._shell(run, step, env, contexts, functions, job,
                                              step_files["GITHUB_OUTPUT"], files, index)
            record.id, record.name = step_id, name
            records.append(record)
            added_env.update(_read_pairs(step_files["GITHUB_ENV"]))
            added_path += [line for line in step_files["GITHUB_PATH"].read_text().splitlines()
                           if line]
            summary.append(step_files["GITHUB_STEP_SUMMARY"].read_text())
            annotations += _annotations(record.stdout)
            if step_id:
                contexts["steps"][step_id] = {"outputs": outputs, "outcome": record.outcome,
                                              "conclusion": record.outcome}
            if record.outcome == "failure":
                status["failed"] = True
                failed_code = record.exit_code if record.exit_code is not None else 1
        if not status["failed"] and not run.killed:
            for key, path in post_saves:
                self.cache.save(key, path)
        outputs = {name: substitute(str(spec.get("value", "")), contexts, functions)
                   for name, spec in (self.metadata.get("outputs") or {}).items()}
        return ActionResult(failed_code or 0, outputs, "".join(summary), annotations, records,
                            killed=run.killed)

    def _inputs(self, given: Mapping[str, str], contexts: dict[str, Any]) -> dict[str, str]:
        declared = self.metadata.get("inputs") or {}
        unknown = set(given) - set(declared)
        if unknown:
            raise ValueError(f"inputs not declared by action.yml: {sorted(unknown)}")
        values = {}
        for name, spec in declared.items():
            if name in given:
                values[name] = given[name]
            elif spec.get("required") and "default" not in spec:
                raise ValueError(f"input {name!r} is required")
            else:
                values[name] = substitute(str(spec.get("default", "")), contexts)
        return values

    def _shell(self, run: ActionRun, step: Mapping[str, Any], env: dict[str, str],
               contexts: dict[str, Any], functions: Mapping[str, Callable[..., Any]], job: Job,
               output_file: Path, files: Path, index: int) -> tuple[StepRecord, dict[str, str]]:
        shell = step.get("shell")
        if not shell:
            raise ValueError(f"step {index} has no shell: composite run steps must name one")
        script = files / f"step_{index}.sh"
        script.write_text(substitute(str(step["run"]), contexts, functions))
        template = SHELLS.get(shell) or str(shell).split()
        argv = [script.as_posix() if part == "{0}" else part for part in template]
        process = run._popen(argv, cwd=step.get("working-directory") or job.workspace, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if process is None:
            return StepRecord(None, "", "skipped", None), {}
        try:
            out, err = process.communicate(timeout=run._timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
        code = process.returncode
        outcome = "success" if code == 0 else "failure"
        return (StepRecord(None, "", outcome, code, out.decode(errors="replace"),
                           err.decode(errors="replace")), _read_pairs(output_file))

    def _uses(self, step: Mapping[str, Any], contexts: dict[str, Any],
              functions: Mapping[str, Callable[..., Any]],
              post_saves: list[tuple[str, Path]]) -> tuple[StepRecord, dict[str, str]]:
        action = str(step["uses"]).split("@")[0]
        if action != "actions/cache":
            raise ValueError(f"{step['uses']}: this runner stands in for actions/cache only")
        given = {k: substitute(str(v), contexts, functions)
                 for k, v in (step.get("with") or {}).items()}
        key, path = given["key"], Path(given["path"])
        hit = self.cache.restore(key, path)
        if not hit:
            post_saves.append((key, path))
        return (StepRecord(None, "", "success", 0),
                {"cache-hit": "true" if hit else "false", "cache-primary-key": key})


def _read_pairs(path: Path) -> dict[str, str]:
    """``name=value`` lines and ``name<<DELIMITER`` blocks, as the runner reads them."""
    values: dict[str, str] = {}
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            while index < len(lines) and lines[index] != delimiter:
                body.append(lines[index])
                index += 1
            if index >= len(lines):
                raise ValueError(f"{path}: {name} has no closing {delimiter!r}")
            index += 1
            values[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        elif line.strip():
            raise ValueError(f"{path}: cannot read {line!r}")
    return values


def _annotations(stdout: str) -> list[Annotation]:
    found = []
    for line in stdout.splitlines():
        match = _COMMAND.match(line)
        if match is None or match.group("level") == "debug":
            continue
        properties = {}
        for part in filter(None, (match.group("props") or "").split(",")):
            name, _, value = part.partition("=")
            properties[name] = _unescape(value, property_value=True)
        found.append(Annotation(match.group("level"), _unescape(match.group("msg")), properties))
    return found


def _unescape(value: str, *, property_value: bool = False) -> str:
    if property_value:
        value = value.replace("%3A", ":").replace("%2C", ",")
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")

