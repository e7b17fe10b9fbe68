"""What git must never see in a worktree, found with lstat only; git calls that cannot hang.

Real git, real files (FIFOs, sockets, sparse files, nested repositories with filters), real
slow processes: a scan that finds them, a removal that never follows or reads them, a
``Worktrees`` that neither hashes nor hands them to git, and a git call past its timeout that
is killed with everything it started.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from plumbing.git import Git, GitTimedOut
from plumbing.walk import MAX_DEPTH, remove, scan
from runner import failures
from runner.agents.home import remove_home
from runner.config import LimitsConfig
from runner.decisions import Limits, decide_failure
from runner.errors import (
    DeterministicFailure,
    TransientFailure,
    WorktreeError,
    WorktreeTimedOut,
)
from runner.workflow import Outcome, State
from runner.worktrees import UnsafeWorktree, Worktrees, _run
from tests.gitrepo import add_gitlink, git, make_repo, write_files
from tests.test_decisions import run_in
from verification.revisions import changed_files, diff_stat, open_repository

SUBMODULE = "vendor/lib"


def deep_folders(root: Path, levels: int, name: str = "d") -> Path:
    """``root/d/d/...`` ``levels`` deep, made one level at a time (no recursion, and no path
    longer than one name is ever given to the kernel)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    return root / name


def kinds(findings) -> dict[str, str]:
    return {f.path: f.kind for f in findings}


