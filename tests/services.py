"""Throwaway PostgreSQL and Redis servers for outage tests, on free ports, stoppable mid-test.

Outage tests stop and restart a server while workers use it; doing that to the machine's own
PostgreSQL (5432) or Redis (6379) would break every other test running at the same time. These
context managers start private servers on free ports instead, keep the same port across a
restart (clients keep their URL, as they would through a real outage), and always stop the
process and delete its data on the way out, even when the test fails.

PostgreSQL refuses to run as root, and CI runs as root: there the server and ``initdb`` run as
the ``postgres`` user (``Popen(user=...)``, the same switch ``runuser`` makes, without a
``runuser`` parent in between that would swallow our signals and leave us unable to reap the
postmaster) from a folder that user owns. On a laptop they run as the current user.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest
import redis

from tests.conftest import IN_CI

START_TIMEOUT = 30.0  # seconds; initdb plus a first start take about 2 s on a 2-core machine
STOP_TIMEOUT = 30.0  # seconds; a fast shutdown checkpoints first, which is quick with fsync=off
POLL_INTERVAL = 0.05  # seconds between readiness probes
LOG_TAIL_LINES = 20  # lines of the server log quoted in an error
SOCKET_PATH_LIMIT = 100  # bytes; sun_path is 108 on Linux, minus "/.s.PGSQL.65535"
POSTGRES_USER = "postgres"  # the OS account PostgreSQL runs as when we are root

# Speed over durability: the data only has to survive a clean stop, never a machine crash.
_POSTGRES_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "100",
}


class ServiceError(RuntimeError):
    """A throwaway server did not start or stop in time; the message quotes its log."""


def _unavailable(message: str) -> NoReturn:
    """Skip on a laptop, fail under CI, where the image must provide the server (see conftest)."""
    if IN_CI:
        pytest.fail(f"{message}; the CI image should provide it", pytrace=False)
    pytest.skip(f"{message}; install it to run this test")


def free_port() -> int:
    """A TCP port that nothing listens on right now (the kernel's choice for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process; a zombie nobody reaped counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    except OSError:  # no /proc (not Linux): fall back to signal 0
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in {"Z", "X"}


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log written)"
    return "\n".join(lines[-LOG_TAIL_LINES:]) or "(log is empty)"


def _wait_until(ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str,
                log: Path) -> None:
    """Poll ``ready`` until it holds; raise with the log tail on exit or timeout."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServiceError(
                f"{what} exited with status {proc.returncode} before accepting connections; "
                f"its log {log} ends with:\n{_log_tail(log)}"
            )
        if ready():
            return
        time.sleep(POLL_INTERVAL)
    raise ServiceError(
        f"{what} did not accept connections within {START_TIMEOUT:.0f} s; "
        f"its log {log} ends with:\n{_log_tail(log)}"
    )


def _terminate(proc: subprocess.Popen[bytes], sig: signal.Signals, what: str, log: Path) -> None:
    """Send ``sig`` and wait for the exit; SIGKILL after STOP_TIMEOUT, then raise."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise ServiceError(
            f"{what} ignored {sig.name} for {STOP_TIMEOUT:.0f} s and was killed; "
            f"its log {log} ends with:\n{_log_tail(log)}"
        ) from None


# --- PostgreSQL ------------------------------------------------------------------------------


