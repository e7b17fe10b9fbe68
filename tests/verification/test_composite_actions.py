"""A job's steps `uses: ./.github/actions/<name>` run a local composite action: its `run:`
steps are what CI runs (the install, the build, the tests), planned in the step's place.

The action files are written as GitHub's "Metadata syntax for GitHub Actions" documents them
(`inputs` with `description`, `required`, `default`; `runs.using: composite` with `steps`
that name their `shell`), each planned through `plan_change` on a real git repository, with
the base revision as the base.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import layouts
import pytest
from test_ci_workflows import by_key, change, steps
from verify_helpers import Files, git, write

from app.verify_cli import configure_parser, run_verify
from runner.network import NetworkSettings
from runner.sandbox import Sandbox
from verification.explain import render_text

# The job's `defaults.run` (packages/cli) applies to its own steps, not to the actions'.
CI = """\
name: CI
on:
  pull_request:
  push:
    branches: [main]

jobs:
  test:
    runs-on: ubuntu-latest
    defaults:
      run:
        working-directory: packages/cli
    env:
      CI_MODE: strict
    steps:
      - uses: actions/checkout@v4
      - uses: ./.github/actions/setup
        with:
          node-version: 20
      - name: Build
        uses: ./.github/actions/build
        with:
          Target: web  # input names are read in any case, as GitHub does
      - name: Lint the CLI
        run: pnpm run lint
"""
SETUP_ACTION = """\
name: 'Setup'
description: 'Install pnpm, Node.js and the dependencies'
inputs:
  node-version:
    description: 'The Node.js version to install'
    required: false
    default: '22'
  install-args:
    description: 'Flags for pnpm install'
    required: false
    default: '--frozen-lockfile'
runs:
  using: 'composite'
  steps:
    - uses: pnpm/action-setup@v4
    - uses: actions/setup-node@v4
      with:
        node-version: ${{ inputs.node-version }}
        cache: pnpm
    - name: Install dependencies
      shell: bash
      run: pnpm install ${{ inputs.install-args }}
"""
BUILD_ACTION = """\
name: Build
description: Build every package, then test them
inputs:
  target:
    description: What to build for
    required: true
  mode:
    description: The build mode
    required: false
    default: production
runs:
  using: composite
  steps:
    - name: Build packages
      shell: bash
      run: pnpm -r run build --mode ${{ inputs.mode }} --target ${{ inputs.target }}
    - name: Run tests
      if: inputs.target == 'web'
      shell: bash
      run: pnpm -r test
    - name: Run node tests
      if: inputs.target == 'node'
      shell: bash
      run: pnpm -r test:node
    - name: Check the bundle
      shell: bash
      env:
        BUNDLE_TOKEN: ${{ secrets.BUNDLE_TOKEN }}
      run: node scripts/check-bundle.mjs
"""


def repo(**actions: str) -> Files:
    files = {**layouts.pnpm_workspace(), ".github/workflows/ci.yml": CI,
             ".github/actions/setup/action.yml": SETUP_ACTION,
             ".github/actions/build/action.yml": BUILD_ACTION}
    files.update({f".github/actions/{name}/action.yml": text for name, text in actions.items()})
    return files


def test_a_composite_actions_run_steps_are_planned_in_its_place_with_its_inputs(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(repo())
    plan = change(root, {"packages/cli/src/main.ts": "export const x = 1\n"}).plan
    checks = by_key(plan)
    build, tests, lint = ("ci.test.build.build-packages", "ci.test.build.run-tests",
                          "packages/cli:ci.test.lint-the-cli")
    assert list(checks) == [build, tests, lint]
    # The `with:` value (target) and the default (mode); the job's env; the repository's
    # root, not the job's defaults.run, for the action's steps.
    assert checks[build].command == (
        "export CI_MODE=strict; pnpm -r run build --mode production --target web")
    assert (checks[build].workspace, checks[tests].workspace, checks[lint].workspace) == (
        ".", ".", "packages/cli")
    assert checks[tests].command == "export CI_MODE=strict; pnpm -r test"
    assert (checks[build].needs, checks[tests].needs, checks[lint].needs) == (
        (), (build,), (tests,))
    # The setup action's toolchain actions prepare the runner; its install is the setup,
    # with the input's default flags.
    assert [(w.path, w.setup) for w in plan.workspaces if w.setup] == [
        (".", ("export CI_MODE=strict; pnpm install --frozen-lockfile",))]
    assert steps(plan) == {("test", "Build > Check the bundle",
                            "needs secrets.BUNDLE_TOKEN: secrets never reach the sandbox")}


NESTED_ACTION = """\
name: Checks
description: Type-check, then build through the build action
inputs:
  strict:
    description: Whether tsc runs with --strict
    default: 'true'
runs:
  using: composite
  steps:
    - id: types
      shell: bash
      run: pnpm exec tsc --noEmit --strict ${{ inputs.strict }}
    - uses: ./.github/actions/build
      with:
        target: node
        mode: development
