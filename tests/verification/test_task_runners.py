"""Task runners are a source of commands: a CI step `make test`, `just lint`, `uv run poe
check`, `tox -e lint`, `nox -s tests` or `npx turbo run test --filter ...` is read by what its
tasks run, so its kind is right and a tool's config concerns it.

The files are written as real projects write them: a Makefile in the shape of pallets/flask's
and encode/httpx's (PHONY targets, `$(PYTHON)` variables, `$(MAKE)` calls), a justfile in the
shape of astral-sh/ruff's and casey/just's (variables, aliases, dependencies with arguments,
shebang recipes), poe tasks as in pydantic-ai's pyproject, tox.ini in the shape of
pytest-dev's plugins (generative env lists, factor-conditional commands), a noxfile in the
shape of pypa/pip's and urllib3's.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import layouts
from verify_helpers import Files, write

from verification.commandline import commands
from verification.config import VerifyConfig
from verification.explain import render_text
from verification.plan import PlanResult, plan_change
from verification.task_files import (
    justfile_tasks,
    makefile_tasks,
    nox_sessions,
    poe_tasks,
    tox_envs,
    tox_toml_envs,
)
from verification.task_runners import TaskLookup
from verification.tools import kinds
from verification.tree import GitTree

CONFIG = VerifyConfig()

MAKEFILE = """\
.DEFAULT_GOAL := help
PYTHON ?= uv run python
SOURCES = src tests

.PHONY: help install lint format typecheck test check docs

help:  ## Show this help
\t@grep -E '^[a-zA-Z_-]+:.*?## .*$$' $(MAKEFILE_LIST) | sort

install:
\tuv sync --frozen

lint:  ## Lint the sources
\t$(PYTHON) -m ruff check $(SOURCES)
\t@$(PYTHON) -m ruff format --check $(SOURCES)

format:
\t$(PYTHON) -m ruff format $(SOURCES)

typecheck:
\t$(PYTHON) -m mypy src

test: install
\t$(PYTHON) -m pytest -q \\
\t\t--cov=src tests

check: lint typecheck test

ifeq ($(CI),true)
docs:
\t$(MAKE) -C docs html SPHINXOPTS=-W
endif
"""

JUSTFILE = """\
set shell := ["bash", "-euo", "pipefail", "-c"]
set dotenv-load

cargo := "cargo"
export RUST_BACKTRACE := "1"

alias t := test

# List the recipes
default:
    @just --list

# Lint with clippy and check the formatting
lint: fmt-check
    {{cargo}} clippy --workspace --all-targets -- -D warnings

fmt-check:
    cargo fmt --all --check

[group('test')]
test *args: (build "dev")
    {{cargo}} nextest run --workspace {{args}}

build profile="release":
    #!/usr/bin/env bash
    set -euo pipefail
    cargo build --profile {{profile}}

bench:
    #!/usr/bin/env python3
    import subprocess
    subprocess.run(["cargo", "bench"])
"""

PYPROJECT_POE = """\
[project]
name = "acme"
version = "0.1.0"

[tool.poe.tasks]
lint = "ruff check ."
format = "ruff format ."
typecheck = { cmd = "pyright src", help = "Run the type checker" }
test = { cmd = "pytest -q", deps = ["build-stubs"] }
build-stubs = { shell = "python scripts/stubs.py && echo done" }
check = ["lint", "typecheck", "test"]

[tool.poe.tasks.ci]
sequence = [{ cmd = "ruff format --check ." }, { ref = "check" }]
"""

TOX_INI = """\
[tox]
requires = tox>=4
envlist = py{39,310,311,312}-{lin,mac}, lint, type

[testenv]
deps =
    pytest>=8
    coverage[toml]
commands =
    coverage run -m pytest {posargs:tests}
    mac: python -c "print('mac only')"

[testenv:lint]
skip_install = true
deps = pre-commit
commands = ruff check {toxinidir}/src
    ruff format --check .

[testenv:type]
deps = mypy
commands = mypy --strict src
"""

NOXFILE = """\
import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session(python=["3.11", "3.12", "3.13"])
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("pytest", "-q", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "src", "tests")
    session.run("ruff", "format", "--check", "src", "tests")


