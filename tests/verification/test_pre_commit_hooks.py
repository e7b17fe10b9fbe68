"""The repository's pre-commit hooks are its declared checks: a local hook runs its entry on
the files it matches; a hook pre-commit installs from the network is listed as not run, never
dropped.

The config is written in the shape of pydantic/pydantic's and pallets/flask's: remote
pre-commit-hooks and ruff-pre-commit hooks, local `language: system` hooks running `make` and
`uv run` with `pass_filenames: false`, a `types: [python]` filter, a top-level `exclude` in
verbose regex form, a manual-stage hook, a `language: fail` guard.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import layouts
from verify_helpers import Files

from verification.config import VerifyConfig
from verification.explain import render_text
from verification.hooks import read_hooks
from verification.plan import PlanResult, plan_change
from verification.tree import GitTree

CONFIG = VerifyConfig()

PRE_COMMIT = """\
default_language_version:
  python: python3.12
exclude: |
  (?x)^(
      tests/fixtures/.*|
      docs/_build/.*
  )$
repos:
  - repo: https://github.com/pre-commit/pre-commit-hooks
    rev: v5.0.0
    hooks:
      - id: check-yaml
      - id: end-of-file-fixer
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.8.1
    hooks:
      - id: ruff
        args: [--fix]
      - id: ruff-format
  - repo: local
    hooks:
      - id: lint
        name: Lint
        entry: make lint
        types: [python]
        language: system
        pass_filenames: false
      - id: typecheck
        name: Typecheck
        entry: uv run --frozen mypy
        types: [python]
        language: system
        files: ^src/
      - id: no-rej-files
        name: no .rej files
        entry: patch leftovers must not be committed
        language: fail
        files: '\\.(rej|orig)$'
      - id: slow-check
        name: only by hand
        entry: ./scripts/slow.sh
        language: script
        stages: [manual]
      - id: check-docs
        name: docs examples
        entry: python scripts/check_examples.py
        language: python
        additional_dependencies: [pyyaml]
