"""What changed between two revisions of a git repository, and a checkout to verify one.

A thin adapter over git (`plumbing.git`: explicit repository, safe settings). `head=None`
means the working tree: staged, unstaged and untracked (not ignored) files all count, because a
change under review is often uncommitted. Paths that are not UTF-8 come back with surrogate
escapes (`os.fsdecode`), so they still name their files.
"""

from __future__ import annotations

import contextlib
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Self

from plumbing.git import Git, GitError, RunningGit, discover

# Branches tried, in order, when the default branch is not known from origin/HEAD.
DEFAULT_BRANCHES = ("origin/HEAD", "main", "master")
# git's exit status for a fatal error, such as a name that is not a commit.
NOT_A_COMMIT = 128
# An untracked path in `git ls-files -z -t` output with a NUL put before its first entry.
_UNTRACKED = re.compile("\0\\? ([^\0]*)")


class RevisionError(Exception):
    """git could not answer: not a repository, an unknown revision, no default branch."""


def open_repository(path: Path) -> Git:
    """The repository containing `path`, with its git dir and work tree named from now on."""
    try:
        return discover(path)
    except GitError as exc:
        raise RevisionError(f"{path} is not inside a git repository; pass --repo PATH") from exc


def default_base(repo: Git) -> str:
    """The merge base of HEAD with the default branch (origin/HEAD, else main, else master).

    Raises RevisionError when none of those exist; pass `--base` explicitly then.
    """
    # One git process says which of the branches exist (a missing one is `NAME missing`),
    # then one finds the merge base: two short processes, whatever the branches.
    asked = "".join(f"{branch}^{{commit}}\n" for branch in DEFAULT_BRANCHES).encode()
    found = _git(repo, "cat-file", "--batch-check=%(objectname)", input=asked).split(b"\n")
    for branch, line in zip(DEFAULT_BRANCHES, found, strict=False):
        if line.endswith(b" missing") or line.endswith(b" ambiguous") or not line:
            continue
        try:
            answer = repo.run("merge-base", "HEAD", line.decode(), check=False)
        except GitError as exc:
            raise RevisionError(str(exc)) from exc
        if answer.returncode == 0:
            return answer.stdout.decode().strip()
        if answer.returncode != NOT_A_COMMIT:
            stderr = answer.stderr.decode("utf-8", "replace").strip()
            raise RevisionError(f"git merge-base HEAD {branch} failed in {repo.work_tree}"
                                f" (exit {answer.returncode}): {stderr or 'no common commit'};"
                                " pass --base REV")
    raise RevisionError(
        f"cannot find a default branch in {repo.work_tree} (tried {', '.join(DEFAULT_BRANCHES)}); "
        "pass --base REV"
    )


def changed_files(repo: Git, base: str, head: str | None) -> list[str]:
    """Paths changed from the merge base of `base` and `head` to `head` (`git diff BASE...HEAD`).

    With `head=None` the working tree is compared with the merge base of `base` and HEAD, and
    untracked files are included. Renames count as a deletion plus an addition.
    """
    return change(repo, merge_base(repo, base, head), head)[0]


def change(repo: Git, start: str, head: str | None) -> tuple[list[str], list[str] | None]:
    """The paths changed from commit `start` to `head`, and for the working tree (`head=None`)
    every path in it as `GitTree` lists it (`start_change`)."""
    with start_change(repo, start, head) as pending:
        return pending.result()


def start_change(repo: Git, start: str, head: str | None, *,
                 listing: WorkTreeListing | None = None) -> PendingChange:
    """Start asking git what changed from commit `start` to `head` (`change`) and return at
    once: git works while the caller does (`ratchet verify` loads the planner meanwhile). For
    the working tree, git walks the folders once for both the changed and the listed paths
    (the walk for untracked files is the longest part of listing a large tree); ``listing`` is
    that walk when the caller started it already."""
    if head is not None:
        # Two commits: no work tree is read, so a submodule's new commit is listed (the safe
        # settings ignore submodules, which would hide it).
        return PendingChange(_start(repo, "diff", "--name-only", "--no-renames", "-z",
                                    "--ignore-submodules=none", f"{start}...{head}"), None)
    listing = listing or WorkTreeListing(repo)
    with listing.stopped_on_error():
        diff = _start(repo, "diff", "--name-only", "--no-renames", "-z", start)
    return PendingChange(diff, listing)


