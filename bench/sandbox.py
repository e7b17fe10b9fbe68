"""What the bubblewrap sandbox adds to an agent step.

The same trivial agent (a shell writing its output file) runs through ``CommandAgent`` once
unconfined and once in the sandbox, alternately, so both see the same machine load. Printed:
p50 and p90 of each, the sandbox's added cost per step at p50 (target under 50 ms) and the
ratio of the medians.

    .venv/bin/python bench/sandbox.py [--steps N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from runner.agents.base import AgentTask
from runner.agents.command import CommandAgent
from runner.sandbox import Sandbox, SandboxMode

TARGET_ADDED_MS = 50.0
TEMPLATE = "sh -c 'echo done > \"$RATCHET_OUTPUT\"'"


def one_step(agent: CommandAgent, root: Path, n: int) -> float:
    folder = root / f"step-{n}"
    worktree = folder / "worktree"
    worktree.mkdir(parents=True)
    prompt = folder / "prompt.md"
    prompt.write_text("bench")
    task = AgentTask(
        run_id="bench", phase="research", step=f"research.{n}", worktree=worktree,
        prompt="bench", prompt_file=prompt, output_dir=folder / "out",
        output=folder / "out" / "research" / "repository-analysis.md",
        log_file=folder / "agent.log", timeout=60,
    )
    task.output.parent.mkdir(parents=True)
    started = time.perf_counter()
    agent.run(task)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ratchet-bench-sandbox-") as scratch:
        root = Path(scratch)
        home = root / "home"
        home.mkdir()
        confined = CommandAgent(TEMPLATE, sandbox=Sandbox(hidden=(home,)))
        unconfined = CommandAgent(TEMPLATE, sandbox=Sandbox(mode=SandboxMode.NONE))
        confined.sandbox.check()
        one_step(confined, root / "warm", 0)  # the probe and page cache, outside the timing
        timings: dict[str, list[float]] = {"none": [], "bwrap": []}
        for n in range(args.steps):
            timings["none"].append(one_step(unconfined, root / "none", n))
            timings["bwrap"].append(one_step(confined, root / "bwrap", n))
    p50 = {mode: statistics.median(values) * 1000 for mode, values in timings.items()}
    p90 = {mode: statistics.quantiles(values, n=10)[-1] * 1000 for mode, values in timings.items()}
    added = p50["bwrap"] - p50["none"]
    print(f"agent step, unconfined: p50 {p50['none']:.1f} ms, p90 {p90['none']:.1f} ms")
    print(f"agent step, bubblewrap: p50 {p50['bwrap']:.1f} ms, p90 {p90['bwrap']:.1f} ms")
    met = "met" if added < TARGET_ADDED_MS else "NOT met"
    print(f"sandbox added cost per agent step at p50: {added:.1f} ms "
          f"(target < {TARGET_ADDED_MS:.0f} ms: {met}); ratio {p50['bwrap'] / p50['none']:.2f}")
    return 0 if added < TARGET_ADDED_MS else 1


if __name__ == "__main__":
    sys.exit(main())
