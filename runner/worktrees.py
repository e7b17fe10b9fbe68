"""Worktrees: one bare mirror per repository, one worktree and one private git dir per run epoch.

A step's result is checkpointed as a tree hash plus a binary patch against the run's base, so a
fresh worker on another host rebuilds the same worktree and proves it by hash (DESIGN.md,
"Workspaces"). Layout under ``root``::

    mirrors/<name>-<sha1(url)[:12]>.git    bare mirror clone, guarded by <mirror>.lock (flock)
    runs/<run_id>/<epoch>/                 the worktree: the agent's folder
    gitdirs/<run_id>/<epoch>.git           Ratchet's git dir for that worktree
    gitdirs/<run_id>/objects/              the run's objects, shared by its epochs' git dirs

The worktree is the agent's: whatever it holds, its ``.git`` included, is untrusted. Ratchet's
own git for a run lives in ``gitdirs/`` (index, HEAD, config; the run's objects, shared by its
epochs so a commit decided under one lease exists under the next, with the mirror's objects
through ``objects/info/alternates``), outside the agent's sandbox, and every git call
names it and the work tree explicitly (``plumbing.git``), so a planted ``.git`` file,
config, hook or attribute is never read. The worktree gets a ``.git`` of its own, built here
before the agent starts, so the agent's ``git status`` and ``git diff`` work; nothing Ratchet
decides ever reads it again.

Nor does git ever look at what it must not: before git reads a worktree it is scanned with
``lstat`` only (``plumbing/walk.py``) for a nested ``.git``, anything inside a submodule's
folder, a FIFO, socket or device, or a tree too deep. ``inspect`` reports them (with files and
changes over the repository's limits) as what a step may not leave; ``tree_of`` refuses to hash
a tree that holds them; ``restore`` removes them unread before git resets the tree.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from plumbing.git import Git, GitError, GitTimedOut, install_neutral_attributes
from plumbing.walk import MAX_FINDINGS, Finding, remove, scan
from runner.errors import WorktreeError, WorktreeMismatch, WorktreeTimedOut

logger = logging.getLogger(__name__)

# A revision evaluated against the source's current HEAD rather than the mirror's stale one.
_HEAD_REV = re.compile(r"^HEAD(?=$|[~^])")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
# Paths longer than this (bytes, relative) are not named to the kernel, whose limit for a whole
# path (PATH_MAX, 4096 on Linux) includes the worktree's own.
_LONGEST_PATH = 2048
# The configuration of the agent's own .git (written by hand: no git runs on the agent's side).
_AGENT_GIT_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"


class GitCommandFailed(WorktreeError):
    """A git command exited non-zero; carries the command, the folder and git's output."""

    def __init__(self, error: GitError) -> None:
        self.command = error.command
        self.returncode = error.returncode
        self.stdout = error.stdout
        self.stderr = error.stderr
        super().__init__(str(error))


class GitCommandTimedOut(GitCommandFailed, WorktreeTimedOut):
    """A git command ran past its timeout and was killed with all it started: the same tree
    would take as long again, so the step fails rather than retries."""


class UnsafeWorktree(WorktreeError):
    """The worktree holds what git must not be shown (``findings``); nothing hashed it."""

    def __init__(self, worktree: Path, findings: list[Finding]) -> None:
        self.findings = findings
        shown = "; ".join(f"{f.path}: {f.detail}" for f in findings[:5])
        super().__init__(f"{worktree} holds what git must not read ({shown}); it is removed"
                         " unread when the worktree is rebuilt from its checkpoint")


class PushRejected(WorktreeError):
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
class RemoteAccess:
    """How git authenticates to a run's remote: extra ``-c`` settings (a credential helper)
    and the variables that helper reads, given to that git call only. Never a URL, a config
    file or a log."""

    config: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


NO_ACCESS = RemoteAccess()


@dataclass(frozen=True)
class Snapshot:
    """A worktree's content: its tree hash and the patch that rebuilds it from the base."""

    tree: str
    patch: bytes


