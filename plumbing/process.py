"""Process groups: the one way Ratchet stops an agent or a check with everything it started.

Agents and checks run in their own session (``start_new_session``), so their process group id
is the leader's pid; the kernel does not reuse it while any member lives, so signalling the
group after the leader exited is safe. ``stop_group`` asks politely (SIGTERM), waits, then
kills (SIGKILL) and waits for the group to be gone. Zombies do not count as alive: an
orphan's zombie waits for init to reap it, which some container inits do late.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

logger = logging.getLogger(__name__)

# How often a stopping group is looked at.
POLL_INTERVAL = 0.05
# How long killed processes may take to disappear (be reaped) after SIGKILL.
KILL_WAIT = 2.0
# Where Linux lists processes; elsewhere group liveness falls back to killpg(pgid, 0).
_PROC = Path("/proc")


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to every process of the group; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_group(proc: subprocess.Popen[bytes], *, grace: float) -> int:
    """SIGTERM the process group, SIGKILL it after ``grace`` seconds; reap the leader.

    Returns the leader's exit status once the group is gone (or ``KILL_WAIT`` after the
    SIGKILL, for a process stuck in the kernel).
    """
    pgid = proc.pid
    if group_alive(proc, pgid):
        signal_group(pgid, signal.SIGTERM)
        if not _wait_group(proc, pgid, grace):
            signal_group(pgid, signal.SIGKILL)
            if not _wait_group(proc, pgid, KILL_WAIT):
                logger.warning("process group %r survived SIGKILL for %rs", pgid, KILL_WAIT)
    return proc.wait()


def group_alive(proc: subprocess.Popen[bytes], pgid: int) -> bool:
    """Whether a process of the group still runs; reaps the leader if it exited."""
    proc.poll()
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _PROC.is_dir() or _has_running_member(pgid)


def _wait_group(proc: subprocess.Popen[bytes], pgid: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for the group to be gone; say whether it is."""
    deadline = time.monotonic() + seconds
    while group_alive(proc, pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL)
    return True


def _has_running_member(pgid: int) -> bool:
    """Scan ``/proc`` (Linux) for a non-zombie process in group ``pgid``."""
    for stat in _PROC.glob("[0-9]*/stat"):
        try:
            # After the "(comm)" field: state, ppid, pgrp, ...
            state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # the process ended while we looked
        if state not in {"Z", "X"} and int(pgrp) == pgid:
            return True
    return False
