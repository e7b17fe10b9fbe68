"""The repository's CI workflows are a source of checks: what they run, where, in what order,
with which install, and what they run that the sandbox cannot (listed, never dropped).

The workflows are written the way real repositories write them (the shapes of vuejs/core's
ci.yml and test.yml, pola-rs/polars' test-python.yml, astral-sh/uv's ci.yml and check-lint.yml,
biomejs/biome's pull_request.yml, prometheus' ci.yml), each planned through `plan_change` on a
real git repository, with the base revision as the base.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import layouts
import pytest
from verify_helpers import Files, git, write

from app.verify_cli import configure_parser, run_verify
from plumbing.git import Git
from runner.network import NetworkSettings
from runner.sandbox import Sandbox
from verification.config import VerifyConfig
from verification.evidence import EvidenceReport, build_bundle, render_summary
from verification.explain import render_text
from verification.model import PlannedCheck
from verification.plan import Plan, PlanResult, plan_change
from verification.tree import GitRevisionTree, GitTree
from verification.workflows import MAX_WORKFLOW_BYTES

CONFIG = VerifyConfig()

# A pnpm monorepo's CI in the shape of vuejs/core's: a caller workflow on push and
# pull_request calling a reusable test workflow, a Windows job, a release job on secrets.
VUE_LIKE_CI = """\
name: 'ci'
on:
  push:
    branches:
      - '**'
    tags:
      - '!**'
  pull_request:
    branches:
      - main

concurrency:
  group: ${{ github.workflow }}-${{ github.event.pull_request.number || github.ref }}
  cancel-in-progress: ${{ github.event_name == 'pull_request' }}

jobs:
  test:
    if: ${{ ! startsWith(github.event.head_commit.message, 'release:') }}
    uses: ./.github/workflows/test.yml

  continuous-release:
    if: github.event_name == 'push'
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pnpm install
      - name: Release
        run: pnpm publish -r --no-git-checks
        env:
          NPM_TOKEN: ${{ secrets.NPM_TOKEN }}
"""
VUE_LIKE_TEST = """\
name: 'test'
on: workflow_call

jobs:
  unit-test:
    runs-on: ubuntu-latest
    env:
      PUPPETEER_SKIP_DOWNLOAD: 'true'
    steps:
      - uses: actions/checkout@v4
      - name: Install pnpm
        uses: pnpm/action-setup@v4
      - name: Install Node.js
        uses: actions/setup-node@v4
        with:
          node-version-file: '.node-version'
          cache: 'pnpm'
      - run: pnpm install --frozen-lockfile --prefer-offline
      - name: Run unit tests
        run: pnpm -r test

  e2e-test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pnpm install
      - run: node node_modules/puppeteer/install.mjs
      - run: pnpm exec playwright install chromium
      - name: Run e2e tests
        run: pnpm run test-e2e

  unit-test-windows:
    runs-on: windows-latest
    steps:
      - uses: actions/checkout@v4
      - run: pnpm install
      - run: pnpm -r test

  lint-and-test-dts:
    needs: unit-test
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: pnpm/action-setup@v4
      - run: pnpm install --frozen-lockfile --prefer-offline
      - parallel:
          - name: Run eslint
            run: pnpm run lint
          - name: Run prettier
            run: pnpm exec prettier --check .
      - name: Upload coverage
        uses: codecov/codecov-action@v4
        with:
          token: ${{ secrets.CODECOV_TOKEN }}
"""

# A Python package built from Rust crates, tested in its folder, in the shape of polars'
# test-python.yml: path filters, `defaults.run.working-directory`, a matrix with includes.
POLARS_LIKE_TEST = """\
name: Test Python