class ChangeLimits(Protocol):
    """How big a run's change may get (the repository config's ``limits`` section)."""

    max_file_bytes: int
    max_change_bytes: int
    max_changed_files: int


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
        raise WorktreeError(
            f"run id {run_id!r} cannot name a folder; use the ledger's run id (no '/')"
        )
    return run_id


def _run(git: Git, *args: str, input: bytes | None = None,
         env: dict[str, str] | None = None) -> bytes:
    """Run git, turning its failure into this layer's ``GitCommandFailed``."""
    try:
        return git(*args, input=input, env=env)
    except GitTimedOut as exc:
        raise GitCommandTimedOut(exc) from exc
    except GitError as exc:
        raise GitCommandFailed(exc) from exc


def _text(git: Git, *args: str, env: dict[str, str] | None = None) -> str:
    return _run(git, *args, env=env).decode("utf-8", "replace").strip()


def _paths(git: Git, *args: str) -> list[str]:
    try:
        return git.paths(*args)
    except GitTimedOut as exc:
        raise GitCommandTimedOut(exc) from exc
    except GitError as exc:
        raise GitCommandFailed(exc) from exc


class Worktrees:
    """Mirrors, per-run worktrees and their private git dirs under one root folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self._mirrors = self.root / "mirrors"
        self._runs = self.root / "runs"
        self._gitdirs = self.root / "gitdirs"

    # -- mirrors -------------------------------------------------------------------------------

    def resolve(self, repo_url: str, rev: str = "HEAD", *,
                access: RemoteAccess = NO_ACCESS) -> str:
        """Fetch the mirror and return the full commit sha ``rev`` names in the source repository.

        ``HEAD`` (and ``HEAD~n``) mean the source's current HEAD, not the mirror's. Raises
        WorktreeError when the source cannot be fetched or has no such revision.
        """
        url = _normalise_url(repo_url)
        mirror = self._mirror_path(url)
        git = Git(git_dir=mirror, config=access.config)
        with _locked(self._lock_path(mirror)):
            if not self._clone_if_absent(url, mirror, access):
                _run(git, "fetch", "--quiet", "--prune", "origin", env=dict(access.env))
            local_rev = rev
            if _HEAD_REV.match(rev):
                # The mirror's HEAD is fixed at clone time; ask the source for its HEAD now.
                _run(git, "fetch", "--quiet", "--no-tags", "origin", "HEAD",
                     env=dict(access.env))
                local_rev = "FETCH_HEAD" + rev.removeprefix("HEAD")
            try:
                return _text(
                    git, "rev-parse", "--verify", "--end-of-options", f"{local_rev}^{{commit}}"
                )
            except GitCommandFailed as exc:
                raise WorktreeError(
                    f"{repo_url!r} has no commit {rev!r}; check the branch, tag or sha"
                ) from exc

    def head_branch(self, repo_url: str, *, access: RemoteAccess = NO_ACCESS) -> str | None:
        """The branch the source's HEAD names (``main``), or None when it is detached."""
        self.root.mkdir(parents=True, exist_ok=True)
        result = Git(git_dir=None, cwd=self.root, config=access.config).run(
            "ls-remote", "--symref", "--", _normalise_url(repo_url), "HEAD", check=False,
            env=dict(access.env))
        for line in result.stdout.decode("utf-8", "replace").splitlines():
            if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
                return line.removeprefix("ref: refs/heads/").removesuffix("\tHEAD")
        return None

    def mirror(self, repo_url: str) -> Git:
        """Ratchet's git for the repository's mirror (fetched by ``resolve``), to read commits."""
        return Git(git_dir=self._mirror_path(_normalise_url(repo_url)))

    def _mirror_path(self, url: str) -> Path:
        return self._mirrors / _mirror_name(url)

    @staticmethod
    def _lock_path(mirror: Path) -> Path:
        return mirror.with_name(mirror.name + ".lock")

    def _clone_if_absent(self, url: str, mirror: Path,
                         access: RemoteAccess = NO_ACCESS) -> bool:
        """Clone ``url`` into ``mirror`` (caller holds its lock); False when it already exists.

        The clone lands in a scratch folder and is renamed into place, so a process killed
        mid-clone never leaves a half mirror that later calls would trust.
        """
        if mirror.is_dir():
            return False
        scratch = mirror.with_name(mirror.name + ".partial")
        shutil.rmtree(scratch, ignore_errors=True)
        logger.info("cloning mirror of %r into %r", url, str(mirror))
        self._mirrors.mkdir(parents=True, exist_ok=True)
        # --template= keeps a user's init.templateDir (hooks, info/exclude) out of the mirror.
        _run(
            Git(git_dir=None, cwd=self._mirrors, config=access.config),
            "clone", "--quiet", "--mirror", "--template=", "--", url, str(scratch),
            env=dict(access.env),
        )
        scratch.rename(mirror)
        return True

    def _ensure_commit(self, mirror: Path, base: str, access: RemoteAccess) -> None:
        """Fetch when ``base`` is not in the mirror yet (caller holds the lock)."""
        if self._has_commit(mirror, base):
            return
        _run(Git(git_dir=mirror, config=access.config), "fetch", "--quiet", "--prune", "origin",
             env=dict(access.env))
        if not self._has_commit(mirror, base):
            raise WorktreeError(
                f"commit {base!r} is not in the source of {mirror.name} even after a fetch; "
                f"resolve the base revision again"
            )

    @staticmethod
    def _has_commit(mirror: Path, rev: str) -> bool:
        result = Git(git_dir=mirror).run(
            "cat-file", "-e", "--end-of-options", f"{rev}^{{commit}}", check=False
        )
        return result.returncode == 0

    # -- worktrees -----------------------------------------------------------------------------

    def checkout(self, run_id: str, epoch: int, repo_url: str, base: str, *,
                 access: RemoteAccess = NO_ACCESS) -> Path:
        """Return the run's worktree for ``epoch``, creating it at ``base`` if it is not there.

        Idempotent: an existing worktree is returned as it is. A new one (and its git dir) is
        built in scratch folders and moved into place, worktree last, so its final path only
        ever names a complete checkout.
        """
        path = self._runs / _check_run_id(run_id) / str(epoch)
        gitdir = self.git_dir_of(path)
        if path.is_dir() and gitdir.is_dir():
            return path
        url = _normalise_url(repo_url)
        mirror = self._mirror_path(url)
        with _locked(self._lock_path(mirror)):
            if path.is_dir() and gitdir.is_dir():
                return path
            self._clone_if_absent(url, mirror, access)
            self._ensure_commit(mirror, base, access)
            scratch = path.with_name(f"{epoch}.partial")
            scratch_gitdir = gitdir.with_name(f"{gitdir.name}.partial")
            for leftover in (scratch, scratch_gitdir, path):
                remove(leftover)  # an agent's tree of any depth, unread
            _init_gitdir(scratch_gitdir, gitdir.parent / "objects", mirror)
            scratch.mkdir(parents=True)
            _run(Git(git_dir=scratch_gitdir, work_tree=scratch), "reset", "--quiet", "--hard", base)
            _init_agent_git(scratch, scratch_gitdir, mirror, base)
            shutil.rmtree(gitdir, ignore_errors=True)
            scratch_gitdir.rename(gitdir)
            scratch.rename(path)
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
            and self.git_dir_of(child).is_dir()
        ]
        return [run_dir / str(number) for number in sorted(earlier, reverse=True)]

    def remove_run(self, run_id: str) -> None:
        """Delete every worktree and git dir of the run; idempotent.

        Nothing in the worktrees is read: symlinks are removed without being followed, a
        planted ``.git`` file is just another file, and depth does not matter.
        """
        for folder in (self._runs / _check_run_id(run_id), self._gitdirs / run_id):
            try:
                remove(folder)
            except OSError as exc:
                raise WorktreeError(
                    f"could not delete {folder} of run {run_id!r}: {exc}; fix the permissions "
                    f"and call remove_run again"
                ) from exc
        logger.info("removed worktrees of run %r", run_id)

    def repository_objects(self, worktree: Path) -> Path:
        """The mirror's object folder a worktree's history lives in (for the agent's view)."""
        alternates = self.git_dir_of(worktree) / "objects" / "info" / "alternates"
        return Path(alternates.read_text().strip())

    def git_dir_of(self, worktree: Path) -> Path:
        """Ratchet's private git dir for a worktree, from the layout (never from the worktree)."""
        try:
            relative = Path(worktree).resolve().relative_to(self._runs)
        except ValueError:
            raise WorktreeError(
                f"{worktree} is not a worktree of {self._runs}; check it out with checkout()"
            ) from None
        if len(relative.parts) != 2:
            raise WorktreeError(f"{worktree} is not a run worktree (runs/<run>/<epoch>)")
        run_id, epoch = relative.parts
        return self._gitdirs / run_id / f"{epoch}.git"

    def git(self, worktree: Path) -> Git:
        """Ratchet's git for a worktree: its private git dir and the worktree, named explicitly."""
        return Git(git_dir=self.git_dir_of(worktree), work_tree=Path(worktree).resolve())

    # -- content -------------------------------------------------------------------------------

    def hazards(self, worktree: Path, *, limit: int | None = MAX_FINDINGS) -> list[Finding]:
        """What git must never be shown in the worktree (``plumbing.walk.scan``): a nested
        ``.git``, anything inside a folder the base tree records as a submodule (gitlink), a
        FIFO, socket or device, a tree too deep. Found with ``lstat`` only; git reads only the
        base commit's tree, never the worktree."""
        root = Path(worktree).resolve()
        return scan(root, gitlinks=self._gitlinks(worktree), max_findings=limit)

    def _gitlinks(self, worktree: Path) -> list[str]:
        """The submodule paths of the worktree's base commit (its private HEAD), read from the
        object store: git never reads the worktree for them."""
        listing = _run(self.git(worktree), "ls-tree", "-r", "-z", "--full-tree", "HEAD")
        names = listing.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
        return [entry.split("\t", 1)[1] for entry in names.split("\0")
                if entry.startswith("160000 ")]

    def inspect(self, worktree: Path, limits: ChangeLimits) -> list[Finding]:
        """What a step may not leave: first the ``hazards`` (then git is not run at all), else
        in the change from the base (earlier steps' share included) files over
        ``max_file_bytes``, symlinks whose target leaves the worktree, or more than
        ``max_changed_files`` files or ``max_change_bytes`` bytes in all.

        Runs before anything hashes the worktree: sizes come from ``lstat``, and git only
        lists names (ignored files do not count), so a 6 GB sparse file is refused by its size
        without being read.
        """
        hazards = self.hazards(worktree)
        if hazards:
            return hazards
        git = self.git(worktree)
        root = Path(worktree).resolve()
        candidates = set(_paths(git, "ls-files", "-z", "--others", "--exclude-standard"))
        candidates.update(_paths(git, "diff-files", "-z", "--name-only", "--no-renames",
                                 "--ignore-submodules=all"))
        # What earlier steps changed (the index holds the tree last rebuilt, HEAD the base):
        # the limits bound the whole change the run would publish, not one step's share.
        candidates.update(_paths(git, "diff-index", "-z", "--cached", "--name-only",
                                 "--no-renames", "HEAD"))
        findings, sizes = [], {}
        for relative in sorted(candidates):
            size, finding = _inspect_entry(root, relative, limits.max_file_bytes)
            sizes[relative] = 0 if finding is not None else size  # refused already, once
            if finding is not None:
                findings.append(finding)
        return findings + _over_totals(sizes, limits)

    def tree_of(self, worktree: Path) -> str:
        """The tree hash of the worktree's content, without touching its index or files.

        Content means what ``git add -A`` would record on top of HEAD: HEAD's tracked paths as
        they are now plus untracked files not ignored by the repository's .gitignore. A fresh
        temporary index is used, so index flags such as assume-unchanged cannot hide a change.
        Raises ``UnsafeWorktree``, hashing nothing, when the worktree holds ``hazards``.
        """
        hazards = self.hazards(worktree, limit=5)
        if hazards:
            raise UnsafeWorktree(worktree, hazards)
        git = self.git(worktree)
        with tempfile.TemporaryDirectory(prefix="ratchet-index-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch, "index"))}
            _run(git, "read-tree", "HEAD", env=env)
            _run(git, "add", "--all", env=env)
            return _text(git, "write-tree", env=env)

    def snapshot(self, worktree: Path, base: str) -> Snapshot:
        """The worktree's tree hash and the binary patch from ``base`` that rebuilds it."""
        tree = self.tree_of(worktree)
        return Snapshot(tree=tree, patch=self._patch(worktree, base, tree))

    def diff(self, worktree: Path, from_tree: str) -> bytes:
        """Binary patch from ``from_tree`` to the worktree's current content; b"" when equal."""
        return self._patch(worktree, from_tree, self.tree_of(worktree))

    def changed_files(self, worktree: Path, base: str) -> list[str]:
        """Sorted repo-relative paths whose content differs between ``base`` and the worktree.

        Names that are not UTF-8 come back with surrogate escapes (``os.fsdecode``), so they
        still name the file; callers that store or show them decide how to print them.
        """
        tree = self.tree_of(worktree)
        return sorted(_paths(
            self.git(worktree), "diff-tree", "-r", "-z", "--name-only", "--no-renames", base, tree
        ))

    def _patch(self, worktree: Path, old: str, new: str) -> bytes:
        # Plumbing diff-tree ignores diff.* UI settings (noprefix, external drivers, textconv),
        # so the patch is the same on every host. Renames appear as delete + add.
        return _run(
            self.git(worktree),
            "diff-tree", "-p", "--binary", "--full-index", "--no-renames", old, new,
        )

    def restore(self, worktree: Path, base: str, patch: bytes, expected_tree: str) -> None:
        """Reset the worktree to ``base``, apply ``patch``, prove the result is ``expected_tree``.

        What git must not see (``hazards``) is removed unread first; untracked and ignored
        files go too, and the agent's ``.git`` is rebuilt. So afterwards the worktree holds
        exactly the tree: what is verified in it is what a commit of the tree publishes.
        Raises WorktreeMismatch naming both hashes when the rebuilt content differs, and
        GitCommandFailed when the patch does not apply.
        """
        self._remove_hazards(worktree)
        git = self.git(worktree)
        _run(git, "reset", "--quiet", "--hard", base)
        _run(git, "clean", "-ffdxq")
        if patch:
            # --whitespace=nowarn: apply byte for byte even if apply.whitespace=fix is set.
            _run(git, "apply", "--binary", "--index", "--whitespace=nowarn", "-", input=patch)
        rebuilt = _text(git, "write-tree")
        if rebuilt != expected_tree:
            raise WorktreeMismatch(
                f"worktree {worktree} rebuilt from {base} hashes to tree {rebuilt}, expected "
                f"{expected_tree}; the checkpoint's patch or base is wrong: redo the step from "
                f"the previous good checkpoint"
            )
        gitdir = self.git_dir_of(worktree)
        _init_agent_git(Path(worktree), gitdir, self.repository_objects(worktree).parent, base)
        logger.info("restored %r to tree %r", str(worktree), rebuilt)

    def _remove_hazards(self, worktree: Path) -> None:
        """Remove what git must not see, unread; the reset that follows rewrites whatever
        tracked file went with it. A path too long to name (folders nested past PATH_MAX)
        goes with its top-level folder."""
        root = Path(worktree).resolve()
        for hazard in self.hazards(worktree, limit=None):
            if hazard.path == ".":  # the worktree itself unreadable: git says what is wrong
                continue
            path = hazard.path
            if len(os.fsencode(path)) > _LONGEST_PATH:
                path = path.split("/", 1)[0]
            logger.info("removing %r from %r unread: %s", path, str(root), hazard.detail)
            try:
                remove(root / path)
            except OSError as exc:
                raise WorktreeError(
                    f"could not remove {path} from {root}: {exc}; delete it by hand, then"
                    " retry the run") from exc

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
        return _text_input(
            self.git(worktree), message.encode(), env,
            "commit-tree", "--no-gpg-sign", "-p", parent, "-F", "-", tree,
        )

    def push(
        self, worktree: Path, *, remote: str, commit: str, branch: str, expect: str | None,
        access: RemoteAccess = NO_ACCESS,
    ) -> None:
        """Point ``branch`` (or a full ``refs/...`` name) on ``remote`` at ``commit`` if it is at
        ``expect`` (None: absent).

        A branch already at ``commit`` is left alone (a replayed push is a no-op). Raises
        PushRejected, saying where the branch is, when the lease does not hold.
        """
        ref = full_ref(branch)
        remote = _normalise_url(remote)
        git = replace(self.git(worktree), config=access.config)
        try:
            git("push", "--porcelain", "--no-verify", f"--force-with-lease={ref}:{expect or ''}",
                "--", remote, f"{commit}:{ref}", env=dict(access.env))
        except GitError as exc:
            if b"[rejected] (stale info)" not in exc.stdout:
                raise GitCommandFailed(exc) from exc
            actual = self.remote_branch(remote, branch, access=access)
            raise PushRejected(remote, branch, expect, actual) from exc
        logger.info("pushed %r to %r branch %r", commit, remote, branch)

    def merge_base(self, worktree: Path, one: str, two: str) -> str:
        """The best common ancestor of two commits (what a pull request's diff starts at)."""
        return _text(self.git(worktree), "merge-base", "--end-of-options", one, two)

    def has_commit(self, worktree: Path, rev: str) -> bool:
        result = self.git(worktree).run(
            "cat-file", "-e", "--end-of-options", f"{rev}^{{commit}}", check=False)
        return result.returncode == 0

    def fetch_branch(self, worktree: Path, *, remote: str, branch: str,
                     access: RemoteAccess = NO_ACCESS) -> None:
        """Bring the remote branch's commits into the run's objects (no ref is written): a
        host that takes a run over lacks the commits another host decided and pushed."""
        _run(replace(self.git(worktree), config=access.config), "fetch", "--quiet",
             "--no-tags", "--no-write-fetch-head", "--", _normalise_url(remote),
             full_ref(branch), env=dict(access.env))

    def remote_branch(self, remote: str, branch: str, *,
                      access: RemoteAccess = NO_ACCESS) -> str | None:
        """The sha ``branch`` (or a full ``refs/...`` name) points at on ``remote``, or None
        when it does not exist."""
        ref = full_ref(branch)
        self.root.mkdir(parents=True, exist_ok=True)
        out = _text(
            Git(git_dir=None, cwd=self.root, config=access.config), "ls-remote", "--",
            _normalise_url(remote), ref, env=dict(access.env),
        )
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            if name == ref:
                return sha
        return None


def full_ref(branch: str) -> str:
    """A branch's full ref; a name already under ``refs/`` (a review ref) is one."""
    return branch if branch.startswith("refs/") else f"refs/heads/{branch}"


def _text_input(git: Git, data: bytes, env: dict[str, str], *args: str) -> str:
    return _run(git, *args, input=data, env=env).decode().strip()


def _init_gitdir(gitdir: Path, objects: Path, mirror: Path) -> None:
    """A private git dir whose objects are the run's (``objects``, shared by its epochs, which
    borrows the mirror's through alternates) and whose attributes neutralise any
    ``.gitattributes`` the worktree holds."""
    (objects / "info").mkdir(parents=True, exist_ok=True)
    (objects / "pack").mkdir(exist_ok=True)
    (objects / "info" / "alternates").write_text(f"{mirror / 'objects'}\n")
    gitdir.parent.mkdir(parents=True, exist_ok=True)
    _run(Git(git_dir=None, cwd=gitdir.parent), "init", "--quiet", "--bare", "--template=",
         str(gitdir))
    _run(Git(git_dir=gitdir), "config", "core.bare", "false")
    shutil.rmtree(gitdir / "objects")
    (gitdir / "objects").symlink_to(objects.resolve(), target_is_directory=True)
    install_neutral_attributes(gitdir)


def _init_agent_git(worktree: Path, gitdir: Path, mirror: Path, head: str) -> None:
    """Give the agent a working ``.git`` of its own: HEAD at ``head``, the index Ratchet just
    wrote, history from the mirror's objects. Written by hand; whatever was there is removed
    without being read."""
    agent_git = worktree / ".git"
    remove(agent_git)
    for folder in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
        (agent_git / folder).mkdir(parents=True)
    (agent_git / "HEAD").write_text(f"{head}\n")
    (agent_git / "config").write_text(_AGENT_GIT_CONFIG)
    (agent_git / "objects" / "info" / "alternates").write_text(f"{mirror / 'objects'}\n")
    shutil.copyfile(gitdir / "index", agent_git / "index")


def _inspect_entry(root: Path, relative: str, max_file_bytes: int
                   ) -> tuple[int, Finding | None]:
    """The entry's size by ``lstat`` (0 when deleted) and what is wrong with it, if anything."""
    full = root / relative
    try:
        info = full.lstat()
    except FileNotFoundError:
        return 0, None  # a deletion
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(full)
        resolved = Path(os.path.realpath(full))
        if os.path.isabs(target) or not resolved.is_relative_to(root):
            return info.st_size, Finding(
                "symlink_out", relative,
                f"symlink to {target!r} leaves the worktree, and no setting allows that")
        return info.st_size, None
    if stat.S_ISREG(info.st_mode):
        if info.st_size > max_file_bytes:
            return info.st_size, Finding(
                "too_large", relative, f"{info.st_size} bytes, over limits.max_file_bytes"
                f" ({max_file_bytes}) in .github/ratchet.yml (at most RATCHET_MAX_FILE_BYTES)")
        return info.st_size, None
    if stat.S_ISDIR(info.st_mode):
        return 0, None
    return 0, Finding("special_file", relative,
                      "a FIFO, socket or device file; no setting allows one")


def _over_totals(sizes: dict[str, int], limits: ChangeLimits) -> list[Finding]:
    """Findings for a change over the file count or byte total, each naming the top-level
    folder that holds most of it (where to look) and the setting that allows more."""
    findings = []
    if len(sizes) > limits.max_changed_files:
        counts = Counter(_top(path) for path in sizes)
        findings.append(Finding(
            "too_many_changes", counts.most_common(1)[0][0],
            f"{len(sizes)} files changed in all, over limits.max_changed_files"
            f" ({limits.max_changed_files}) in .github/ratchet.yml (at most"
            " RATCHET_MAX_CHANGED_FILES)"))
    total = sum(sizes.values())
    if total > limits.max_change_bytes:
        weights: Counter[str] = Counter()
        for path, size in sizes.items():
            weights[_top(path)] += size
        findings.append(Finding(
            "too_many_changes", weights.most_common(1)[0][0],
            f"{total} bytes changed in all, over limits.max_change_bytes"
            f" ({limits.max_change_bytes}) in .github/ratchet.yml (at most"
            " RATCHET_MAX_CHANGE_BYTES)"))
    return findings


def _top(path: str) -> str:
    """The top-level name a repo-relative path is under (the path itself at the top)."""
    return path.split("/", 1)[0]
