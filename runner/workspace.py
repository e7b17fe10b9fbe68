"""Workspaces: one bare mirror per repository, one git worktree per run and lease epoch.

A step's result is checkpointed as a tree hash plus a binary patch against the run's base, so a
fresh worker on another host rebuilds the same worktree and proves it by hash (DESIGN.md,
"Workspaces"). Layout under ``root``::

    mirrors/<name>-<sha1(url)[:12]>.git    bare mirror clone, guarded by <mirror>.lock (flock)
    runs/<run_id>/<epoch>/                 detached worktree of that mirror

Every git call goes through ``_Git``, which fixes the environment and the configuration that
would otherwise let a user's settings change hashes, patches or prompts.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from runner.errors import WorkspaceError, WorkspaceMismatch

logger = logging.getLogger(__name__)

# Configuration forced on every git call: output, content and hashes must not depend on the
# user's or the host's settings (https://git-scm.com/docs/git-config).
_GIT_CONFIG = (
    "core.quotePath=off",  # paths as raw UTF-8, not octal escapes
    "core.autocrlf=false",  # content is stored and restored byte for byte
    "core.safecrlf=false",
    "core.excludesFile=/dev/null",  # only the repository's .gitignore decides what is ignored
    "core.hooksPath=/dev/null",  # Ratchet's own git calls run no hooks
    "color.ui=false",
    "advice.detachedHead=false",
    "i18n.commitEncoding=UTF-8",  # no encoding header: same inputs, same commit sha
    "gc.autoDetach=false",  # an automatic gc finishes while the mirror lock is still held
)

# Inherited variables git may keep: transport and authentication only. Everything else named
# GIT_* (GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_PARAMETERS, identities, ...) would redirect or
# reshape our calls, e.g. when Ratchet itself runs inside a git hook.
_GIT_ENV_KEEP = frozenset(
    {
        "GIT_ASKPASS",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_SYSTEM",
        "GIT_EXEC_PATH",
        "GIT_PROXY_COMMAND",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_SSL_CAINFO",
        "GIT_SSL_CAPATH",
    }
)

_GIT_ENV_FIXED = {
    "LC_ALL": "C",
    "LANGUAGE": "C",
    "GIT_TERMINAL_PROMPT": "0",  # fail instead of waiting for a password nobody will type
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",  # reading commands never rewrite a worktree's index
}

# A revision evaluated against the source's current HEAD rather than the mirror's stale one.
_HEAD_REV = re.compile(r"^HEAD(?=$|[~^])")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class GitCommandFailed(WorkspaceError):
    """A git command exited non-zero; carries the command, the folder and git's output."""

    def __init__(
        self, args: Sequence[str], cwd: Path, returncode: int, stdout: bytes, stderr: bytes
    ) -> None:
        self.command = ("git", *args)
        self.cwd = cwd
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr.decode("utf-8", "replace").strip()
        super().__init__(
            f"`git {' '.join(args)}` failed in {cwd} (exit {returncode}): "
            f"{self.stderr or '(no output)'}"
        )


class PushRejected(WorkspaceError):
    """The remote branch is not where the lease expected it: someone else moved it."""

    def __init__(self, remote: str, branch: str, expected: str | None, actual: str | None) -> None:
        self.remote = remote
        self.branch = branch
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"push to {remote!r} refused: branch {branch!r} is at {actual or 'nothing (absent)'}, "
            f"expected {expected or 'it to be absent'}; reconcile the push effect against "
            f"the remote before retrying"
        )


@dataclass(frozen=True)
class Snapshot:
    """A worktree's content: its tree hash and the patch that rebuilds it from the base."""

    tree: str
    patch: bytes


