"""How fast the repository config refuses hostile files, against parsing legitimate ones.

A config is read from the base of every run and by ``ratchet verify`` on every pull request: a
file built to blow up the parser (anchors that expand exponentially, 400,000 checks, deep
nesting) must be refused at least as fast as the largest legitimate file is parsed, and
validating checks must grow linearly (a quadratic duplicate check would turn 100,000 checks
into minutes). Both are measured here against baselines from the same run:

- linearity: validating 100,000 checks over validating 10,000 (linear: ~10; target <= 20;
  quadratic: ~100);
- hostile: the slowest refusal of a hostile file over parsing a legitimate 9,000-check file
  (target <= 1).

    .venv/bin/python bench/config.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.config import parse_repository_config
from verification.config import MAX_CONFIG_BYTES, ConfigError, VerifyConfig

LINEAR_TARGET = 20.0
HOSTILE_TARGET = 1.0


def many_checks(count: int) -> str:
    return "verify:\n  checks:\n" + "".join(f"    - {{id: c{i}, run: x}}\n" for i in range(count))


def billion_laughs(levels: int = 9, width: int = 10) -> str:
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


HOSTILE: dict[str, bytes] = {
    "billion-laughs": billion_laughs().encode(),
    "recursive-sequence": b"a: &a [*a]\n",
    "deep-nesting": b"[" * 10_000 + b"]" * 10_000,
    "oversized": b"verify: {}\n" + b"#" * MAX_CONFIG_BYTES,
    "400k-checks": many_checks(400_000).encode(),
}


def timed(action: Callable[[], object], repeat: int) -> float:
    """The median of ``repeat`` timings of ``action``, in seconds (the garbage collector
    paused: its passes grow with the objects alive, not with the work measured)."""
    samples = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            action()
            samples.append(time.perf_counter() - started)
        finally:
            gc.enable()
    return statistics.median(samples)


def validate(count: int) -> Callable[[], object]:
    checks = [{"id": f"c{i}", "run": "x"} for i in range(count)]
    return lambda: VerifyConfig.from_dict({"checks": checks})


def refuse(data: bytes) -> Callable[[], object]:
    def action() -> None:
        try:
            parse_repository_config(data)
        except ConfigError:
            return
        raise AssertionError("a hostile config was accepted")
    return action


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    small, large = timed(validate(10_000), args.repeat), timed(validate(100_000), args.repeat)
    linear = large / small
    legit = many_checks(9_000).encode()
    baseline = timed(lambda: parse_repository_config(legit), args.repeat)
    refusals = {name: timed(refuse(data), args.repeat) for name, data in HOSTILE.items()}
    worst = max(refusals, key=refusals.__getitem__)
    hostile = refusals[worst] / baseline
    print(f"validating checks: 10,000 in {small * 1000:.1f} ms, 100,000 in {large * 1000:.1f} ms")
    print(f"  ratio {linear:.1f} (linear ~10, quadratic ~100; target <= {LINEAR_TARGET:g})")
    print(f"parsing a legitimate 9,000-check file ({len(legit)} bytes): {baseline * 1000:.1f} ms")
    for name, seconds in refusals.items():
        print(f"  refusing {name:20} {seconds * 1000:8.1f} ms")
    print(f"  slowest refusal ({worst}) / legitimate parse: {hostile:.2f}"
          f" (target <= {HOSTILE_TARGET:g})")
    ok = linear <= LINEAR_TARGET and hostile <= HOSTILE_TARGET
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