def processes_marked(mark: str) -> list[int]:
    """Live processes whose environment holds ``SLOW_MARK=<mark>`` (git, and all it started)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"SLOW_MARK={mark}".encode() in environ.read_bytes().split(b"\0"):
                state = (environ.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state not in {"Z", "X"}:
                    found.append(int(environ.parent.name))
        except OSError:
            continue
    return found


# -- the scan -----------------------------------------------------------------------------------


def test_scan_finds_nested_repositories_special_files_and_submodule_contents(tmp_path):
    root = tmp_path / "tree"
    write_files(root, {"src/app.py": "ok\n", ".git/HEAD": "agent's own, never looked at\n",
                       "pkg/.git/HEAD": "ref: refs/heads/main\n", "file-git/.git": "gitdir: /x\n",
                       f"{SUBMODULE}/fix.py": "tested, never recorded\n",
                       "shout/.GIT/config": "\n"})
    os.mkfifo(root / "src" / "pipe")
    os.mkfifo(root / ".git" / "fifo")  # inside the agent's own .git: not Ratchet's business
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(root / "src" / "sock"))
    outside = tmp_path / "outside"
    outside.mkdir()
    os.mkfifo(outside / "pipe")
    (root / "link").symlink_to(outside, target_is_directory=True)  # never followed
    (root / "vendor" / "empty-sibling").mkdir()

    found = scan(root, gitlinks=[SUBMODULE, "absent/module"])

    assert kinds(found) == {
        "pkg/.git": "nested_git", "file-git/.git": "nested_git", "shout/.GIT": "nested_git",
        "src/pipe": "special_file", "src/sock": "special_file",
        f"{SUBMODULE}/fix.py": "under_gitlink",
    }
    assert [f.path for f in found] == sorted(f.path for f in found)


def test_a_tree_1100_folders_deep_is_refused_and_removed_without_recursion(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    top = deep_folders(root, 1100)

    [finding] = scan(root)

    assert finding.kind == "too_deep"
    assert finding.path == "/".join(["d"] * (MAX_DEPTH + 1))
    remove(top)
    assert list(root.iterdir()) == []


def test_a_huge_ignore_file_is_refused_by_its_size_unread(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    with open(root / ".gitignore", "wb") as handle:
        handle.truncate(6 * 1024**3)  # sparse: 6 GB that would all be read into memory

    assert kinds(scan(root)) == {".gitignore": "too_large"}


def test_remove_follows_no_symlink_and_takes_unreadable_folders(tmp_path):
    outside = tmp_path / "outside"
    write_files(outside, {"precious.txt": "keep\n"})
    doomed = tmp_path / "doomed"
    write_files(doomed, {"a/b/c.txt": "x", "a/.git/HEAD": "x"})
    os.mkfifo(doomed / "a" / "pipe")
    (doomed / "a" / "b" / "out").symlink_to(outside, target_is_directory=True)
    (doomed / "a" / "b" / "file-out").symlink_to(outside / "precious.txt")
    (doomed / "a" / "b").chmod(0)

    remove(doomed)
    remove(doomed)  # already gone: fine

    assert not doomed.exists()
    assert (outside / "precious.txt").read_text() == "keep\n"


# -- git calls with a timeout ----------------------------------------------------------------------


def test_a_git_call_past_its_timeout_is_killed_with_all_it_started(tmp_path):
    mark = f"slow-{os.getpid()}-{tmp_path.name}"
    alias = "alias.slow=!sh -c 'sleep 60 & sleep 60'"

    with pytest.raises(GitTimedOut) as caught:
        Git(git_dir=None, cwd=tmp_path, config=(alias,)).run(
            "slow", timeout=0.5, env={"SLOW_MARK": mark})

    assert "`git slow` failed" in str(caught.value) and "within 0.5 s" in str(caught.value)
    assert caught.value.timeout == 0.5
    assert processes_marked(mark) == []  # git, the alias's shell and both sleeps are gone


def test_a_git_timeout_on_a_worktree_fails_the_step_naming_the_command_without_retry(
        tmp_path: Path, with_gitlink: Path) -> None:
    """A real git killed at its timeout becomes a failure that stops the run (not a hang, not
    a retry), naming the command; any other git failure stays transient."""
    spaces, worktree, _ = checkout(tmp_path, with_gitlink)
    slow = replace(spaces.git(worktree), timeout=0.5, config=("alias.slow=!sleep 30",))

    with pytest.raises(WorktreeTimedOut) as caught:
        _run(slow, "slow")
    failure = failures.workspace_failure(caught.value)
    decision = decide_failure(run_in(State.IMPLEMENT, "implement.1"), failure, Limits())

    assert isinstance(failure, DeterministicFailure)
    assert "`git slow` failed" in str(failure) and "within 0.5 s" in str(failure)
    assert decision.outcome is Outcome.FAILED and "`git slow`" in decision.reason
    with pytest.raises(WorktreeError) as other:
        _run(spaces.git(worktree), "rev-parse", "--verify", "no-such-ref")
    assert isinstance(failures.workspace_failure(other.value), TransientFailure)


def test_default_timeouts_are_per_command_and_overridable(tmp_path):
    make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    repo = Git(git_dir=tmp_path / "repo" / ".git", work_tree=tmp_path / "repo", timeout=30)

    assert repo.text("rev-parse", "--is-inside-work-tree") == "true"
    with pytest.raises(GitTimedOut) as caught:
        Git(git_dir=None, cwd=tmp_path, timeout=0.5,
            config=("alias.wait=!sleep 30",)).run("wait")
    assert caught.value.timeout == 0.5


# -- worktrees with a submodule ------------------------------------------------------------------


@pytest.fixture
def with_gitlink(tmp_path: Path) -> Path:
    """A repository whose base commit records a submodule at ``vendor/lib``."""
    path = tmp_path / "source"
    make_repo(path, {"README.md": "hello\n", ".gitignore": "build/\n"})
    add_gitlink(path, SUBMODULE)
    return path


def checkout(tmp_path: Path, source: Path) -> tuple[Worktrees, Path, str]:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run1", 1, str(source), base)
    return spaces, worktree, base


def plant_filtered_repository(folder: Path, marker: Path) -> None:
    """A nested repository whose own config has a clean filter that creates ``marker`` and
    starts a daemon: what git runs if it looks inside (as ``git status`` in a submodule does)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    write_files(folder, {"code.py": "x = 1\n", ".gitattributes": "* filter=evil\n"})
    subprocess.run(["git", "-C", str(folder), "add", "-A"], check=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})
    daemon = f"setsid sh -c \"sleep 1; touch {marker}.daemon\" >/dev/null 2>&1 &"
    subprocess.run(["git", "-C", str(folder), "config", "filter.evil.clean",
                    f"sh -c 'touch {marker}; {daemon} cat'"], check=True)
    (folder / "code.py").write_text("x = 2\n")  # stat-dirty: git would clean it again


