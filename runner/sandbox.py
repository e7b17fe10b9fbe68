"""The sandbox agents and checks run in: bubblewrap, or nothing when an operator opts out.

Agents and checks are untrusted code. Under ``bwrap`` (https://github.com/containers/bubblewrap)
each one sees the host's filesystem read-only, its worktree and output folder read-write, a
private ``/tmp``, declared tool folders read-write, and nothing of Ratchet's home (ledger,
mirrors, other runs, scratch) or of the files that hold its secrets, and no host service's
Unix socket under ``/run``. It runs in PID, IPC and UTS namespaces of its own: it cannot see
the runner in ``/proc``, and when its first process ends the kernel ends every descendant,
``setsid`` or not. ``--die-with-parent`` ends it with the runner. Its network namespace is its
own too (loopback only): the way out, if any, is the egress proxy the caller runs
(``runner/egress.py``), reached through the ``network`` endpoint's socket and the forwarder it
wraps the command in.

``Sandbox.command`` only builds an argv; the caller runs it (its own process group, timeouts).
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
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


class SandboxMode(StrEnum):
    BWRAP = "bwrap"
    NONE = "none"


class SandboxUnavailable(DeterministicFailure):
    """The configured sandbox cannot run here; the message says how to fix or opt out."""


@dataclass(frozen=True)
class Sandbox:
    """How agents and checks are confined on this host.

    ``hidden``: paths never visible inside (Ratchet's home, the ledger file, key files).
    ``shared``: tool folders an agent CLI must write outside its worktree (its config and
    cache), bound read-write for agents and checks. ``remedy`` is appended to the error
    when bubblewrap is missing: how to install it or opt out, in the operator's words.
    """

    mode: SandboxMode = SandboxMode.BWRAP
    hidden: tuple[Path, ...] = ()
    shared: tuple[Path, ...] = ()
    remedy: str = "install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap)"
    program: str = "bwrap"

    def __post_init__(self) -> None:
        for folder in self.shared:
            for hidden in self.hidden:
                if folder.resolve().is_relative_to(hidden.resolve()):
                    raise ValueError(
                        f"shared folder {folder} is inside {hidden}, which agents must never "
                        f"see; declare a folder outside it"
                    )

    @property
    def confined(self) -> bool:
        return self.mode is SandboxMode.BWRAP

    def hides(self, path: Path) -> bool:
        """Whether ``path`` is one of the paths kept from agents and checks (Ratchet's home,
        its secrets), which nothing may show them."""
        return any(path.is_relative_to(hidden) for hidden in self.hidden)

    def masks(self, path: Path) -> bool:
        """Whether ``path`` is out of sight inside (a private folder or a hidden path)."""
        if not self.confined:
            return False
        masked = [Path(folder) for folder in PRIVATE_FOLDERS] + list(self.hidden)
        shared = any(path.is_relative_to(folder) for folder in self.shared)
        return not shared and any(path.is_relative_to(folder) for folder in masked)

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
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for folder in PRIVATE_FOLDERS:
            if Path(folder).is_dir():
                args += ["--tmpfs", folder]
        for folder in self.shared:
            args += ["--bind-try", str(folder), str(folder)]
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