"""
CYCLE_A = """\
name: A
description: Lints, then runs B
runs:
  using: composite
  steps:
    - name: Lint
      shell: bash
      run: pnpm run lint
    - uses: ./.github/actions/cycle-b
"""
CYCLE_B = """\
name: B
description: Runs A again
runs:
  using: composite
  steps:
    - uses: ./.github/actions/cycle-a
"""
NODE_ACTION = """\
name: 'Label the pull request'
description: 'Adds labels from the changed files'
inputs:
  token:
    description: 'A GitHub token'
    required: true
runs:
  using: 'node20'
  main: 'dist/index.js'
"""


def test_nested_composites_expand_a_cycle_and_a_node_action_are_listed_with_why(
    make_repo: Callable[[Files], Path],
) -> None:
    workflow = """\
on: pull_request
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: ./.github/actions/checks
      - uses: ./.github/actions/cycle-a
      - uses: ./.github/actions/label
        with:
          token: ${{ secrets.GITHUB_TOKEN }}
      - uses: ./.github/actions/missing
      - uses: ./.github/actions/broken
      - uses: ./.github/actions/checks
        with:
          strict: 'false'
"""
    root = make_repo(repo(checks=NESTED_ACTION, **{"cycle-a": CYCLE_A, "cycle-b": CYCLE_B},
                          label=NODE_ACTION, broken="runs: [composite\n")
                     | {".github/workflows/check.yml": workflow})
    plan = change(root, {"packages/cli/src/main.ts": "export const x = 1\n"}).plan
    ours = [c for c in plan.checks if c.key.startswith("check.")]
    # The nested build action's steps with the inputs the checks action passes it.
    assert [(c.key, c.command) for c in ours] == [
        ("check.check.checks.types", "pnpm exec tsc --noEmit --strict true"),
        ("check.check.checks.build.build-packages",
         "pnpm -r run build --mode development --target node"),
        ("check.check.checks.build.run-node-tests", "pnpm -r test:node"),
        ("check.check.cycle-a.lint", "pnpm run lint"),
        # The same action again, with another input: its keys say which use they are.
        ("check.check.checks-6.types", "pnpm exec tsc --noEmit --strict false"),
        ("check.check.checks-6.build.build-packages",
         "pnpm -r run build --mode development --target node"),
        ("check.check.checks-6.build.run-node-tests", "pnpm -r test:node"),
    ]
    unverified = steps(plan)
    [broken] = [s for s in unverified if s[1] == "./.github/actions/broken"]
    assert broken[2].startswith("uses ./.github/actions/broken: "
                                ".github/actions/broken/action.yml ") and "YAML" in broken[2]
    assert {s for s in unverified if s[0] == "check"} - {broken} == {
        ("check", "./.github/actions/checks > ./.github/actions/build > Check the bundle",
         "needs secrets.BUNDLE_TOKEN: secrets never reach the sandbox"),
        ("check", "./.github/actions/cycle-a > ./.github/actions/cycle-b > "
                  "./.github/actions/cycle-a",
         "uses ./.github/actions/cycle-a inside itself (.github/actions/cycle-a > "
         ".github/actions/cycle-b > .github/actions/cycle-a): a cycle, not expanded"),
        ("check", "./.github/actions/label", "uses the local action ./.github/actions/label, "
                  "which runs with node20: only a composite action's steps are planned"),
        ("check", "./.github/actions/missing", "uses ./.github/actions/missing: "
                  ".github/actions/missing has no action.yml or action.yaml planning could "
                  "read (absent, or not UTF-8 text of a readable size)"),
    }


def test_composites_nested_past_the_limit_are_listed_not_expanded(
    make_repo: Callable[[Files], Path],
) -> None:
    chain = {f"level-{n}": (f"name: Level {n}\ndescription: Runs level {n + 1}\nruns:\n"
                            f"  using: composite\n  steps:\n    - shell: bash\n"
                            f"      run: pnpm run lint --level {n}\n"
                            f"    - uses: ./.github/actions/level-{n + 1}\n")
             for n in range(12)}
    workflow = ("on: pull_request\njobs:\n  deep:\n    runs-on: ubuntu-latest\n    steps:\n"
                "      - uses: ./.github/actions/level-0\n")
    root = make_repo(repo(**chain) | {".github/workflows/deep.yml": workflow})
    plan = change(root, {"packages/cli/src/main.ts": "export const x = 1\n"}).plan
    levels = [c.command for c in plan.checks if c.key.startswith("deep.")]
    assert levels == [f"pnpm run lint --level {n}" for n in range(8)]
    [deep] = [s for s in plan.unverified_steps if s.job == "deep"]
    assert deep.reason == ("uses ./.github/actions/level-8 through more than 8 composite "
                           "actions: not expanded")


def test_a_change_to_a_composite_action_plans_the_checks_of_the_jobs_using_it(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(repo(label=NODE_ACTION))
    # The change rewrites the build action's test step: the base's action is what runs.
    edited = BUILD_ACTION.replace("run: pnpm -r test\n", "run: echo skipped\n")
    result = change(root, {".github/actions/build/action.yml": edited})
    plan = result.plan
    assert [c.command for c in plan.checks] == [
        "export CI_MODE=strict; pnpm -r run build --mode production --target web",
        "export CI_MODE=strict; pnpm -r test",
        "export CI_MODE=strict; pnpm run lint",
    ]
    assert plan.unverified == ()
    assert ("because .github/actions/build/action.yml: .github/workflows/ci.yml runs on "
            "pull_request -> job test, step 'Build > Run tests'") in render_text(result.explanation)
    # A script in the action's folder is the action's too.
    git(root, "checkout", "-q", "main")
    git(root, "branch", "-q", "-D", "change")
    script = change(root, {".github/actions/setup/pnpm-store.sh": "pnpm store prune\n"}).plan
    assert len(script.checks) == 3 and script.unverified == ()
    # A node action's file, which no job runs here, stays unverified, saying so.
    git(root, "checkout", "-q", "main")
    git(root, "branch", "-q", "-D", "change")
    other = change(root, {".github/actions/label/action.yml": NODE_ACTION + "# v2\n"})
    assert other.plan.checks == ()
    assert other.plan.unverified == (".github/actions/label/action.yml",)
    assert "a workflow file: no check verifies it" in render_text(other.explanation)


def test_an_action_the_change_adds_is_not_read_from_the_change(
    make_repo: Callable[[Files], Path],
) -> None:
    workflow = CI.replace("./.github/actions/build", "./.github/actions/new")
    root = make_repo(repo() | {".github/workflows/ci.yml": workflow})
    plan = change(root, {".github/actions/new/action.yml": BUILD_ACTION,
                         "packages/cli/src/main.ts": "export const x = 1\n"}).plan
    assert [c.key for c in plan.checks if "ci." in c.key] == ["packages/cli:ci.test.lint-the-cli"]
    assert ("test", "Build", "uses ./.github/actions/new: .github/actions/new has no "
            "action.yml or action.yaml planning could read (absent, or not UTF-8 text of a "
            "readable size)") in steps(plan)


def test_ratchet_verify_plan_only_json_names_the_expanded_steps(
    make_repo: Callable[[Files], Path], capsys: pytest.CaptureFixture[str],
) -> None:
    root = make_repo(repo())
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"packages/cli/src/main.ts": "export const y = 1\n"})
    git(root, "commit", "-qam", "change")
    parser = argparse.ArgumentParser(prog="ratchet verify")
    configure_parser(parser)
    args = parser.parse_args(["--repo", str(root), "--base", "main", "--head", "feature",
                              "--plan-only", "--json"])
    assert run_verify(args, Sandbox(), NetworkSettings()) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert [(c["workspace"], c["id"]) for c in plan["checks"]] == [
        (".", "ci.test.build.build-packages"), (".", "ci.test.build.run-tests"),
        ("packages/cli", "ci.test.lint-the-cli")]
    assert plan["unverified_steps"] == [
        {"workflow": ".github/workflows/ci.yml", "job": "test",
         "step": "Build > Check the bundle",
         "reason": "needs secrets.BUNDLE_TOKEN: secrets never reach the sandbox"}]


SCRIPTED_ACTION = """\
name: Scripted checks
description: Runs the checks kept beside this action.yml
runs:
  using: composite
  steps:
    - name: Check the licenses
      shell: bash
      run: ${{ github.action_path }}/licenses.sh --strict
    - name: Check the CLI's docs
      shell: bash
      working-directory: packages/cli
      run: bash "${{ github.action_path }}/docs.sh"
