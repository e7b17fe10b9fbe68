"""Real git repositories for tests, built with a fixed identity and clock so shas are stable."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Fixed identity, clock and locale: the same files give the same commit sha on every machine.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_AUTHOR_DATE": "1700000000 +0000",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_COMMITTER_DATE": "1700000000 +0000",
    "GIT_CONFIG_GLOBAL": "/dev/null",  # no user settings: test repositories are the same everywhere
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "LC_ALL": "C",
}


def _inherited_env() -> dict[str, str]:
    """The process environment minus GIT_* (GIT_DIR, GIT_INDEX_FILE, ... would redirect git)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def git(cwd: Path | str, *args: str, input: bytes | None = None) -> str:
    """Run git in ``cwd`` with the fixed test environment and return its stdout as text."""
    result = subprocess.run(
        ["git", "-c", "core.quotePath=off", "-c", "commit.gpgSign=false", *args],
        cwd=cwd,
        env={**_inherited_env(), **GIT_ENV},
        input=input,
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed in {cwd}: {result.stderr.decode(errors='replace')}"
        )
    return result.stdout.decode()


def write_files(root: Path | str, files: dict[str, str | bytes]) -> None:
    """Write ``files`` (repo-relative path -> text or bytes) under ``root``, creating folders."""
    for relative, content in files.items():
        target = Path(root, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)


def commit_all(path: Path | str, message: str = "commit") -> str:
    """Stage everything in the repository at ``path``, commit it, and return the new head sha."""
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "--allow-empty", "-m", message)
    return git(path, "rev-parse", "HEAD").strip()


def make_repo(path: Path | str, files: dict[str, str | bytes]) -> str:
    """Create a repository at ``path`` on branch ``main`` with ``files`` committed; return head."""
    Path(path).mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    write_files(path, files)
    return commit_all(path, "initial")


def add_gitlink(repo: Path | str, path: str) -> str:
    """Commit a submodule at ``path`` in ``repo`` (a gitlink to a commit that is nowhere, and
    its .gitmodules entry), as a repository with a submodule has; return the new head."""
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{path}")
    write_files(repo, {".gitmodules": f'[submodule "lib"]\n\tpath = {path}\n'
                                      "\turl = https://example.invalid/lib.git\n"})
    git(repo, "add", ".gitmodules")
    git(repo, "commit", "--quiet", "-m", "add a submodule")
    return git(repo, "rev-parse", "HEAD").strip()
