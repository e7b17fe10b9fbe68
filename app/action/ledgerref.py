"""A run's SQLite ledger kept in the repository, between Actions jobs, in one ref.

The ref (``refs/ratchet/ledger/issue-<n>``) points at a commit whose tree holds one file, the
ledger (``ledger.sqlite3``: runs, events, checkpoints, effects, signals and the artifacts'
bytes all live in it). A job fetches it when it starts and pushes a fresh snapshot after every
change of the run, each push compare-and-swapped: ``git push --force-with-lease=<ref>:<oid it
last saw>`` (absent: the ref must not exist yet). A refused push means another job wrote the
ledger after this one read it: that job owns the run now, and this one stops
(``LedgerRefMoved``) without sending anything it decided since.

Each snapshot is an ``VACUUM INTO`` copy (consistent, compact) in a commit without parents:
the ledger keeps its own history, so older snapshots need not stay reachable and GitHub may
collect them. Refs outside ``refs/heads`` and ``refs/tags`` start no workflow and show in no
branch list. git authenticates with the job's token through the credential helper of
``github.gitauth`` (never a URL, a config file or a log).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from plumbing.git import Git, GitError
from runner.errors import RatchetError
from runner.worktrees import NO_ACCESS, RemoteAccess

log = logging.getLogger(__name__)

LEDGER_FILE = "ledger.sqlite3"
REF_TEMPLATE = "refs/ratchet/ledger/issue-{issue}"
# A network failure of git is tried this many times, a second apart, then raised.
GIT_ATTEMPTS = 3
_IDENTITY = {
    "GIT_AUTHOR_NAME": "Ratchet",
    "GIT_AUTHOR_EMAIL": "ratchet@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "Ratchet",
    "GIT_COMMITTER_EMAIL": "ratchet@users.noreply.github.com",
}


class LedgerRefMoved(RatchetError):
    """Another job wrote the ledger's ref after this job read it: that job owns the run."""


class LedgerRefUnavailable(RatchetError):
    """The ledger's ref could not be read or written (network, permissions)."""


def ledger_ref(issue: int) -> str:
    return REF_TEMPLATE.format(issue=issue)


@dataclass
class LedgerRef:
    """One issue's ledger ref on ``remote``; ``expected`` is the commit this job last read or
    wrote there (None: the ref does not exist)."""

    remote: str
    ref: str
    git_dir: Path
    access: RemoteAccess = NO_ACCESS
    expected: str | None = None
    pushes: int = 0
    pushed_bytes: int = 0
    _git: Git = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not (self.git_dir / "objects").is_dir():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            Git(git_dir=None, cwd=self.git_dir.parent).run(
                "init", "--quiet", "--bare", "--template=", str(self.git_dir))
        self._git = Git(git_dir=self.git_dir, config=self.access.config)

    def fetch(self, db: Path) -> bool:
        """Write the ledger the ref holds to ``db``; False (and ``db`` untouched) when the ref
        does not exist yet."""
        oid = self._remote_oid()
        if oid is None:
            self.expected = None
            return False
        local = "refs/ratchet/fetched"
        self._network("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--",
                      self.remote, f"+{self.ref}:{local}")
        fetched = self._git.text("rev-parse", "--verify", f"{local}^{{commit}}")
        try:
            data = self._git("cat-file", "blob", f"{fetched}:{LEDGER_FILE}")
        except GitError as exc:
            raise LedgerRefUnavailable(
                f"{self.ref} at {fetched[:12]} holds no {LEDGER_FILE}; it was not written by"
                f" Ratchet: delete the ref (git push origin :{self.ref}) to start over"
            ) from exc
        db.parent.mkdir(parents=True, exist_ok=True)
        partial = db.with_name(db.name + ".partial")
        partial.write_bytes(data)
        partial.replace(db)
        self.expected = fetched
        log.info("ledger %r fetched at %r (%d bytes)", self.ref, fetched, len(data))
        return True

    def push(self, db: Path, *, message: str) -> str:
        """Snapshot ``db`` and make the ref point at it, if the ref is still where this job
        last saw it; returns the new commit. ``LedgerRefMoved`` when it is not."""
        snapshot = db.with_name(db.name + ".snapshot")
        snapshot.unlink(missing_ok=True)
        with sqlite3.connect(db) as conn:
            conn.execute("VACUUM INTO ?", (str(snapshot),))
        conn.close()
        try:
            blob = self._git.text("hash-object", "-w", "--", str(snapshot))
            size = snapshot.stat().st_size
        finally:
            snapshot.unlink(missing_ok=True)
        tree = self._git.run("mktree", input=f"100644 blob {blob}\t{LEDGER_FILE}\n".encode()
                             ).stdout.decode().strip()
        commit = self._git.run("commit-tree", "-m", message, tree,
                               env={**_IDENTITY, **self.access.env}).stdout.decode().strip()
        lease = f"--force-with-lease={self.ref}:{self.expected or ''}"
        try:
            self._network("push", "--quiet", "--porcelain", "--no-verify", lease, "--",
                          self.remote, f"{commit}:{self.ref}")
        except LedgerRefUnavailable:
            # Refused by the lease (client side), by the server's own compare-and-swap of the
            # ref (a concurrent push), or lost on the way back: where is the ref now?
            actual = self._remote_oid()
            if actual != commit and actual != self.expected:
                raise LedgerRefMoved(
                    f"{self.ref} moved since this job read it (expected"
                    f" {(self.expected or 'absent')[:12]}, found {(actual or 'absent')[:12]}):"
                    " another job is working on the run") from None
            if actual != commit:
                raise
        self.expected = commit
        self.pushes += 1
        self.pushed_bytes += size
        log.info("ledger %r pushed at %r (%d bytes)", self.ref, commit, size)
        return commit

    def _remote_oid(self) -> str | None:
        out = self._network("ls-remote", "--refs", "--", self.remote, self.ref)
        for line in out.decode().splitlines():
            oid, _, name = line.partition("\t")
            if name == self.ref:
                return oid
        return None

    def _network(self, *args: str) -> bytes:
        """A git call that talks to the remote, tried again after a network failure; a push
        git refused (a stale lease) is not retried."""
        git = replace(self._git, config=self.access.config)
        for attempt in range(1, GIT_ATTEMPTS + 1):
            try:
                return git(*args, env=dict(self.access.env))
            except GitError as exc:
                detail = f"{exc.stderr} {exc.stdout.decode('utf-8', 'replace')}".strip()
                refused = "[rejected]" in detail or "[remote rejected]" in detail
                if refused or attempt == GIT_ATTEMPTS:
                    raise LedgerRefUnavailable(
                        f"git {args[0]} of {self.ref} failed: {detail or exc}; check that the"
                        " job's token may read and push the repository (permissions:"
                        " contents: write)") from exc
                log.warning("git %s of %r failed (attempt %d), retrying: %s", args[0],
                            self.ref, attempt, detail)
                time.sleep(attempt)
        raise AssertionError("unreachable")