class _Started(ABC):
    """Git work started for a caller: as a context, what was not collected is stopped."""

    @abstractmethod
    def stop(self) -> None:
        """Stop what was started and not collected."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @contextlib.contextmanager
    def stopped_on_error(self) -> Iterator[None]:
        """Stop the git work when the block raises (the caller will never collect it)."""
        try:
            yield
        except BaseException:
            self.stop()
            raise


class WorkTreeListing(_Started):
    """Every path of a work tree, tracked and untracked (not ignored), as git lists it, started
    when made; ``split`` collects it."""

    def __init__(self, repo: Git) -> None:
        # `-t` tags each path: `? ` an untracked one, another letter and a space a tracked one.
        self._running = _start(repo, "ls-files", "-z", "-t", "--cached", "--others",
                               "--exclude-standard")

    def split(self) -> tuple[list[str], list[str]]:
        """The paths in git's order, each once, and the untracked ones among them.

        Read from the tags with no pass of Python per path but the one removing them: an
        unmerged path (tagged `M`, once per stage) is the only one listed twice, and rare.
        """
        tagged = _decoded(self._running)
        listing = [entry[2:] for entry in tagged]
        text = "\0" + "\0".join(tagged)
        if "\0M " in text:
            listing = list(dict.fromkeys(listing))
        return listing, _UNTRACKED.findall(text)

    def stop(self) -> None:
        self._running.stop()


class PendingChange(_Started):
    """The change `start_change` asked git for, its processes running; ``result`` collects it."""

    def __init__(self, diff: RunningGit, listing: WorkTreeListing | None) -> None:
        self._diff = diff
        self._listing = listing

    def result(self) -> tuple[list[str], list[str] | None]:
        """The changed paths, sorted, and the work tree's paths in git's order (None between
        two commits). Renames count as a deletion plus an addition; raises RevisionError."""
        if self._listing is None:
            return sorted(set(_decoded(self._diff))), None
        # The listing first: its output is the large one (the diff waits on a full pipe).
        with self.stopped_on_error():
            listing, untracked = self._listing.split()
        tracked = _decoded(self._diff)
        return sorted(set(tracked) | set(untracked)), listing

    def stop(self) -> None:
        self._diff.stop()
        if self._listing is not None:
            self._listing.stop()


def merge_base(repo: Git, base: str, head: str | None) -> str:
    """The commit a change starts from: the merge base of `base` and `head` (HEAD for None)."""
    return _git(repo, "merge-base", base, head or "HEAD").decode().strip()


def diff_stat(repo: Git, base: str, head: str | None) -> str:
    """`git diff --stat` for the same range as `changed_files` (tracked files only)."""
    if head is not None:
        return _git(repo, "diff", "--stat", "--ignore-submodules=none",
                    f"{base}...{head}").decode("utf-8", "replace")
    merge_base = _git(repo, "merge-base", base, "HEAD").decode().strip()
    return _git(repo, "diff", "--stat", merge_base).decode("utf-8", "replace")


def resolve_revision(repo: Git, revision: str) -> str:
    """The commit id a revision names; raises RevisionError naming the revision when unknown."""
    commit = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options",
                  f"{revision}^{{commit}}", check=False)
    if not commit:
        raise RevisionError(
            f"unknown revision {revision!r} in {repo.work_tree}; check the name or fetch it"
        )
    return commit.decode().strip()


@contextlib.contextmanager
def checkout(repo: Git, revision: str) -> Iterator[Git]:
    """A temporary detached `git worktree` of `revision`, removed on exit.

    Yields the repository bound to that worktree. Removal never trusts the worktree's `.git`
    file (checks ran there): the folder is deleted and the repository's registrations pruned.
    """
    import shutil  # only here: planning never checks a revision out
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ratchet-verify-"))
    worktree = folder / "tree"
    try:
        _git(repo, "worktree", "add", "--detach", "--quiet", str(worktree), revision)
        # Read before any check runs there, the new worktree's .git file is still git's own.
        yield open_repository(worktree)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        _git(repo, "worktree", "prune", "--expire=now", check=False)


def _git(repo: Git, *args: str, check: bool = True, input: bytes | None = None) -> bytes:
    try:
        result = repo.run(*args, check=False, input=input)
    except GitError as exc:
        raise RevisionError(str(exc)) from exc
    if result.returncode != 0:
        if not check:
            return b""
        stderr = result.stderr.decode("utf-8", "replace").strip()
        raise RevisionError(f"git {' '.join(args)} failed in {repo.work_tree}: {stderr}")
    return result.stdout


def _start(repo: Git, *args: str) -> RunningGit:
    try:
        return repo.start(*args)
    except GitError as exc:
        raise RevisionError(str(exc)) from exc


def _decoded(running: RunningGit) -> list[str]:
    try:
        return running.paths()
    except GitError as exc:
        raise RevisionError(str(exc)) from exc
