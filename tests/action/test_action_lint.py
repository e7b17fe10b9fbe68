"""``action.yml`` and the example workflows pass actionlint, and ``action.yml`` keeps the rules
the Actions runner enforces on composite actions."""

from __future__ import annotations

import os
import re

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