on:
  pull_request:
    paths:
      - Cargo.lock
      - py-acme/**
      - crates/**
      - '!crates/*/benches/**'
      - .github/workflows/test-python.yml

env:
  RUSTFLAGS: -C debuginfo=0

defaults:
  run:
    working-directory: py-acme
    shell: bash

jobs:
  test-python:
    runs-on: ${{ matrix.os }}
    strategy:
      fail-fast: false
      matrix:
        os: [windows-latest, ubuntu-latest]
        python-version: ['3.10', '3.13']
        exclude:
          - os: ubuntu-latest
            python-version: '3.10'
        include:
          - os: ubuntu-latest
            python-version: '3.13'
            streaming: true
    steps:
      - uses: actions/checkout@v4
      - name: Set up Python
        uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
      - name: Enable long paths on Windows
        if: matrix.os == 'windows-latest'
        shell: powershell
        run: Set-ItemProperty -Path 'HKLM:\\SYSTEM' -Name 'LongPathsEnabled' -Value 1
      - name: Install Python dependencies
        run: |
          pip install uv
          uv pip install --compile-bytecode -r requirements-dev.txt
      - name: Set up Rust
        run: rustup show
      - name: Install the package
        run: maturin develop --manifest-path ../crates/acme_py/Cargo.toml
      - name: Run tests
        if: github.event_name == 'pull_request' && matrix.streaming
        env:
          ACME_STREAMING: 1
        run: pytest -n auto -m "not release" --python ${{ matrix.python-version }}
      - name: Run tests on 3.10
        if: matrix.python-version == '3.10'
        run: pytest tests/old
"""


def rust_python_repo() -> Files:
    files = layouts.cargo_workspace()
    files.update({
        ".github/workflows/test-python.yml": POLARS_LIKE_TEST,
        "py-acme/pyproject.toml": (
            '[project]\nname = "acme"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\n'
            'testpaths = ["tests"]\n'),
        "py-acme/requirements-dev.txt": "pytest\n",
        "py-acme/tests/test_acme.py": "def test_acme():\n    assert True\n",
        "crates/acme_linter/README.md": "# the linter\n",
    })  # fmt: skip
    return files


def pnpm_repo() -> Files:
    return {**layouts.pnpm_workspace(), ".github/workflows/ci.yml": VUE_LIKE_CI,
            ".github/workflows/test.yml": VUE_LIKE_TEST}


def change(root: Path, files: Files, *, deleted: tuple[str, ...] = ()) -> PlanResult:
    """Commit `files` on a branch and plan that commit against main, as `ratchet verify`
    does (the base's config and workflows)."""
    git(root, "checkout", "-q", "-b", "change")
    write(root, files)
    for path in deleted:
        git(root, "rm", "-q", path)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    repo = Git(git_dir=root / ".git")
    changed = git(root, "diff", "--name-only", "main", "change").split()
    return plan_change(changed, GitRevisionTree(repo, "change"), CONFIG,
                       base=GitRevisionTree(repo, "main"))


def by_key(plan: Plan) -> dict[str, PlannedCheck]:
    return {check.key: check for check in plan.checks}


def steps(plan: Plan) -> set[tuple[str, str, str]]:
    return {(s.job, s.step, s.reason) for s in plan.unverified_steps}


def test_a_pnpm_monorepos_ci_is_planned_in_its_order_with_its_install(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(pnpm_repo())
    result = change(root, {"packages/cli/src/main.ts": "export const x = 1\n"})
    plan = result.plan
    checks = by_key(plan)
    unit = "ci.test.unit-test.run-unit-tests"
    eslint = "ci.test.lint-and-test-dts.run-eslint"
    prettier = "ci.test.lint-and-test-dts.run-prettier"
    assert list(checks) == [unit, eslint, prettier]
    # The job's env, its command as written; CI's order: lint-and-test-dts needs unit-test.
    assert checks[unit].command == "export PUPPETEER_SKIP_DOWNLOAD=true; pnpm -r test"
    assert (checks[unit].needs, checks[eslint].needs, checks[prettier].needs) == (
        (), (unit,), (eslint,))
    assert (checks[eslint].command, checks[eslint].kind) == ("pnpm run lint", "lint")
    assert (checks[prettier].kind, checks[unit].kind) == ("lint", "test")  # as tools.py reads it
    # CI's install, with CI's flags, replaces the detected `pnpm install --frozen-lockfile`.
    # The first job's, with its environment: one install of the root for every job.
    assert [(w.path, w.setup) for w in plan.workspaces if w.setup] == [
        (".", ("export PUPPETEER_SKIP_DOWNLOAD=true; pnpm install --frozen-lockfile "
               "--prefer-offline",))]
    assert all(c.setups == (".",) for c in plan.checks)
    # `pnpm -r test` runs cli's test script and `pnpm run lint` the root's: not planned twice.
    assert "packages/cli:node-test" not in checks and "node-lint" not in checks
    # What CI runs and the sandbox cannot is listed with why; the push-only job is not run.
    assert steps(plan) == {
        ("test/unit-test-windows", "",
         "runs on windows-latest only (no Linux combination): only Linux jobs run here"),
        ("test/e2e-test", "Run e2e tests", "needs the browsers 'node node_modules/puppeteer/"
         "install.mjs' downloads, which does not run here"),
        ("test/lint-and-test-dts", "Upload coverage",
         "uses the action codecov/codecov-action@v4: actions do not run in the sandbox"),
    }
    assert plan.unverified == ()
    text = render_text(result.explanation)
    assert "CI steps not run here (not verified):" in text
    assert (".github/workflows/ci.yml job test/unit-test-windows: runs on windows-latest only"
            in text)


def test_a_workflows_path_filters_decide_which_changes_run_it(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(rust_python_repo())
    plan = change(root, {"crates/acme_linter/src/lib.rs": "pub fn lint() -> u8 { 1 }\n"}).plan
    checks = by_key(plan)
    # The paths name crates/**: the Python tests of py-acme run for a Rust change, in
    # py-acme, after the build, with the first Linux combination of the matrix
    # (ubuntu-latest, 3.13, streaming: the include extended it).
    build = "py-acme:test-python.test-python.install-the-package"
    tests = "py-acme:test-python.test-python.run-tests"
    assert checks[build].command == (
        "export RUSTFLAGS='-C debuginfo=0'; maturin develop --manifest-path "
        "../crates/acme_py/Cargo.toml")
    assert (checks[build].kind, checks[build].writes) == ("build", ("py-acme",))
    assert checks[tests].command == (
        "export ACME_STREAMING=1 RUSTFLAGS='-C debuginfo=0'; "
        "pytest -n auto -m \"not release\" --python 3.13")
    assert checks[tests].needs == (build,)
    assert "py-acme:test-python.test-python.run-tests-on-3-10" not in checks
    # The install step is py-acme's setup, CI's commands as written (through bash: two lines).
    setup = {w.path: w.setup for w in plan.workspaces}["py-acme"]
    assert len(setup) == 1 and setup[0].startswith("export RUSTFLAGS='-C debuginfo=0'; bash ")
    assert "uv pip install --compile-bytecode -r requirements-dev.txt" in setup[0]
    assert checks[tests].setups == ("py-acme",)
    # The Rust checks of the crate stay: CI does not run cargo test here.
    assert {"cargo-check", "cargo-test"} <= checks.keys()


def test_a_change_its_workflows_filters_leave_out_runs_none_of_it(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(rust_python_repo())
    # `!crates/*/benches/**` comes after `crates/**`: a crate's benchmarks are excluded again.
    plan = change(root, {"crates/acme_linter/benches/lint.rs": "fn main() {}\n"}).plan
    assert not any(c.key.startswith("py-acme:") for c in plan.checks)
    assert {"cargo-check", "cargo-test"} <= {c.key for c in plan.checks}
    # editors/vscode is not in the paths: the workflow does not run for it.
    other = change_again(root, {"editors/vscode/extension.js": "module.exports = 2;\n"})
    assert not any("test-python" in c.key for c in other.checks)
    assert other.unverified_steps == ()


def change_again(root: Path, files: Files) -> Plan:
    git(root, "checkout", "-q", "main")
    git(root, "branch", "-q", "-D", "change")
    return change(root, files).plan


def test_a_job_whose_if_needs_an_unknown_runs_and_says_so(
    make_repo: Callable[[Files], Path],
) -> None:
    workflow = """\
on: [pull_request]
jobs:
  plan:
    runs-on: ubuntu-latest
    outputs:
      code: ${{ steps.changed.outputs.code }}
    steps:
      - uses: actions/checkout@v4
      - id: changed
        run: echo "code=true" >> "$GITHUB_OUTPUT"
  lint:
    needs: plan
    if: ${{ needs.plan.outputs.code == 'true' || github.ref == 'refs/heads/main' }}
    runs-on: ubuntu-slim
    steps:
      - uses: astral-sh/setup-uv@v6
      - run: uv run --only-group=check ruff check .
  docs:
    if: github.event_name == 'push'
    runs-on: ubuntu-latest
    steps:
      - run: uv run mkdocs build --strict
"""
    root = make_repo({**layouts.uv_workspace(), ".github/workflows/ci.yml": workflow})
    result = change(root, {"packages/core/src/acme_core/__init__.py": "VERSION = 2\n"})
    checks = by_key(result.plan)
    lint = "ci.lint.uv-run-only-group-check-ruff-check"
    assert checks[lint].command == "uv run --only-group=check ruff check ."
    assert "ci.docs.uv-run-mkdocs-build-strict" not in checks  # push only
    # The detected ruff of the root is the CI step's: same folder, kind and ecosystem.
    assert "ruff" not in checks
    because = result.explanation.reasons[lint]["packages/core/src/acme_core/__init__.py"]
    assert any("needs needs.plan.outputs.code: planned as if true" in step
               for step in because), because


def test_paths_filter_outputs_decide_the_jobs_that_need_them(
    make_repo: Callable[[Files], Path],
) -> None:
    workflow = """\
on: pull_request
jobs:
  changes:
    runs-on: ubuntu-latest
    outputs:
      python: ${{ steps.filter.outputs.python }}
      web: ${{ steps.filter.outputs.web }}
    steps:
      - uses: actions/checkout@v4
      - uses: dorny/paths-filter@v3
        id: filter
        with:
          filters: |
            python:
              - 'packages/**/*.py'
              - 'pyproject.toml'
            web:
              - 'web/**'
  python:
    needs: changes
    if: needs.changes.outputs.python == 'true'
    runs-on: ubuntu-latest
    steps:
      - run: uv run pytest packages
  web:
    needs: changes
    if: ${{ needs.changes.outputs.web == 'true' }}
    runs-on: ubuntu-latest
    steps:
      - run: npm test
