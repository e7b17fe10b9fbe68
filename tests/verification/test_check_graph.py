"""The plan is a graph: builds before the tests that load them, dependents of a failure skipped,
one writer per output folder at a time, independent checks in parallel.

Real git repositories, real `npm run` processes. Each script appends `start <name>` and
`end <name>` to a shared events file (outside the repository), so order and overlap are read
from the markers, never from durations.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from layouts import package_json
from verify_helpers import Files

from app.verify_cli import configure_parser, run_verify
from runner.config import RepositoryConfig, parse_config
from runner.network import NetworkSettings
from runner.sandbox import Sandbox
from verification.config import ConfigError, VerifyConfig
from verification.execute import execute_plan
from verification.plan import Plan, PlannedCheck, PlannedWorkspace, build_plan
from verification.tree import GitTree

# A script that records its start, waits until `peer` (if any) has started too (a barrier:
# it passes only when both run at once), then records its end; `fail` makes it exit 1. A peer
# written `~name` is waited for a short while only, then the script goes on: it makes an
# overlap all but certain when nothing prevents one, and passes when something does.
MARK = """\
const fs = require("fs");
const [events, name, wanted = "-", fail] = process.argv.slice(2);
const soft = wanted.startsWith("~");
const peer = wanted.replace("~", "");
fs.appendFileSync(events, `start ${name}\\n`);
const started = (who) => fs.readFileSync(events, "utf8").split("\\n").includes(`start ${who}`);
const until = Date.now() + (soft ? 3000 : 120000);
while (peer && peer !== "-" && !started(peer)) {
  if (Date.now() > until && soft) break;
  if (Date.now() > until) { console.error(`${peer} never ran beside ${name}`); process.exit(1); }
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
}
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);  // widen any overlap
if (name.endsWith("build")) {
  fs.mkdirSync("dist", { recursive: true });
  fs.writeFileSync("dist/index.js", "module.exports = 42;\\n");
}
fs.appendFileSync(events, `end ${name}\\n`);
process.exit(fail === "fail" ? 1 : 0);
"""


def script(events: Path, name: str, peer: str = "-", *, fail: bool = False) -> str:
    return f"node ../../mark.js {events} {name} {peer}{' fail' if fail else ''}"


def monorepo(events: Path, *, failing_build: bool = False, root_build: bool = False) -> Files:
    """npm workspaces: b depends on a, whose entry point is its build output; c and d are
    independent of everything. With `root_build`, the root's build and a's each wait a while
    for the other to start: they overlap unless something keeps them apart."""
    root: dict[str, object] = {"name": "root", "private": True, "workspaces": ["packages/*"]}
    if root_build:
        root["scripts"] = {"build": f"node mark.js {events} root-build ~a-build"}
    a_peer = "~root-build" if root_build else "-"
    return {
        "package.json": package_json(root),
        "mark.js": MARK,
        "packages/a/package.json": package_json({
            "name": "@t/a", "version": "1.0.0", "main": "dist/index.js",
            "scripts": {"build": script(events, "a-build", a_peer, fail=failing_build)},
        }),
        "packages/a/src/index.js": "module.exports = 42;\n",
        "packages/b/package.json": package_json({
            "name": "@t/b", "version": "1.0.0", "main": "src/index.js",
            "dependencies": {"@t/a": "1.0.0"},
            # Loads a through its entry point: dist/index.js, which only a's build writes.
            "scripts": {"test": f'node -e \'require("../a")\' && {script(events, "b-test")}'},
        }),
        "packages/b/src/index.js": "module.exports = require('@t/a');\n",
        "packages/c/package.json": package_json({
            "name": "@t/c", "scripts": {"test": script(events, "c-test", "d-test")},
        }),
        "packages/c/src/index.js": "module.exports = 1;\n",
        "packages/d/package.json": package_json({
            "name": "@t/d", "scripts": {"test": script(events, "d-test", "c-test")},
        }),
        "packages/d/src/index.js": "module.exports = 2;\n",
    }


@pytest.fixture
def events(tmp_path: Path) -> Path:
    return tmp_path / "events.log"


def plan_for(repo: Path, *changed: str, config: VerifyConfig | None = None) -> Plan:
    return build_plan(changed, GitTree.discover(repo), config or VerifyConfig(concurrency=4))


def markers(events: Path) -> list[str]:
    return events.read_text().splitlines() if events.exists() else []


def test_a_test_loading_a_dependency_build_runs_after_that_build(
    make_repo: Callable[[Files], Path], events: Path
) -> None:
    repo = make_repo(monorepo(events))
    plan = plan_for(repo, "packages/b/src/index.js")
    checks = {c.key: c for c in plan.checks}
    # a's build is planned though a did not change: b's test loads what it writes.
    assert set(checks) == {"packages/b:node-test", "packages/a:node-build"}
    assert checks["packages/b:node-test"].needs == ("packages/a:node-build",)
    assert checks["packages/a:node-build"].writes == ("packages/a",)
    assert "needs" in json.loads(plan.to_json())["checks"][1]  # part of the hashed plan

    results = {r.key: r for r in execute_plan(plan, repo)}
    assert {key: r.status for key, r in results.items()} == {
        "packages/a:node-build": "passed", "packages/b:node-test": "passed"}
    assert markers(events) == ["start a-build", "end a-build", "start b-test", "end b-test"]


def test_a_failing_build_skips_the_tests_needing_it_and_names_it(
    make_repo: Callable[[Files], Path], events: Path
) -> None:
    repo = make_repo(monorepo(events, failing_build=True))
    results = {r.key: r for r in execute_plan(plan_for(repo, "packages/b/src/index.js"), repo)}
    assert results["packages/a:node-build"].status == "failed"
    skipped = results["packages/b:node-test"]
    assert skipped.status == "skipped"
    assert "'packages/a:node-build'" in skipped.reason
    assert "packages/a:node-build" in skipped.log
    assert "start b-test" not in markers(events)  # it never ran


def test_two_checks_writing_the_same_folder_never_run_at_once(
    make_repo: Callable[[Files], Path], events: Path
) -> None:
    repo = make_repo(monorepo(events, root_build=True))
    plan = plan_for(repo, "mark.js", "packages/a/src/index.js")
    builds = [c for c in plan.checks if c.kind == "build"]
    assert {c.key for c in builds} == {"node-build", "packages/a:node-build"}
    assert all(not c.needs for c in builds)  # nothing orders them: only their outputs

    results = execute_plan(plan, repo)
    assert all(r.status == "passed" for r in results if r.kind == "build")
    build_markers = [m for m in markers(events) if m.split()[1] in ("root-build", "a-build")]
    assert len(build_markers) == 4
    for index in (0, 2):  # each build's start is followed by its own end
        assert build_markers[index].split()[1] == build_markers[index + 1].split()[1]
        assert (build_markers[index].split()[0], build_markers[index + 1].split()[0]) == (
            "start", "end")


def test_independent_checks_run_at_once(
    make_repo: Callable[[Files], Path], events: Path
) -> None:
    repo = make_repo(monorepo(events))
    plan = plan_for(repo, "packages/c/src/index.js", "packages/d/src/index.js")
    assert {c.key: c.needs for c in plan.checks} == {
        "packages/c:node-test": (), "packages/d:node-test": ()}
    # Each waits (in its own process) until the other has started: both pass only together.
    results = execute_plan(plan, repo)
    assert [r.status for r in results] == ["passed", "passed"], [r.log for r in results]


def test_builds_of_folders_sharing_a_name_prefix_run_at_once(
    make_repo: Callable[[Files], Path], events: Path
) -> None:
    """packages/web and packages/web-ui are different folders: neither build waits."""
    def package(name: str, peer: str) -> str:
        return package_json({"name": f"@t/{name}",
                             "scripts": {"build": script(events, f"{name}-build", peer)}})

    repo = make_repo({
        "package.json": package_json({"name": "root", "workspaces": ["packages/*"]}),
        "mark.js": MARK,
        "packages/web/package.json": package("web", "web-ui-build"),
        "packages/web/src/index.js": "module.exports = 1;\n",
        "packages/web-ui/package.json": package("web-ui", "web-build"),
        "packages/web-ui/src/index.js": "module.exports = 2;\n",
    })
    plan = plan_for(repo, "packages/web/src/index.js", "packages/web-ui/src/index.js")
    assert {c.key: (c.writes, c.needs) for c in plan.checks} == {
        "packages/web:node-build": (("packages/web",), ()),
        "packages/web-ui:node-build": (("packages/web-ui",), ())}
    # Each waits (in its own process) until the other has started: both pass only together.
    results = execute_plan(plan, repo)
    assert [r.status for r in results] == ["passed", "passed"], [r.log for r in results]


def test_configured_needs_order_checks_and_a_failure_skips_the_rest(
    make_repo: Callable[[Files], Path], events: Path
) -> None:
    repo = make_repo({"mark.js": MARK, "src/x.txt": "x\n"})
    config = parse_config(f"""\
