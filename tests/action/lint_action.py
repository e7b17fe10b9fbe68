"""actionlint over ``action.yml`` and the example workflows (``make test`` runs this file).

actionlint checks workflows. A workflow that ``uses: ./`` makes it check the inputs and
outputs callers use against ``action.yml`` (``tests/action/workflows/``), but not the
composite's own steps; so the steps are also linted as the steps of a generated workflow
whose ``workflow_call`` inputs are the action's, which checks their expressions, contexts,
step outputs, ``uses:`` inputs (``actions/cache``) and shells.

    .venv/bin/python tests/action/lint_action.py     # exit 0 when everything passes
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = [*sorted((ROOT / "docs" / "actions").glob("*.yml")),
             *sorted((ROOT / "tests" / "action" / "workflows").glob("*.yml"))]


def actionlint() -> str | None:
    """The actionlint executable of this environment (installed by the dev extras)."""
    beside = Path(sys.executable).with_name("actionlint")
    return str(beside) if beside.is_file() else shutil.which("actionlint")


def composite_as_workflow(action: dict) -> dict:  # type: ignore[type-arg]
    """The composite's steps as one job of a workflow called with the action's inputs."""
    inputs = {name: {"type": "string", "required": False,
                     "description": str(spec.get("description", ""))}
              for name, spec in action["inputs"].items()}
    return {
        "name": f"{action['name']} (action.yml's steps)",
        "on": {"workflow_call": {"inputs": inputs}},
        "permissions": {"contents": "read"},
        "jobs": {"action": {"runs-on": "ubuntu-24.04", "steps": action["runs"]["steps"]}},
    }


def lint() -> tuple[int, str]:
    executable = actionlint()
    if executable is None:
        return 2, "actionlint is not installed: pip install -e '.[dev]' (make test does)"
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    with tempfile.TemporaryDirectory() as folder:
        generated = Path(folder) / "action-steps.yml"
        generated.write_text(yaml.safe_dump(composite_as_workflow(action), sort_keys=False))
        result = subprocess.run([executable, "-no-color", "-oneline", *map(str, WORKFLOWS),
                                 str(generated)], cwd=ROOT, capture_output=True, text=True,
                                check=False)
    output = re.sub(r"\S*action-steps\.yml", "action.yml (its steps)",
                    result.stdout + result.stderr)
    return result.returncode, output


if __name__ == "__main__":
    code, output = lint()
    sys.stdout.write(output)
    sys.exit(code)