@nox.session(name="type-check", python="3.12")
def type_check(session: nox.Session) -> None:
    session.install("mypy")
    session.run("mypy", "src")
    session.notify("tests")
"""


def lookup(files: Files) -> TaskLookup:
    """A lookup over literal files, as planning reads them."""
    folders: dict[str, set[str]] = {}
    for path in files:
        folder, _, name = path.rpartition("/")
        folders.setdefault(folder or ".", set()).add(name)
    return TaskLookup(read=files.get, toml=lambda p: tomllib.loads(files.get(p, "")),
                      has=lambda folder, name: name in folders.get(folder, set()))


def read(line: str, files: Files, folder: str = ".") -> list[tuple[str, str]]:
    return [(u.tool, u.kind) for u in lookup(files).line_uses(line, folder)]


def test_a_makefile_is_read_target_by_target() -> None:
    found = makefile_tasks(MAKEFILE)
    assert found.default == ("help",)
    assert found.tasks["lint"].lines == (
        "uv run python -m ruff check src tests", "uv run python -m ruff format --check src tests")
    assert found.tasks["test"].lines == ("uv run python -m pytest -q --cov=src tests",)
    assert found.tasks["test"].calls == ("install",)
    assert found.tasks["check"].calls == ("lint", "typecheck", "test")
    assert found.tasks["docs"].lines == ("make -C docs html SPHINXOPTS=-W",)
    files = {"Makefile": MAKEFILE}
    assert read("make lint", files) == [("ruff", "lint")]  # each tool use once
    assert read("make check", files) == [("ruff", "lint"), ("mypy", "typecheck"),
                                         ("pytest", "test")]
    assert read("make test PYTEST_ARGS=-x", files) == [("pytest", "test")]
    assert read("make format", files) == [("ruff", "lint")]  # a fixer, told apart by writes
    assert lookup(files).line_uses("make format", ".")[0].writes
    assert read("make -n test", files) == []  # a dry run runs nothing
    assert read("make no-such-target", files) == []
    assert read("make -C sub test", files) == []  # no Makefile there: nothing known
    assert read("make -f ci.mk test", files) == []  # another makefile: not read


def test_a_justfile_is_read_recipe_by_recipe() -> None:
    found = justfile_tasks(JUSTFILE)
    assert found.default == ("default",)
    assert found.tasks["lint"].lines == ("cargo clippy --workspace --all-targets -- -D warnings",)
    assert found.tasks["lint"].calls == ("fmt-check",)
    assert found.tasks["test"].calls == ("build",)
    assert found.tasks["build"].lines == ("set -euo pipefail", "cargo build --profile ")
    assert found.tasks["bench"].lines == ()  # a Python shebang recipe: not shell lines
    files = {"justfile": JUSTFILE}
    assert read("just lint", files) == [("cargo clippy", "lint"), ("rustfmt", "lint")]
    assert kinds(lookup(files).line_uses("just t", ".")) == ["test", "build"]
    assert read("just --list", files) == []


def test_poe_tasks_tox_envs_and_nox_sessions_are_read() -> None:
    poe = poe_tasks(tomllib.loads(PYPROJECT_POE))
    assert poe.tasks["typecheck"].lines == ("pyright src",)
    assert poe.tasks["check"].calls == ("lint", "typecheck", "test")
    assert poe.tasks["ci"].lines == ("ruff format --check .",)
    assert poe.tasks["ci"].calls == ("check",)
    files = {"pyproject.toml": PYPROJECT_POE}
    assert read("uv run poe ci", files) == [("ruff", "lint"), ("pyright", "typecheck"),
                                            ("pytest", "test")]
    assert read("poetry poe typecheck", files) == [("pyright", "typecheck")]

    tox = tox_envs(TOX_INI)
    assert tox.default[:2] == ("py39-lin", "py39-mac") and "lint" in tox.default
    assert tox.tasks["py311-lin"].lines == ("coverage run -m pytest",)
    assert tox.tasks["py311-mac"].lines == (
        "coverage run -m pytest", "python -c \"print('mac only')\"")
    assert tox.tasks["lint"].lines == ("ruff check ./src", "ruff format --check .")
    files = {"tox.ini": TOX_INI}
    assert read("tox -e lint,type", files) == [("ruff", "lint"), ("mypy", "typecheck")]
    assert read("tox run -e py312-lin", files) == [("pytest", "test")]
    assert kinds(lookup(files).line_uses("tox", ".")) == ["test", "lint", "typecheck"]
    native = tox_toml_envs(tomllib.loads(
        'env_list = ["3.13", "lint"]\n[env_run_base]\ncommands = [["pytest", "{posargs}"]]\n'
        '[env.lint]\nskip_install = true\ncommands = [["ruff", "check", "."]]\n'))
    assert native.tasks["3.13"].lines == ("pytest",)
    assert native.tasks["lint"].lines == ("ruff check .",)

    nox = nox_sessions(NOXFILE)
    assert nox.default == ("lint", "tests")
    assert nox.tasks["type-check"].lines == ("mypy src",)
    assert nox.tasks["type-check"].calls == ("tests",)
    files = {"noxfile.py": NOXFILE}
    assert read("nox -s type-check", files) == [("mypy", "typecheck"), ("pytest", "test")]
    assert read("nox", files) == [("ruff", "lint"), ("pytest", "test")]
    assert read("python -m nox --session lint", files) == [("ruff", "lint")]


def test_a_package_script_running_a_task_runner_is_read_through_it() -> None:
    files = {"Makefile": MAKEFILE}
    scripts = {"check": "make typecheck"}
    found = TaskLookup(read=files.get, toml=lambda p: {}, has=lambda f, n: n in files,
                       scripts=lambda folder: scripts)
    assert [(u.tool, u.kind) for u in found.line_uses("npm run check", ".")] == [
        ("mypy", "typecheck")]
    assert [c.program for c in commands("$(MAKE) lint")] != ["make"]  # why recipes are expanded


GO_CI = """\
name: CI
on:
  pull_request:
  push:
    branches: [main]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5
        with: {go-version-file: go.mod}
      - run: make lint
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5
      - run: make test
