"""Planning runs git a fixed number of times, however many files it reads.

`ratchet verify` plans a 30,000-file repository in about as long as git takes to list it
(bench/verify.py (f)); a git process per file read (a manifest, a workflow, a task runner's
file) would cost milliseconds each. Files are read in batches (``Manifests.prefetch``,
``read_texts``): from the work tree directly, from a revision with one ``git cat-file --batch``
(a setup.cfg or Makefile read alone from the base was a process each). Counted with a ``git``
on PATH that logs each call and runs the real one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from verify_helpers import write

from tests.gitrepo import commit_all, git, make_repo

REPO_ROOT = Path(__file__).resolve().parents[2]


def repository(root: Path, count: int) -> Path:
    """A pnpm and uv monorepo with `count` of everything planning reads: packages depending on
    each other, Python members, workflows, Makefiles, tool configs."""
    files = {
        "package.json": json.dumps({"name": "mono", "private": True,
                                    "packageManager": "pnpm@9.12.0"}),
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n",
        "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        "pyproject.toml": '[project]\nname = "mono"\n[tool.uv.workspace]\nmembers = ["py/*"]\n'
                          '[dependency-groups]\ndev = ["pytest"]\n',
        "uv.lock": "version = 1\n", "Makefile": "test:\n\ttrue\n", "justfile": "test:\n  true\n",
        "turbo.json": "{}\n", ".pre-commit-config.yaml": "repos: []\n",
    }
    for n in range(count):
        deps = {"@mono/p0": "workspace:*"} if n else {}
        files[f"packages/p{n}/package.json"] = json.dumps({
            "name": f"@mono/p{n}", "dependencies": deps,
            "scripts": {"lint": "eslint .", "test": "vitest run", "build": "tsc"}})
        files[f"packages/p{n}/tsconfig.json"] = "{}\n"
        files[f"packages/p{n}/Makefile"] = "all:\n\ttrue\n"
        files[f"packages/p{n}/src/index.ts"] = "export const x = 1;\n"
        files[f"py/m{n}/pyproject.toml"] = f'[project]\nname = "m{n}"\n'
        files[f"py/m{n}/tests/test_m{n}.py"] = "def test_x():\n    pass\n"
        files[f"py/m{n}/setup.cfg"] = "[tool:pytest]\ntestpaths = tests\n"
        files[f"py/m{n}/Makefile"] = "test:\n\tpytest\n"
        files[f"py/m{n}/requirements-dev.txt"] = "pytest\n"
        files[f".github/workflows/ci{n}.yml"] = ("on: [push, pull_request]\njobs:\n  t:\n"
                                                  "    runs-on: x\n    steps:\n"
                                                  "      - run: make test\n")
    make_repo(root, files)
    return root


def git_calls(repo: Path, bin_dir: Path, *args: str) -> list[str]:
    """The git commands `ratchet verify --plan-only ARGS` ran in ``repo``."""
    log = bin_dir / "calls.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run([sys.executable, "-m", "app.entry", "verify", "--repo", str(repo),
                          "--plan-only", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode in (0, 3), run.stderr
    assert run.stdout.strip(), run.stderr  # checks were planned
    # The command, without the `-c` settings and the explicit git dir every call passes.
    return [line.split(" -- ")[0] for line in log.read_text().splitlines()]


def assert_batched(few: list[str], many: list[str]) -> None:
    """As many git calls for six times the files, and none reading a single file: read them
    through ``Manifests.prefetch`` or ``read_texts`` (one ``git cat-file --batch``)."""
    assert len(few) == len(many), "\n".join(many)
    assert not [call for call in many if call.startswith("cat-file blob")], "\n".join(many)


def logging_git(tmp_path: Path) -> Path:
    real = shutil.which("git")
    assert real
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "git"
    shim.write_text("#!/bin/sh\n"
                    "for a; do case $a in -c|*=*) ;; *) printf '%s ' \"$a\";; esac; done"
                    f" >> {bin_dir / 'calls.log'}\necho >> {bin_dir / 'calls.log'}\n"
                    f'exec {real} "$@"\n')
    shim.chmod(0o755)
    return bin_dir


# A source file, a manifest (so the base's layout is planned too), a workflow, a new file.
CHANGE = {"packages/p0/src/index.ts": "export const x = 2;\n",
          "packages/p1/package.json": json.dumps({"name": "@mono/p1"}),
          ".github/workflows/ci0.yml": "on: push\n", "py/m1/new.py": "y = 1\n"}


@pytest.mark.parametrize("committed", [False, True], ids=["work-tree", "revision"])
def test_planning_runs_git_as_often_for_many_files(tmp_path: Path, committed: bool) -> None:
    bin_dir = logging_git(tmp_path)
    counts = []
    for count in (2, 12):
        repo = repository(tmp_path / f"repo{count}", count)
        write(repo, CHANGE)
        args: tuple[str, ...] = ()
        if committed:
            commit_all(repo, "change")
            args = ("--base", git(repo, "rev-parse", "HEAD~1").strip(), "--head", "HEAD")
        counts.append(git_calls(repo, bin_dir, *args))
    assert_batched(*counts)
