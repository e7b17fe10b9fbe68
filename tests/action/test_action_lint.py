"""``action.yml`` and the example workflows pass actionlint, ``action.yml`` keeps the rules
the Actions runner enforces on composite actions, and the run example's first job lets only
writers' events through."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.action.expressions import tokenize
from tests.action.lint_action import ROOT, actionlint, lint

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def test_action_yml_and_the_examples_pass_actionlint() -> None:
    if actionlint() is None and not IN_CI:
        pytest.skip("actionlint is not installed here: pip install -e '.[dev]'")
    code, output = lint()
    assert code == 0, output


def test_every_composite_step_names_a_shell_and_every_expression_parses() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    steps = action["runs"]["steps"]
    for step in steps:
        assert ("uses" in step) != ("run" in step), step
        if "run" in step:
            assert step.get("shell") in {"bash", "sh", "python"}, step
            # Values reach scripts through env, never spliced into the script's text.
            assert "${{" not in step["run"], step["run"]
    text = (ROOT / "action.yml").read_text()
    for expression in re.findall(r"\$\{\{(.*?)\}\}", text):
        assert tokenize(expression)
    ids = {step.get("id") for step in steps}
    for name, output in action["outputs"].items():
        step_id = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.[\w-]+ \}\}", output["value"])
        assert step_id and step_id.group(1) in ids, name
    env = next(s for s in steps if s.get("id") == "ratchet")["env"]
    # @actions/core's names: INPUT_ and the input's name upper-cased, '-' kept.
    assert {f"INPUT_{name.upper()}" for name in action["inputs"]} <= set(env)


@pytest.mark.parametrize(("permission", "allowed"), [
    ("admin", True), ("write", True), ("triage", False), ("read", False), ("none", False)])
def test_the_run_example_lets_only_writers_events_reach_the_run_job(
        tmp_path: Path, permission: str, allowed: bool) -> None:
    # The run job shares one concurrency group per issue, where GitHub keeps one pending job:
    # an outsider's comment there would cancel a writer's pending command.
    workflow = yaml.safe_load((ROOT / "docs" / "actions" / "ratchet-run.yml").read_text())
    assert workflow["jobs"]["run"]["if"] == "needs.issue.outputs.allowed == 'true'"
    assert "concurrency" not in workflow and "concurrency" not in workflow["jobs"]["issue"]
    [step] = workflow["jobs"]["issue"]["steps"]
    stubs = tmp_path / "bin"
    stubs.mkdir()
    gh = stubs / "gh"  # GitHub's answer for the sender (the real gh prints the --jq result)
    gh.write_text(f"#!/bin/sh\ntest \"$2\" = repos/acme/widgets/collaborators/tristan/permission"
                  f" && echo {permission}\n")
    gh.chmod(0o755)
    output = tmp_path / "output"
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        env={"PATH": f"{stubs}:/usr/bin:/bin", "GITHUB_OUTPUT": str(output),
             "GITHUB_REPOSITORY": "acme/widgets", "SENDER": "tristan", "PULL": "",
             "NUMBER": "7"}, capture_output=True, text=True, check=False)

    assert result.returncode == 0, result.stderr
    lines = output.read_text().splitlines()
    assert lines == (["allowed=true", "number=7"] if allowed else ["allowed=false"])
    assert ("::notice" in result.stdout) is not allowed


# How the README and the example workflows name this action: a tagged release of wherever it
# is hosted (actionlint cannot follow a remote `uses:`, so its inputs are checked here).
HOSTED_ACTION = re.compile(r"^your-org/ratchet@v\d+$")


def _hosted_steps(document: object) -> list[dict]:  # type: ignore[type-arg]
    """Every step (of a workflow, or a README snippet's bare list of steps) using the action."""
    found: list[dict] = []  # type: ignore[type-arg]
    if isinstance(document, dict):
        if HOSTED_ACTION.match(str(document.get("uses", "")).strip()):
            found.append(document)
        for value in document.values():
            found += _hosted_steps(value)
    elif isinstance(document, list):
        for item in document:
            found += _hosted_steps(item)
    return found


def test_the_readme_and_the_examples_use_the_action_with_its_own_inputs() -> None:
    """What a reader copies from the README or docs/actions/ names only inputs action.yml
    declares, gives the required ones and a mode the action takes, and points at the root
    where `uses:` finds action.yml."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    declared = set(action["inputs"])
    required = {name for name, spec in action["inputs"].items() if spec.get("required")}
    readme = (ROOT / "README.md").read_text()
    snippets = [yaml.safe_load(block) for block in
                re.findall(r"```yaml\n(.*?)```", readme, flags=re.DOTALL)
                if "your-org/ratchet@" in block]
    examples = [yaml.safe_load(path.read_text())
                for path in sorted((ROOT / "docs" / "actions").glob("*.yml"))]
    steps = [step for document in [*snippets, *examples] for step in _hosted_steps(document)]
    assert len(snippets) >= 1 and len(steps) >= len(examples) + 1, steps
    modes = set(re.findall(r"\b(verify|run)\b", action["inputs"]["mode"]["description"]))
    for step in steps:
        given = set(step.get("with") or {})
        assert given <= declared, (step, given - declared)
        assert required <= given, (step, required - given)
        assert step["with"]["mode"] in modes, step
    assert "`action.yml` is at its root" in readme and (ROOT / "action.yml").is_file()
