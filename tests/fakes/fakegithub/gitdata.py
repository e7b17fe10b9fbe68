"""Read refs and commits from a fake repository's bare git directory, live on every request.

Tests push to the bare repository with ``git push file://...``; GitHub serves what was pushed the
moment it lands, so nothing here is cached. Commands go through the tests' one git runner
(``tests.gitrepo.git``) and are chosen to exit 0 for absent objects (``for-each-ref``,
``cat-file --batch-check``), so "absent" is an answer and only a broken repository raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.gitrepo import git

# NUL between fields (no ref name, person or message contains it), spelled per command.
_REF_FIELD = "%00"  # for-each-ref --format
_LOG_FIELD = "%x00"  # show/log --format


@dataclass(frozen=True)
class GitRef:
    name: str  # full name, e.g. refs/heads/main
    sha: str
    type: str  # commit, tag, ...


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    author_date: str
    committer_name: str
    committer_email: str
    committer_date: str
    message: str


def _git(git_dir: Path, *args: str, input: bytes | None = None) -> str:
    return git(git_dir, "--git-dir", str(git_dir), *args, input=input)


def default_branch(git_dir: Path) -> str:
    """The branch HEAD names (GitHub's ``default_branch``), even before its first push."""
    return _git(git_dir, "symbolic-ref", "--short", "HEAD").strip()


def list_refs(git_dir: Path) -> list[GitRef]:
    """Every ref of the repository, sorted by name."""
    fmt = _REF_FIELD.join(("%(refname)", "%(objectname)", "%(objecttype)"))
    output = _git(git_dir, "for-each-ref", f"--format={fmt}", "refs/")
    refs = []
    for line in output.splitlines():
        name, sha, kind = line.split("\0")
        refs.append(GitRef(name, sha, kind))
    return refs


def find_ref(git_dir: Path, name: str) -> GitRef | None:
    """The ref with exactly this full name (``refs/heads/x``), or None."""
    return next((ref for ref in list_refs(git_dir) if ref.name == name), None)


def resolve_commit(git_dir: Path, revision: str) -> str | None:
    """The commit sha ``revision`` (a sha, branch or tag) names, or None if it names none."""
    if not revision or any(ch.isspace() for ch in revision) or revision.startswith("-"):
        return None
    output = _git(
        git_dir,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype)",
        input=f"{revision}^{{commit}}\n".encode(),
    )
    sha, _, kind = output.strip().partition(" ")
    return sha if kind == "commit" else None


def read_commit(git_dir: Path, sha: str) -> CommitInfo:
    """Author, committer, tree, parents and message of the commit ``sha`` (which must exist)."""
    fmt = _LOG_FIELD.join(("%H", "%T", "%P", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%B"))
    fields = _git(git_dir, "show", "-s", f"--format={fmt}", sha).split("\0")
    return CommitInfo(
        sha=fields[0],
        tree=fields[1],
        parents=tuple(fields[2].split()),
        author_name=fields[3],
        author_email=fields[4],
        author_date=fields[5],
        committer_name=fields[6],
        committer_email=fields[7],
        committer_date=fields[8],
        message=fields[9].rstrip("\n"),
    )


def commits_between(git_dir: Path, base: str, head: str) -> int:
    """How many commits ``head`` has that ``base`` lacks (0: nothing to pull)."""
    return int(_git(git_dir, "rev-list", "--count", f"{base}..{head}").strip())


def diff_stats(git_dir: Path, base: str, head: str) -> tuple[int, int, int]:
    """Added lines, deleted lines and changed files from the merge base of ``base`` to ``head``.

    Binary files count as changed files with no lines, as GitHub reports them.
    """
    output = _git(git_dir, "diff", "--numstat", f"{base}...{head}")
    additions = deletions = files = 0
    for line in output.splitlines():
        added, deleted, _ = line.split("\t", 2)
        files += 1
        additions += int(added) if added.isdigit() else 0
        deletions += int(deleted) if deleted.isdigit() else 0
    return additions, deletions, files
