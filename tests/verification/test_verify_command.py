"""`ratchet verify` as the `ratchet` executable runs it (``app.entry``): what it loads, what it
prints."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from verify_helpers import Files, write

from tests.gitrepo import commit_all
from verification.config import CONFIG_PATH

REPO_ROOT = Path(__file__).resolve().parents[2]

# Modules of the rest of Ratchet (the service, the queue, the ledger, the engine, agents,
# GitHub, the operator's settings, the whole config file's pydantic models) that planning never
# needs.
NOT_FOR_PLANNING = (
    "starlette", "uvicorn", "dramatiq", "redis", "sqlalchemy", "psycopg", "httpx",
    "pydantic", "pydantic_core", "pydantic_settings", "app.cli", "app.settings",
    "app.dashboard", "runner", "github", "verification.execute", "verification.evidence",
)


def ratchet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app.entry", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)


def planning_modules(repo: Path) -> tuple[str, list[str]]:
    """What `ratchet verify --plan-only` prints in ``repo``, and the modules it loaded."""
    code = ("import json, sys; from app.entry import main;"
            f" status = main(['verify', '--repo', {str(repo)!r}, '--plan-only']);"
            " print(json.dumps([status, sorted(sys.modules)]))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    status, modules = json.loads(run.stdout.splitlines()[-1])
    assert status == 0
    return run.stdout, modules


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in names)]


def test_planning_loads_none_of_the_rest_of_ratchet(monorepo: Path) -> None:
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    printed, modules = planning_modules(monorepo)
    assert "web:node-test" in printed
    assert loaded(modules, NOT_FOR_PLANNING) == []


# Readers of task runners, task graphs and pre-commit hooks: loaded only when such a file is
# there.
TASK_READERS = ("verification.task_files", "verification.task_graphs", "verification.hooks")


def test_task_runner_readers_load_only_when_their_files_exist(monorepo: Path) -> None:
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    _, modules = planning_modules(monorepo)
    assert loaded(modules, TASK_READERS) == []
    write(monorepo, {
        "services/api/Makefile": "check:\n\tpytest -q\n",
        ".pre-commit-config.yaml": "repos:\n  - repo: local\n    hooks:\n      - id: t\n"
                                   "        name: t\n        entry: 'true'\n"
                                   "        language: system\n",
        ".github/workflows/ci.yml": "on: [pull_request]\njobs:\n  t:\n    runs-on: ubuntu-latest\n"
                                    "    steps:\n      - run: make -C services/api check\n",
    })  # fmt: skip
    commit_all(monorepo, "a Makefile CI runs, and a hook")
    write(monorepo, {"services/api/app_api.py": "def add(a, b):\n    return b + a\n"})
    printed, modules = planning_modules(monorepo)
    assert "ci.t.make-c-services-api-check\ttest" in printed  # read through the Makefile
    assert "pre-commit-t" in printed
    assert loaded(modules, TASK_READERS) == ["verification.hooks", "verification.task_files"]


def test_a_repository_config_is_read_without_the_whole_files_models(monorepo: Path) -> None:
    write(monorepo, {CONFIG_PATH: "verify:\n  workspaces:\n    - path: web\n"
                                  "      checks: [{id: smoke, run: 'true'}]\n"
                                  "budget:\n  max_cost_usd: 5\n"})
    commit_all(monorepo, "configure a check")
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    printed, modules = planning_modules(monorepo)
    assert "web:smoke\tcustom\ttrue" in printed
    assert loaded(modules, NOT_FOR_PLANNING) == []


def test_checks_run_with_the_operators_settings_loaded_then(monorepo: Path) -> None:
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    run = ratchet("verify", "--repo", str(monorepo), "--json")
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    assert [(r["workspace"], r["status"]) for r in document["results"]] == [("web", "passed")]


def test_unusable_settings_stop_verify_before_any_check(monorepo: Path) -> None:
    write(monorepo, {"web/sum.js": "exports.sum = (a, b) => b + a;\n"})
    code = ("import os, sys; os.environ['RATCHET_SANDBOX'] = 'no-such-mode';"
            " from app.entry import main;"
            f" sys.exit(main(['verify', '--repo', {str(monorepo)!r}]))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2
    assert "RATCHET_SANDBOX" in run.stderr
    assert not (monorepo / "web" / "node_modules").exists()


def test_verify_help_loads_no_planner() -> None:
    """`ratchet verify --help` answers from the option parser alone: no planning module, none
    of the rest of Ratchet."""
    code = ("import json, sys; from app.entry import main\n"
            "try:\n    main(['verify', '--help'])\nexcept SystemExit as end:\n"
            "    print(json.dumps([end.code, sorted(sys.modules)]))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    status, modules = json.loads(run.stdout.splitlines()[-1])
    assert status == 0
    assert "--plan-only" in run.stdout
    planner = ("verification.pipeline", "verification.plan", "verification.workspaces",
               "verification.select", "tomllib")
    assert loaded(modules, (*NOT_FOR_PLANNING, *planner)) == []


def test_other_commands_and_help_go_to_the_whole_cli() -> None:
    run = ratchet("--help")
    assert run.returncode == 0
    assert "verify" in run.stdout and "status" in run.stdout
    run = ratchet("-v", "verify", "--help")
    assert run.returncode == 0
    assert "--plan-only" in run.stdout


def shop(make_repo: Callable[[Files], Path]) -> Path:
    """A pnpm workspace: the root `shop`, `@shop/core`, `@shop/web` depending on it, a lockfile
    (so an install is the root's setup), and an uncommitted change to `@shop/core` plus a
    script nothing checks."""
    scripts = {"lint": "eslint .", "test": "vitest run"}
    repo = make_repo({
        "package.json": json.dumps({"name": "shop", "private": True,
                                    "packageManager": "pnpm@9.12.0"}),
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n",
        "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        "packages/core/package.json": json.dumps({"name": "@shop/core", "scripts": scripts}),
        "packages/core/index.js": "exports.one = 1;\n",
        "packages/web/package.json": json.dumps({
            "name": "@shop/web", "scripts": scripts,
            "dependencies": {"@shop/core": "workspace:*"}}),
        "packages/web/index.js": "exports.two = 2;\n",
    })
    write(repo, {"packages/core/index.js": "exports.one = 2;\n", "tools/release.sh": "true\n"})
    return repo


def test_a_node_monorepo_is_planned_without_the_other_ecosystems_readers(
    make_repo: Callable[[Files], Path],
) -> None:
    """Cargo's, Go's, semver ranges' and ini files' readers load only for a tree needing them:
    each costs start-up (bench/verify.py (f))."""
    printed, modules = planning_modules(shop(make_repo))
    assert "packages/web:node-test" in printed
    assert loaded(modules, ("verification.cargo", "verification.gomod", "verification.semver",
                            "configparser", "verification.workflows", "yaml")) == []


def test_explain_names_each_package_once_with_its_reasons(
    make_repo: Callable[[Files], Path],
) -> None:
    repo = shop(make_repo)
    run = ratchet("verify", "--repo", str(repo), "--explain")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    why = lines[lines.index("why each package is checked:") + 1 : lines.index("commands:") - 1]
    assert why == [
        "  because packages/core/index.js: in @shop/core",
        "    @shop/core (packages/core): node-lint, node-test",
        "  because packages/core/index.js: in @shop/core -> @shop/web depends on @shop/core"
        ' (packages/web/package.json: "@shop/core": "workspace:*")',
        "    @shop/web (packages/web): node-lint, node-test",
    ]
    assert "  node-lint: pnpm run lint (2 packages)" in lines
    assert "  shop (.), for 2 packages: pnpm install --frozen-lockfile" in lines
    assert " in .\n" not in run.stdout and "in packages/core" not in run.stdout
    said = [line for line in lines if line.strip()]
    assert len(said) == len(set(said))  # nothing said twice

    run = ratchet("verify", "--repo", str(repo), "--explain", "--json")
    document = json.loads(run.stdout)
    assert [(p["name"], p["workspace"], p["checks"]) for p in document["packages"]] == [
        ("@shop/core", "packages/core", ["packages/core:node-lint", "packages/core:node-test"]),
        ("@shop/web", "packages/web", ["packages/web:node-lint", "packages/web:node-test"]),
    ]
    assert document["unverified"] == ["tools/release.sh"]


def test_explain_names_a_cargo_workspace_and_its_crates_never_by_dot_alone(
    make_repo: Callable[[Files], Path],
) -> None:
    repo = make_repo({
        "Cargo.toml": '[package]\nname = "mytool"\nversion = "0.1.0"\n\n'
                      '[dependencies]\nparser = { path = "crates/parser" }\n\n'
                      '[workspace]\nmembers = ["crates/*"]\n',
        "Cargo.lock": "version = 3\n",
        "src/main.rs": "fn main() {}\n",
        "crates/parser/Cargo.toml": '[package]\nname = "parser"\nversion = "0.1.0"\n',
        "crates/parser/src/lib.rs": "pub fn parse() {}\n",
    })
    write(repo, {"crates/parser/src/lib.rs": "pub fn parse() { }\n"})
    run = ratchet("verify", "--repo", str(repo), "--explain")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "  because crates/parser/src/lib.rs: in parser" in lines
    assert "    mytool (.): cargo-check, cargo-test" in lines
    assert "  parser (crates/parser): a crate of the Cargo workspace at mytool (.)" in lines
    assert not [line for line in lines if line.endswith((" .", " at ."))]


def test_plan_only_json_has_the_setup_the_order_and_what_nothing_verifies(
    make_repo: Callable[[Files], Path],
) -> None:
    repo = shop(make_repo)
    run = ratchet("verify", "--repo", str(repo), "--plan-only", "--json")
    assert run.returncode == 0, run.stderr
    plan = json.loads(run.stdout)["plan"]
    assert plan["setup"][0] == {"workspace": ".", "commands": ["pnpm install --frozen-lockfile"],
                                "after": []}
    assert {s["workspace"]: s["after"] for s in plan["setup"][1:]} == {
        "packages/core": ["setup:."], "packages/web": ["setup:."]}
    assert plan["order"] == [
        ["setup:."],
        ["packages/core:node-lint", "packages/core:node-test", "packages/web:node-lint",
         "packages/web:node-test"],
    ]
    assert plan["unverified"] == ["tools/release.sh"]


def test_plan_only_order_puts_a_build_before_the_test_loading_it(
    make_repo: Callable[[Files], Path],
) -> None:
    repo = make_repo({
        "package.json": json.dumps({"name": "shop", "private": True,
                                    "packageManager": "pnpm@9.12.0"}),
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n",
        "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        "packages/core/package.json": json.dumps({
            "name": "@shop/core", "main": "dist/index.js",
            "scripts": {"build": "tsc", "test": "vitest run"}}),
        "packages/core/src/index.ts": "export const one = 1;\n",
        "packages/web/package.json": json.dumps({
            "name": "@shop/web", "scripts": {"test": "vitest run"},
            "dependencies": {"@shop/core": "workspace:*"}}),
        "packages/web/index.js": "exports.two = 2;\n",
    })
    write(repo, {"packages/core/src/index.ts": "export const one = 2;\n"})
    run = ratchet("verify", "--repo", str(repo), "--plan-only", "--json")
    assert run.returncode == 0, run.stderr
    plan = json.loads(run.stdout)["plan"]
    needs = {f"{c['workspace']}:{c['id']}": c["needs"]["checks"] for c in plan["checks"]}
    assert needs["packages/web:node-test"] == ["packages/core:node-build"]
    assert plan["order"] == [
        ["setup:."],
        ["packages/core:node-build"],
        ["packages/core:node-test", "packages/web:node-test"],
    ]
