"""Only declared members are workspaces; test data never is (issue 22, item 4).

Real git repositories shaped like the monorepos the issue measured: folders nested deeper than
the member glob, excluded members, a module-type `test/package.json`, `test/resources`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import layouts
from layouts import package_json
from verify_helpers import Files

from verification.config import VerifyConfig
from verification.plan import build_plan
from verification.tree import GitTree


def workspaces(root: Path, *changed: str) -> set[str]:
    plan = build_plan(list(changed), GitTree.discover(root), VerifyConfig())
    return {check.key.rpartition(":")[0] or "." for check in plan.checks}


def test_only_declared_node_members_are_workspaces(make_repo: Callable[[Files], Path]) -> None:
    files = layouts.pnpm_workspace()
    files["pnpm-workspace.yaml"] = "packages:\n  - 'packages/*'\n  - '!packages/legacy'\n"
    scripts = {"build": "exit 1", "lint": "exit 1", "test": "exit 1"}
    files.update({
        # Deeper than `packages/*`: an example app the parser ships, not installed by pnpm.
        "packages/parser/examples/app/package.json": package_json(
            {"name": "example-app", "scripts": scripts}),
        "packages/parser/examples/app/main.js": "console.log(1);\n",
        # Excluded with `!packages/legacy`.
        "packages/legacy/package.json": package_json({"name": "legacy", "scripts": scripts}),
        "packages/legacy/index.js": "module.exports = 1;\n",
        # Tests loaded as ES modules; project templates and test resources.
        "packages/cli/test/package.json": package_json({"type": "module"}),
        "packages/cli/test/main.test.js": "export {};\n",
        "packages/cli/test/resources/project/package.json": package_json(
            {"name": "resource", "scripts": scripts}),
        "packages/cli/templates/starter/package.json": package_json(
            {"name": "starter", "scripts": scripts}),
    })  # fmt: skip
    root = make_repo(files)
    # The example is code of the parser: the parser, its dependent and the root runners.
    assert workspaces(root, "packages/parser/examples/app/main.js") == {
        ".", "packages/parser", "packages/cli"}
    assert workspaces(root, "packages/legacy/index.js") == {"."}  # the root's lint and test
    for changed in ("packages/cli/test/main.test.js",
                    "packages/cli/test/resources/project/package.json",
                    "packages/cli/templates/starter/package.json"):
        assert workspaces(root, changed) == {"packages/cli"}, changed


def test_a_locked_project_below_a_test_folder_stays_a_workspace(
    make_repo: Callable[[Files], Path],
) -> None:
    """An end-to-end suite with its own lockfile installs and runs on its own."""
    files = layouts.pnpm_workspace()
    files.update({
        "test/e2e-suite/package.json": package_json(
            {"name": "e2e", "scripts": {"test": "playwright test"}}),
        "test/e2e-suite/package-lock.json": '{"lockfileVersion": 3, "packages": {}}\n',
        "test/e2e-suite/spec.js": "export {};\n",
    })  # fmt: skip
    root = make_repo(files)
    assert workspaces(root, "test/e2e-suite/spec.js") == {"test/e2e-suite"}


def test_a_module_type_test_package_of_a_single_package_is_not_a_workspace(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({
        "package.json": package_json({"name": "lib", "scripts": {"test": "node --test"}}),
        "package-lock.json": '{"lockfileVersion": 3, "packages": {}}\n',
        "index.js": "module.exports = 1;\n",
        "test/package.json": package_json({"type": "module"}),
        "test/index.test.js": "export {};\n",
    })  # fmt: skip
    assert workspaces(root, "test/index.test.js") == {"."}
    assert workspaces(root, "test/package.json") == {"."}
