"""Builders for the repositories verification tests create."""

from __future__ import annotations

import subprocess
from pathlib import Path

Files = dict[str, str]


def git(root: Path, *args: str) -> str:
    """Run git in `root`; fail the test with git's message when it fails."""
    result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout


def write(root: Path, files: Files) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


PASSING_TEST = "from app_{name} import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"

# A failing assertion on line 5 of the test file; tests assert that exact line.
FAILING_TEST = "from app_{name} import add\n\n\ndef test_add():\n    assert add(1, 1) == 3\n"


def python_workspace(folder: str, name: str, *, failing: bool = False) -> Files:
    test = FAILING_TEST if failing else PASSING_TEST
    return {
        f"{folder}/pyproject.toml": f'[project]\nname = "{name}"\nversion = "0.1.0"\n',
        f"{folder}/app_{name}.py": "def add(a, b):\n    return a + b\n",
        f"{folder}/tests/test_{name}.py": test.format(name=name),
    }


def monorepo_files() -> Files:
    """Two Python workspaces (one with a nested workspace) and a Node workspace."""
    return {
        "README.md": "# monorepo\n",
        ".github/workflows/ci.yml": "on: push\njobs: {}\n",
        **python_workspace("services/api", "api"),
        **python_workspace("services/worker", "worker"),
        **python_workspace("services/worker/plugins/extra", "extra"),
        "web/package.json": '{"name": "web", "scripts": {"test": "node --test"}}\n',
        "web/package-lock.json": '{"name": "web", "lockfileVersion": 3, "packages": {}}\n',
        "web/sum.js": "exports.sum = (a, b) => a + b;\n",
        "web/test/sum.test.js": (
            "const test = require('node:test');\nconst assert = require('node:assert');\n"
            "const { sum } = require('../sum.js');\n"
            "test('sum', () => { assert.strictEqual(sum(1, 2), 3); });\n"
        ),
    }
