"""Fixtures for verification tests: real git repositories in tmp_path, real subprocesses."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from verify_helpers import Files, git, monorepo_files, write

# The interpreter running the tests: checks find `python`, `pytest` and `ruff` through it.
VENV_BIN = str(Path(sys.executable).parent)


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits need an identity; checks need the test interpreter first on PATH."""
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Ratchet Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "ratchet@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[Files], Path]:
    """Create a git repository on branch main with `files` committed."""

    def create(files: Files) -> Path:
        root = tmp_path / "repo"
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "commit.gpgsign", "false")
        write(root, files)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
        return root

    return create


@pytest.fixture
def monorepo(make_repo: Callable[[Files], Path]) -> Path:
    return make_repo(monorepo_files())
