"""A run's scratch folder (``<home>/scratch/<run>/<epoch>/<step>/``): prompts, the
agents' output folders and logs, the agent-exit journal. Cleaned when the run stops or ends."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from plumbing.files import write_atomic
from plumbing.walk import remove
from runner.redact import Redactor

# An ended run's agent logs larger than this are removed, not redacted.
MAX_SCRUBBED_LOG_BYTES = 64 << 20
# How deep under a run's scratch folder logs are written: <epoch>/<step>/subagents/<name>/.
_LOG_DEPTH = 4


def remove_scratch(folder: Path) -> None:
    with contextlib.suppress(OSError):
        remove(folder)  # an output folder an agent nested 1,100 deep included


def scrub_scratch(folder: Path, redact: Redactor) -> None:
    """Keep only the agents' logs, redacted (their tails are already evidence): outputs,
    prompts and journals are removed, and so is a log too large to redact.

    Walked iteratively to the depth logs are written at (``<epoch>/<step>/subagents/<name>``);
    anything deeper is an agent's output, removed whole without being read.
    """
    if not folder.is_dir():
        return
    pending, folders = [(folder, 0)], []
    while pending:
        current, depth = pending.pop()
        folders.append(current)
        with os.scandir(current) as listing:
            entries = list(listing)
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if depth < _LOG_DEPTH:
                    pending.append((path, depth + 1))
                else:
                    remove(path)
            elif (not entry.is_file(follow_symlinks=False) or path.suffix != ".log"
                  or entry.stat(follow_symlinks=False).st_size > MAX_SCRUBBED_LOG_BYTES):
                path.unlink(missing_ok=True)
            elif (clean := redact.bytes(data := path.read_bytes())) != data:
                write_atomic(path, clean)
    for emptied in reversed(folders):  # children before their folders
        with contextlib.suppress(OSError):
            emptied.rmdir()  # empty folders only
