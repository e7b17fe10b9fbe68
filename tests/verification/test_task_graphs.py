"""A monorepo's task graph orders the plan: turbo's and Nx's `dependsOn` (`^build`: the builds
of the packages it depends on first; `build`: its own build first) become the checks' needs.

`turbo.json` is written in the shape of vercel/turborepo's examples and vuejs/language-tools'
(`tasks`, `$schema`, `outputs`, a package's `turbo.json` extending the root's, turbo 1's
`pipeline`); `nx.json` in the shape of nrwl/nx's own (`targetDefaults` with object entries,
`namedInputs`), a `project.json` target overriding it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import layouts
from verify_helpers import Files

from verification.config import VerifyConfig
from verification.plan import Plan, plan_change
from verification.task_graphs import TaskGraph, TaskNeeds
from verification.tree import GitTree

CONFIG = VerifyConfig()

TURBO_JSON = """\
{
  "$schema": "https://turbo.build/schema.json",
  "ui": "stream",
  "globalDependencies": ["tsconfig.base.json"],
  "tasks": {
    "build": {
      "dependsOn": ["^build"],
      "outputs": ["dist/**"]
    },
    "typecheck": {
      "dependsOn": ["^build"]
    },
    "test": {
      "dependsOn": ["build"],
      "outputs": ["coverage/**"]
    },
    "lint": {},
    "dev": {"cache": false, "persistent": true}
  }
}
"""

NX_JSON = """\
{
  "$schema": "./node_modules/nx/schemas/nx-schema.json",
  "namedInputs": {"default": ["{projectRoot}/**/*"], "production": ["default"]},
  "targetDefaults": {
    "build": {"dependsOn": ["^build"], "inputs": ["production", "^production"], "cache": true},
    "test": {"dependsOn": [{"target": "build", "projects": "dependencies"}]},
    "@nx/eslint:lint": {"cache": true}
  },
  "plugins": [{"plugin": "@nx/vite/plugin", "options": {"testTargetName": "test"}}]
}
"""


def monorepo(graph_file: str, graph: str) -> Files:
    """A pnpm workspace whose cli depends on parser; each package builds and tests."""
    files = layouts.pnpm_workspace()
    files[graph_file] = graph
    files["packages/parser/package.json"] = layouts.package_json({
        "name": "@acme/parser", "version": "1.0.0", "main": "src/index.ts",
        "scripts": {"build": "tsc -p .", "typecheck": "tsc --noEmit", "test": "vitest run"},
        "dependencies": {"acorn": "^8.12.1"},
    })  # fmt: skip
    files["packages/cli/package.json"] = layouts.package_json({
        "name": "@acme/cli", "version": "1.0.0",
        "scripts": {"build": "tsup src/main.ts", "typecheck": "tsc --noEmit",
                    "lint": "eslint src", "test": "vitest run"},
        "dependencies": {"@acme/parser": "workspace:*"},
    })  # fmt: skip
    return files


def needs(plan: Plan) -> dict[str, tuple[str, ...]]:
    return {check.key: check.needs for check in plan.checks}


def test_turbo_depends_on_orders_the_checks(make_repo: Callable[[Files], Path]) -> None:
    """The parser's entry is its source (`main: src/index.ts`), so nothing loads a build
    output: only turbo.json says cli's typecheck needs parser's build, and each test its own
    package's build; the lint needs nothing."""
    root = make_repo(monorepo("turbo.json", TURBO_JSON))
    plan = plan_change(["packages/cli/src/main.ts"], GitTree.discover(root), CONFIG).plan
    found = needs(plan)
    assert found["packages/cli:node-typecheck"] == ("packages/parser:node-build",)
    assert found["packages/cli:node-build"] == ("packages/parser:node-build",)
    assert found["packages/cli:node-test"] == ("packages/cli:node-build",)
    assert found["packages/cli:node-lint"] == ()
    # parser's build is planned although parser did not change: cli's checks need it.
    assert "packages/parser:node-build" in found
    assert "packages/parser:node-test" not in found


def test_a_package_turbo_json_overrides_the_root_task(make_repo: Callable[[Files], Path]) -> None:
    files = monorepo("turbo.json", TURBO_JSON)
    files["packages/cli/turbo.json"] = json.dumps(
        {"extends": ["//"], "tasks": {"test": {"dependsOn": ["^build"]}}})
    root = make_repo(files)
    plan = plan_change(["packages/cli/src/main.ts"], GitTree.discover(root), CONFIG).plan
    assert needs(plan)["packages/cli:node-test"] == ("packages/parser:node-build",)


def test_nx_target_defaults_order_the_checks(make_repo: Callable[[Files], Path]) -> None:
    files = monorepo("nx.json", NX_JSON)
    files["packages/parser/project.json"] = json.dumps({
        "name": "parser", "sourceRoot": "packages/parser/src",
        "targets": {"typecheck": {"dependsOn": ["build"]}},
    })  # fmt: skip
    root = make_repo(files)
    plan = plan_change(["packages/cli/src/main.ts", "packages/parser/src/index.ts"],
                       GitTree.discover(root), CONFIG).plan
    found = needs(plan)
    assert found["packages/cli:node-test"] == ("packages/parser:node-build",)
    assert found["packages/cli:node-build"] == ("packages/parser:node-build",)
    assert found["packages/parser:node-typecheck"] == ("packages/parser:node-build",)
    assert found["packages/cli:node-typecheck"] == ()  # nx declares no typecheck default


def test_turbo_one_pipelines_and_package_keys_are_read() -> None:
    files = {
        "turbo.json": json.dumps({"pipeline": {
            "build": {"dependsOn": ["^build", "$NODE_ENV"]},
            "web#test": {"dependsOn": ["build", "@acme/ui#build"]},
            "//#lint": {"dependsOn": []},
        }}),
        "apps/web/package.json": json.dumps({"name": "web"}),
    }  # fmt: skip
    graph = TaskGraph(read_json=lambda p: json.loads(files.get(p, "{}")),
                      has=lambda folder, name: f"{folder}/{name}".lstrip("./") in files
                      or (folder == "." and name in files),
                      package_name=lambda folder: json.loads(
                          files.get(f"{folder}/package.json", "{}")).get("name"))
    assert graph.needs("apps/web", "build") == TaskNeeds((), ("build",))
    assert graph.needs("apps/web", "test") == TaskNeeds(("build",), ())
    assert graph.needs(".", "lint") == TaskNeeds()
    assert graph.needs("apps/web", "lint") is None
