"""CI steps only doing their workflow's bookkeeping are no checks (verification/ci_bookkeeping).

The workflows are shapes from real repositories: pnpm's store path and vite's Playwright
version into `$GITHUB_OUTPUT` / `$GITHUB_ENV`, astro's `if [ -f pre.json ]`, deno's multiline
`RUSTFLAGS<<...` value, jupyterlab's `::set-output` hash read by a later step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import layouts
import pytest
from test_ci_workflows import change
from verify_helpers import Files

from verification.ci import CiPlan, read_ci
from verification.ci_bookkeeping import bookkeeping
from verification.explain import render_text
from verification.workflows import read_workflows

WORKFLOW = """\
on: pull_request
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Get pnpm store directory
        id: pnpm-cache
        run: echo "STORE_PATH=$(pnpm store path --silent)" >> $GITHUB_OUTPUT
      - name: Set Playwright path and get its version
        run: |
          echo "PLAYWRIGHT_BROWSERS_PATH=$HOME/.cache/playwright-bin" >> $GITHUB_ENV
          PLAYWRIGHT_VERSION="$(pnpm ls --depth 0 --json -w playwright-chromium \\
            | jq --raw-output '.[0].devDependencies["playwright-chromium"].version')"
          echo "PLAYWRIGHT_VERSION=$PLAYWRIGHT_VERSION" >> $GITHUB_ENV
      - name: Configure frame pointers
        run: |
          echo "RUSTC_BOOTSTRAP=1" >> "$GITHUB_ENV"
          {
            echo "RUSTFLAGS<<__RUSTFLAGS"
            echo "$RUSTFLAGS -C force-frame-pointers=yes"
            echo "__RUSTFLAGS"
          } >> "$GITHUB_ENV"
      - name: Check pre-release mode
        id: pre
        run: |
          if [ -f ./.changeset/pre.json ]; then
            pre_value=$(jq -r '.tag' ./.changeset/pre.json)
            echo "value=$pre_value" >> $GITHUB_OUTPUT
          fi
      - name: Compute hash
        id: hash
        run: |
          set -eux
          HASH=$(python scripts/i18n_check.py | tail -n1)
          echo "::set-output name=i18n::${HASH}"
      - run: pnpm install --frozen-lockfile
      - name: Test
        run: |
          pnpm test
          echo "### Tests passed" >> $GITHUB_STEP_SUMMARY
      - name: Summary
        run: |
          cat <<'EOF' >> $GITHUB_STEP_SUMMARY
          ## Done
          $(pnpm run test)
          EOF
      - name: Type check on pre-release
        if: steps.pre.outputs.value != ''
        run: pnpm run typecheck
"""


def ci(workflow: str) -> CiPlan:
    return read_ci(read_workflows({".github/workflows/ci.yml": workflow}), ["src/a.ts"], {"."},
                   lambda folder: {})


def test_a_step_only_writing_the_workflows_files_is_no_check_and_says_why() -> None:
    """Each bookkeeping step is left out, with what it writes; a step running the tests and
    then writing the summary stays a check, and the step on a bookkeeping step's output runs
    as before: that output is unknown, so its `if:` is planned as if true, saying so."""
    job = ci(WORKFLOW).jobs[0]
    assert [check.step for check in job.checks] == ["Test", "Type check on pre-release"]
    assert any("steps.pre.outputs.value" in note for note in job.checks[1].notes)
    assert [(step.step, step.reason) for step in job.bookkeeping] == [
        ("Get pnpm store directory", "only writes $GITHUB_OUTPUT: bookkeeping, no check"),
        ("Set Playwright path and get its version",
         "only writes $GITHUB_ENV: bookkeeping, no check"),
        ("Configure frame pointers", "only writes $GITHUB_ENV: bookkeeping, no check"),
        ("Check pre-release mode", "only writes $GITHUB_OUTPUT: bookkeeping, no check"),
        ("Compute hash",
         "only prints to the log (messages, workflow commands): bookkeeping, no check"),
        ("Summary", "only writes $GITHUB_STEP_SUMMARY: bookkeeping, no check"),
    ]
    assert job.unverified == []


@pytest.mark.parametrize("script", [
    "cargo test --workspace && echo ok >> $GITHUB_STEP_SUMMARY",
    'echo "failed=$(cargo test -q)" >> $GITHUB_OUTPUT',  # a check tool in a substitution
    'echo "result=$(make lint)" >> "$GITHUB_OUTPUT"',  # a repository task in one
    'cat <<EOF >> $GITHUB_STEP_SUMMARY\n$(pnpm run test)\nEOF',  # an unquoted heredoc runs it
    'node scripts/detect-release.ts "$(git log -1 --format=%s)" >> "$GITHUB_OUTPUT"',
    'echo "{}" > config.json',  # a file later steps read
    "cat coverage/summary.md >> $GITHUB_STEP_SUMMARY",  # fails when the report is missing
    "test -f dist/index.js",  # fails the step when the build made nothing
    "for f in dist/*; do echo $f >> $GITHUB_OUTPUT; done",
    'echo a #; cargo test',
    'echo "unclosed >> $GITHUB_OUTPUT',
    "cat <<EOF >> $GITHUB_STEP_SUMMARY\nno end",
    # Substitutions nested deeper than read (no recursion as deep as the script asks).
    'echo "x=' + "$(echo " * 3000 + "a" + ")" * 3000 + '" >> $GITHUB_OUTPUT',
])  # fmt: skip
def test_a_script_doing_more_than_bookkeeping_stays_a_check(script: str) -> None:
    assert bookkeeping(script) is None


def test_explain_lists_the_bookkeeping_steps_in_one_line_each(
    make_repo: Callable[[Files], Path],
) -> None:
    workflow = """\
on: [pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Get pnpm store directory
        run: echo "STORE_PATH=$(pnpm store path --silent)" >> "$GITHUB_OUTPUT"
      - run: pnpm install --frozen-lockfile
      - run: pnpm -r test
"""
    root = make_repo({**layouts.pnpm_workspace(), ".github/workflows/ci.yml": workflow})
    result = change(root, {"packages/parser/src/index.ts": "export const parse = 2\n"})
    commands = [check.command for check in result.plan.checks]
    assert "pnpm -r test" in commands
    assert not any("STORE_PATH" in command for command in commands)
    text = render_text(result.explanation)
    assert ("CI steps that are no checks (not planned):\n  .github/workflows/ci.yml job test: "
            "Get pnpm store directory: only writes $GITHUB_OUTPUT: bookkeeping, no check"
            ) in text
    assert result.explanation.to_dict()["bookkeeping_steps"] == [{
        "workflow": ".github/workflows/ci.yml", "job": "test",
        "step": "Get pnpm store directory",
        "reason": "only writes $GITHUB_OUTPUT: bookkeeping, no check"}]
    assert result.plan.unverified_steps == ()  # nothing is left unverified by it