def _postgres_bindir() -> Path:
    """The folder holding ``initdb`` and ``postgres``: pg_config's, else the newest installed."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        result = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True,
                                check=False)
        if result.returncode == 0:
            candidates.append(Path(result.stdout.strip()))
    versions = Path("/usr/lib/postgresql")
    if versions.is_dir():
        installed = [p for p in versions.iterdir() if p.name.isdigit()]
        candidates += [p / "bin" for p in sorted(installed, key=lambda p: -int(p.name))]
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "postgres").is_file():
            return bindir
    _unavailable("PostgreSQL server binaries (initdb, postgres) were not found via pg_config, "
                 "/usr/lib/postgresql/*/bin or PATH")


def _can_traverse(path: Path, account: pwd.struct_passwd) -> bool:
    """Whether ``account`` may reach ``path``: execute permission on it and every parent."""
    groups = {account.pw_gid} | {g.gr_gid for g in grp.getgrall() if account.pw_name in g.gr_mem}
    for folder in [path, *path.parents]:
        info = folder.stat()
        if info.st_uid == account.pw_uid:
            needed = stat.S_IXUSR
        elif info.st_gid in groups:
            needed = stat.S_IXGRP
        else:
            needed = stat.S_IXOTH
        if not info.st_mode & needed:
            return False
    return True


class PostgresServer:
    """A private PostgreSQL cluster: trust auth, user ``postgres``, one fixed port.

    ``stop`` is a fast shutdown (sessions are cut, the data is checkpointed); ``start`` brings
    the same data back on the same port. Both return only once the change has happened.
    """

    def __init__(self, *, root: Path, bindir: Path, account: pwd.struct_passwd | None) -> None:
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.root = root
        self.data = root / "data"
        self.sockets = root / "sockets"
        self.log = root / "postgres.log"
        self._bindir = bindir
        self._account = account  # None: run as ourselves (laptop, or already the postgres user)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The postmaster's pid while it runs, else None."""
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    def _as_owner(self) -> dict[str, object]:
        if self._account is None:
            return {}
        return {"user": self._account.pw_uid, "group": self._account.pw_gid, "extra_groups": []}

    def initdb(self) -> None:
        """Create the cluster (``initdb -A trust -U postgres``) and write its settings."""
        for folder in (self.data, self.sockets):
            folder.mkdir(mode=0o700)
        if self._account is not None:
            for path in (self.root, self.data, self.sockets):
                os.chown(path, self._account.pw_uid, self._account.pw_gid)
        result = subprocess.run(
            [str(self._bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
             "-E", "UTF8", "--locale=C", "--no-sync"],
            cwd=self.root, capture_output=True, text=True, check=False, **self._as_owner(),
        )
        if result.returncode != 0:
            raise ServiceError(
                f"initdb failed for {self.data} (status {result.returncode}); if it says it "
                f"cannot be run as root, run the tests as root or as a normal user:\n"
                f"{result.stdout}{result.stderr}"
            )

    def start(self) -> None:
        """Start the postmaster on ``self.port`` and return once it accepts connections."""
        if self.pid is not None:
            return
        settings = {**_POSTGRES_SETTINGS, "listen_addresses": "127.0.0.1"}
        command = [str(self._bindir / "postgres"), "-D", str(self.data), "-p", str(self.port),
                   "-k", str(self.sockets)]
        for key, value in settings.items():
            command += ["-c", f"{key}={value}"]
        with self.log.open("ab") as log:
            # A session of its own: a Ctrl-C in the terminal reaches pytest, whose clean-up then
            # stops the server in order, rather than the server dying under a running test.
            self._proc = subprocess.Popen(
                command, cwd=self.root, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, **self._as_owner(),
            )
        _wait_until(self._accepts, self._proc, f"PostgreSQL on port {self.port}", self.log)

    def _accepts(self) -> bool:
        try:
            with psycopg.connect(self.url, connect_timeout=1):
                return True
        except psycopg.OperationalError:
            return False

    def stop(self) -> None:
        """Fast shutdown (SIGINT): cut sessions, checkpoint, and return once the server exited."""
        if self._proc is not None:
            _terminate(self._proc, signal.SIGINT, f"PostgreSQL on port {self.port}", self.log)


def _postgres_root(base: Path, account: pwd.struct_passwd | None) -> Path:
    """A new, empty folder for the cluster.

    Under ``base`` when the server's account can reach it and the socket path fits; pytest's
    ``/tmp/pytest-of-root`` is mode 700, so as root this is usually a fresh folder in /tmp.
    """
    root = base / "postgres"
    socket_path = root / "sockets" / ".s.PGSQL.65535"
    reachable = account is None or _can_traverse(base, account)
    if reachable and len(str(socket_path)) <= SOCKET_PATH_LIMIT:
        root.mkdir(mode=0o700)
        return root
    return Path(tempfile.mkdtemp(prefix="ratchet-pg-"))


def _postgres_account() -> pwd.struct_passwd | None:
    """Whom to run PostgreSQL as: the ``postgres`` account when we are root, else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(POSTGRES_USER)
    except KeyError:
        _unavailable(f"running as root, PostgreSQL needs the {POSTGRES_USER!r} OS user, "
                     "which does not exist")


@contextmanager
def throwaway_postgres(base: Path) -> Iterator[PostgresServer]:
    """A private PostgreSQL on a free port, its cluster under ``base``; removed on exit.

    Skips (fails under CI=true) when the server binaries are missing; raises ServiceError with
    the server log when it does not start.
    """
    bindir = _postgres_bindir()
    account = _postgres_account()
    root = _postgres_root(base, account)
    server = PostgresServer(root=root, bindir=bindir, account=account)
    try:
        server.initdb()
        server.start()
        yield server
    finally:
        try:
            server.stop()  # on a timeout it SIGKILLs the postmaster, then raises
        finally:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(root)


# --- Redis -----------------------------------------------------------------------------------


class RedisServer:
    """A private ``redis-server`` without persistence: a stop loses every key."""

    def __init__(self, *, root: Path, binary: str) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.root = root
        self.log = root / "redis.log"
        self._binary = binary
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs, else None."""
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    def start(self) -> None:
        """Start an empty server on ``self.port`` and return once it answers PING."""
        if self.pid is not None:
            return
        command = [self._binary, "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--daemonize", "no",
                   "--dir", str(self.root), "--logfile", ""]
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                command, cwd=self.root, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )
        _wait_until(self._answers, self._proc, f"redis-server on port {self.port}", self.log)

    def _answers(self) -> bool:
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=1)
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False
        finally:
            client.close()

    def stop(self) -> None:
        """SIGTERM and wait for the exit; with no persistence configured, the data is gone."""
        if self._proc is not None:
            _terminate(self._proc, signal.SIGTERM, f"redis-server on port {self.port}", self.log)


@contextmanager
def throwaway_redis(base: Path) -> Iterator[RedisServer]:
    """A private ``redis-server`` on a free port, its files under ``base``; removed on exit.

    Skips (fails under CI=true) when ``redis-server`` is not on PATH.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        _unavailable("redis-server was not found on PATH")
    root = base / "redis"
    root.mkdir()
    server = RedisServer(root=root, binary=binary)
    try:
        server.start()
        yield server
    finally:
        try:
            server.stop()
        finally:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(root)