LIMITS = LimitsConfig()


def test_git_never_looks_inside_a_nested_repository_in_a_submodule_folder(
        tmp_path: Path, with_gitlink: Path) -> None:
    spaces, worktree, base = checkout(tmp_path, with_gitlink)
    base_tree = spaces.tree_of(worktree)
    marker = tmp_path / "filter-ran"
    plant_filtered_repository(worktree / SUBMODULE, marker)
    write_files(worktree, {"src/ok.py": "fine\n"})

    found = kinds(spaces.inspect(worktree, LIMITS))
    with pytest.raises(UnsafeWorktree) as refused:
        spaces.tree_of(worktree)
    spaces.restore(worktree, base, b"", base_tree)

    assert found[f"{SUBMODULE}/.git"] == "nested_git"
    assert found[f"{SUBMODULE}/code.py"] == "under_gitlink"
    assert f"{SUBMODULE}/.git" in str(refused.value)
    assert list((worktree / SUBMODULE).iterdir()) == []
    assert not (worktree / "src").exists()
    assert spaces.tree_of(worktree) == base_tree
    assert not marker.exists(), "git ran the nested repository's filter"
    assert not Path(f"{marker}.daemon").exists()


def test_a_fifo_head_in_a_nested_repository_neither_hangs_inspect_nor_restore(
        tmp_path: Path, with_gitlink: Path) -> None:
    spaces, worktree, base = checkout(tmp_path, with_gitlink)
    base_tree = spaces.tree_of(worktree)
    for folder in (worktree / SUBMODULE / ".git", worktree / "plain" / ".git"):
        folder.mkdir(parents=True)
        os.mkfifo(folder / "HEAD")

    found = kinds(spaces.inspect(worktree, LIMITS))
    spaces.restore(worktree, base, b"", base_tree)

    assert found == {f"{SUBMODULE}/.git": "nested_git", "plain/.git": "nested_git"}
    assert spaces.inspect(worktree, LIMITS) == []
    assert not (worktree / "plain").exists()


def test_a_sparse_6gb_file_is_refused_by_its_size_and_never_hashed(
        tmp_path: Path, with_gitlink: Path) -> None:
    spaces, worktree, _ = checkout(tmp_path, with_gitlink)
    with open(worktree / "huge.bin", "wb") as handle:
        handle.truncate(6 * 1024**3)

    [finding] = spaces.inspect(worktree, LIMITS)

    assert (finding.kind, finding.path) == ("too_large", "huge.bin")
    assert "limits.max_file_bytes" in finding.detail
    objects = git(worktree, f"--git-dir={spaces.git_dir_of(worktree)}", "count-objects", "-v")
    assert "count: 0" in objects  # nothing was hashed into the run's objects


def test_changes_over_the_file_count_or_byte_total_are_refused_ignored_ones_not_counted(
        tmp_path: Path, with_gitlink: Path) -> None:
    spaces, worktree, _ = checkout(tmp_path, with_gitlink)
    write_files(worktree, {f"gen/{n}.txt": "x" * 100 for n in range(30)})
    write_files(worktree, {f"build/{n}.o": "y" * 1000 for n in range(100)})  # ignored
    (worktree / "README.md").unlink()  # a deletion counts as a changed file

    found = spaces.inspect(worktree, LimitsConfig(max_changed_files=30, max_change_bytes=2000))

    assert [(f.kind, f.path) for f in found] == [("too_many_changes", "gen")] * 2
    assert "31 files changed" in found[0].detail and "limits.max_changed_files" in found[0].detail
    assert "3000 bytes" in found[1].detail and "limits.max_change_bytes" in found[1].detail
    assert spaces.inspect(worktree, LimitsConfig(max_changed_files=31)) == []


