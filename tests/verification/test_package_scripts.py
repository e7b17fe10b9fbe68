"""The repository's own package scripts, however it spells them: each check once, of the kind
its name or its body says, never a fixer, a watcher or a script another planned one runs.

The scripts are written as the real repositories write them (vuejs/core e2bede96134f,
vitejs/vite a98c8d95d552, jupyterlab/jupyterlab 6ef5a17ad831, withastro/astro 99d3d3dbbfa4),
in real pnpm and yarn repositories planned through `build_plan`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import layouts
from verify_helpers import Files

from verification.config import VerifyConfig
from verification.plan import Plan, build_plan
from verification.tree import GitTree

CONFIG = VerifyConfig()


def planned(root: Path, *changed: str) -> Plan:
    return build_plan(list(changed), GitTree.discover(root), CONFIG)


def checks(plan: Plan) -> dict[str, tuple[str, str]]:
    return {check.key: (check.kind, check.command) for check in plan.checks}


def pnpm_root(scripts: dict[str, str], **fields: object) -> Files:
    """A single-package pnpm repository with these scripts and one source file."""
    return {
        "package.json": layouts.package_json({
            "name": "app", "private": True, "packageManager": "pnpm@9.12.0",
            "scripts": scripts, "devDependencies": {"vitest": "^2.1.3"}, **fields,
        }),
        "pnpm-lock.yaml": layouts.PNPM_LOCK,
        "src/index.ts": "export const one = 1\n",
    }


def test_check_spellings_and_bodies_decide_the_kind(make_repo: Callable[[Files], Path]) -> None:
    """vuejs/core's root: `check` is its type check (`tsc --noEmit`), `format-check` its
    prettier check; `format` rewrites files and `test` runs every vitest project while CI runs
    `test-unit`: neither is planned, and the unit tests run once."""
    root = make_repo(pnpm_root({
        "build": "node scripts/build.js",
        "check": "tsc --incremental --noEmit",
        "lint": "eslint --cache .",
        "format": "prettier --write --cache .",
        "format-check": "prettier --check --cache .",
        "test": "vitest",
        "test-unit": "vitest --project unit*",
        "test-e2e": "node scripts/build.js vue -f global -d && vitest --project e2e",
        "dev": "node scripts/dev.js",
    }))  # fmt: skip
    assert checks(planned(root, "src/index.ts")) == {
        "node-lint": ("lint", "pnpm run lint"),
        "node-format-check": ("lint", "pnpm run format-check"),
        "node-check": ("typecheck", "pnpm run check"),
        "node-test-unit": ("test", "pnpm run test-unit"),
        "node-build": ("build", "pnpm run build"),
    }


def test_a_test_script_running_the_unit_tests_is_planned_alone(
    make_repo: Callable[[Files], Path],
) -> None:
    """vitejs/vite's root `test` runs `test-unit`, `test-serve` and `test-build`: `test` once,
    not `test-unit` again; `typecheck` and `type-check` are both type checks, planned once."""
    root = make_repo(pnpm_root({
        "lint": "eslint --cache . --concurrency auto",
        "typecheck": "tsc -p scripts && pnpm -r --parallel run typecheck",
        "type-check": "tsc --noEmit",
        "test": "pnpm test-unit && pnpm test-serve && pnpm test-build",
        "test-serve": "vitest run -c vitest.config.e2e.ts",
        "test-build": "VITE_TEST_BUILD=1 vitest run -c vitest.config.e2e.ts",
        "test-unit": "vitest run",
    }))  # fmt: skip
    assert checks(planned(root, "src/index.ts")) == {
        "node-lint": ("lint", "pnpm run lint"),
        "node-typecheck": ("typecheck", "pnpm run typecheck"),
        "node-test": ("test", "pnpm run test"),
    }


def test_a_fixing_lint_gives_way_to_its_check_variant(make_repo: Callable[[Files], Path]) -> None:
    """jupyterlab's `lint` rewrites files (`prettier --write`, `eslint --fix`); `lint:check`
    runs the checking variants, itself through `jlpm` calls: it is the lint, and the scripts
    it calls (`eslint:check`, `prettier:check`) are not planned again."""
    files = pnpm_root({
        "eslint": "eslint --cache --fix .",
        "eslint:check": "eslint --cache .",
        "lint": "jlpm && jlpm prettier && jlpm eslint && jlpm stylelint",
        "lint:check": "jlpm prettier:check && jlpm eslint:check && jlpm stylelint:check",
        "prettier": "prettier --write \"**/*{.ts,.tsx,.js,.jsx,.css,.json,.md}\"",
        "prettier:check": "prettier --check \"**/*{.ts,.tsx,.js,.jsx,.css,.json,.md}\"",
        "stylelint": "jlpm stylelint:check --fix",
        "stylelint:check": "stylelint --cache \"{packages/*,galata}/style/**/*.css\"",
        "check-types": "tsc -b",
        "test": "jest --watch",
    })  # fmt: skip
    root = make_repo(files)
    assert checks(planned(root, "src/index.ts")) == {
        "node-lint-check": ("lint", "pnpm run lint:check"),
        "node-check-types": ("typecheck", "pnpm run check-types"),
    }


def test_placeholders_and_delegating_scripts_are_not_checks(
    make_repo: Callable[[Files], Path],
) -> None:
    """`npm init`'s placeholder test and an `echo` run nothing; withastro/astro's root
    `test:unit` is `cd packages/astro && pnpm run test:unit`: that package's check, not the
    root's. With no test script left, the vitest config runs the tests."""
    files = pnpm_root({
        "test": 'echo "Error: no test specified" && exit 1',
        "test:unit": "cd packages/astro && pnpm run test:unit",
        "lint": "echo 'linting happens in CI'",
    })
    files["vitest.config.ts"] = "export default {}\n"
    root = make_repo(files)
    assert checks(planned(root, "src/index.ts")) == {
        "node-test": ("test", "pnpm exec vitest run"),
    }


def test_hostile_scripts_plan_without_hanging(make_repo: Callable[[Files], Path]) -> None:
    """Scripts calling each other in a cycle, an unclosed quote, a megabyte-long body, a chain
    deeper than is followed and bodies that are not strings plan what can be read."""
    chain = {f"step{i}": f"pnpm run step{i + 1}" for i in range(50)}
    root = make_repo(pnpm_root({
        "lint": "pnpm run lint:all", "lint:all": "pnpm run lint && eslint .",
        "typecheck": "tsc --noEmit 'unclosed",
        "test": "vitest run " + "&& x " * 250_000,
        "check": "pnpm run step0", **chain, "step50": "tsc --noEmit",
        "build": ["not", "a", "string"],  # type: ignore[dict-item]
    }))  # fmt: skip
    assert checks(planned(root, "src/index.ts")) == {
        "node-lint": ("lint", "pnpm run lint"),
        "node-typecheck": ("typecheck", "pnpm run typecheck"),
        "node-test": ("test", "pnpm run test"),
    }
