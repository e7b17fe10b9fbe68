"""The sandbox agents and checks run in: bubblewrap, or nothing when an operator opts out.

Agents and checks are untrusted code. Under ``bwrap`` (https://github.com/containers/bubblewrap)
each one sees the host's filesystem by allowlist: the system folders (``SYSTEM_FOLDERS``) and
the runner's own Python read-only, with the host's password hashes and private keys masked
(``SECRET_FILES``); the operator's tool folders read-only (RATCHET_SANDBOX_RO); what its caller
binds (its worktree and output folder read-write, a prompt read-only); and private, empty
``/tmp``, ``/var/tmp`` and ``/run``. Nothing else exists in there: not the runner user's home or
``/root``, not ``/home``, not the Unix sockets of host services under ``/run`` or ``/tmp``, and
nothing of Ratchet's home (ledger, mirrors, other runs, scratch) or of the files that hold its
secrets, even where a declared folder contains them. It runs in PID, IPC and UTS namespaces of
its own: it cannot see the runner in ``/proc``, and when its first process ends the kernel ends
every descendant, ``setsid`` or not. ``--die-with-parent`` ends it with the runner. Its network
namespace is its own too (loopback only): the way out, if any, is the egress proxy the caller
runs (``runner/egress.py``), reached through the ``network`` endpoint's socket and the
forwarder it wraps the command in.

``Sandbox.command`` only builds an argv; the caller runs it (its own process group, timeouts).
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from runner.egress import Egress
from runner.errors import DeterministicFailure

log = logging.getLogger(__name__)

# Folders every sandbox gets empty and private (tmpfs). /run holds the host services' Unix
# sockets (PostgreSQL, Docker, D-Bus): a network namespace does not hide those.
PRIVATE_FOLDERS = ("/tmp", "/var/tmp", "/run")
# The host's folders every sandbox sees read-only: programs, libraries, their configuration.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
                  "/opt")
# Secrets inside them, masked (globs): password hashes, host keys, TLS private keys.
SECRET_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
                "/etc/ssh/ssh_host_*_key", "/etc/ssl/private")


class SandboxMode(StrEnum):
    BWRAP = "bwrap"
    NONE = "none"


class SandboxUnavailable(DeterministicFailure):
    """The configured sandbox cannot run here; the message says how to fix or opt out."""


@dataclass(frozen=True)
class Sandbox:
    """How agents and checks are confined on this host.

    ``hidden``: paths never visible inside (Ratchet's home, the ledger file, key files).
    ``shared``: cache folders the operator lets every agent write (RATCHET_SANDBOX_RW); the
    agent binds them itself, checks never get them. ``tools``: folders the operator shows
    every agent and check read-only (RATCHET_SANDBOX_RO: a toolchain outside the system
    folders, such as ``~/.cargo``). ``remedy`` is appended to the error
    when bubblewrap is missing: how to install it or opt out, in the operator's words.
    """

    mode: SandboxMode = SandboxMode.BWRAP
    hidden: tuple[Path, ...] = ()
    shared: tuple[Path, ...] = ()
    tools: tuple[Path, ...] = ()
    remedy: str = "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap)"
    program: str = "bwrap"

    def __post_init__(self) -> None:
        for setting, folders in (("RATCHET_SANDBOX_RW", self.shared),
                                 ("RATCHET_SANDBOX_RO", self.tools)):
            for folder in folders:
                for hidden in self.hidden:
                    if folder.resolve().is_relative_to(hidden.resolve()):
                        raise ValueError(
                            f"{setting}: {folder} is inside {hidden}, which agents and checks"
                            f" must never see; declare a folder outside it"
                        )

    @property
    def confined(self) -> bool:
        return self.mode is SandboxMode.BWRAP

    def hides(self, path: Path) -> bool:
        """Whether ``path``, or what it resolves to, is one of the paths kept from agents and
        checks (Ratchet's home, its secrets, the host's password hashes and private keys),
        which nothing may show them."""
        kept = (*self.hidden, *_secrets())
        return any(candidate.is_relative_to(hidden) for candidate in (path, path.resolve())
                   for hidden in kept)

    def masks(self, path: Path) -> bool:
        """Whether ``path`` is out of sight inside: outside every folder shown, or a hidden
        path or a secret."""
        if not self.confined:
            return False
        if self.hides(path):
            return True
        return not any(path.is_relative_to(folder) for folder in self.visible())

    def visible(self) -> tuple[Path, ...]:
        """The host folders every sandbox shows read-only: system folders, the runner's
        Python, the operator's tool folders."""
        return (*(Path(folder) for folder in SYSTEM_FOLDERS), *_python_prefixes(), *self.tools)

    def check(self) -> None:
        """Raise ``SandboxUnavailable`` when this sandbox cannot start processes here."""
        if self.mode is SandboxMode.NONE:
            return
        problem = _probe(self.program)
        if problem is not None:
            raise SandboxUnavailable(
                f"agents and checks run in a bubblewrap sandbox, but {problem}; {self.remedy}"
            )

    def command(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path] = (),
        readable: Sequence[Path] = (),
        network: Egress | None = None,
    ) -> list[str]:
        """The argv that runs ``argv`` in ``cwd`` inside this sandbox.

        ``writable`` folders (the worktree, an output folder) and ``readable`` paths (a prompt
        file, the repository's objects) are bound at their own paths, after the hidden ones are
        masked, so they stay reachable even inside Ratchet's home. Without a ``network``
        endpoint the command reaches no network at all, loopback aside.
        """
        if self.mode is SandboxMode.NONE:
            return list(argv)
        self.check()
        args = [*(network.launcher() if network else ()), self.program,
                "--dev", "/dev", "--proc", "/proc"]
        for folder in PRIVATE_FOLDERS:
            args += ["--tmpfs", folder]
        for folder in self.visible():  # after the private folders: a venv in /tmp shows
            args += _show(folder)
        args += _resolver()
        for path in _secrets():
            args += (["--tmpfs", str(path)] if path.is_dir()
                     else ["--ro-bind", "/dev/null", str(path)])
        folders = [path for path in self.hidden if path.is_dir()]
        for path in self.hidden:
            if any(path != folder and path.is_relative_to(folder) for folder in folders):
                continue  # inside a folder already masked: it does not exist in there
            if path.is_dir():
                args += ["--tmpfs", str(path)]
            elif path.exists():
                args += ["--ro-bind", "/dev/null", str(path)]
        for path in readable:
            args += ["--ro-bind", str(path), str(path)]
        for path in writable:
            args += ["--bind", str(path), str(path)]
        if network is not None:
            args += network.bwrap_args()
            argv = network.wrap(argv)
        args += [
            "--chdir", str(cwd),
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--unshare-net", "--die-with-parent", "--new-session",
        ]
        return [*args, "--", *argv]