def test_the_limits_bound_the_whole_change_from_the_base_not_one_steps_share(
        tmp_path: Path, with_gitlink: Path) -> None:
    spaces, worktree, base = checkout(tmp_path, with_gitlink)
    write_files(worktree, {f"first/{n}.txt": "x" for n in range(20)})
    checkpoint = spaces.snapshot(worktree, base)
    spaces.restore(worktree, base, checkpoint.patch, checkpoint.tree)  # as the next step starts
    write_files(worktree, {f"second/{n}.txt": "x" for n in range(15)})

    found = spaces.inspect(worktree, LimitsConfig(max_changed_files=30))

    assert [(f.kind, f.path) for f in found] == [("too_many_changes", "first")]
    assert "35 files changed" in found[0].detail


def test_a_1100_deep_tree_in_a_worktree_is_refused_and_removed_by_restore(
        tmp_path: Path, with_gitlink: Path) -> None:
    spaces, worktree, base = checkout(tmp_path, with_gitlink)
    base_tree = spaces.tree_of(worktree)
    deep_folders(worktree, 1100)

    [finding] = spaces.inspect(worktree, LIMITS)
    spaces.restore(worktree, base, b"", base_tree)

    assert finding.kind == "too_deep"
    assert not (worktree / "d").exists()


def test_a_path_too_long_to_name_is_refused_and_removed_by_restore(
        tmp_path: Path, with_gitlink: Path) -> None:
    spaces, worktree, base = checkout(tmp_path, with_gitlink)
    base_tree = spaces.tree_of(worktree)
    deep_folders(worktree, 25, name="n" * 200)  # 5,000 bytes: past PATH_MAX, within the depth

    [finding] = spaces.inspect(worktree, LIMITS)
    spaces.restore(worktree, base, b"", base_tree)

    assert finding.kind == "unreadable" and "too long" in finding.detail
    assert not (worktree / ("n" * 200)).exists()
    assert spaces.tree_of(worktree) == base_tree


def test_a_worktree_with_a_submodule_snapshots_and_restores_keeping_the_gitlink(
        tmp_path: Path, with_gitlink: Path) -> None:
    spaces, worktree, base = checkout(tmp_path, with_gitlink)
    write_files(worktree, {"src/new.py": "print('new')\n"})

    assert spaces.inspect(worktree, LIMITS) == []
    snapshot = spaces.snapshot(worktree, base)
    listing = git(worktree, f"--git-dir={spaces.git_dir_of(worktree)}", "ls-tree", "-r",
                  snapshot.tree)
    assert f"160000 commit {'1' * 40}\t{SUBMODULE}" in listing
    other = spaces.checkout("run1", 2, str(with_gitlink), base)
    spaces.restore(other, base, snapshot.patch, snapshot.tree)
    assert (other / "src" / "new.py").read_text() == "print('new')\n"
    assert sys.getrecursionlimit() < 1100  # the deep tree tests above would have hit it


def test_a_submodule_bump_between_two_commits_is_still_a_changed_path(
        tmp_path: Path, with_gitlink: Path) -> None:
    """Submodules are ignored where git would look inside one, not where two commits are
    compared: verification still plans for a pull request that moves a submodule."""
    before = git(with_gitlink, "rev-parse", "HEAD").strip()
    git(with_gitlink, "update-index", "--cacheinfo", f"160000,{'2' * 40},{SUBMODULE}")
    git(with_gitlink, "commit", "--quiet", "-m", "bump the submodule")
    repo = open_repository(with_gitlink)

    assert changed_files(repo, before, "HEAD") == [SUBMODULE]
    assert SUBMODULE in diff_stat(repo, before, "HEAD")


def test_an_agents_home_1100_deep_with_unwritable_folders_is_removed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_files(home, {".cache/x/file": "x"})
    deep_folders(home / ".cache", 1100)
    (home / ".cache" / "x").chmod(0o500)
    (home / ".cache").chmod(0o500)

    remove_home(home)

    assert not home.exists()