"""
GO_MAKEFILE = """\
GOLANGCI_LINT ?= golangci-lint
.PHONY: lint test
lint:
\t$(GOLANGCI_LINT) run ./...
test:
\tgo test -race ./...
"""


def planned(root: Path, *changed: str) -> PlanResult:
    return plan_change(list(changed), GitTree.discover(root), CONFIG)


def test_a_ci_step_running_make_is_read_through_the_makefile(
    make_repo: Callable[[Files], Path],
) -> None:
    """`make lint` runs golangci-lint: a `.golangci.yml` change plans that step (and not the
    tests); CI's `make test` is the module's test, so the detected `go test` is not planned
    twice."""
    root = make_repo({
        "go.mod": "module example.com/app\n\ngo 1.23\n", "main.go": "package main\n",
        "main_test.go": "package main\n", "Makefile": GO_MAKEFILE,
        ".golangci.yml": "linters:\n  enable: [errcheck]\n", ".github/workflows/ci.yml": GO_CI,
    })  # fmt: skip
    lint = planned(root, ".golangci.yml")
    assert {c.key: (c.kind, c.command) for c in lint.plan.checks} == {
        "ci.lint.make-lint": ("lint", "make lint")}
    assert lint.plan.unverified == ()
    code = planned(root, "main.go").plan
    assert {c.key: c.kind for c in code.checks} == {
        "ci.lint.make-lint": "lint", "ci.test.make-test": "test"}
    assert "job lint, step 'make lint'" in render_text(lint.explanation)


# A root Makefile driving the Go module, a tools module with its own Makefile, and an example
# whose Makefile includes the root's common rules (prometheus's `include ../../Makefile.common`).
MAKE_CI = """\
on: [pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: make test
      - run: make -C tools lint
      - name: Tools tests
        run: cd tools && make test
  example:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: make check
        working-directory: example
"""


def test_a_root_makefile_change_plans_the_checks_whose_make_reads_it(
    make_repo: Callable[[Files], Path],
) -> None:
    """The root Makefile is the file `make` reads at the root, and wherever a Makefile
    includes it; `make -C tools` and `cd tools && make` read tools/Makefile, another file, so
    a root Makefile change does not plan them (it planned every check running make)."""
    root = make_repo({
        "go.mod": "module example.com/app\n\ngo 1.23\n", "main.go": "package main\n",
        "Makefile": GO_MAKEFILE,
        "tools/Makefile": ".PHONY: lint test\nlint:\n\tgolangci-lint run ./...\n"
                          "test:\n\tgo test ./...\n",
        "example/Makefile": "include ../Makefile\n\ncheck: test\n",
        ".github/workflows/ci.yml": MAKE_CI,
    })  # fmt: skip
    changed = planned(root, "Makefile")
    assert sorted(c.key for c in changed.plan.checks) == ["ci.test.make-test",
                                                          "example:ci.example.make-check"]
    assert changed.plan.unverified == ()


def test_the_makefiles_a_make_command_reads() -> None:
    """make picks GNUmakefile, then makefile, then Makefile in the folder it runs in (`cd`,
    `-C`), or the file `-f` names, and reads what those include (literal names only)."""
    files = {"GNUmakefile": "include Makefile common/*.mk $(TOOLS)/x.mk\n", "Makefile": "",
             "sub/Makefile": "-include ../rules.mk\n", "rules.mk": "", "ci.mk": ""}
    tasks = lookup(files)
    assert tasks.makefiles("make test", ".") == {"GNUmakefile", "Makefile"}
    assert tasks.makefiles("cd sub && make", ".") == {"sub/Makefile", "rules.mk"}
    assert tasks.makefiles("make -C sub lint", ".") == {"sub/Makefile", "rules.mk"}
    assert tasks.makefiles("make lint", "sub") == {"sub/Makefile", "rules.mk"}
    assert tasks.makefiles("make -f ci.mk test", ".") == {"ci.mk"}
    assert tasks.makefiles("make -C docs html", ".") == frozenset()  # no Makefile there
    assert tasks.makefiles("pytest -q", ".") == frozenset()


TURBO_CI = """\
name: CI
on: [pull_request]
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: pnpm/action-setup@v4
      - run: pnpm install --frozen-lockfile
      - run: npx turbo run typecheck --filter='./packages/*'
      - run: pnpm turbo lint test
"""


def test_a_ci_step_running_turbo_is_read_through_the_packages_tasks(
    make_repo: Callable[[Files], Path],
) -> None:
    """`turbo run typecheck` runs each package's `typecheck` script (`tsc --noEmit`): a
    tsconfig change plans that step; `turbo lint test` runs eslint and vitest."""
    files = layouts.pnpm_workspace()
    files[".github/workflows/ci.yml"] = TURBO_CI
    files["turbo.json"] = '{"$schema": "https://turbo.build/schema.json", "tasks": {}}\n'
    files["packages/cli/package.json"] = layouts.package_json({
        "name": "@acme/cli", "version": "1.0.0",
        "scripts": {"lint": "eslint src", "typecheck": "tsc --noEmit", "test": "vitest run"},
        "dependencies": {"@acme/parser": "workspace:*"},
    })  # fmt: skip
    root = make_repo(files)
    result = planned(root, "packages/cli/tsconfig.json")
    keys = {c.key: c.kind for c in result.plan.checks}
    assert keys["ci.check.npx-turbo-run-typecheck-filter-packages"] == "typecheck"
    assert "ci.check.pnpm-turbo-lint-test" not in keys  # runs eslint and vitest, not tsc


def test_poe_tasks_named_as_checks_are_the_projects_checks(
    make_repo: Callable[[Files], Path],
) -> None:
    """The project runs its checks through poe: `uv run --frozen poe lint` replaces the detected
    ruff, `poe typecheck` (pyright) is planned, `poe test` replaces the detected pytest; the
    `check` sequence of several kinds is no check of its own, and `format` rewrites files."""
    files = layouts.uv_workspace()
    files["pyproject.toml"] += "\n" + PYPROJECT_POE.split("\n\n", 1)[1]
    root = make_repo(files)
    plan = planned(root, "src/acme/__init__.py").plan
    root_checks = {c.id: (c.kind, c.command) for c in plan.checks if c.workspace == "."}
    assert root_checks == {
        "poe-lint": ("lint", "uv run --frozen poe lint"),
        "poe-typecheck": ("typecheck", "uv run --frozen poe typecheck"),
        "poe-test": ("test", "uv run --frozen poe test"),
    }
    # A pyright config change concerns the poe task running pyright.
    write(root, {"pyrightconfig.json": "{}\n"})
    assert {c.key for c in planned(root, "pyrightconfig.json").plan.checks} >= {"poe-typecheck"}


def test_a_package_script_running_make_is_planned_by_what_the_target_runs(
    make_repo: Callable[[Files], Path],
) -> None:
    """`"check": "make check"` says nothing by its name; the Makefile's `check` runs
    `tsc --noEmit`, so it is the package's type check, and a tsconfig change plans it."""
    files = layouts.pnpm_workspace()
    files["packages/cli/package.json"] = layouts.package_json({
        "name": "@acme/cli", "version": "1.0.0",
        "scripts": {"lint": "eslint src", "check": "make check", "test": "vitest run"},
        "dependencies": {"@acme/parser": "workspace:*"},
    })  # fmt: skip
    files["packages/cli/Makefile"] = ".PHONY: check\ncheck:\n\tpnpm exec tsc --noEmit -p .\n"
    root = make_repo(files)
    plan = planned(root, "packages/cli/tsconfig.json").plan
    assert {c.key: (c.kind, c.command) for c in plan.checks} == {
        "packages/cli:node-check": ("typecheck", "pnpm run check")}


def test_nx_and_turbo_commands_are_read_through_the_projects_targets() -> None:
    """`nx run-many -t lint,test` runs each project's targets: project.json executors
    (`@nx/eslint:lint` is eslint, `@nx/vite:test` vitest), `nx:run-commands` commands, and
    package scripts of projects without such a target; `turbo run` the packages' scripts."""
    targets = {
        "packages/ui": {"lint": {"executor": "@nx/eslint:lint"},
                        "test": {"executor": "@nx/vite:test",
                                 "options": {"passWithNoTests": True}}},
        "packages/api": {"test": {"executor": "nx:run-commands",
                                  "options": {"command": "jest --ci", "cwd": "packages/api"}}},
    }  # fmt: skip
    scripts = {"packages/api": {"lint": "eslint src", "test": "jest"},
               "packages/docs": {"typecheck": "vue-tsc --noEmit"},
               ".": {"test": "nx run-many -t test"}}
    found = TaskLookup(read=lambda p: None, toml=lambda p: {}, has=lambda f, n: False,
                       scripts=lambda folder: scripts.get(folder, {}),
                       projects=lambda folder: [".", "packages/api", "packages/docs",
                                                "packages/ui"],
                       targets=lambda folder: targets.get(folder, {}))

    def read_line(line: str) -> list[tuple[str, str]]:
        return [(u.tool, u.kind) for u in found.line_uses(line, ".")]

    assert read_line("npx nx run-many -t lint,test --parallel=3") == [
        ("eslint", "lint"), ("jest", "test"), ("vitest", "test")]
    assert read_line("pnpm nx affected --targets=typecheck --base=origin/main") == [
        ("vue-tsc", "typecheck")]
    assert read_line("nx run ui:test") == [("vitest", "test")]  # the ui project's only
    assert read_line("nx test api --ci") == [("jest", "test")]
    assert read_line("npx turbo run typecheck --filter=...[origin/main]") == [
        ("vue-tsc", "typecheck")]
    assert read_line("nx graph") == [] and read_line("turbo prune web") == []
    assert read_line("pnpm test") == [("jest", "test"), ("vitest", "test")]  # the root's script


def test_a_task_file_nesting_its_tasks_is_read_once_per_task() -> None:
    """Each of 6 targets runs the next one from 200 lines: read naively that is 200**6
    readings; each invocation is read once, and each tool use kept once."""
    rules = [f"t{i}:\n" + f"\t$(MAKE) t{i + 1}\n" * 200 for i in range(6)]
    files = {"Makefile": "".join(rules) + "t6:\n\tpytest\n\truff check .\n"}
    assert read("make t0", files) == [("pytest", "test"), ("ruff", "lint")]
    cycle = {"justfile": "a: b\n    just b\nb: a\n    just a\n    mypy .\n"}
    assert read("just a", cycle) == [("mypy", "typecheck")]
