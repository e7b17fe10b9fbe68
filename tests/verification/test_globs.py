"""Globs from the repository under review: the dialect's meaning, and hostile patterns that
must finish (a backtracking matcher would take hours on them: a regression hangs visibly)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from verify_helpers import Files

from verification.config import VerifyConfig
from verification.globs import GlobSet, compile_glob, ignore_matches
from verification.plan import build_plan
from verification.tree import GitTree

# 200 segments deep, and 20 `**` in a row: a regular expression of nested `(?:[^/]+/)*` tries
# every way to share the segments among them (C(220, 20), about 10^28) before failing.
DEEP = "/".join(["d"] * 200)
STARS = "**/" * 20


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("packages/*", "packages/a", True),
    ("packages/*", "packages/a/b", False),
    ("packages/*", "packages", False),
    ("./packages/*/", "packages/a", True),
    ("packages/**", "packages/a/b", True),
    ("packages/**", "packages", False),  # a trailing ** names what is inside
    ("packages/**/**", "packages", False),
    ("**", ".", True),
    ("**", "a/b/c", True),
    ("**/x", "x", True),  # none included
    ("**/x", "a/b/x", True),
    ("a/**/b", "a/b", True),
    ("a/**/**/b", "a/c/d/b", True),
    ("a/**/b", "a/c/d/bb", False),
    ("p?ck", "pack", True),
    ("p?ck", "p/ck", False),
    ("[ab]x", "bx", True),
    ("[!ab]x", "cx", True),
    ("[^ab]x", "ax", False),
    ("x[!b]*", "x/ab", False),  # a class stays inside its segment, like `*` and `?`
    ("[z-a]", "a", False),  # a class the tools reject matches nothing
    ("a[", "a[", True),  # an unclosed bracket is a character
    ("*.py", "main.py", True),
    ("a**b", "axxb", True),  # ** inside a segment is *
    ("a**b", "ax/xb", False),
])  # fmt: skip
def test_glob_dialect(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern).matches(path) is expected


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("tools/", "tools/a/b.sh", True),
    ("*.sh", "deep/er/run.sh", True),  # no slash: any depth
    ("scripts/*.sh", "x/scripts/run.sh", False),  # a slash anchors at the root
    ("build", "a/build/out.o", True),  # a folder covers what is below it
    ("tools/**", "tools", False),
])  # fmt: skip
def test_ignore_patterns(pattern: str, path: str, expected: bool) -> None:
    assert ignore_matches(pattern, path) is expected


def test_hostile_globs_finish_with_the_right_answer() -> None:
    assert GlobSet.from_patterns([f"{STARS}x"]).matches(DEEP) is False
    assert GlobSet.from_patterns([f"{STARS}x"]).matches(f"{DEEP}/x") is True
    assert GlobSet.from_patterns([f"{'**/*/' * 20}x"]).matches(DEEP) is False
    assert ignore_matches(f"{STARS}x", f"{DEEP}/y") is False
    assert ignore_matches(f"{STARS}x", f"{DEEP}/x/y") is True
    # Inside one segment: `*a` 12 times against 200 a's and no b, about 200^12 steps.
    assert compile_glob("*a" * 12 + "*b").matches("a" * 200) is False
    assert compile_glob("*a" * 12 + "*b").matches("a" * 200 + "b") is True


def test_hostile_workspace_glob_plans_its_members(make_repo: Callable[[Files], Path]) -> None:
    """A package.json `workspaces` list from the change's repository, against deep folders."""
    deep = "/".join(["d"] * 60)
    root = make_repo({
        "package.json": '{"name": "root", "workspaces": ["' + STARS + 'pkg"]}\n',
        f"{deep}/pkg/package.json": '{"name": "member", "scripts": {"test": "node --test"}}\n',
        f"{deep}/other/package.json": '{"name": "other", "scripts": {"test": "node --test"}}\n',
        f"{deep}/pkg/index.js": "\n",
    })  # fmt: skip
    plan = build_plan([f"{deep}/pkg/index.js"], GitTree.discover(root), VerifyConfig())
    assert {check.key for check in plan.checks} == {f"{deep}/pkg:node-test"}
