"""An agent's home: a fresh folder per step that the runner creates, seeds and removes.

An agent CLI keeps its login and settings under ``$HOME`` (``~/.claude``, ``~/.codex``). The
runner's own home must not be that folder: an agent could read every other credential there,
and a hook it planted in a shared config would run in every later agent of every repository.
So each step gets an empty home, the operator's named config paths
(``RATCHET_AGENT_HOME_SEED``) are copied into it, and it is removed when the step ends: what an
agent writes there never outlives its step, and checks never see it.

The copy never follows a symlink out of a seeded folder (a link inside it is kept as a link,
one that leaves it is skipped), skips FIFOs, sockets and devices, and stops at
``MAX_SEED_BYTES`` and ``MAX_SEED_ENTRIES``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from plumbing.walk import remove
from runner.errors import DeterministicFailure

log = logging.getLogger(__name__)

# A CLI's credentials and settings are kilobytes; a seed past these holds history or caches.
MAX_SEED_BYTES = 64 << 20
MAX_SEED_ENTRIES = 10_000


class SeedTooLarge(DeterministicFailure):
    """A seeded path holds more than the caps allow."""


def fresh_home(parent: Path, seeds: Sequence[Path], *, host_home: Path) -> Path:
    """A new, private folder under ``parent`` holding a copy of each of ``seeds``.

    A seed under ``host_home`` lands at the same place under the new home (``~/.claude`` at
    ``<home>/.claude``); any other at its name. A missing seed is skipped with a warning.
    Raises ``SeedTooLarge`` naming the seed past the caps (the home is removed).
    """
    parent.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="home.", dir=parent))
    budget = _Budget()
    try:
        for seed in seeds:
            if not os.path.lexists(seed):
                log.warning("agent home seed %s does not exist; the agent starts without it",
                            seed)
                continue
            relative = (seed.relative_to(host_home) if seed.is_relative_to(host_home)
                        else Path(seed.name))
            target = home / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy(seed, target, budget)
    except BaseException:
        remove_home(home)
        raise
    return home


def add_files(home: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (path under ``home`` -> text) where no seed put one: a preset's
    defaults, which the operator's own seeded config overrides."""
    for relative, text in files.items():
        target = home / relative
        if not os.path.lexists(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


def remove_home(home: Path) -> None:
    """Remove ``home`` and everything the agent left in it, folders it made unwritable or
    nested 1,100 deep too (``plumbing.walk.remove``: iterative, never following a symlink)."""
    with contextlib.suppress(OSError):
        remove(home)


class _Budget:
    def __init__(self) -> None:
        self.bytes = 0
        self.entries = 0

    def spend(self, seed: Path, size: int) -> None:
        self.bytes += size
        self.entries += 1
        if self.bytes > MAX_SEED_BYTES or self.entries > MAX_SEED_ENTRIES:
            raise SeedTooLarge(
                f"the agent home seed {seed} holds more than {MAX_SEED_BYTES >> 20} MiB or"
                f" {MAX_SEED_ENTRIES} files; name only what the CLI needs (its credentials and"
                " settings, e.g. ~/.claude/.credentials.json) in RATCHET_AGENT_HOME_SEED"
            )


def _copy(named: Path, target: Path, budget: _Budget) -> None:
    """Copy ``named`` (a file or a folder; a symlink the operator named is followed once) to
    ``target`` without following a symlink out of it."""
    seed = Path(os.path.realpath(named))
    pending = [(seed, target)]
    while pending:
        source, destination = pending.pop()
        info = os.lstat(source)
        if stat.S_ISDIR(info.st_mode):
            budget.spend(named, 0)
            destination.mkdir(mode=stat.S_IRWXU)
            with os.scandir(source) as entries:
                pending += [(Path(entry.path), destination / entry.name) for entry in entries]
        elif stat.S_ISREG(info.st_mode):
            budget.spend(named, info.st_size)
            _copy_file(source, destination, info.st_mode)
        elif stat.S_ISLNK(info.st_mode) and source != seed and _stays_inside(source, seed):
            budget.spend(named, 0)
            os.symlink(os.readlink(source), destination)
        # A link out of the seed, a FIFO, a socket, a device: not copied.


def _copy_file(source: Path, destination: Path, mode: int) -> None:
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as reader, destination.open("xb") as writer:
        shutil.copyfileobj(reader, writer)
    os.chmod(destination, stat.S_IMODE(mode) | stat.S_IRUSR | stat.S_IWUSR)


def _stays_inside(link: Path, seed: Path) -> bool:
    """Whether the relative symlink ``link`` names a path inside ``seed`` (an absolute one
    would name the host's path, which the agent's home does not hold)."""
    text = os.readlink(link)
    if os.path.isabs(text):
        return False
    resolved = os.path.normpath(os.path.join(os.path.dirname(link), text))
    return Path(resolved).is_relative_to(seed) and Path(resolved) != seed