"""

MAKEFILE = "lint:\n\tuv run --frozen ruff check .\n"


def planned(root: Path, *changed: str) -> PlanResult:
    return plan_change(list(changed), GitTree.discover(root), CONFIG)


def test_the_config_is_read_as_pre_commit_reads_it() -> None:
    hooks = {hook.id: hook for hook in read_hooks(PRE_COMMIT).hooks}
    assert [h for h, hook in hooks.items() if hook.local] == [
        "lint", "typecheck", "no-rej-files", "slow-check"]
    assert not hooks["slow-check"].runs and hooks["lint"].runs
    assert hooks["typecheck"].matches("src/acme/__init__.py")
    assert not hooks["typecheck"].matches("tests/test_app.py")  # its files
    assert not hooks["lint"].matches("src/acme/data.json")  # its types
    assert not hooks["lint"].matches("tests/fixtures/bad.py")  # the config's verbose exclude
    assert hooks["lint"].matches("tests/test_app.py")
    assert hooks["typecheck"].command(["src/a.py", "src/b c.py"]) == (
        "uv run --frozen mypy src/a.py 'src/b c.py'")
    assert hooks["lint"].command(["src/a.py"]) == "make lint"  # pass_filenames: false
    guard = subprocess.run(["sh", "-c", hooks["no-rej-files"].command(["a.rej"])],
                           capture_output=True, text=True)
    assert (guard.returncode, guard.stderr) == (
        1, "patch leftovers must not be committed\na.rej\n")
    assert read_hooks("repos: [").problem is not None


def test_local_hooks_run_on_the_changed_files_they_match(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({**layouts.uv_workspace(), ".pre-commit-config.yaml": PRE_COMMIT,
                      "Makefile": MAKEFILE})
    result = planned(root, "src/acme/__init__.py")
    checks = {c.key: (c.kind, c.command) for c in result.plan.checks}
    assert checks["pre-commit-lint"] == ("lint", "make lint")
    assert checks["pre-commit-typecheck"] == ("typecheck",
                                              "uv run --frozen mypy src/acme/__init__.py")
    assert "pre-commit-no-rej-files" not in checks and "pre-commit-slow-check" not in checks
    skipped = {s.step: s.reason for s in result.plan.unverified_steps}
    assert "needs the network" in skipped["hook ruff-format"]
    assert "https://github.com/astral-sh/ruff-pre-commit" in skipped["hook ruff"]
    assert "a python environment" in skipped["hook check-docs"]
    assert "hook slow-check" not in skipped  # manual: a plain `pre-commit run` skips it
    assert "the pre-commit hook typecheck runs on it" in render_text(result.explanation)
    tests_only = {c.key for c in planned(root, "tests/test_app.py").plan.checks}
    assert "pre-commit-lint" in tests_only and "pre-commit-typecheck" not in tests_only


def test_a_changed_config_runs_its_hooks_on_every_file_they_match(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({**layouts.uv_workspace(), ".pre-commit-config.yaml": PRE_COMMIT,
                      "Makefile": MAKEFILE, "src/acme/patch.py.rej": "leftover\n"})
    result = planned(root, ".pre-commit-config.yaml")
    assert result.plan.unverified == ()
    checks = {c.key: c.command for c in result.plan.checks}
    assert set(checks) == {"pre-commit-lint", "pre-commit-typecheck", "pre-commit-no-rej-files"}
    # What `pre-commit run --all-files` passes: the tracked files each hook matches.
    listed = subprocess.run(
        ["sh", "-c", checks["pre-commit-typecheck"].replace(
            "| xargs -0 -r uv run --frozen mypy", "| tr '\\0' '\\n'")],
        cwd=root, capture_output=True, text=True, check=True).stdout.split()
    assert listed == ["src/acme/__init__.py"]
    guard = subprocess.run(["sh", "-c", checks["pre-commit-no-rej-files"]], cwd=root,
                           capture_output=True, text=True)
    assert (guard.returncode, guard.stdout.split()) == (1, ["src/acme/patch.py.rej"])


def test_a_root_ratchet_config_overrides_the_hooks(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo({**layouts.uv_workspace(), ".pre-commit-config.yaml": PRE_COMMIT,
                      "Makefile": MAKEFILE})
    config = VerifyConfig.from_dict({"checks": [{"id": "unit", "kind": "test", "run": "pytest"}]})
    plan = plan_change(["src/acme/__init__.py"], GitTree.discover(root), config).plan
    assert {c.key for c in plan.checks} == {"unit"}
    assert plan.unverified_steps == ()


LINT_WORKFLOW = """\
name: lint
on: [pull_request]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: astral-sh/setup-uv@v5
      - run: uv sync --frozen --group linting
      - name: Run the hooks
        run: uv run pre-commit run --all-files --show-diff-on-failure
  hooks:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: pre-commit/action@v3.0.1
        with:
          extra_args: --all-files
"""


def test_a_ci_step_running_pre_commit_is_its_hooks(make_repo: Callable[[Files], Path]) -> None:
    """Offline, `pre-commit run` fails cloning its hook repositories: the CI step is listed,
    and the hooks run from the config (local ones) or are listed (the others)."""
    root = make_repo({**layouts.uv_workspace(), ".pre-commit-config.yaml": PRE_COMMIT,
                      "Makefile": MAKEFILE, ".github/workflows/lint.yml": LINT_WORKFLOW})
    result = planned(root, "src/acme/__init__.py")
    keys = {c.key for c in result.plan.checks}
    assert not any(key.startswith("lint.") for key in keys)
    assert {"pre-commit-lint", "pre-commit-typecheck"} <= keys
    skipped = {(s.job, s.step): s.reason for s in result.plan.unverified_steps}
    assert "its local hooks are planned from .pre-commit-config.yaml" in skipped[
        ("lint", "Run the hooks")]
    assert "the hooks it runs are planned from" in skipped[("hooks", "pre-commit/action@v3.0.1")]
