"""Run a plan's checks: in parallel, each in its own process group, each with a timeout.

Every check runs as `/bin/sh -c <command>` with its workspace folder as cwd and its output
(stdout and stderr together) captured by a `LogCapture`. The plan is a graph: a check starts
once the setups it needs (its install root's install, run once for all its members, then its
own workspace's) and the checks it needs (a dependency's build) have passed, and no running
check writes a folder overlapping its own (a root build and a package's build never run at
once); everything else runs in parallel. When a setup fails, the checks waiting for it are
reported as `error` without running; when a needed check does not pass, its dependents are
`skipped`, their `reason` naming it. A
check past its timeout has its whole process group sent SIGTERM, then SIGKILL, so children it
spawned die with it. Results reach the caller one at a time, on the caller's own thread, so the
caller can persist each in a database connection that belongs to that thread.

Checks get no secrets: their environment is built by allowlist (`check_environment`: PATH,
the locale, and only the variables the repository's `verify.env` asks for AND the operator
allows, none for a pull request's head), with `HOME` a fresh empty folder of the plan's
scratch (removed after it) and `TMPDIR` the sandbox's private `/tmp`. A variable asked for
but not allowed is withheld, and every log of the plan says so. Each check also gains
`RATCHET_JUNIT` (a file the check may write JUnit XML to; the detected pytest check does),
`RATCHET_CHECK` (its key) and `RATCHET_WORKSPACE`.

Checks are untrusted code: the caller passes a `Confine` that wraps each command (the runner's
sandbox); the root and the scratch folder holding the JUnit files are its writable folders.
Reports are read without following symlinks and with a size cap.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from plumbing.environment import base_environment, pick
from plumbing.files import UnsafePath, read_beneath
from plumbing.process import signal_group, stop_group
from verification.capture import LogCapture
from verification.junit import FailedTest, JUnitError, TestSummary, parse_junit
from verification.model import overlaps
from verification.plan import Plan, PlannedCheck

logger = logging.getLogger(__name__)

Status = Literal["passed", "failed", "timed_out", "error", "skipped"]

# Seconds between SIGTERM and SIGKILL when a check's process group is stopped.
KILL_GRACE_S = 2.0
# Seconds to wait for the output pipe to drain after the check's process group is gone.
DRAIN_TIMEOUT_S = 2.0
# /bin/sh's exit status for "command not found": the check could not start, not a failure.
SHELL_NOT_FOUND = 127
# Largest JUnit report read; a larger one is ignored with a note in the log.
MAX_JUNIT_BYTES = 32 << 20


def check_environment(
    host: Mapping[str, str], requested: Sequence[str], allowed: Collection[str], *,
    untrusted: bool = False,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The environment checks run with, and a note for each variable withheld.

    ``host`` is the runner's environment; ``requested`` the names the repository's
    ``verify.env`` lists; ``allowed`` the names the operator allows (RATCHET_CHECK_ENV).
    ``untrusted`` code (a pull request's head: whoever opened it wrote the checks' bodies)
    gets none of them, whatever the operator allows.
    """
    if untrusted:
        return base_environment(host), tuple(
            f"the repository asks for {name} in verify.env, but a pull request's head is"
            f" verified without the repository's secrets, so the checks run without it"
            for name in requested
        )
    granted = [name for name in requested if name in allowed]
    notes = tuple(
        f"the repository asks for {name} in verify.env, but the operator does not allow it"
        f" (RATCHET_CHECK_ENV), so the checks run without it"
        for name in requested if name not in allowed
    )
    return {**base_environment(host), **pick(host, granted)}, notes


class Confine(Protocol):
    """Wraps a check's argv so it runs confined; `writable` are the folders it may write."""

    def __call__(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path]) -> list[str]:
        ...


def unconfined(argv: Sequence[str], *, cwd: Path, writable: Sequence[Path]) -> list[str]:
    """Run checks as they are (tests of this package; callers that opted out of a sandbox)."""
    return list(argv)