"""
    root = make_repo({**layouts.uv_workspace(), ".github/workflows/ci.yml": workflow})
    checks = by_key(change(root, {"packages/cli/src/acme_cli/__init__.py": "import os\n"}).plan)
    assert "ci.python.uv-run-pytest-packages" in checks
    assert not any(key.startswith("ci.web") for key in checks)


def test_a_step_on_secrets_a_container_job_and_services_are_listed_not_run(
    make_repo: Callable[[Files], Path],
) -> None:
    workflow = """\
on:
  pull_request:
  push:
    branches: [main]
    tags: ['v*']
jobs:
  test_go:
    name: Go tests
    runs-on: ubuntu-latest
    container:
      image: quay.io/prometheus/golang-builder:1.22-base
    steps:
      - uses: actions/checkout@v4
      - run: make GO_ONLY=1
  integration:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres:16
    steps:
      - run: go test -tags integration ./...
  unit:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-go@v5
      - run: go mod download
      - run: go test -race ./...
      - name: Report
        run: ./scripts/report.sh --token "${{ secrets.REPORT_TOKEN }}"
      - run: go run ./cmd/lint
        continue-on-error: true
"""
    root = make_repo({**layouts.go_modules(), ".github/workflows/ci.yml": workflow})
    files = layouts.go_modules()
    source = next(p for p in files if p.endswith(".go") and not p.endswith("_test.go"))
    plan = change(root, {source: files[source] + "\n// changed\n"}).plan
    checks = by_key(plan)
    assert [c.command for c in plan.checks if c.key.startswith("ci.")] == ["go test -race ./..."]
    assert {(job, step, reason.split(":")[0]) for job, step, reason in steps(plan)} == {
        ("test_go", "", "runs in a container (quay.io/prometheus/golang-builder"),
        ("integration", "", "needs services (postgres)"),
        ("unit", "Report", "needs secrets.REPORT_TOKEN"),
        ("unit", "go run ./cmd/lint", "continue-on-error"),
    }
    assert "go mod download" in {w.path: w.setup for w in plan.workspaces}["."]
    assert "ci.unit.go-test-race" in checks


def test_ratchet_yml_overrides_the_ci_of_the_folders_it_configures(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(pnpm_repo())
    repo = Git(git_dir=root / ".git")
    config = VerifyConfig.from_dict({"checks": [{"id": "unit", "run": "pnpm test"}]})
    tree = GitRevisionTree(repo, "main")
    plan = plan_change(["packages/cli/src/main.ts"], tree, config, base=tree).plan
    # The configured root runs no CI step (the same change without the config plans CI's
    # root steps, which run cli's scripts): the member's own checks are back.
    assert [c.key for c in plan.checks] == ["packages/cli:node-lint", "packages/cli:node-test"]
    assert plan.unverified_steps == ()


def test_a_rust_change_plans_no_node_step_of_a_workflow_without_path_filters(
    make_repo: Callable[[Files], Path],
) -> None:
    workflow = """\