class _Git:
    """The one way git is run here: fixed environment and configuration, errors that explain."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        kept = {k: v for k, v in environ.items() if not k.startswith("GIT_") or k in _GIT_ENV_KEEP}
        self._env = {**kept, **_GIT_ENV_FIXED}

    def __call__(
        self,
        cwd: Path,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> bytes:
        command = ["git"]
        for setting in _GIT_CONFIG:
            command += ["-c", setting]
        command += args
        logger.debug("git %r in %r", args, str(cwd))
        try:
            result = subprocess.run(
                command,
                cwd=cwd,
                env={**self._env, **(env or {})},
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
        except OSError as exc:
            raise WorkspaceError(
                f"could not run `git {' '.join(args)}` in {cwd}: {exc}; "
                f"check that git is installed and the folder exists"
            ) from exc
        if result.returncode != 0:
            raise GitCommandFailed(args, cwd, result.returncode, result.stdout, result.stderr)
        return result.stdout

    def text(self, cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
        """Run git and return its stdout stripped, as text."""
        return self(cwd, *args, env=env).decode().strip()


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``lock_path``: one mirror operation at a time, across processes.

    Each call opens its own file description, so threads of one process exclude each other too.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "ab") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def _normalise_url(repo_url: str) -> str:
    """An existing local path becomes absolute (git runs elsewhere); URLs are kept as given."""
    if "://" not in repo_url and Path(repo_url).exists():
        return str(Path(repo_url).resolve())
    return repo_url


def _mirror_name(url: str) -> str:
    """``<basename>-<sha1(url)[:12]>.git``: readable, and unique per source."""
    basename = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    readable = _SAFE_NAME.sub("_", basename) or "repo"
    return f"{readable}-{hashlib.sha1(url.encode()).hexdigest()[:12]}.git"


def _git_date(when: datetime) -> str:
    """Git's internal date format ``<unix seconds> <+hhmm>``, from an aware datetime."""
    offset = when.utcoffset()
    if offset is None:
        raise ValueError(
            f"commit time {when.isoformat()} has no timezone; pass an aware datetime "
            f"(e.g. datetime.now(UTC)) so every host writes the same commit"
        )
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    hours, minutes = divmod(abs(minutes), 60)
    return f"{int(when.timestamp())} {sign}{hours:02d}{minutes:02d}"


def _check_run_id(run_id: str) -> str:
    """Refuse run ids that would escape ``runs/`` or name no folder."""
    if not run_id or run_id in {".", ".."} or "/" in run_id or "\0" in run_id:
        raise WorkspaceError(
            f"run id {run_id!r} cannot name a folder; use the ledger's run id (no '/')"
        )
    return run_id