verify:
  concurrency: 4
  checks:
    - id: gen
      run: cd . && node mark.js {events} gen
    - id: check
      run: node mark.js {events} check - fail
      needs: [gen]
    - id: report
      run: node mark.js {events} report
      needs: [check]
    - id: publish
      run: node mark.js {events} publish
      needs: [report]
""", RepositoryConfig).verify
    plan = build_plan(["src/x.txt"], GitTree.discover(repo), config)
    assert {c.key: c.needs for c in plan.checks} == {
        "gen": (), "check": ("gen",), "report": ("check",), "publish": ("report",)}
    results = {r.key: r for r in execute_plan(plan, repo)}
    assert [results[k].status for k in ("gen", "check", "report", "publish")] == [
        "passed", "failed", "skipped", "skipped"]
    # A skipped check did not pass either: what needs it is skipped in turn, naming it.
    assert results["publish"].reason == "it needs 'report', which did not pass (skipped)"
    assert markers(events) == ["start gen", "end gen", "start check", "end check"]


def test_needs_naming_no_check_or_forming_a_cycle_are_refused_at_their_line() -> None:
    with pytest.raises(ConfigError) as unknown:
        parse_config("verify:\n  checks:\n    - id: test\n      run: t\n"
                     "      needs: [biuld]\n", RepositoryConfig)
    assert str(unknown.value).startswith(".github/ratchet.yml:5: verify.checks[0].needs[0]: ")
    assert "'biuld'" in str(unknown.value)
    with pytest.raises(ConfigError) as cycle:
        parse_config("verify:\n  workspaces:\n    - path: web\n      checks:\n"
                     "        - id: a\n          run: x\n          needs: [b]\n"
                     "        - id: b\n          run: y\n          needs: [a]\n",
                     RepositoryConfig)
    assert "cycle (web:a -> web:b -> web:a)" in str(cycle.value)
    assert str(cycle.value).startswith(".github/ratchet.yml:7: ")


def test_plan_only_json_shows_each_checks_needs(
    make_repo: Callable[[Files], Path], events: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(monorepo(events))
    (repo / "packages/b/src/index.js").write_text("module.exports = 7;\n")
    parser = argparse.ArgumentParser(prog="ratchet verify")
    configure_parser(parser)
    args = parser.parse_args(["--repo", str(repo), "--plan-only", "--json"])
    assert run_verify(args, Sandbox(), NetworkSettings()) == 0
    checks = {f"{c['workspace']}:{c['id']}": c for c in json.loads(capsys.readouterr().out)[
        "plan"]["checks"]}
    assert checks["packages/b:node-test"]["needs"] == {
        "setup": [], "checks": ["packages/a:node-build"]}
    assert checks["packages/a:node-build"]["needs"] == {"setup": [], "checks": []}


def test_packages_depending_on_each_other_build_one_after_the_other(
    make_repo: Callable[[Files], Path], events: Path
) -> None:
    def package(name: str, other: str) -> str:
        return package_json({
            "name": f"@t/{name}", "version": "1.0.0", "main": "dist/index.js",
            "dependencies": {f"@t/{other}": "1.0.0"},
            "scripts": {"build": script(events, f"{name}-build")},
        })

    repo = make_repo({
        "package.json": package_json({"name": "root", "workspaces": ["packages/*"]}),
        "mark.js": MARK,
        "packages/x/package.json": package("x", "y"),
        "packages/x/src/index.js": "module.exports = 1;\n",
        "packages/y/package.json": package("y", "x"),
        "packages/y/src/index.js": "module.exports = 2;\n",
    })
    plan = plan_for(repo, "packages/x/src/index.js", "packages/y/src/index.js")
    # A need back would leave both waiting for ever: one goes first.
    assert {c.key: c.needs for c in plan.checks} == {
        "packages/x:node-build": ("packages/y:node-build",), "packages/y:node-build": ()}
    assert [r.status for r in execute_plan(plan, repo)] == ["passed", "passed"]
    assert markers(events) == ["start y-build", "end y-build", "start x-build", "end x-build"]


def test_a_recorded_plan_whose_needs_form_a_cycle_ends_instead_of_waiting(tmp_path: Path) -> None:
    """Planning never makes one (`_without_cycles`); a plan read back from elsewhere might."""
    checks = tuple(PlannedCheck(name, ".", "test", "true", 30, None, needs=(other,))
                   for name, other in (("a", "b"), ("b", "a")))
    results = execute_plan(Plan((PlannedWorkspace(".", ()),), checks, None), tmp_path)
    assert [r.status for r in results] == ["skipped", "skipped"]
    assert "form a cycle" in results[0].reason