def _show(folder: Path) -> list[str]:
    """The bwrap arguments that show ``folder`` read-only at its own path: a symlink as the
    same symlink (``/bin`` -> ``usr/bin``), a missing folder not at all."""
    if folder.is_symlink() and str(folder) in SYSTEM_FOLDERS:
        return ["--symlink", os.readlink(folder), str(folder)]
    return ["--ro-bind-try", str(folder), str(folder)]


def _resolver() -> list[str]:
    """The resolver configuration where ``/etc/resolv.conf`` points outside ``/etc``
    (systemd-resolved's, under the private ``/run``), shown read-only."""
    resolver = Path(os.path.realpath("/etc/resolv.conf"))
    if resolver.is_relative_to("/etc") or not resolver.is_file():
        return []
    return ["--ro-bind", str(resolver), str(resolver)]


def _secrets() -> list[Path]:
    """The secret files and folders of ``SECRET_FILES`` present on this host."""
    return [Path(path) for pattern in SECRET_FILES for path in sorted(glob.glob(pattern))]


@functools.cache
def _python_prefixes() -> tuple[Path, ...]:
    """Where the runner's Python lives (its virtual environment and the installation under
    it): agents and checks may run that interpreter, as Ratchet's own scripts do."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return tuple(sorted({Path(os.path.realpath(prefix)) for prefix in prefixes}))


@functools.cache
def _probe(program: str) -> str | None:
    """Why ``program`` cannot sandbox a process here, or None; asked once per process."""
    path = shutil.which(program)
    if path is None:
        return f"{program!r} is not installed (not on PATH)"
    try:
        result = subprocess.run(
            [path, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid",
             "--die-with-parent", "true"],
            capture_output=True, timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path} could not start: {exc}"
    if result.returncode != 0:
        reason = result.stderr.decode("utf-8", "replace").strip() or f"exit {result.returncode}"
        return (f"{path} cannot create namespaces here ({reason}); in a container, allow user "
                "namespaces (see docs/operations.md, 'Sandbox')")
    return None
