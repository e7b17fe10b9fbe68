"""The corpus: its cases (cases/<owner>+<name>.yaml), its known misses, and the plan of a case.

A case is planned the way `ratchet verify --base PARENT --head COMMIT` plans it: the change
from the merge base, the trees of both revisions, the config read at the base
(`verification.pipeline.plan_verification`), from the repository's local mirror.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from sample import git_dir, mirrors_root
from score import Case, Want

from plumbing.git import Git
from verification.config import read_verify_config
from verification.model import Plan
from verification.pipeline import Candidate, plan_verification

HERE = Path(__file__).parent
CASES = HERE / "cases"
KNOWN_MISSES = HERE / "known_misses.yaml"
CATEGORIES = {
    1: "ordering: builds before the tests that load them",
    2: "config file -> the tool it configures",
    3: "non-members and fixtures are not workspaces",
    4: "the repository's own checks",
    5: "selection as narrow as the graph",
}


@dataclass(frozen=True)
class RepositoryCases:
    """One case file: the repository, the sample its commits come from, the cases."""

    repository: str
    layout: str
    end: str
    every: int
    count: int
    cases: tuple[Case, ...]


def load_repositories() -> list[RepositoryCases]:
    return [_read(path) for path in sorted(CASES.glob("*.yaml"))]


def load_cases() -> list[Case]:
    return [case for repository in load_repositories() for case in repository.cases]


def load_known_misses() -> dict[str, str]:
    """Case id -> why the planner gets it wrong: one `<case id>: <why>` line each (the why may
    hold colons), `#` comments and blank lines aside."""
    misses: dict[str, str] = {}
    for number, line in enumerate(KNOWN_MISSES.read_text().splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        case, colon, why = line.partition(": ")
        if not colon or not why.strip() or " " in case.strip() or case.strip() in misses:
            raise ValueError(f"{KNOWN_MISSES}:{number}: write one '<case id>: <why>' line per"
                             f" case, each case once; got {line!r}")
        misses[case.strip()] = why.strip()
    return misses


def _read(path: Path) -> RepositoryCases:
    data = yaml.safe_load(path.read_text())
    repository = data["repository"]
    if path.stem != repository.replace("/", "+"):
        raise ValueError(f"{path}: holds {repository}, so it is named"
                         f" {repository.replace('/', '+')}.yaml")
    sample = data["sample"]
    cases = tuple(_case(repository, entry, path) for entry in data["cases"])
    return RepositoryCases(repository, data["layout"], sample["end"], int(sample["every"]),
                           int(sample["count"]), cases)


def _case(repository: str, entry: dict[str, Any], path: Path) -> Case:
    try:
        return Case(
            repository=repository,
            commit=entry["commit"],
            categories=tuple(entry["categories"]),
            why=entry["why"],
            must_run=tuple(Want.from_dict(want) for want in entry.get("must_run", ())),
            must_not=tuple(Want.from_dict(want) for want in entry.get("must_not", ())),
            order=tuple((Want.from_dict(before), Want.from_dict(after))
                        for before, after in entry.get("order", ())),
            unrunnable=tuple(entry.get("unrunnable", ())),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: case {entry.get('commit', '?')}: {exc}") from exc


def missing_mirror(repository: str) -> str | None:
    """Why `repository`'s cases cannot be planned here, or None when they can."""
    if os.environ.get("CI") == "true":
        return ("CI has no mirrors of the corpus repositories"
                " (tests/verification/corpus/README.md)")
    if git_dir(repository) is None:
        return (f"no mirror of {repository} under {mirrors_root()}"
                f" ({repository.replace('/', '+')}/, a bare git dir): fetch it, e.g. git clone"
                f" --mirror https://github.com/{repository} {mirrors_root()}/"
                f"{repository.replace('/', '+')}/repo, or point RATCHET_CORPUS_MIRRORS at one")
    return None


def plan_case(case: Case) -> Plan:
    """The plan `ratchet verify --base COMMIT^1 --head COMMIT` makes for the case."""
    folder = git_dir(case.repository)
    assert folder is not None, missing_mirror(case.repository)
    repo = Git(git_dir=folder)
    parent = repo.run("rev-parse", f"{case.commit}^1", check=True).stdout.decode().strip()
    candidate = Candidate.between(repo, parent, case.commit)
    return plan_verification(candidate, read_verify_config(repo, candidate.start)).plan
