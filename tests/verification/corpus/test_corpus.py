"""The corpus as tests: every real commit planned as `ratchet verify --base --head` plans it and
scored against what the repository's CI runs at that commit (README.md).

Each case is a test; a known miss (known_misses.yaml, with why) is a strict xfail, so a planner
fix that turns it right fails until it is taken off the list. `test_floor` keeps the share of
cases planned right from falling below FLOOR. Cases whose mirror is absent (and every case under
CI=true) skip, naming the repository and how to get it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from corpus import (
    CATEGORIES,
    RepositoryCases,
    load_cases,
    load_known_misses,
    load_repositories,
    missing_mirror,
    plan_case,
)
from sample import git_dir, sample
from score import Case, Verdict, Want, score

from verification.model import Plan, PlannedCheck, UnverifiedStep

# The share of cases planned right today: raise it with every fix, never lower it.
FLOOR = 46 / 48

CASES = load_cases()
KNOWN_MISSES = load_known_misses()


@pytest.fixture(scope="module")
def verdict_of() -> Callable[[Case], Verdict]:
    """Each case planned once per session: the verdict of a case, planned on first use."""
    verdicts: dict[str, Verdict] = {}

    def verdict(case: Case) -> Verdict:
        if case.id not in verdicts:
            verdicts[case.id] = score(plan_case(case), case)
        return verdicts[case.id]

    return verdict


def _param(case: Case) -> object:
    marks = []
    if case.id in KNOWN_MISSES:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case.id]))
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.slow
@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_case_is_planned_as_its_ci_runs_it(case: Case,
                                            verdict_of: Callable[[Case], Verdict]) -> None:
    absent = missing_mirror(case.repository)
    if absent:
        pytest.skip(absent)
    verdict = verdict_of(case)
    assert verdict.right, f"{case.id} ({case.why}):\n  " + "\n  ".join(verdict.reasons)


@pytest.mark.slow
def test_floor(verdict_of: Callable[[Case], Verdict]) -> None:
    present = [case for case in CASES if missing_mirror(case.repository) is None]
    if len(present) < len(CASES):
        pytest.skip(f"{len(CASES) - len(present)} cases have no mirror here: the floor is"
                    " measured on the whole corpus")
    right = sum(verdict_of(case).right for case in present)
    assert right / len(present) >= FLOOR, (
        f"{right}/{len(present)} cases planned right, below the floor of {FLOOR:.0%}")


def test_the_corpus_is_as_large_and_varied_as_the_issue_asks() -> None:
    repositories = load_repositories()
    assert len(CASES) >= 40 and len(repositories) >= 10
    assert all(len(repository.cases) >= 4 for repository in repositories)
    assert len({case.id for case in CASES}) == len(CASES), "a commit is one case"
    layouts = " ".join(repository.layout for repository in repositories)
    assert all(language in layouts for language in ("node", "python", "rust", "go"))


def test_every_defect_category_has_three_cases_that_exercise_it() -> None:
    counts = Counter(category for case in CASES for category in case.categories)
    assert set(counts) <= set(CATEGORIES)
    assert all(counts[category] >= 3 for category in CATEGORIES), counts
    for case in CASES:
        # A tag is only honest when the case holds the expectation that category is about.
        if 1 in case.categories:
            assert case.order, f"{case.id} is tagged ordering but expects no order"
        if 3 in case.categories:
            assert any(want.under for want in case.must_not), \
                f"{case.id} is tagged non-members but forbids no folder"
        if 4 in case.categories:
            assert case.must_run, f"{case.id} is tagged own checks but expects none"
        if 5 in case.categories:
            assert case.must_not, f"{case.id} is tagged selection but forbids nothing"


def test_known_misses_are_cases_and_say_why() -> None:
    ids = {case.id for case in CASES}
    for case, why in KNOWN_MISSES.items():
        assert case in ids, f"known_misses.yaml names {case}, which is no case"
        assert why.strip() and "\n" not in why.strip(), f"{case}: one line of why"


@pytest.mark.slow
@pytest.mark.parametrize("repository", load_repositories(), ids=lambda r: r.repository)
def test_cases_are_the_deterministic_sample(repository: RepositoryCases) -> None:
    """The commits are sample.py's, not chosen to fit the planner."""
    absent = missing_mirror(repository.repository)
    if absent:
        pytest.skip(absent)
    folder = git_dir(repository.repository)
    assert folder is not None
    chosen = sample(folder, repository.end, repository.every, repository.count)
    assert [case.commit for case in repository.cases] == chosen


def test_score_names_every_way_a_plan_is_wrong() -> None:
    def check(key: str, workspace: str, command: str, kind: str = "test",
              needs: tuple[str, ...] = ()) -> PlannedCheck:
        return PlannedCheck(key, workspace, kind, command, 60.0, None, needs=needs)

    build = check("build", ".", "pnpm run build", "build")
    test = check("test", ".", "export CI=1; pnpm run test-unit", needs=("build",))
    fixture = check("lint", "packages/a/test/fixtures/x", "npx eslint .", "lint")
    plan = Plan((), (build, test, fixture), None,
                unverified_steps=(UnverifiedStep(".github/workflows/ci.yml", "e2e", "Run e2e",
                                                 "needs browsers"),))
    case = Case("o/r", "0" * 40, (1,), "why",
                must_run=(Want(tool=("pnpm run test-unit",)),),
                must_not=(Want(under="packages/a/test"),),
                order=((Want(tool=("pnpm run build",)), Want(tool=("pnpm run test-unit",))),),
                unrunnable=("ci.yml:e2e:Run e2e", "ci.yml:unit:"))
    assert score(plan, case).reasons == (
        "noise: {under=packages/a/test} planned as packages/a/test/fixtures/x:lint",
        "unlisted: CI step ci.yml:unit: is not in the plan's unverified steps",
    )
    unordered = Plan((), (build, check("test", ".", "pnpm run test-unit")), None)
    assert [r.split(":")[0] for r in score(unordered, case).reasons] == [
        "order", "unlisted", "unlisted"]
    assert score(Plan((), (build,), None), case).reasons[0] == \
        "missing: no check {pnpm run test-unit}"
    # Words match whole: `pnpm run test` is not `pnpm run test-unit`, `-p intern` names intern.
    assert not Want(tool=("pnpm run test",)).matches(test)
    assert Want(tool=("cargo miri test",), package="intern").matches(
        check("m", ".", "cargo miri test -p intern"))
    assert not Want(package="intern").matches(check("m", ".", "cargo test -p internals"))
    # A pre-commit hook pre-commit must install is listed by the config, with no job.
    hook = Case("o/r", "0" * 40, (2,), "why", unrunnable=(".pre-commit-config.yaml::hook zizmor",))
    listed = Plan((), (), None, unverified_steps=(UnverifiedStep(
        ".pre-commit-config.yaml", "", "hook zizmor", "needs the network"),))
    assert score(listed, hook).right and not score(Plan((), (), None), hook).right
    # A path run from the current folder is the same path; inside a longer one it is not.
    assert Want(tool=("tools/lint.js",)).matches(check("l", ".", "deno run -A ./tools/lint.js"))
    assert not Want(tool=("tools/lint.js",)).matches(check("l", ".", "deno run x/tools/lint.js"))
