"""Benchmark verification: parallel execution and change-scoped planning.

Prints two ratios, each against a baseline measured in the same run:
(a) wall time of a parallel plan divided by its longest check (target at most 1.2), next to
    the same plan run one check at a time;
(b) on a generated 20-workspace monorepo, the checks planned for a one-workspace change divided
    by the checks of the full plan (target at most 1/20).

Run with `.venv/bin/python bench/verify.py`; exits 0.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from verification.config import VerifyConfig
from verification.execute import execute_plan
from verification.plan import Plan, PlannedCheck, PlannedWorkspace, build_plan
from verification.tree import DirectoryTree

# Durations of the benchmark's checks, in seconds: different, like real checks.
CHECK_SECONDS = (1.0, 0.8, 0.6, 0.5, 0.4, 0.3)
# Workspaces in the generated monorepo.
WORKSPACES = 20


def bench_parallel(root: Path) -> None:
    checks = []
    for index, seconds in enumerate(CHECK_SECONDS):
        folder = f"ws{index}"
        (root / folder).mkdir(parents=True)
        checks.append(PlannedCheck("sleep", folder, "test", f"sleep {seconds}", 30, None))
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
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    tree = DirectoryTree(root)
    config = VerifyConfig(concurrency=4)

    started = time.monotonic()
    full = build_plan([".github/workflows/ci.yml"], tree, config)
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


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as scratch:
        bench_parallel(Path(scratch) / "parallel")
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-") as scratch:
        bench_planning(Path(scratch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
