"""`ratchet verify`'s default base: the merge base of HEAD with origin/HEAD, else main, else
master (git asked about all three at once), in real repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import commit_all, git, make_repo, write_files
from verification.revisions import RevisionError, default_base, open_repository


def test_the_first_default_branch_that_exists_gives_the_merge_base(tmp_path: Path) -> None:
    fork = make_repo(tmp_path, {"a.txt": "a\n"})
    git(tmp_path, "branch", "master")  # later in the order: never chosen over main
    git(tmp_path, "checkout", "-q", "-b", "topic")
    write_files(tmp_path, {"b.txt": "b\n"})
    commit_all(tmp_path, "topic")
    git(tmp_path, "checkout", "-q", "main")
    write_files(tmp_path, {"c.txt": "c\n"})
    main = commit_all(tmp_path, "main moves on")
    git(tmp_path, "checkout", "-q", "topic")
    repo = open_repository(tmp_path)
    assert default_base(repo) == fork
    git(tmp_path, "update-ref", "refs/remotes/origin/main", main)
    git(tmp_path, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    assert default_base(repo) == fork  # origin/HEAD first: its merge base with topic
    git(tmp_path, "branch", "-q", "-D", "main")
    git(tmp_path, "symbolic-ref", "-d", "refs/remotes/origin/HEAD")
    assert default_base(repo) == fork  # master


def test_no_default_branch_or_no_shared_history_asks_for_base(tmp_path: Path) -> None:
    make_repo(tmp_path, {"a.txt": "a\n"})
    git(tmp_path, "branch", "-m", "trunk")
    repo = open_repository(tmp_path)
    with pytest.raises(RevisionError, match=r"cannot find a default branch .*pass --base REV"):
        default_base(repo)
    git(tmp_path, "checkout", "-q", "--orphan", "main")
    commit_all(tmp_path, "unrelated")
    git(tmp_path, "checkout", "-q", "trunk")
    with pytest.raises(RevisionError, match=r"merge-base HEAD main .*no common commit.*--base"):
        default_base(repo)
