"""Benchmark verification: parallel execution and change-scoped planning.

Prints a ratio per figure, each against a baseline measured in the same run:
(a) wall time of a parallel plan of independent builds (each writing its own folder) divided by
    its longest check (target at most 1.2), next to
    the same plan run one check at a time;
(b) on a generated 20-workspace monorepo, the checks planned for a one-workspace change divided
    by the checks of the full plan (target at most 1/20);
(c) on a generated git repository of 1,500 packages and 90,000 files (pnpm and uv workspaces,
    dependencies between packages), the time to plan a global change (a root `.tool-versions`:
    every workspace; list the
    tree, read every manifest, plan) divided by the time `git ls-files` takes to list that
    same working tree, untracked files included as planning lists it (target at most 3);
(d) that plan time divided by the plan time on a 150-package repository of the same shape
    (target at most 12: linear growth); next to it, for reference, a manifest change planned
    with and without the base's layout (a change cannot choose its own checks: both are planned);
(e) matching hostile globs (`**/**/...` against a 200-deep path, `*d*d...` against a
    200-character name; a backtracking matcher takes hours), divided by matching a pattern as
    long with no star (the path and a `?`) against the same path (target at most 20);
(f) on a generated git repository of 500 packages and 30,000 files with an uncommitted change,
    `ratchet verify --plan-only` as a whole process (start-up, git, planning, printing) divided
    by `git ls-files` listing the same working tree, untracked files included as the plan
    lists it (target at most 3); the index-only listing and the CPU times for reference; next
    to it `ratchet verify --help`, start-up alone (target under 0.3 s), and `python -c pass`;
    and, for reference, what no plan of a working tree can skip: the two walks git makes (the
    listing and the diff of the work tree, at once, as `ratchet verify` runs them) and Python
    starting with the modules planning loads.

Run with `.venv/bin/python bench/verify.py`; exits 0. About a minute on 2 cores.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plumbing.git import Git
from verification.config import VerifyConfig
from verification.execute import execute_plan
from verification.globs import compile_glob
from verification.plan import Plan, PlannedCheck, PlannedWorkspace, build_plan
from verification.tree import DirectoryTree, GitRevisionTree, GitTree

# Durations of the benchmark's checks, in seconds: different, like real checks.
CHECK_SECONDS = (1.0, 0.8, 0.6, 0.5, 0.4, 0.3)
# Workspaces in the generated monorepo.
WORKSPACES = 20
# Packages of the large and the small generated git repositories, and files per package.
LARGE_PACKAGES = 1500
SMALL_PACKAGES = 150
FILES_PER_PACKAGE = 60
# Timed repetitions; the best is kept (the machine may be busy with other work).
REPEATS = 7
# Packages of the repository `ratchet verify --plan-only` plans as a whole process (30,000 files).
COMMAND_PACKAGES = 500
# A change that plans every workspace: the toolchain pins of the whole repository (a workflow
# file plans only the checks that run it).
GLOBAL_CHANGE = ".tool-versions"


def bench_parallel(root: Path) -> None:
    checks = []
    for index, seconds in enumerate(CHECK_SECONDS):
        folder = f"ws{index}"
        (root / folder).mkdir(parents=True)
        # Independent builds: each writes only its own folder, so none waits for another.
        checks.append(PlannedCheck("sleep", folder, "build", f"sleep {seconds}", 30, None,
                                   writes=(folder,)))
    workspaces = tuple(PlannedWorkspace(c.workspace, ()) for c in checks)
    parallel = Plan(workspaces, tuple(checks), concurrency=len(checks))
    sequential = Plan(workspaces, tuple(checks), concurrency=1)

    started = time.monotonic()
    results = execute_plan(parallel, root)
    parallel_wall = time.monotonic() - started
    started = time.monotonic()
    execute_plan(sequential, root)
    sequential_wall = time.monotonic() - started

    assert all(r.status == "passed" for r in results), [r.status for r in results]
    longest = max(r.duration_s for r in results)
    ratio = parallel_wall / longest
    print(f"(a) {len(checks)} checks, longest {longest:.2f}s")
    print(f"    parallel wall        {parallel_wall:.2f}s")
    print(f"    sequential wall      {sequential_wall:.2f}s (baseline, concurrency 1)")
    print(
        f"    parallel / longest   {ratio:.3f}  (target <= 1.2) {'ok' if ratio <= 1.2 else 'MISS'}"
    )
    print(f"    sequential / parallel {sequential_wall / parallel_wall:.2f}x")


def bench_planning(root: Path) -> None:
    for index in range(WORKSPACES):
        folder = root / "packages" / f"pkg{index:02d}"
        (folder / "tests").mkdir(parents=True)
        (folder / "pyproject.toml").write_text(
            f'[project]\nname = "pkg{index:02d}"\n[tool.ruff]\nline-length = 100\n'
        )
        (folder / "module.py").write_text("VALUE = 1\n")
        (folder / "tests" / "test_module.py").write_text("def test_value():\n    pass\n")
    (root / GLOBAL_CHANGE).write_text("python 3.12\n")
    tree = DirectoryTree(root)
    config = VerifyConfig(concurrency=4)

    started = time.monotonic()
    full = build_plan([GLOBAL_CHANGE], tree, config)
    full_s = time.monotonic() - started
    started = time.monotonic()
    scoped = build_plan(["packages/pkg07/module.py"], tree, config)
    scoped_s = time.monotonic() - started

    ratio = len(scoped.checks) / len(full.checks)
    target = 1 / WORKSPACES
    print(f"(b) {WORKSPACES}-workspace monorepo")
    print(f"    full plan            {len(full.checks)} checks (baseline; built in {full_s:.3f}s)")
    print(f"    one-workspace change {len(scoped.checks)} checks (built in {scoped_s:.3f}s)")
    verdict = "ok" if ratio <= target + 1e-9 else "MISS"
    print(f"    scoped / full        {ratio:.3f}  (target <= {target:.3f}) {verdict}")


def write_monorepo(root: Path, packages: int) -> int:
    """Write a monorepo of `packages` packages: two thirds pnpm packages, one third uv members,
    each depending on a package of its kind (a tree: package n on package n // 4), with
    FILES_PER_PACKAGE files each. Returns the number of files written."""
    node = packages * 2 // 3
    files: dict[str, str] = {
        "package.json": json.dumps({"name": "syn", "private": True,
                                    "packageManager": "pnpm@9.12.0",
                                    "devDependencies": {"vitest": "^2.1.3"}}),
        "pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n",
        "pnpm-lock.yaml": "lockfileVersion: '9.0'\n",
        "pyproject.toml": '[project]\nname = "syn"\n[tool.uv.workspace]\nmembers = ["py/*"]\n'
                          '[dependency-groups]\ndev = ["pytest", "ruff"]\n',
        "uv.lock": "version = 1\n",
        GLOBAL_CHANGE: "python 3.12\n",
    }
    for index in range(packages):
        if index < node:
            folder = f"packages/pkg{index:04d}"
            deps = {f"@syn/pkg{index // 4:04d}": "workspace:*"} if index else {}
            files[f"{folder}/package.json"] = json.dumps({
                "name": f"@syn/pkg{index:04d}", "dependencies": deps,
                "scripts": {"lint": "eslint src", "test": "vitest run", "build": "tsc"},
            })
            sources = [f"{folder}/src/module{n}.ts" for n in range(40)]
            tests = [f"{folder}/tests/module{n}.test.ts" for n in range(FILES_PER_PACKAGE - 41)]
        else:
            folder = f"py/pkg{index:04d}"
            dep = f'"syn-pkg{node + (index - node) // 4:04d}"' if index > node else ""
            files[f"{folder}/pyproject.toml"] = (
                f'[project]\nname = "syn-pkg{index:04d}"\ndependencies = [{dep}]\n'
                f'[tool.uv.sources]\n{dep or "x"} = {{ workspace = true }}\n'
            )
            sources = [f"{folder}/src/pkg{index:04d}/module{n}.py" for n in range(40)]
            tests = [f"{folder}/tests/test_module{n}.py" for n in range(FILES_PER_PACKAGE - 41)]
        for path in sources + tests:
            files[path] = "x = 1\n"
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return len(files)


def commit_monorepo(root: Path) -> Git:
    """`git init`, one `git add` and one commit of everything under `root`."""
    Git(git_dir=None, cwd=root).run("init", "-q", "-b", "main")
    repo = Git(git_dir=root / ".git", work_tree=root,
               config=("user.name=bench", "user.email=bench@example.invalid"))
    repo.run("add", "-A")
    repo.run("commit", "-q", "-m", "synthetic monorepo")
    return repo


def best_of(function: Callable[[], object]) -> float:
    """The fastest of REPEATS runs, in seconds."""
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def bench_large_plan(scratch: Path) -> None:
    sizes = {}
    for packages in (LARGE_PACKAGES, SMALL_PACKAGES):
        root = scratch / f"repo-{packages}"
        started = time.perf_counter()
        count = write_monorepo(root, packages)
        repo = commit_monorepo(root)
        sizes[packages] = (repo, count, time.perf_counter() - started)
    config = VerifyConfig()

    def full_plan(repo: Git) -> Plan:
        return build_plan([GLOBAL_CHANGE], GitTree(repo), config)  # a fresh tree: lists and reads

    large, count, built = sizes[LARGE_PACKAGES]
    small, small_count, _ = sizes[SMALL_PACKAGES]
    listing = best_of(lambda: large.run("ls-files", "-z", "--cached", "--others",
                                        "--exclude-standard"))
    index_only = best_of(lambda: large.run("ls-files", "-z"))
    planned = full_plan(large)
    large_s = best_of(lambda: full_plan(large))
    small_s = best_of(lambda: full_plan(small))
    revision_listing = best_of(lambda: large.run(
        "ls-tree", "-r", "-z", "--full-tree", "--format=%(path)%x00%(objectname)", "HEAD"))
    revision_s = best_of(lambda: build_plan([GLOBAL_CHANGE], GitRevisionTree(large, "HEAD"),
                                            config))
    one = "packages/pkg0005/src/module1.ts"
    one_s = best_of(lambda: build_plan([one], GitTree(large), config))
    one_plan = build_plan([one], GitTree(large), config)
    # A manifest change with the base: the base's layout is planned too (a change cannot
    # choose its own checks), from git's objects.
    manifest = "packages/pkg0005/package.json"
    floor_s = best_of(lambda: build_plan([manifest], GitTree(large), config,
                                         base=GitRevisionTree(large, "HEAD")))
    manifest_s = best_of(lambda: build_plan([manifest], GitTree(large), config))

    ratio = large_s / listing
    growth = large_s / small_s
    print(f"(c) {LARGE_PACKAGES} packages, {count} files (generated and committed in {built:.1f}s)")
    print(f"    git ls-files, untracked too  {listing * 1000:7.1f} ms (baseline: the listing a "
          "working-tree plan makes)")
    print(f"    git ls-files, index only     {index_only * 1000:7.1f} ms (for reference)")
    full, scoped = len(planned.checks), len(one_plan.checks)
    print(f"    full plan (global change)    {large_s * 1000:7.1f} ms ({full} checks; lists the "
          "tree, reads every manifest)")
    print(f"    one-package change           {one_s * 1000:7.1f} ms ({scoped} checks, dependents "
          "included)")
    verdict = "ok" if ratio <= 3 else "MISS"
    print(f"    full plan / git ls-files     {ratio:.2f}  (target <= 3) {verdict}")
    print(f"    full plan / index-only ls-files {large_s / index_only:.2f}  (for reference)")
    print(f"    git ls-tree -r HEAD          {revision_listing * 1000:7.1f} ms (the listing a "
          "revision plan makes)")
    print(f"    full plan of a revision      {revision_s * 1000:7.1f} ms (what the Action and "
          "`ratchet verify --head` plan; manifests read from git's objects)")
    print(f"    revision plan / ls-tree      {revision_s / revision_listing:.2f}  (for reference)")
    print(f"    manifest change, no base     {manifest_s * 1000:7.1f} ms (baseline)")
    print(f"    manifest change, base floor  {floor_s * 1000:7.1f} ms (the base's layout planned "
          f"too: {floor_s / manifest_s:.2f}x, for reference)")
    print(f"(d) {SMALL_PACKAGES} packages, {small_count} files")
    print(f"    full plan (global change)    {small_s * 1000:7.1f} ms (baseline)")
    verdict = "ok" if growth <= 12 else "MISS"
    print(f"    {LARGE_PACKAGES} / {SMALL_PACKAGES} packages plan time  {growth:.2f}  "
          f"(target <= 12: linear growth) {verdict}")


def ratchet_command() -> list[str]:
    """The `ratchet` executable of this environment, else the module it runs."""
    script = Path(sys.executable).with_name("ratchet")
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.entry"]


def process_times(argv: list[str], cwd: Path) -> tuple[float, float]:
    """The fastest of REPEATS runs of `argv` as a process: (wall, CPU of the process tree).
    Python runs as an installed command does, with its bytecode cached (the first run writes
    it), whatever this shell's PYTHONDONTWRITEBYTECODE says."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True, env=env)  # warm-up
    best_wall = best_cpu = float("inf")
    for _ in range(REPEATS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    return best_wall, best_cpu


def concurrent_wall(commands: list[list[str]], cwd: Path) -> float:
    """The fastest of REPEATS runs of `commands` started together, until the last one ends."""
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        running = [subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL) for argv in commands]
        for proc in running:
            proc.wait()
        best = min(best, time.perf_counter() - started)
    return best


def bench_command(scratch: Path) -> None:
    root = scratch / "repo"
    count = write_monorepo(root, COMMAND_PACKAGES)
    commit_monorepo(root)
    (root / "packages/pkg0005/src/module1.ts").write_text("x = 2\n")
    (root / "py/pkg0400/src/pkg0400/new_module.py").write_text("y = 1\n")  # untracked
    listing = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    plan = [*ratchet_command(), "verify", "--plan-only"]
    list_wall, list_cpu = process_times(listing, root)
    index_wall, _ = process_times(["git", "ls-files", "-z"], root)
    plan_wall, plan_cpu = process_times(plan, root)
    help_wall, _ = process_times([*ratchet_command(), "verify", "--help"], root)
    python_wall, _ = process_times([sys.executable, "-c", "pass"], root)
    walks_wall = concurrent_wall([listing, ["git", "diff", "--name-only", "--no-renames", "-z",
                                            "HEAD"]], root)
    imports_wall, _ = process_times([sys.executable, "-c",
                                     "import app.verify_cli, verification.pipeline"], root)
    checks = subprocess.run(plan, cwd=root, check=True, capture_output=True, text=True)
    ratio = plan_wall / list_wall
    print(f"(f) {COMMAND_PACKAGES} packages, {count} files, an uncommitted change of 2 files")
    print(f"    git ls-files, untracked too  {list_wall * 1000:7.1f} ms (baseline; "
          f"CPU {list_cpu * 1000:.1f} ms)")
    print(f"    git ls-files, index only     {index_wall * 1000:7.1f} ms (for reference)")
    print(f"    ratchet verify --plan-only   {plan_wall * 1000:7.1f} ms (CPU {plan_cpu * 1000:.1f}"
          f" ms; {len(checks.stdout.splitlines())} checks; start-up included)")
    verdict = "ok" if ratio <= 3 else "MISS"
    print(f"    plan / git ls-files          {ratio:.2f}  (target <= 3) {verdict}; CPU "
          f"{plan_cpu / list_cpu:.2f}, for reference")
    verdict = "ok" if help_wall < 0.3 else "MISS"
    print(f"    ratchet verify --help        {help_wall * 1000:7.1f} ms (start-up: target < 300 ms)"
          f" {verdict}; python -c pass {python_wall * 1000:.1f} ms, for reference")
    print(f"    git's two walks, at once     {walks_wall * 1000:7.1f} ms "
          f"({walks_wall / list_wall:.2f}x the listing; for reference: the listing and the "
          "work-tree diff a plan needs)")
    print(f"    Python and planning's imports {imports_wall * 1000:6.1f} ms "
          f"({imports_wall / list_wall:.2f}x the listing; for reference: nothing planned)")


def bench_globs() -> None:
    deep, long = "/".join(["d"] * 200), "d" * 200  # 200 segments; one segment of 200 characters
    cases = [(deep, "**/" * 20 + "x"), (deep, "**/*/" * 20 + "x"), (long, "*d" * 12 + "*x")]
    print("(e) hostile globs, each against a pattern as long with no star on the same path")
    worst = 0.0
    for path, pattern in cases:
        # The baseline ends in `?`, so its last segment is walked character by character as
        # the hostile one is (a segment with no wildcard at all is compared at once).
        hostile, literal = compile_glob(pattern), compile_glob(path + "?")
        hostile_s = best_of(lambda g=hostile, p=path: [g.matches(p) for _ in range(100)])
        literal_s = best_of(lambda g=literal, p=path: [g.matches(p) for _ in range(100)])
        worst = max(worst, hostile_s / literal_s)
        print(f"    {pattern[:24] + '...':28} {hostile_s * 1e4:7.1f} us (literal: "
              f"{literal_s * 1e4:.1f} us, baseline)")
    verdict = "ok" if worst <= 20 else "MISS"
    print(f"    slowest hostile / literal    {worst:.2f}  (target <= 20: no backtracking) "
          f"{verdict}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as scratch:
        bench_parallel(Path(scratch) / "parallel")
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as scratch:
        bench_planning(Path(scratch))
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as scratch:
        bench_large_plan(Path(scratch))
    bench_globs()
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as scratch:
        bench_command(Path(scratch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