on: [push, pull_request]
jobs:
  rust:
    runs-on: ubuntu-latest
    steps:
      - uses: dtolnay/rust-toolchain@stable
      - run: cargo clippy --workspace -- -D warnings
      - run: cargo test --workspace --all-features
  vscode:
    runs-on: ubuntu-latest
    defaults:
      run:
        working-directory: editors/vscode
    steps:
      - run: npm test
"""
    root = make_repo({**layouts.cargo_workspace(), ".github/workflows/ci.yml": workflow})
    plan = change(root, {"crates/acme_linter/src/lib.rs": "pub fn lint() -> u8 { 2 }\n"}).plan
    keys = [c.key for c in plan.checks]
    assert "ci.rust.cargo-clippy-workspace-d-warnings" in keys
    assert "ci.rust.cargo-test-workspace-all-features" in keys
    assert not any("vscode" in key for key in keys)
    # clippy type-checks and CI's cargo test is the workspace's test: no detected twins.
    assert "cargo-check" not in keys and "cargo-test" not in keys
    node = change_again(root, {"editors/vscode/extension.js": "module.exports = 3;\n"})
    assert [c.key for c in node.checks] == ["editors/vscode:ci.vscode.npm-test"]


def test_a_changed_workflow_is_planned_with_the_bases_version(
    make_repo: Callable[[Files], Path],
) -> None:
    base = """\
