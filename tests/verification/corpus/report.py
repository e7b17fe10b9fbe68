"""`make corpus`: plan every corpus case from its mirror and print the score per repository.

    python tests/verification/corpus/report.py [-v]

`-v` prints why each wrong case is wrong. A repository whose mirror is absent is listed as
skipped, with how to get it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from corpus import load_known_misses, load_repositories, missing_mirror, plan_case
from score import Verdict, score


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    known = load_known_misses()
    total = right = 0
    width = max(len(repository.layout) for repository in load_repositories())
    print(f"{'repository':32} {'layout':{width}} {'right':>7} {'share':>6}")
    for repository in load_repositories():
        absent = missing_mirror(repository.repository)
        if absent:
            print(f"{repository.repository:32} skipped: {absent}")
            continue
        verdicts: list[Verdict] = [score(plan_case(case), case) for case in repository.cases]
        good = sum(verdict.right for verdict in verdicts)
        total += len(verdicts)
        right += good
        print(f"{repository.repository:32} {repository.layout:{width}} {good:>3}/{len(verdicts):<3}"
              f" {100 * good / len(verdicts):>5.0f}%")
        if verbose:
            for verdict in verdicts:
                if not verdict.right:
                    print(f"    {verdict.case}: {known.get(verdict.case, '(not a known miss)')}")
                    for reason in verdict.reasons:
                        print(f"        {reason}")
    if total:
        print(f"{'overall':{33 + width}} {right:>3}/{total:<3} {100 * right / total:>5.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
