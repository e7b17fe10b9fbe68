"""The import-linter contracts hold on the code, and fail on code that breaks a layer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("app", "runner", "verification", "github", "plumbing")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_layers_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("verification/plan.py", "import runner.workflow", "does not import runner"),
    ("runner/workflow.py", "import dramatiq", "imports neither app, github nor dramatiq"),
    ("runner/engine.py", "import github.client", "imports neither app, github nor dramatiq"),
    ("github/auth.py", "import app.settings", "never imports app"),
    ("plumbing/git.py", "import runner.names", "imports no other package of Ratchet's"),
])
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, module: str, line: str,
                                                contract: str) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(f"{line}  # noqa\n" + target.read_text())

    result = lint_imports(tmp_path)

    assert result.returncode != 0
    assert f"{contract} BROKEN" in result.stdout, result.stdout
