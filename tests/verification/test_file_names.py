"""File names are bytes: names that are not UTF-8 are planned, run and shown, never a crash;
and no two checks share a log file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from verify_helpers import Files, python_workspace

from verification.config import CheckConfig, VerifyConfig, WorkspaceConfig
from verification.evidence import EvidenceReport, build_bundle, render_markdown
from verification.execute import execute_plan
from verification.plan import Plan, build_plan
from verification.revisions import changed_files, open_repository
from verification.tree import GitTree

LATIN1 = os.fsdecode(b"caf\xe9")  # "café" in Latin-1: not UTF-8
FOLDER = os.fsdecode(b"pk\xff")


def test_a_workspace_whose_name_is_not_utf8_is_planned_shown_and_run_in_its_folder(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({**python_workspace(FOLDER, "pk"), f"{LATIN1}.txt": "x\n"})
    (root / FOLDER / f"app_{LATIN1}.py").write_text("VALUE = 1\n")  # untracked, not UTF-8
    repo = open_repository(root)

    changed = changed_files(repo, "HEAD", None)
    plan = build_plan(changed, GitTree(repo), VerifyConfig())

    assert [c.key for c in plan.checks] == ["pk\\xff:pytest"]
    assert plan.folder("pk\\xff") == FOLDER
    plan.to_json().encode("ascii")  # stored and hashed as text
    assert Plan.from_json(plan.to_json()) == plan
    [result] = execute_plan(plan, root)
    assert result.status == "passed", result.log
    bundle = build_bundle(plan, [result])
    assert "pk\\xff:pytest" in render_markdown(EvidenceReport.from_bundle(bundle))
    assert json.loads(bundle.to_json())["results"][0]["workspace"] == "pk\\xff"


def test_two_checks_never_share_a_log_file(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo({"web/package.json": "{}\n", "web/a.txt": "x\n"})
    config = VerifyConfig(
        checks=[CheckConfig(id="web-test", run="true")],
        workspaces=[WorkspaceConfig(path="web", checks=[CheckConfig(id="test", run="true")])],
    )
    plan = build_plan([".github/ratchet.yml"], GitTree.discover(root), config)

    names = {check.key: check.log_name for check in plan.checks}
    assert names == {"web-test": "web-test", "web:test": "web%3Atest"}
    assert len(set(names.values())) == len(names)