on: pull_request
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: actionlint
      - run: cargo test --workspace
"""
    root = make_repo({**layouts.cargo_workspace(), ".github/workflows/ci.yml": base})
    # The change drops the linter and adds a step: the base's workflow is what runs.
    edited = base.replace("      - run: actionlint\n", "      - run: echo skipped\n")
    plan = change(root, {".github/workflows/ci.yml": edited,
                         ".github/workflows/new.yml": "on: pull_request\njobs:\n  x:\n"
                         "    runs-on: ubuntu-latest\n    steps:\n      - run: make all\n"}).plan
    assert [c.command for c in plan.checks] == ["actionlint"]
    assert plan.unverified == ()  # actionlint lints the new workflow too


HOSTILE_WORKFLOWS = {
    ".github/workflows/bomb.yml": "on: push\na: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
        for p, c in zip("abcdef", "bcdefg", strict=True)),
    ".github/workflows/deep.yml": "on: push\njobs: " + "[" * 40 + "]" * 40 + "\n",
    ".github/workflows/deeper.yml": "on: push\njobs: " + "[" * 5000 + "]" * 5000 + "\n",
    ".github/workflows/huge.yml": "on: pull_request\n# " + "x" * MAX_WORKFLOW_BYTES + "\n",
    ".github/workflows/loop.yml": "on: push\njobs: &j\n  x: *j\n",
    ".github/workflows/broken.yml": "on: [pull_request\n",
}


def test_hostile_workflow_yaml_is_ignored_with_a_reason_and_planning_goes_on(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo({**pnpm_repo(), **HOSTILE_WORKFLOWS})
    (root / ".github/workflows/latin1.yml").write_bytes(b"name: caf\xe9\non: push\n")
    write(root, {".github/workflows/bot.yml": "on: issues\nx: &a [*a]\n"})  # never read
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hostile workflows")
    plan = change(root, {"packages/cli/src/main.ts": "export const x = 2\n"}).plan
    assert "ci.test.unit-test.run-unit-tests" in by_key(plan)  # the other workflows still count
    reasons = {s.workflow: s.reason for s in plan.unverified_steps if not s.job}
    assert set(reasons) == {*HOSTILE_WORKFLOWS, ".github/workflows/latin1.yml"}
    assert "more than 1000000 YAML nodes" in reasons[".github/workflows/bomb.yml"]
    assert "nest more than 32 levels" in reasons[".github/workflows/deep.yml"]
    assert "the limit is 1048576 bytes" in reasons[".github/workflows/huge.yml"]
    assert "repeats a value that contains it" in reasons[".github/workflows/loop.yml"]
    assert "invalid YAML" in reasons[".github/workflows/broken.yml"]
    assert "nesting depth" in reasons[".github/workflows/deeper.yml"]  # libyaml's own limit
    assert "not UTF-8" in reasons[".github/workflows/latin1.yml"]


def test_a_generated_workflow_of_hundreds_of_kilobytes_is_read_whole(
    make_repo: Callable[[Files], Path],
) -> None:
    """GitHub runs workflow files up to 1 MiB; a generated one (deno's ci.generated.yml is
    424 kB, past the 256 KiB of a ratchet.yml) plans its checks like any other."""
    note = "    # generated by .github/workflows/ci.ts: edit that file, not this one\n" * 15
    jobs = "".join(f"  shard-{n}:\n{note}    runs-on: ubuntu-latest\n    steps:\n"
                   f"      - run: pnpm run test-unit --shard={n}/300\n" for n in range(300))
    generated = "on: pull_request\njobs:\n" + jobs
    assert 300_000 < len(generated) < MAX_WORKFLOW_BYTES
    root = make_repo({**pnpm_repo(), ".github/workflows/ci.generated.yml": generated})
    plan = change(root, {"packages/cli/src/main.ts": "export const x = 2\n"}).plan
    shards = [c.command for c in plan.checks if c.key.startswith("ci.generated.")]
    assert shards == [f"pnpm run test-unit --shard={n}/300" for n in range(300)]
    assert not [s for s in plan.unverified_steps if s.workflow.endswith("ci.generated.yml")]


def test_a_work_tree_plan_reads_the_workflows_it_has(make_repo: Callable[[Files], Path]) -> None:
    root = make_repo(pnpm_repo())
    plan = plan_change(["packages/parser/src/index.ts"], GitTree.discover(root), CONFIG).plan
    assert [c.key for c in plan.checks][:1] == ["ci.test.unit-test.run-unit-tests"]


def test_ratchet_verify_prints_the_ci_checks_and_the_steps_it_does_not_run(
    make_repo: Callable[[Files], Path], capsys: pytest.CaptureFixture[str],
) -> None:
    root = make_repo(pnpm_repo())
    git(root, "checkout", "-q", "-b", "feature")
    write(root, {"packages/cli/src/main.ts": "export const y = 1\n"})
    git(root, "commit", "-qam", "change")
    parser = argparse.ArgumentParser(prog="ratchet verify")
    configure_parser(parser)

    def verify(*argv: str) -> str:
        args = parser.parse_args(["--repo", str(root), "--base", "main", "--head", "feature",
                                  *argv])
        assert run_verify(args, Sandbox(), NetworkSettings()) == 0
        return capsys.readouterr().out

    plan = json.loads(verify("--plan-only", "--json"))["plan"]
    assert [(c["workspace"], c["id"], c["needs"]["checks"]) for c in plan["checks"]] == [
        (".", "ci.test.unit-test.run-unit-tests", []),
        (".", "ci.test.lint-and-test-dts.run-eslint", ["ci.test.unit-test.run-unit-tests"]),
        (".", "ci.test.lint-and-test-dts.run-prettier", ["ci.test.lint-and-test-dts.run-eslint"]),
    ]
    assert plan["order"] == [["setup:."], ["ci.test.unit-test.run-unit-tests"],
                             ["ci.test.lint-and-test-dts.run-eslint"],
                             ["ci.test.lint-and-test-dts.run-prettier"]]
    assert plan["unverified_steps"] == [
        {"workflow": ".github/workflows/ci.yml", "job": "test/e2e-test", "step": "Run e2e tests",
         "reason": "needs the browsers 'node node_modules/puppeteer/install.mjs' downloads, "
                   "which does not run here"},
        {"workflow": ".github/workflows/ci.yml", "job": "test/unit-test-windows", "step": "",
         "reason": "runs on windows-latest only (no Linux combination): only Linux jobs run here"},
        {"workflow": ".github/workflows/ci.yml", "job": "test/lint-and-test-dts",
         "step": "Upload coverage",
         "reason": "uses the action codecov/codecov-action@v4: actions do not run in the sandbox"},
    ]
    text = verify("--explain")
    assert ("because packages/cli/src/main.ts: .github/workflows/ci.yml runs on pull_request -> "
            "job test/unit-test, step 'Run unit tests'") in text
    assert ("  .github/workflows/ci.yml job test/lint-and-test-dts: Upload coverage: uses the "
            "action codecov/codecov-action@v4: actions do not run in the sandbox") in text
    explained = json.loads(verify("--explain", "--json"))
    assert len(explained["unverified_steps"]) == 3


def test_the_evidence_and_the_check_run_summary_list_the_ci_steps_not_run(
    make_repo: Callable[[Files], Path],
) -> None:
    root = make_repo(pnpm_repo())
    plan = change(root, {"packages/cli/src/main.ts": "export const z = 1\n"}).plan
    # The plan keeps its steps through JSON (`verification/plan.json`, the ledger).
    assert Plan.from_json(plan.to_json()) == plan
    report = EvidenceReport.from_dict(EvidenceReport.from_bundle(build_bundle(plan, [])).to_dict())
    assert report.unverified_steps == (
        ".github/workflows/ci.yml job test/e2e-test: Run e2e tests: needs the browsers "
        "'node node_modules/puppeteer/install.mjs' downloads, which does not run here",
        ".github/workflows/ci.yml job test/unit-test-windows: runs on windows-latest only (no "
        "Linux combination): only Linux jobs run here",
        ".github/workflows/ci.yml job test/lint-and-test-dts: Upload coverage: uses the action "
        "codecov/codecov-action@v4: actions do not run in the sandbox",
    )
    summary = render_summary(report)
    assert "<summary>CI steps not run here (not verified): 3</summary>" in summary
    assert ("- `.github/workflows/ci.yml job test/lint-and-test-dts: Upload coverage: uses the "
            "action codecov/codecov-action@v4: actions do not run in the sandbox`") in summary
