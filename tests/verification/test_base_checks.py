"""A change cannot choose its own checks: the base revision's manifests and config decide them,
and the change's own manifests only add to them.

Real git repositories and `ratchet verify` in the real sandbox; each test breaks the code and
asserts from outside that the base's check ran and failed on it (before, these changes were
verified as passing, or as nothing to verify).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from verify_helpers import Files, git, write

from app.verify_cli import configure_parser, run_verify
from runner.config import read_repository_config
from runner.network import NetworkSettings
from runner.sandbox import Sandbox
from verification.pipeline import Candidate, plan_verification
from verification.plan import BASE_STEP
from verification.revisions import open_repository

CALC = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
ROOT_TEST = "from lib.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
PYTEST = "python -m pytest -q -p no:cacheprovider tests"

# The root declares its check either by detection (a pyproject and a tests/ folder) or in
# .github/ratchet.yml.
DETECTED: Files = {"pyproject.toml": '[project]\nname = "root"\nversion = "0"\n'}
CONFIGURED: Files = {
    ".github/ratchet.yml": f"verify:\n  checks:\n    - {{id: unit, kind: test, run: '{PYTEST}'}}\n",
}
ROOT_CHECK = {"detected": "pytest", "configured": "unit"}


def verify(capsys: pytest.CaptureFixture[str], repo: Path, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="ratchet verify")
    configure_parser(parser)
    code = run_verify(parser.parse_args(["--repo", str(repo), *argv]), Sandbox(),
                      NetworkSettings())
    out, err = capsys.readouterr()
    return code, out, err


def change(repo: Path, files: Files, *, delete: tuple[str, ...] = ()) -> None:
    """Commit `files` (and the deletion of `delete`) on a branch `feature` off main."""
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, files)
    for path in delete:
        git(repo, "rm", "-q", path)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")


def results(out: str) -> dict[str, str]:
    """Each check's status by key (`lib:pytest`; a root check by its id)."""
    return {(r["id"] if r["workspace"] == "." else f"{r['workspace']}:{r['id']}"): r["status"]
            for r in json.loads(out)["results"]}


@pytest.fixture(params=["detected", "configured"])
def declared(request: pytest.FixtureRequest,
             make_repo: Callable[[Files], Path]) -> tuple[Path, str]:
    """A repository whose root declares a test of lib/ (by detection or in the config)."""
    kind = request.param
    files = DETECTED if kind == "detected" else CONFIGURED
    repo = make_repo({**files, "lib/calc.py": CALC, "tests/test_calc.py": ROOT_TEST})
    return repo, ROOT_CHECK[kind]


def test_an_added_manifest_adds_its_check_and_the_base_check_still_fails(
    declared: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, root_check = declared
    change(repo, {
        "lib/calc.py": BROKEN,
        "lib/pyproject.toml": '[project]\nname = "lib"\nversion = "0"\n',
        "lib/tests/test_nothing.py": "def test_nothing():\n    pass\n",
    })  # fmt: skip

    code, out, _ = verify(capsys, repo, "--head", "HEAD", "--plan-only")
    assert code == 0
    assert [line.split("\t")[0] for line in out.splitlines()] == [root_check, "lib:pytest"]
    code, out, _ = verify(capsys, repo, "--head", "HEAD", "--explain")
    assert BASE_STEP in out

    code, out, err = verify(capsys, repo, "--head", "HEAD", "--json")
    assert code == 1, err
    assert json.loads(out)["conclusion"] == "failure"
    assert results(out) == {root_check: "failed", "lib:pytest": "passed"}


def test_a_change_deleting_the_root_declaration_is_checked_as_the_base_declares(
    declared: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, root_check = declared
    declaration = "pyproject.toml" if root_check == "pytest" else ".github/ratchet.yml"
    change(repo, {"lib/calc.py": BROKEN}, delete=(declaration,))

    code, out, err = verify(capsys, repo, "--head", "HEAD", "--json")
    assert code == 1, err
    assert results(out) == {root_check: "failed"}
    if declaration.startswith(".github"):
        assert "this change edits .github/ratchet.yml; the checks come from the base's" in err


def test_an_edited_config_in_the_work_tree_does_not_replace_the_base_checks(
    make_repo: Callable[[Files], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo({**CONFIGURED, "lib/calc.py": CALC, "tests/test_calc.py": ROOT_TEST})
    write(repo, {"lib/calc.py": BROKEN,
                 ".github/ratchet.yml": "verify:\n  checks:\n    - {id: unit, run: 'true'}\n"})

    code, out, _ = verify(capsys, repo, "--json")  # uncommitted: the work tree is the change
    assert code == 1
    assert results(out) == {"unit": "failed"}


def test_a_workspace_the_change_adds_runs_its_checks_in_addition(
    declared: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, root_check = declared
    change(repo, {
        "lib/calc.py": CALC + "\n",
        "tools/package.json": '{"name": "tools", "scripts": {"test": "node fail.js"}}\n',
        "tools/fail.js": "process.exit(1);\n",
    })  # fmt: skip

    code, out, err = verify(capsys, repo, "--head", "HEAD", "--json")
    assert code == 1, err
    assert results(out) == {root_check: "passed", "tools:node-test": "failed"}


def test_a_workspace_the_change_deletes_plans_no_check_in_its_folder(
    make_repo: Callable[[Files], Path],
) -> None:
    repo = make_repo({**DETECTED, "lib/calc.py": CALC, "tests/test_calc.py": ROOT_TEST,
                      "old/pyproject.toml": '[project]\nname = "old"\nversion = "0"\n',
                      "old/tests/test_old.py": "def test_old():\n    pass\n"})
    change(repo, {}, delete=("old/pyproject.toml", "old/tests/test_old.py"))

    candidate = Candidate.between(open_repository(repo), "main", "HEAD")
    config = read_repository_config(candidate.repo, candidate.start)
    plan = plan_verification(candidate, config.verify).plan
    assert {c.workspace for c in plan.checks} <= {"."}
    assert "old" not in {w.path for w in plan.workspaces}


def test_a_change_editing_a_manifest_cannot_drop_the_check_it_declared(
    make_repo: Callable[[Files], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    package = '{"name": "root", "scripts": {"test": "node test.js"}}\n'
    repo = make_repo({
        "package.json": package,
        "sum.js": "exports.sum = (a, b) => a + b;\n",
        "test.js": "if (require('./sum.js').sum(1, 2) !== 3) process.exit(1);\n",
    })  # fmt: skip
    change(repo, {"package.json": '{"name": "root"}\n',
                  "sum.js": "exports.sum = (a, b) => a - b;\n"})

    code, out, err = verify(capsys, repo, "--head", "HEAD", "--json")
    assert code == 1, err  # the base's node-test ran (and found its script gone)
    assert results(out) == {"node-test": "failed"}
