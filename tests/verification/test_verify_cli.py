"""`ratchet verify` end to end on repositories the tests create."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from verify_helpers import FAILING_TEST, git, write

from app.verify_cli import configure_parser, run_verify
from runner.network import NetworkSettings
from runner.sandbox import Sandbox

REPO_ROOT = Path(__file__).resolve().parents[2]


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="ratchet verify")
    configure_parser(parser)
    code = run_verify(parser.parse_args(list(argv)), Sandbox(), NetworkSettings())  # real sandbox
    out, err = capsys.readouterr()
    return code, out, err


def on_branch(repo: Path, files: dict[str, str]) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")


def test_plan_only_json_for_an_uncommitted_change(
    monorepo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(monorepo, {"services/api/app_api.py": "def add(a, b):\n    return b + a\n"})
    write(monorepo, {"services/worker/new_module.py": "X = 1\n"})  # untracked
    code, out, err = verify(capsys, "--repo", str(monorepo), "--plan-only", "--json")
    assert code == 0
    plan = json.loads(out)["plan"]
    assert len(plan["hash"]) == 64
    assert plan["checks"] == [
        {
            "id": "pytest",
            "workspace": "services/api",
            "kind": "test",
            "command": 'python -m pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"',
            "needs": {"setup": [], "checks": []},
        },
        {
            "id": "pytest",
            "workspace": "services/worker",
            "kind": "test",
            "command": 'python -m pytest -q -p no:cacheprovider --junitxml="$RATCHET_JUNIT"'
            " --ignore=plugins/extra",
            "needs": {"setup": [], "checks": []},
        },
    ]
    assert "2 checks planned" in err


def test_toolchain_change_runs_every_workspace_and_writes_the_bundle(
    monorepo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_branch(monorepo, {".tool-versions": "python 3.12.0\n"})
    bundle = tmp_path / "bundle"
    code, out, err = verify(capsys, "--repo", str(monorepo), "--json", "--bundle", str(bundle))
    document = json.loads(out)
    assert code == 0, err
    assert document["conclusion"] == "success"
    assert {(r["workspace"], r["id"], r["status"]) for r in document["results"]} == {
        ("services/api", "pytest", "passed"),
        ("services/worker", "pytest", "passed"),
        ("services/worker/plugins/extra", "pytest", "passed"),
        ("web", "node-test", "passed"),
    }
    assert set(document["results"][0]) == {
        "id", "workspace", "status", "exit_code", "duration_s", "log_sha256",
    }  # fmt: skip
    assert "[4/4]" in err
    names = sorted(p.name for p in bundle.iterdir())
    assert names == [
        "plan.json",
        "result.json",
        "services%2Fapi%3Apytest.log",
        "services%2Fworker%2Fplugins%2Fextra%3Apytest.log",
        "services%2Fworker%3Apytest.log",
        "summary.md",
        "web%3Anode-test.log",
    ]
    result = json.loads((bundle / "result.json").read_text())
    assert result["plan_sha256"] == document["plan"]["hash"]
    assert set(result["artifacts"]) == {n for n in names if n.endswith(".log")}
    assert ".tool-versions" in result["diff_stat"]
    assert "tests" in (bundle / "web%3Anode-test.log").read_text()


def test_failing_test_exits_1_with_a_failed_result(
    monorepo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(monorepo, {"services/api/tests/test_api.py": FAILING_TEST.format(name="api")})
    bundle = tmp_path / "bundle"
    code, out, _ = verify(capsys, "--repo", str(monorepo), "--json", "--bundle", str(bundle))
    document = json.loads(out)
    assert code == 1
    assert document["conclusion"] == "failure"
    [result] = document["results"]
    assert (result["workspace"], result["status"], result["exit_code"]) == (
        "services/api",
        "failed",
        1,
    )
    assert "test_add" in (bundle / "summary.md").read_text()
    annotations = json.loads((bundle / "result.json").read_text())["annotations"]
    assert {(a["path"], a["start_line"], a["annotation_level"]) for a in annotations} == {
        ("services/api/tests/test_api.py", 5, "failure")
    }


def test_head_revision_is_verified_in_its_own_checkout(
    monorepo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_branch(monorepo, {"services/api/tests/test_api.py": FAILING_TEST.format(name="api")})
    git(monorepo, "checkout", "-q", "main")
    code, out, _ = verify(capsys, "--repo", str(monorepo), "--base", "main", "--head", "feature")
    assert code == 1
    assert "failed    services/api:pytest" in out
    assert "conclusion: failure" in out
    assert git(monorepo, "status", "--porcelain") == ""
    assert git(monorepo, "worktree", "list").count("\n") == 1


def test_documentation_only_change_passes_with_nothing_planned(
    monorepo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_branch(monorepo, {"README.md": "# monorepo\n\nMore words.\n"})
    code, out, _ = verify(capsys, "--repo", str(monorepo), "--json")
    assert code == 0
    assert json.loads(out) == {
        "plan": {"hash": json.loads(out)["plan"]["hash"], "checks": [], "setup": [],
                 "order": [], "unverified": [], "unverified_steps": []},
        "results": [],
        "conclusion": "success",
    }


def test_config_error_exits_2_naming_file_and_line(
    monorepo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # On main: the config is read where the change starts.
    write(monorepo, {".github/ratchet.yml": "verify:\n  timeout: soon\n"})
    git(monorepo, "add", "-A")
    git(monorepo, "commit", "-qm", "a broken config")
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    code, out, err = verify(capsys, "--repo", str(monorepo))
    assert code == 2
    assert out == ""
    assert ".github/ratchet.yml:2: verify.timeout:" in err


def test_unknown_revision_and_missing_repository_exit_2(
    monorepo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = verify(capsys, "--repo", str(monorepo), "--base", "no-such-branch")
    assert code == 2
    assert "unknown revision 'no-such-branch'" in err
    (tmp_path / "plain").mkdir()
    code, _, err = verify(capsys, "--repo", str(tmp_path / "plain"))
    assert code == 2
    assert "not inside a git repository" in err


def test_through_the_ratchet_command(monorepo: Path) -> None:
    help_run = subprocess.run(
        [sys.executable, "-m", "app.cli", "verify", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    if help_run.returncode != 0 or "--plan-only" not in help_run.stdout:
        pytest.skip("app.cli has no `verify` command yet (app/cli.py must wire app.verify_cli)")
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "verify", "--repo", str(monorepo), "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert [(r["workspace"], r["status"]) for r in document["results"]] == [("web", "passed")]


def test_a_change_nothing_verifies_exits_3_with_a_neutral_conclusion(
    monorepo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    on_branch(monorepo, {"tools/deploy.sh": "#!/bin/sh\necho deploy\n"})
    code, out, err = verify(capsys, "--repo", str(monorepo), "--json")
    assert code == 3
    document = json.loads(out)
    assert (document["conclusion"], document["reason"], document["unverified"]) == (
        "neutral", "nothing verifies this change", ["tools/deploy.sh"]
    )
    assert document["results"] == []
    assert "nothing verifies this change (tools/deploy.sh)" in err
    code, _, _ = verify(capsys, "--repo", str(monorepo), "--plan-only")
    assert code == 3
    # Declared unverified on purpose (on main, so the config is no change): a success with
    # nothing to run.
    git(monorepo, "checkout", "-q", "main")
    write(monorepo, {".github/ratchet.yml": "verify:\n  ignore: ['tools/']\n"})
    git(monorepo, "add", "-A")
    git(monorepo, "commit", "-qm", "ignore tools")
    git(monorepo, "checkout", "-q", "feature")
    git(monorepo, "merge", "-q", "--no-edit", "main")
    code, out, _ = verify(capsys, "--repo", str(monorepo), "--json")
    assert (code, json.loads(out)["conclusion"]) == (0, "success")


def test_explain_says_why_each_check_runs_and_what_covers_each_file(
    monorepo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(monorepo, {"services/api/app_api.py": "def add(a, b):\n    return b + a\n"})
    write(monorepo, {"services/api/NOTES.md": "notes\n", "tools/x.sh": "true\n"})
    code, out, _ = verify(capsys, "--repo", str(monorepo), "--explain")
    assert code == 0  # a check covers the change; tools/x.sh is reported, not verified
    assert "  because services/api/app_api.py: in api\n    api (services/api): pytest\n" in out
    assert "  pytest: python -m pytest" in out
    assert "  services/api/app_api.py: services/api:pytest\n" in out
    assert "  services/api/NOTES.md: documentation (nothing to check)\n" in out
    assert "  tools/x.sh: NOTHING VERIFIES THIS CHANGE (in no workspace)" in out
    code, out, _ = verify(capsys, "--repo", str(monorepo), "--explain", "--json")
    files = {f["path"]: f["checks"] for f in json.loads(out)["files"]}
    assert files == {"services/api/NOTES.md": [], "services/api/app_api.py":
                     ["services/api:pytest"], "tools/x.sh": []}


def test_a_failing_worktree_exits_2_in_one_line_leaving_nothing_behind(
    monorepo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    on_branch(monorepo, {"services/api/app_api.py": "def add(a, b):\n    return b + a\n"})
    (monorepo / ".git" / "worktrees").write_text("")  # git cannot register a worktree
    code, out, err = verify(capsys, "--repo", str(monorepo), "--base", "main", "--head", "feature")
    assert (code, out) == (2, "")
    [message] = [line for line in err.splitlines() if "checks planned" not in line]
    assert message.startswith("ratchet verify: git worktree add ") and "Not a directory" in message
    assert list(scratch.iterdir()) == []
    # An empty plan needs no worktree at all: a documentation change still concludes.
    git(monorepo, "checkout", "-q", "-b", "docs", "main")
    write(monorepo, {"README.md": "# monorepo\n\nwords\n"})
    git(monorepo, "commit", "-qam", "docs")
    code, out, _ = verify(capsys, "--repo", str(monorepo), "--base", "main", "--head", "docs")
    assert (code, out.strip()) == (0, "conclusion: success")
    assert list(scratch.iterdir()) == []


UNITTEST_CONFIG = ("verify:\n  checks:\n"
                   "    - {id: unit, kind: test, run: 'python3 -m unittest -q'}\n")
CALC_TEST = ("import unittest\n\nimport calc\n\n\nclass AddTest(unittest.TestCase):\n"
             "    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n")


def test_a_failing_check_is_shown_with_its_failing_tests_and_its_log_tail(
        make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo({".github/ratchet.yml": UNITTEST_CONFIG,
                      "calc.py": "def add(a, b):\n    return a + b\n", "test_calc.py": CALC_TEST})
    write(repo, {"calc.py": "def add(a, b):\n    return a - b\n"})  # the change: a bug
    env = {**os.environ, "RATCHET_HOME": str(tmp_path / "home")}

    def ratchet_verify(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "app.cli", "verify", "--repo", str(repo),
                               "--base", "HEAD", *extra], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=300)

    text = ratchet_verify()
    assert text.returncode == 1, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("failed    unit (")
    assert lines[1] == ("  FAILED test_calc.AddTest.test_add (test_calc.py:8):"
                        " AssertionError: -1 != 5")
    assert lines[2].startswith("  last ") and lines[2].endswith(" lines of its log:")
    assert "  | AssertionError: -1 != 5" in lines and "  | FAILED (failures=1)" in lines
    assert lines[-1] == "conclusion: failure"

    document = ratchet_verify("--json")
    assert document.returncode == 1, document.stderr
    [result] = json.loads(document.stdout)["results"]
    assert result["failed_tests"] == [{"name": "test_calc.AddTest.test_add",
                                       "file": "test_calc.py", "line": 8,
                                       "message": "AssertionError: -1 != 5"}]
    assert result["log_tail"].endswith("FAILED (failures=1)")
    assert "Traceback (most recent call last):" in result["log_tail"]

    write(repo, {"calc.py": "def add(a, b):\n    return a + b\n"})
    passing = ratchet_verify("--json")
    assert passing.returncode == 0, passing.stderr
    [result] = json.loads(passing.stdout)["results"]
    assert "failed_tests" not in result and "log_tail" not in result
