"""The work tree as `ratchet verify` lists it: one `git ls-files -t` walk gives every path and
tells the untracked ones (`revisions.WorkTreeListing`); a change is what differs from the base,
untracked files included."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.gitrepo import GIT_ENV, commit_all, git, make_repo
from verification.revisions import open_repository, start_change
from verification.tree import GitTree


def _conflicted(root: Path) -> str:
    """A repository whose `app.py` is unmerged (one index entry per stage); its base commit."""
    base = make_repo(root, {"app.py": "x = 0\n", "? q.txt": "tracked\n", "d/? r.txt": "t\n"})
    git(root, "checkout", "-q", "-b", "other")
    (root / "app.py").write_text("x = 1\n")
    commit_all(root, "other side")
    git(root, "checkout", "-q", "main")
    (root / "app.py").write_text("x = 2\n")
    commit_all(root, "this side")
    merging = subprocess.run(["git", "merge", "other"], cwd=root, capture_output=True,
                             text=True, env={**os.environ, **GIT_ENV})
    assert "CONFLICT" in merging.stdout  # app.py is unmerged: one index entry per stage
    assert git(root, "ls-files", "app.py").splitlines() == ["app.py"] * 3
    (root / "d" / "new.py").write_text("y = 1\n")  # untracked
    (root / "? s.txt").write_text("untracked too\n")
    return base


def test_a_conflicted_path_is_listed_once_and_untracked_files_are_changed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    base = _conflicted(root)
    repo = open_repository(root)
    with start_change(repo, base, None) as pending:
        changed, listing = pending.result()
    assert listing is not None
    assert sorted(listing) == ["? q.txt", "? s.txt", "app.py", "d/? r.txt", "d/new.py"]
    # Tracked names that look like git's untracked tag are not taken for untracked files.
    assert changed == ["? s.txt", "app.py", "d/new.py"]


def test_a_git_tree_lists_a_conflicted_path_once(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _conflicted(root)
    listing = list(GitTree.discover(root).paths())
    assert sorted(listing) == ["? q.txt", "? s.txt", "app.py", "d/? r.txt", "d/new.py"]