"""


def test_github_action_path_names_the_actions_folder_from_where_each_step_runs(
    make_repo: Callable[[Files], Path],
) -> None:
    """GitHub gives a composite's steps `github.action_path` (the absolute path of the
    action's folder), the documented way to run the scripts kept with it; the plan holds no
    host's paths, so it names the folder from each step's working directory."""
    workflow = """\
on: pull_request
jobs:
  checks:
    runs-on: ubuntu-latest
    steps:
      - uses: ./.github/actions/scripted
"""
    files = {**repo(scripted=SCRIPTED_ACTION), ".github/workflows/ci.yml": workflow,
             ".github/actions/scripted/licenses.sh": "#!/bin/sh\nexit 0\n",
             ".github/actions/scripted/docs.sh": "#!/bin/sh\nexit 0\n"}
    root = make_repo(files)
    plan = change(root, {"packages/cli/src/main.ts": "export const x = 1\n"}).plan
    checks = by_key(plan)
    licenses = checks["ci.checks.scripted.check-the-licenses"]
    docs = checks["packages/cli:ci.checks.scripted.check-the-cli-s-docs"]
    assert (licenses.workspace, licenses.command) == (
        ".", "./.github/actions/scripted/licenses.sh --strict")
    assert (docs.workspace, docs.command) == (
        "packages/cli", 'bash "../../.github/actions/scripted/docs.sh"')
    assert not any("action_path" in s.reason for s in plan.unverified_steps)