@dataclass(frozen=True)
class CheckResult:
    """What one check did: status, exit code, duration, its log (capped) and its hash.

    `log_sha256` and `log_size` describe the full raw output; `log` is the captured head and
    tail after redaction, `log_omitted` the bytes left out between them. `reused` is True when
    the result comes from an earlier run of the same check on the same tree, returned by the
    caller's `reuse` function.
    """

    key: str
    id: str
    workspace: str
    kind: str
    command: str
    status: Status
    exit_code: int | None
    duration_s: float
    log_sha256: str
    log_size: int
    log: str
    junit: TestSummary | None = None
    reused: bool = False
    log_omitted: int = 0
    reason: str = ""  # why a check did not run (`skipped`: the need that did not pass)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def log_tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the captured log."""
        return "\n".join(self.log.rstrip("\n").splitlines()[-lines:])

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "id": self.id,
            "workspace": self.workspace,
            "kind": self.kind,
            "command": self.command,
            "status": self.status,
            "exit_code": self.exit_code,
            "duration_s": self.duration_s,
            "log_sha256": self.log_sha256,
            "log_size": self.log_size,
            "log": self.log,
            "junit": self.junit.to_dict() if self.junit is not None else None,
            "reused": self.reused,
            "log_omitted": self.log_omitted,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        junit = data.get("junit")
        # Fields added by a later version are ignored, so older records stay readable.
        known = {f.name for f in fields(cls)} - {"junit", "reused"}
        return cls(
            **{k: v for k, v in data.items() if k in known},
            junit=TestSummary.from_dict(junit) if junit is not None else None,
            reused=bool(data.get("reused", False)),
        )


def execute_plan(
    plan: Plan,
    root: Path,
    *,
    on_result: Callable[[CheckResult], None] | None = None,
    reuse: Callable[[PlannedCheck], CheckResult | None] | None = None,
    redact: Callable[[str], str] | None = None,
    env: Mapping[str, str] | None = None,
    confine: Confine = unconfined,
    max_log_bytes: int | None = None,
    notes: Sequence[str] = (),
) -> list[CheckResult]:
    """Run every check of `plan` under `root`; return the results in plan order.

    `reuse(check)` may return an earlier result (the caller looks up a passed one for the same
    tree hash and check); that check is not run and its result is reported with `reused=True`.
    `on_result` is called on this thread, in completion order. `redact` is applied to log text
    and to the JUnit report's failure text before they are stored in a result; hashes and sizes
    are of the raw output. `env` is the
    checks' environment before HOME and TMPDIR (default: `check_environment` of this process's,
    nothing requested). `confine` wraps every command. `max_log_bytes` lowers the cap on each
    log kept (`LogCapture.within`). Each of `notes` starts every log.
    """
    if env is None:
        env, _ = check_environment(os.environ, (), ())
    runner = _Runner(root, dict(env), redact or (lambda s: s), confine, plan.folder,
                     max_log_bytes, notes)
    results: dict[str, CheckResult] = {}

    def report(result: CheckResult) -> None:
        results[result.key] = result
        if on_result is not None:
            on_result(result)

    to_run: list[PlannedCheck] = []
    for check in plan.checks:
        earlier = reuse(check) if reuse is not None else None
        if earlier is not None:
            report(replace(earlier, reused=True))
        else:
            to_run.append(check)
    setups = {workspace.path: workspace.setup for workspace in plan.workspaces}
    chains = {check.key: [u for u in _setups(plan, check) if setups.get(u)] for check in to_run}
    timeouts: dict[str, float] = {}  # a setup may take as long as the longest check after it
    for check in to_run:
        for name in chains[check.key]:
            timeouts[name] = max(timeouts.get(name, 0.0), check.timeout)
    order = {check.key: index for index, check in enumerate(plan.checks)}
    planned = set(order)

    with (
        tempfile.TemporaryDirectory(prefix="ratchet-verify-") as scratch,
        ThreadPoolExecutor(
            max_workers=max(1, plan.concurrency or os.cpu_count() or 1),
            thread_name_prefix="ratchet-check",
        ) as pool,
    ):
        runner.scratch = Path(scratch)
        # A fresh, empty home: nothing of the runner's (its tool configs, its keys) and
        # nothing an earlier run left; removed with the scratch.
        home = runner.scratch / "home"
        home.mkdir()
        runner.env.update(HOME=str(home), TMPDIR="/tmp")
        futures: dict[Future[Any], tuple[str, str, int]] = {}  # (what, name, plan order)
        outcomes: dict[str, CheckResult | None] = {}  # finished setups: None when they passed
        started: set[str] = set()  # setups started
        writing: dict[str, tuple[str, ...]] = {}  # running check -> the folders it writes

        def ready(check: PlannedCheck) -> CheckResult | bool:
            """True when `check` may start now, False while it waits, or the result it gets
            without running (a setup failed: `error`; a needed check did not pass: `skipped`)."""
            for name in chains[check.key]:
                if name not in outcomes:
                    if name not in started:
                        started.add(name)
                        future = pool.submit(runner.run_setup, name, setups[name], timeouts[name])
                        futures[future] = ("setup", name, order[check.key])
                    return False
                failure = outcomes[name]
                if failure is not None:
                    return replace(failure, **_identity(check))
            for need in check.needs:
                if need not in planned:
                    continue  # not part of this plan: nothing to wait for
                if need not in results:
                    return False
                if not results[need].passed:
                    return _skipped(check, f"it needs {need!r}, which did not pass "
                                           f"({results[need].status})")
            return not any(_overlap(check.writes, folders) for folders in writing.values())

        def advance() -> None:
            """Start every waiting check whose needs have passed, in plan order."""
            for check in list(to_run):
                state = ready(check)
                if state is False:
                    continue
                to_run.remove(check)
                if isinstance(state, CheckResult):
                    report(state)
                    continue
                writing[check.key] = check.writes
                futures[pool.submit(runner.run_check, check)] = ("check", check.key,
                                                                 order[check.key])

        try:
            advance()
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                # Several can finish together; report those in plan order.
                for future in sorted(done, key=lambda f: futures[f][2]):
                    what, name, _ = futures.pop(future)
                    if what == "check":
                        writing.pop(name, None)
                        report(future.result())
                    else:
                        outcomes[name] = future.result()
                advance()
        except BaseException:
            runner.stop_all()
            raise
        stuck = {check.key for check in to_run}  # only a cycle of needs leaves checks waiting
        for check in to_run:
            waited = next(n for n in check.needs if n in stuck)
            report(_skipped(check, f"it needs {waited!r}, and their needs form a cycle"))
    return [results[check.key] for check in plan.checks]


