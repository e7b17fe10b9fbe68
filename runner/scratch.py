"""A run's scratch folder (``<home>/scratch/<run>/<epoch>/<step>/``): prompts, the
agents' output folders and logs, the agent-exit journal. Cleaned when the run stops or ends."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from plumbing.files import write_atomic
from runner.redact import Redactor

# An ended run's agent logs larger than this are removed, not redacted.
MAX_SCRUBBED_LOG_BYTES = 64 << 20


def remove_scratch(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def scrub_scratch(folder: Path, redact: Redactor) -> None:
    """Keep only the agents' logs, redacted (their tails are already evidence): outputs,
    prompts and journals are removed, and so is a log too large to redact."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*"), reverse=True):  # children before their folders
        if path.is_symlink() or not path.is_file():
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.rmdir()  # empty folders only
            else:
                path.unlink(missing_ok=True)
            continue
        if path.suffix != ".log" or path.stat().st_size > MAX_SCRUBBED_LOG_BYTES:
            path.unlink(missing_ok=True)
            continue
        data = path.read_bytes()
        if (clean := redact.bytes(data)) != data:
            write_atomic(path, clean)
