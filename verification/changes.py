"""What changed between two revisions of a git repository, and a checkout to verify one.

A thin adapter over the git CLI. `head=None` means the working tree: staged, unstaged and
untracked (not ignored) files all count, because a change under review is often uncommitted.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Branches tried, in order, when the default branch is not known from origin/HEAD.
DEFAULT_BRANCHES = ("origin/HEAD", "main", "master")


class ChangesError(Exception):
    """git could not answer: not a repository, an unknown revision, no default branch."""


def repository_root(path: Path) -> Path:
    """The root of the git repository containing `path`."""
    root = _git(path, "rev-parse", "--show-toplevel", check=False).strip()
    if not root:
        raise ChangesError(f"{path} is not inside a git repository; pass --repo PATH")
    return Path(root)


def default_base(repo: Path) -> str:
    """The merge base of HEAD with the default branch (origin/HEAD, else main, else master).

    Raises ChangesError when none of those exist; pass `--base` explicitly then.
    """
    for branch in DEFAULT_BRANCHES:
        if _git(repo, "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}", check=False):
            return _git(repo, "merge-base", "HEAD", branch).strip()
    raise ChangesError(
        f"cannot find a default branch in {repo} (tried {', '.join(DEFAULT_BRANCHES)}); "
        "pass --base REV"
    )


def changed_files(repo: Path, base: str, head: str | None) -> list[str]:
    """Paths changed from the merge base of `base` and `head` to `head` (`git diff BASE...HEAD`).

    With `head=None` the working tree is compared with the merge base of `base` and HEAD, and
    untracked files are included. Renames count as a deletion plus an addition.
    """
    if head is not None:
        output = _git(repo, "diff", "--name-only", "--no-renames", "-z", f"{base}...{head}")
        return sorted({path for path in output.split("\0") if path})
    merge_base = _git(repo, "merge-base", base, "HEAD").strip()
    tracked = _git(repo, "diff", "--name-only", "--no-renames", "-z", merge_base)
    untracked = _git(repo, "ls-files", "-z", "--others", "--exclude-standard")
    return sorted({path for path in (tracked + "\0" + untracked).split("\0") if path})


def diff_stat(repo: Path, base: str, head: str | None) -> str:
    """`git diff --stat` for the same range as `changed_files` (tracked files only)."""
    if head is not None:
        return _git(repo, "diff", "--stat", f"{base}...{head}")
    merge_base = _git(repo, "merge-base", base, "HEAD").strip()
    return _git(repo, "diff", "--stat", merge_base)


def resolve_revision(repo: Path, revision: str) -> str:
    """The commit id a revision names; raises ChangesError naming the revision when unknown."""
    commit = _git(repo, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", check=False)
    if not commit:
        raise ChangesError(f"unknown revision {revision!r} in {repo}; check the name or fetch it")
    return commit.strip()


@contextlib.contextmanager
def checkout(repo: Path, revision: str) -> Iterator[Path]:
    """A temporary detached `git worktree` of `revision`, removed on exit."""
    folder = Path(tempfile.mkdtemp(prefix="ratchet-verify-"))
    worktree = folder / "tree"
    _git(repo, "worktree", "add", "--detach", "--quiet", str(worktree), revision)
    try:
        yield worktree
    finally:
        _git(repo, "worktree", "remove", "--force", str(worktree), check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _git(repo: Path, *args: str, check: bool = True) -> str:
    try:
        result = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise ChangesError(f"cannot run git: {exc}; is git installed?") from exc
    if result.returncode != 0:
        if not check:
            return ""
        raise ChangesError(f"git {' '.join(args)} failed in {repo}: {result.stderr.strip()}")
    return result.stdout
