"""Worktrees against real git repositories: snapshot on one host, rebuild and prove on another."""

from __future__ import annotations

import multiprocessing
import os
import stat
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from runner.errors import WorktreeError, WorktreeMismatch
from runner.worktrees import PushRejected, Snapshot, Worktrees
from tests.gitrepo import commit_all, git, make_repo, write_files

BINARY = bytes(range(256)) * 4 + b"\0tail"
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "source"
    make_repo(
        path,
        {
            "README.md": "hello\n",
            "src/app.py": "print('app')\n",
            "old_name.txt": "renamed content\n" * 20,
            "doomed.txt": "delete me\n",
            "tool.sh": "#!/bin/sh\necho tool\n",
            "image.bin": BINARY,
            ".gitignore": "*.log\nbuild/\n",
        },
    )
    return path


def ratchet_git(spaces: Worktrees, worktree: Path, *args: str) -> str:
    """Git on Ratchet's private git dir of ``worktree`` (where its trees and commits live)."""
    return git(worktree, f"--git-dir={spaces.git_dir_of(worktree)}", f"--work-tree={worktree}",
               *args)


def files_of(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``root`` except .git: path -> (mode bits that git keeps, bytes or link)."""
    found: dict[str, tuple[int, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = Path(dirpath, name)
            relative = full.relative_to(root).as_posix()
            if name == ".git":
                continue
            if full.is_symlink():
                found[relative] = (0o120000, os.readlink(full).encode())
            else:
                executable = os.stat(full).st_mode & stat.S_IXUSR
                found[relative] = (0o755 if executable else 0o644, full.read_bytes())
    return found


def edit_everything(worktree: Path) -> None:
    """One change of every kind a step can make."""
    write_files(
        worktree,
        {
            "README.md": "hello, changed\n",
            "new/nested/deep.txt": "nested\n",
            "image.bin": BINARY[::-1] + b"\0more",
            "new.bin": b"\0\1\2\xff" * 100,
            "empty.txt": "",
            "debug.log": "ignored\n",
            "build/out.o": b"\0ignored",
        },
    )
    (worktree / "doomed.txt").unlink()
    (worktree / "old_name.txt").rename(worktree / "src" / "new_name.txt")
    (worktree / "tool.sh").chmod(0o755)
    (worktree / "link").symlink_to("src/app.py")


def test_snapshot_restores_identically_on_another_host(tmp_path: Path, source: Path) -> None:
    host_a, host_b = Worktrees(tmp_path / "a"), Worktrees(tmp_path / "b")
    base = host_a.resolve(str(source))
    worktree = host_a.checkout("run-1", 1, str(source), base)
    edit_everything(worktree)

    snap = host_a.snapshot(worktree, base)

    fresh = host_b.checkout("run-1", 2, str(source), base)
    host_b.restore(fresh, base, snap.patch, snap.tree)
    expected = {k: v for k, v in files_of(worktree).items() if not k.endswith((".log", ".o"))}
    assert files_of(fresh) == expected
    assert expected["tool.sh"][0] == 0o755
    assert expected["link"] == (0o120000, b"src/app.py")
    assert "doomed.txt" not in expected and "old_name.txt" not in expected
    assert host_b.tree_of(fresh) == snap.tree
    assert host_b.snapshot(fresh, base) == snap
    assert host_a.tree_of(worktree) == snap.tree


def test_changed_files_lists_every_kind_of_change_but_not_ignored(
    tmp_path: Path, source: Path
) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    edit_everything(worktree)

    assert spaces.changed_files(worktree, base) == [
        "README.md",
        "doomed.txt",
        "empty.txt",
        "image.bin",
        "link",
        "new.bin",
        "new/nested/deep.txt",
        "old_name.txt",
        "src/new_name.txt",
        "tool.sh",
    ]
    tree = spaces.tree_of(worktree)
    listed = ratchet_git(spaces, worktree, "ls-tree", "-r", "--name-only", tree).split()
    assert "debug.log" not in listed and "build/out.o" not in listed


def test_snapshot_leaves_index_and_files_untouched(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    edit_everything(worktree)
    git(worktree, "add", "README.md")  # a partly staged index must stay exactly as it is
    index = Path(
        git(worktree, "rev-parse", "--path-format=absolute", "--git-path", "index").strip()
    )
    status_before = git(worktree, "status", "--porcelain")
    index_before, files_before = index.read_bytes(), files_of(worktree)

    spaces.snapshot(worktree, base)
    spaces.diff(worktree, base)
    spaces.changed_files(worktree, base)

    assert index.read_bytes() == index_before
    assert files_of(worktree) == files_before
    assert git(worktree, "status", "--porcelain") == status_before


def test_snapshot_sees_changes_hidden_by_assume_unchanged(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    git(worktree, "update-index", "--assume-unchanged", "README.md")  # the agent's own index
    ratchet_git(spaces, worktree, "update-index", "--assume-unchanged", "README.md")
    (worktree / "README.md").write_text("hidden edit\n")

    assert spaces.changed_files(worktree, base) == ["README.md"]


def test_unchanged_worktree_has_base_tree_and_empty_patch(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    (worktree / "noise.log").write_text("ignored\n")

    base_tree = git(source, "rev-parse", f"{base}^{{tree}}").strip()
    assert spaces.snapshot(worktree, base) == Snapshot(tree=base_tree, patch=b"")
    assert spaces.diff(worktree, base_tree) == b""
    assert spaces.changed_files(worktree, base) == []


def test_diff_against_a_checkpoint_tree_shows_only_later_work(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    (worktree / "a.txt").write_text("checkpointed\n")
    checkpoint = spaces.snapshot(worktree, base)
    (worktree / "b.txt").write_text("salvage me\n")

    salvage = spaces.diff(worktree, checkpoint.tree)

    assert b"b/b.txt" in salvage and b"a.txt" not in salvage
    spaces.restore(worktree, base, checkpoint.patch, checkpoint.tree)
    assert not (worktree / "b.txt").exists()
    assert (worktree / "a.txt").read_text() == "checkpointed\n"


def test_restore_with_wrong_tree_raises_mismatch_naming_both(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    (worktree / "README.md").write_text("changed\n")
    snap = spaces.snapshot(worktree, base)
    wrong = git(source, "rev-parse", f"{base}^{{tree}}").strip()

    with pytest.raises(WorktreeMismatch) as caught:
        spaces.restore(worktree, base, snap.patch, wrong)

    assert wrong in str(caught.value) and snap.tree in str(caught.value)
    assert spaces.tree_of(worktree) == snap.tree


def test_restore_removes_leftovers_including_ignored(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    base_tree = spaces.tree_of(worktree)
    edit_everything(worktree)

    spaces.restore(worktree, base, b"", base_tree)

    assert files_of(worktree) == files_of(source)
    assert git(worktree, "status", "--porcelain", "--ignored") == ""


def test_commit_is_deterministic_across_hosts(tmp_path: Path, source: Path) -> None:
    trees, commits = [], []
    for host in ("a", "b"):
        spaces = Worktrees(tmp_path / host)
        base = spaces.resolve(str(source))
        worktree = spaces.checkout("run-1", 1, str(source), base)
        (worktree / "feature.py").write_text("x = 1\n")
        tree = spaces.snapshot(worktree, base).tree
        east = WHEN.astimezone(timezone(timedelta(hours=5, minutes=30)))
        commits.append(
            spaces.commit(worktree, tree=tree, parent=base, message="Add x\n", when=east)
        )
        trees.append(tree)

    assert trees[0] == trees[1] and commits[0] == commits[1]
    body = ratchet_git(spaces, worktree, "cat-file", "commit", commits[0])
    assert f"author Ratchet <ratchet@localhost> {int(WHEN.timestamp())} +0530" in body
    assert f"committer Ratchet <ratchet@localhost> {int(WHEN.timestamp())} +0530" in body
    assert body.endswith("\n\nAdd x\n")


def test_commit_refuses_naive_datetime(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    tree = spaces.tree_of(worktree)

    with pytest.raises(ValueError, match="timezone"):
        spaces.commit(worktree, tree=tree, parent=base, message="m", when=datetime(2026, 1, 1))
    assert spaces.tree_of(worktree) == tree


def test_push_creates_replays_and_refuses_a_broken_lease(tmp_path: Path, source: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(remote))
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    worktree = spaces.checkout("run-1", 1, str(source), base)
    (worktree / "feature.py").write_text("x = 1\n")
    tree = spaces.tree_of(worktree)
    commit = spaces.commit(worktree, tree=tree, parent=base, message="feature\n", when=WHEN)
    branch = "ratchet/issue-7"
    assert spaces.remote_branch(str(remote), branch) is None

    spaces.push(worktree, remote=str(remote), commit=commit, branch=branch, expect=None)
    assert spaces.remote_branch(str(remote), branch) == commit
    spaces.push(worktree, remote=str(remote), commit=commit, branch=branch, expect=None)
    assert spaces.remote_branch(str(remote), branch) == commit

    other = spaces.commit(worktree, tree=tree, parent=base, message="other\n", when=WHEN)
    with pytest.raises(PushRejected) as caught:
        spaces.push(worktree, remote=str(remote), commit=other, branch=branch, expect=base)
    assert caught.value.actual == commit and commit in str(caught.value)
    assert spaces.remote_branch(str(remote), branch) == commit

    spaces.push(worktree, remote=str(remote), commit=other, branch=branch, expect=commit)
    assert spaces.remote_branch(str(remote), branch) == other


def test_checkout_is_idempotent_and_epochs_get_their_own_folders(
    tmp_path: Path, source: Path
) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))

    first = spaces.checkout("run-1", 1, str(source), base)
    (first / "work.txt").write_text("in progress\n")
    again = spaces.checkout("run-1", 1, str(source), base)
    second = spaces.checkout("run-1", 2, str(source), base)
    third = spaces.checkout("run-1", 3, str(source), base)

    assert again == first and (again / "work.txt").exists()
    assert len({first, second, third}) == 3
    assert not (second / "work.txt").exists()
    assert git(second, "rev-parse", "HEAD").strip() == base
    assert spaces.previous_worktrees("run-1", 3) == [second, first]
    assert spaces.previous_worktrees("run-1", 1) == []
    assert spaces.previous_worktrees("run-unknown", 5) == []


def test_remove_run_cleans_up_and_is_idempotent(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    kept = spaces.checkout("run-2", 1, str(source), base)
    doomed = [spaces.checkout("run-1", epoch, str(source), base) for epoch in (1, 2)]
    (doomed[0] / "untracked.txt").write_text("x\n")

    spaces.remove_run("run-1")
    spaces.remove_run("run-1")

    assert not any(path.exists() for path in doomed)
    assert not (tmp_path / "work" / "runs" / "run-1").exists()
    assert not (tmp_path / "work" / "gitdirs" / "run-1").exists()
    assert kept.is_dir() and spaces.git_dir_of(kept).is_dir()
    assert spaces.tree_of(kept) == spaces.tree_of(spaces.checkout("run-3", 1, str(source), base))
    # The folder can be checked out again after removal.
    assert spaces.checkout("run-1", 1, str(source), base) == doomed[0]


def _checkout_in_process(root: str, source: str, base: str, run_id: str) -> str:
    return str(Worktrees(Path(root)).checkout(run_id, 1, source, base))


def test_concurrent_checkouts_share_one_sound_mirror(tmp_path: Path, source: Path) -> None:
    base = git(source, "rev-parse", "HEAD").strip()
    root = tmp_path / "work"
    context = multiprocessing.get_context("fork")
    with context.Pool(4) as pool:
        args = [(str(root), str(source), base, f"run-{n}") for n in range(4)]
        paths = [Path(p) for p in pool.starmap(_checkout_in_process, args)]

    mirrors = list((root / "mirrors").glob("*.git"))
    assert len(mirrors) == 1
    git(mirrors[0], "fsck", "--no-progress", "--strict")
    spaces = Worktrees(root)
    base_tree = git(source, "rev-parse", f"{base}^{{tree}}").strip()
    for path in paths:
        assert spaces.git_dir_of(path).is_dir()
        assert spaces.tree_of(path) == base_tree


def test_resolve_follows_new_commits_branches_and_head(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    first = spaces.resolve(str(source))
    write_files(source, {"next.txt": "next\n"})
    second = commit_all(source, "second")

    assert spaces.resolve(str(source)) == second != first
    assert spaces.resolve(str(source), "HEAD~1") == first
    assert spaces.resolve(str(source), "main") == second
    git(source, "checkout", "--quiet", "-b", "topic", first)
    assert spaces.resolve(str(source)) == first
    assert spaces.resolve(str(source), "main") == second
    with pytest.raises(WorktreeError, match="no-such-branch"):
        spaces.resolve(str(source), "no-such-branch")


def test_checkout_on_a_fresh_host_fetches_a_base_it_has_not_seen(
    tmp_path: Path, source: Path
) -> None:
    spaces = Worktrees(tmp_path / "work")
    spaces.resolve(str(source))
    write_files(source, {"later.txt": "later\n"})
    later = commit_all(source, "later")

    worktree = spaces.checkout("run-1", 1, str(source), later)

    assert (worktree / "later.txt").read_text() == "later\n"


def test_git_failures_name_the_command_and_folder(tmp_path: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    missing = tmp_path / "not-a-repo"

    with pytest.raises(WorktreeError) as caught:
        spaces.resolve(str(missing))

    assert "git clone" in str(caught.value) and str(missing) in str(caught.value)
    assert not list((tmp_path / "work" / "mirrors").glob("*.git"))


HOSTILE_CONFIG = """\
[diff]
\tnoprefix = true
\trenames = copies
\tcontext = 0
[color]
\tui = always
[core]
\tautocrlf = true
\tquotePath = true
\texcludesFile = {excludes}
[apply]
\twhitespace = fix
[commit]
\tgpgSign = true
"""


def test_user_git_config_cannot_change_hashes_or_patches(
    tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = Worktrees(tmp_path / "clean")
    base = clean.resolve(str(source))
    (tmp_path / "excludes").write_text("*.md\n*.bin\n")
    (tmp_path / "hostile.gitconfig").write_text(
        HOSTILE_CONFIG.format(excludes=tmp_path / "excludes")
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "hostile.gitconfig"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "stray-index"))
    hostile = Worktrees(tmp_path / "hostile")

    snaps, commits = [], []
    for spaces in (clean, hostile):
        worktree = spaces.checkout("run-1", 1, str(source), base)
        edit_everything(worktree)
        write_files(worktree, {"crlf.txt": b"a\r\nb  \r\n", "ünïcode.md": "x\n"})
        snaps.append(spaces.snapshot(worktree, base))
        commits.append(
            spaces.commit(worktree, tree=snaps[-1].tree, parent=base, message="m", when=WHEN)
        )
    assert snaps[0] == snaps[1]
    assert commits[0] == commits[1]

    fresh = hostile.checkout("run-1", 2, str(source), base)
    hostile.restore(fresh, base, snaps[0].patch, snaps[0].tree)
    assert (fresh / "crlf.txt").read_bytes() == b"a\r\nb  \r\n"
    assert hostile.changed_files(fresh, base)[-1] == "ünïcode.md"
    assert not (tmp_path / "stray-index").exists()


def test_checkout_recovers_from_a_half_built_worktree(tmp_path: Path, source: Path) -> None:
    spaces = Worktrees(tmp_path / "work")
    base = spaces.resolve(str(source))
    leftover = tmp_path / "work" / "runs" / "run-1" / "1.partial"
    leftover_gitdir = tmp_path / "work" / "gitdirs" / "run-1" / "1.git.partial"
    write_files(leftover, {"half.txt": "as if the process died mid-checkout\n"})
    write_files(leftover_gitdir, {"HEAD": "garbage\n"})

    worktree = spaces.checkout("run-1", 1, str(source), base)

    assert not leftover.exists() and not leftover_gitdir.exists()
    assert files_of(worktree) == files_of(source)
    assert spaces.tree_of(worktree) == git(source, "rev-parse", f"{base}^{{tree}}").strip()