class Workspaces:
    """Mirrors and per-run worktrees under one root folder (``$RATCHET_HOME/work``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self._mirrors = self.root / "mirrors"
        self._runs = self.root / "runs"
        self._git = _Git(os.environ)

    # -- mirrors -------------------------------------------------------------------------------

    def resolve(self, repo_url: str, rev: str = "HEAD") -> str:
        """Fetch the mirror and return the full commit sha ``rev`` names in the source repository.

        ``HEAD`` (and ``HEAD~n``) mean the source's current HEAD, not the mirror's. Raises
        WorkspaceError when the source cannot be fetched or has no such revision.
        """
        url = _normalise_url(repo_url)
        mirror = self._mirror_path(url)
        with _locked(self._lock_path(mirror)):
            if not self._clone_if_absent(url, mirror):
                self._git(mirror, "fetch", "--quiet", "--prune", "origin")
            local_rev = rev
            if _HEAD_REV.match(rev):
                # The mirror's HEAD is fixed at clone time; ask the source for its HEAD now.
                self._git(mirror, "fetch", "--quiet", "--no-tags", "origin", "HEAD")
                local_rev = "FETCH_HEAD" + rev.removeprefix("HEAD")
            try:
                return self._git.text(
                    mirror, "rev-parse", "--verify", "--end-of-options", f"{local_rev}^{{commit}}"
                )
            except GitCommandFailed as exc:
                raise WorkspaceError(
                    f"{repo_url!r} has no commit {rev!r}; check the branch, tag or sha"
                ) from exc

    def _mirror_path(self, url: str) -> Path:
        return self._mirrors / _mirror_name(url)

    @staticmethod
    def _lock_path(mirror: Path) -> Path:
        return mirror.with_name(mirror.name + ".lock")

    def _clone_if_absent(self, url: str, mirror: Path) -> bool:
        """Clone ``url`` into ``mirror`` (caller holds its lock); False when it already exists.

        The clone lands in a scratch folder and is renamed into place, so a process killed
        mid-clone never leaves a half mirror that later calls would trust.
        """
        if mirror.is_dir():
            return False
        scratch = mirror.with_name(mirror.name + ".partial")
        shutil.rmtree(scratch, ignore_errors=True)
        logger.info("cloning mirror of %r into %r", url, str(mirror))
        # --template= keeps a user's init.templateDir (hooks, info/exclude) out of the mirror.
        self._git(
            self._mirrors, "clone", "--quiet", "--mirror", "--template=", "--", url, str(scratch)
        )
        scratch.rename(mirror)
        return True

    def _ensure_commit(self, mirror: Path, base: str) -> None:
        """Fetch when ``base`` is not in the mirror yet (caller holds the lock)."""
        if self._has_commit(mirror, base):
            return
        self._git(mirror, "fetch", "--quiet", "--prune", "origin")
        if not self._has_commit(mirror, base):
            raise WorkspaceError(
                f"commit {base!r} is not in the source of {mirror.name} even after a fetch; "
                f"resolve the base revision again"
            )

    def _has_commit(self, mirror: Path, rev: str) -> bool:
        try:
            self._git(mirror, "cat-file", "-e", "--end-of-options", f"{rev}^{{commit}}")
        except GitCommandFailed:
            return False
        return True

    # -- worktrees -----------------------------------------------------------------------------

    def checkout(self, run_id: str, epoch: int, repo_url: str, base: str) -> Path:
        """Return the run's worktree for ``epoch``, creating it at ``base`` if it is not there.

        Idempotent: an existing worktree is returned as it is. A new one is built in a scratch
        folder and moved into place, so its final path only ever names a complete checkout.
        """
        path = self._runs / _check_run_id(run_id) / str(epoch)
        if path.is_dir():
            return path
        url = _normalise_url(repo_url)
        mirror = self._mirror_path(url)
        with _locked(self._lock_path(mirror)):
            if path.is_dir():
                return path
            self._clone_if_absent(url, mirror)
            self._ensure_commit(mirror, base)
            scratch = path.with_name(f"{epoch}.partial")
            shutil.rmtree(scratch, ignore_errors=True)
            # Forget worktrees whose folders are gone (a crash, a removed run) before adding.
            self._git(mirror, "worktree", "prune", "--expire=now")
            path.parent.mkdir(parents=True, exist_ok=True)
            self._git(mirror, "worktree", "add", "--quiet", "--detach", str(scratch), base)
            self._git(mirror, "worktree", "move", str(scratch), str(path))
        logger.info("checked out %r at %r for run %r epoch %r", str(path), base, run_id, epoch)
        return path

    def previous_worktrees(self, run_id: str, epoch: int) -> list[Path]:
        """This run's worktrees of epochs before ``epoch`` still on this host, newest first."""
        run_dir = self._runs / _check_run_id(run_id)
        if not run_dir.is_dir():
            return []
        earlier = [
            int(child.name)
            for child in run_dir.iterdir()
            if child.is_dir() and child.name.isdigit() and int(child.name) < epoch
        ]
        return [run_dir / str(number) for number in sorted(earlier, reverse=True)]

    def remove_run(self, run_id: str) -> None:
        """Delete every worktree of the run and forget them in their mirrors; idempotent.

        Folders are deleted and the mirror pruned (rather than ``git worktree remove``, which
        refuses locked or half-built worktrees): the end state is the same and always reached.
        """
        run_dir = self._runs / _check_run_id(run_id)
        if not run_dir.is_dir():
            return
        mirrors = {m for child in run_dir.iterdir() if (m := self._mirror_of(child)) is not None}
        try:
            shutil.rmtree(run_dir)
        except OSError as exc:
            raise WorkspaceError(
                f"could not delete the worktrees of run {run_id!r} in {run_dir}: {exc}; "
                f"fix the permissions and call remove_run again"
            ) from exc
        for mirror in sorted(mirrors):
            with _locked(self._lock_path(mirror)):
                self._git(mirror, "worktree", "prune", "--expire=now")
        logger.info("removed worktrees of run %r", run_id)

    @staticmethod
    def _mirror_of(worktree: Path) -> Path | None:
        """The mirror owning a worktree, from its ``.git`` file (``gitdir: .../worktrees/x``)."""
        try:
            line = (worktree / ".git").read_text().strip()
        except OSError:
            return None
        if not line.startswith("gitdir:"):
            return None
        mirror = Path(line.removeprefix("gitdir:").strip()).parent.parent
        return mirror if mirror.is_dir() else None

    # -- content -------------------------------------------------------------------------------

    def tree_of(self, worktree: Path) -> str:
        """The tree hash of the worktree's content, without touching its index or files.

        Content means what ``git add -A`` would record on top of HEAD: HEAD's tracked paths as
        they are now plus untracked files not ignored by the repository's .gitignore. A fresh
        temporary index is used, so index flags such as assume-unchanged cannot hide a change.
        """
        with tempfile.TemporaryDirectory(prefix="ratchet-index-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch, "index"))}
            self._git(worktree, "read-tree", "HEAD", env=env)
            self._git(worktree, "add", "--all", env=env)
            return self._git.text(worktree, "write-tree", env=env)

    def snapshot(self, worktree: Path, base: str) -> Snapshot:
        """The worktree's tree hash and the binary patch from ``base`` that rebuilds it."""
        tree = self.tree_of(worktree)
        return Snapshot(tree=tree, patch=self._patch(worktree, base, tree))

    def diff(self, worktree: Path, from_tree: str) -> bytes:
        """Binary patch from ``from_tree`` to the worktree's current content; b"" when equal."""
        return self._patch(worktree, from_tree, self.tree_of(worktree))

    def changed_files(self, worktree: Path, base: str) -> list[str]:
        """Sorted repo-relative paths whose content differs between ``base`` and the worktree."""
        tree = self.tree_of(worktree)
        out = self._git(
            worktree, "diff-tree", "-r", "-z", "--name-only", "--no-renames", base, tree
        )
        return sorted(os.fsdecode(name) for name in out.split(b"\0") if name)

    def _patch(self, worktree: Path, old: str, new: str) -> bytes:
        # Plumbing diff-tree ignores diff.* UI settings (noprefix, external drivers, textconv),
        # so the patch is the same on every host. Renames appear as delete + add.
        return self._git(
            worktree, "diff-tree", "-p", "--binary", "--full-index", "--no-renames", old, new
        )

    def restore(self, worktree: Path, base: str, patch: bytes, expected_tree: str) -> None:
        """Reset the worktree to ``base``, apply ``patch``, prove the result is ``expected_tree``.

        Untracked and ignored files are removed first. Raises WorkspaceMismatch naming both
        hashes when the rebuilt content differs, and GitCommandFailed when the patch does not
        apply.
        """
        self._git(worktree, "reset", "--quiet", "--hard", base)
        self._git(worktree, "clean", "-ffdxq")
        if patch:
            # --whitespace=nowarn: apply byte for byte even if apply.whitespace=fix is set.
            self._git(
                worktree, "apply", "--binary", "--index", "--whitespace=nowarn", "-", input=patch
            )
        rebuilt = self._git.text(worktree, "write-tree")
        if rebuilt != expected_tree:
            raise WorkspaceMismatch(
                f"worktree {worktree} rebuilt from {base} hashes to tree {rebuilt}, expected "
                f"{expected_tree}; the checkpoint's patch or base is wrong: redo the step from "
                f"the previous good checkpoint"
            )
        logger.info("restored %r to tree %r", str(worktree), rebuilt)

    # -- publishing ----------------------------------------------------------------------------

    def commit(
        self,
        worktree: Path,
        *,
        tree: str,
        parent: str,
        message: str,
        when: datetime,
        author: tuple[str, str] = ("Ratchet", "ratchet@localhost"),
    ) -> str:
        """Write a commit of ``tree`` on ``parent``; the same inputs always give the same sha.

        Author and committer are both ``author`` at ``when`` (which must be timezone-aware),
        and signing is off, so a replayed publish produces the identical commit.
        """
        name, email = author
        date = _git_date(when)
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": date,
        }
        out = self._git(
            worktree,
            "commit-tree",
            "--no-gpg-sign",
            "-p",
            parent,
            "-F",
            "-",
            tree,
            input=message.encode(),
            env=env,
        )
        return out.decode().strip()

    def push(
        self, worktree: Path, *, remote: str, commit: str, branch: str, expect: str | None
    ) -> None:
        """Point ``branch`` on ``remote`` at ``commit`` if it is at ``expect`` (None: absent).

        A branch already at ``commit`` is left alone (a replayed push is a no-op). Raises
        PushRejected, saying where the branch is, when the lease does not hold.
        """
        ref = f"refs/heads/{branch}"
        remote = _normalise_url(remote)
        try:
            self._git(
                worktree,
                "push",
                "--porcelain",
                "--no-verify",
                f"--force-with-lease={ref}:{expect or ''}",
                "--",
                remote,
                f"{commit}:{ref}",
            )
        except GitCommandFailed as exc:
            if b"[rejected] (stale info)" not in exc.stdout:
                raise
            raise PushRejected(remote, branch, expect, self.remote_branch(remote, branch)) from exc
        logger.info("pushed %r to %r branch %r", commit, remote, branch)

    def remote_branch(self, remote: str, branch: str) -> str | None:
        """The sha ``branch`` points at on ``remote``, or None when the branch does not exist."""
        ref = f"refs/heads/{branch}"
        self.root.mkdir(parents=True, exist_ok=True)
        out = self._git.text(self.root, "ls-remote", "--heads", "--", _normalise_url(remote), ref)
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            if name == ref:
                return sha
        return None