def _setups(plan: Plan, check: PlannedCheck) -> tuple[str, ...]:
    """The workspaces whose setup runs before `check`: as the check declares them, else (a plan
    recorded before checks declared them) the install roots its workspace uses, then its own."""
    if check.setups:
        return check.setups
    uses = next((w.uses for w in plan.workspaces if w.path == check.workspace), ())
    return (*uses, check.workspace)


def _overlap(writes: tuple[str, ...], others: tuple[str, ...]) -> bool:
    return any(overlaps(one, other) for one in writes for other in others)


def _skipped(check: PlannedCheck, reason: str) -> CheckResult:
    """The result of a check not run because a check it needs did not pass (`reason`)."""
    log = f"ratchet: skipped: {reason}; it did not run.\n"
    return CheckResult(
        **_identity(check), status="skipped", exit_code=None, duration_s=0.0,
        log_sha256=hashlib.sha256(log.encode()).hexdigest(), log_size=len(log.encode()), log=log,
        reason=reason,
    )


def _identity(check: PlannedCheck) -> dict[str, str]:
    return {
        "key": check.key,
        "id": check.id,
        "workspace": check.workspace,
        "kind": check.kind,
        "command": check.command,
    }


class _Runner:
    """Runs commands on worker threads; remembers live process groups to stop them all."""

    def __init__(
        self, root: Path, env: dict[str, str], redact: Callable[[str], str], confine: Confine,
        folder: Callable[[str], str], max_log_bytes: int | None, notes: Sequence[str] = (),
    ) -> None:
        self.root = root
        self.notes = "".join(f"ratchet: {note}\n" for note in notes).encode()
        self.folder = folder  # a workspace's real folder (its name may not be UTF-8)
        self.env = env
        self.redact = redact
        self.confine = confine
        self.scratch = Path(tempfile.gettempdir())
        self.max_log_bytes = max_log_bytes
        self._live: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def run_check(self, check: PlannedCheck) -> CheckResult:
        folder = self.folder(check.workspace)
        cwd = self.root / folder
        junit_name = f"{check.log_name}.junit.xml"
        junit_file = self.scratch / junit_name
        declared = f"{folder}/{check.junit}" if check.junit else None
        declared_before = _mtime(self.root, declared)
        env = {
            **self.env,
            "RATCHET_JUNIT": str(junit_file),
            "RATCHET_CHECK": check.key,
            "RATCHET_WORKSPACE": folder,
        }
        capture = self._capture()
        started = time.monotonic()
        status, exit_code = self._run(check.command, cwd, env, check.timeout, capture)
        duration = round(time.monotonic() - started, 3)
        junit = None
        if declared is not None and _mtime(self.root, declared) != declared_before:
            junit = _read_junit(self.root, declared, capture)
        elif _mtime(self.scratch, junit_name) is not None:
            junit = _read_junit(self.scratch, junit_name, capture)
        logger.info("check %r finished: %s in %.1fs", check.key, status, duration)
        if junit is not None:  # the check wrote it: its text is output, redacted as the log is
            junit = replace(junit, failed=tuple(
                FailedTest(self.redact(case.name), self.redact(case.classname),
                           None if case.file is None else self.redact(case.file), case.line,
                           self.redact(case.message), self.redact(case.details))
                for case in junit.failed))
        return CheckResult(
            **_identity(check),
            status=status,
            exit_code=exit_code,
            duration_s=duration,
            log_sha256=capture.sha256,
            log_size=capture.size,
            log=self.redact(capture.text()),
            junit=junit,
            log_omitted=capture.omitted,
        )

    def run_setup(
        self, workspace: str, commands: tuple[str, ...], timeout: float
    ) -> CheckResult | None:
        """Run the setup commands in order; None when all pass, else an `error` result."""
        capture = self._capture()
        started = time.monotonic()
        for command in commands:
            capture.write(f"$ {command}\n".encode())
            status, exit_code = self._run(
                command, self.root / self.folder(workspace), self.env, timeout, capture
            )
            if status == "passed":
                continue
            note = f"\nratchet: setup of workspace {workspace!r} did not pass ({status}, exit "
            note += f"{exit_code}) running {command!r}; its checks did not run. Fix the setup "
            note += "command in .github/ratchet.yml or the workspace.\n"
            capture.write(note.encode())
            return CheckResult(
                key="",
                id="",
                workspace=workspace,
                kind="",
                command="",
                status="error",
                exit_code=exit_code,
                duration_s=round(time.monotonic() - started, 3),
                log_sha256=capture.sha256,
                log_size=capture.size,
                log=self.redact(capture.text()),
                log_omitted=capture.omitted,
            )
        return None

    def _capture(self) -> LogCapture:
        capture = LogCapture.within(self.max_log_bytes)
        if self.notes:
            capture.write(self.notes)
        return capture

    def stop_all(self) -> None:
        with self._lock:
            live = list(self._live)
        for process in live:
            signal_group(process.pid, signal.SIGKILL)

    def _run(
        self, command: str, cwd: Path, env: Mapping[str, str], timeout: float, capture: LogCapture
    ) -> tuple[Status, int | None]:
        argv = self.confine(["/bin/sh", "-c", command], cwd=cwd,
                            writable=(self.root, self.scratch))
        try:
            process = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            capture.write(f"ratchet: could not start {command!r} in {cwd}: {exc}\n".encode())
            return "error", None
        with self._lock:
            self._live.add(process)
        assert process.stdout is not None
        reader = threading.Thread(target=_pump, args=(process.stdout, capture), daemon=True)
        reader.start()
        timed_out = False
        try:
            exit_code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            exit_code = stop_group(process, grace=KILL_GRACE_S)
        # Whatever the check left running in the background must not outlive it.
        signal_group(process.pid, signal.SIGKILL)
        reader.join(timeout=DRAIN_TIMEOUT_S)
        process.stdout.close()
        with self._lock:
            self._live.discard(process)
        if timed_out:
            capture.write(
                f"\nratchet: timed out after {timeout:g}s; process group killed\n".encode()
            )
            return "timed_out", exit_code
        if exit_code == 0:
            return "passed", 0
        if exit_code == SHELL_NOT_FOUND:
            capture.write(b"\nratchet: the command was not found (exit 127); is it installed?\n")
            return "error", exit_code
        return "failed", exit_code


def _pump(stream: IO[bytes], capture: LogCapture) -> None:
    try:
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            capture.write(chunk)
    except (OSError, ValueError):
        pass  # the pipe was closed after the process group was killed


def _mtime(root: Path, relative: str | None) -> int | None:
    """The modification time of a report, not following a symlink; None when absent."""
    if relative is None:
        return None
    try:
        return (root / relative).stat(follow_symlinks=False).st_mtime_ns
    except OSError:
        return None


def _read_junit(root: Path, relative: str, capture: LogCapture) -> TestSummary | None:
    try:
        data = read_beneath(root, relative, limit=MAX_JUNIT_BYTES)
        return parse_junit(data.decode("utf-8", errors="replace"))
    except (OSError, UnsafePath, JUnitError) as exc:
        capture.write(f"\nratchet: ignoring JUnit report {relative}: {exc}\n".encode())
        return None
