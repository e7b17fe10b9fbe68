"""The pieces of reading a workflow: GitHub's filter patterns, expressions, what a step is."""

from __future__ import annotations

import pytest

from verification.ci_steps import command_line, commands, ecosystems_of, kind_of, role, shell_of
from verification.expressions import Partial, Unknown, evaluate_condition, interpolate
from verification.filter_patterns import admits, compile_pattern
from verification.scripts import line_uses
from verification.tools import ToolUse
from verification.workflows import combinations
from verification.workspaces import Ecosystem

# GitHub's "filter pattern cheat sheet" (Workflow syntax for GitHub Actions), row by row.
CHEAT_SHEET = [
    ("*", "README.md", True), ("*", "docs/file.txt", False),
    ("*.jsx?", "page.js", True), ("*.jsx?", "page.jsx", True), ("*.jsx?", "page.jsxx", False),
    ("**", "all/the/files.md", True),
    ("*.js", "app.js", True), ("*.js", "src/app.js", False),
    ("**.js", "index.js", True), ("**.js", "js/index.js", True), ("**.js", "src/js/app.js", True),
    ("docs/*", "docs/README.md", True), ("docs/*", "docs/mona/octocat.txt", False),
    ("docs/**", "docs/README.md", True), ("docs/**", "docs/mona/octocat.txt", True),
    ("docs/**/*.md", "docs/README.md", True), ("docs/**/*.md", "docs/a/markdown/file.md", True),
    ("**/docs/**", "docs/hello.md", True), ("**/docs/**", "dir/docs/my-file.txt", True),
    ("**/README.md", "README.md", True), ("**/README.md", "js/README.md", True),
    ("**/*src/**", "a/src/app.js", True), ("**/*src/**", "my-src/code/js/app.js", True),
    ("**/*-post.md", "my-post.md", True), ("**/*-post.md", "path/their-post.md", True),
    ("**/migrate-*.sql", "migrate-10909.sql", True),
    ("**/migrate-*.sql", "db/migrate-v1.0.sql", True),
    ("[CB]at", "Cat", True), ("[CB]at", "Bat", True), ("[CB]at", "Hat", False),
    ("[1-2]00", "100", True), ("[1-2]00", "300", False), ("Octoc+at", "Octocccat", True),
    ("crates/**", "crates", False), ("\\*.md", "*.md", True), ("\\*.md", "a.md", False),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "path", "expected"), CHEAT_SHEET)
def test_filter_patterns_match_as_github_documents(pattern: str, path: str,
                                                   expected: bool) -> None:
    assert compile_pattern(pattern).matches(path) is expected


def test_a_later_pattern_decides_and_negation_excludes() -> None:
    patterns = ["sub/**", "!sub/deep/**", "sub/deep/keep.txt"]
    assert [admits(patterns, p) for p in ("sub/a.txt", "sub/deep/x.txt", "sub/deep/keep.txt",
                                          "other.txt")] == [True, False, True, False]


def test_a_hostile_filter_pattern_matches_in_linear_time() -> None:
    # A backtracking matcher tries every split of the path: 40 stars over 300 characters.
    pattern = compile_pattern("**a" * 40 + "**b")
    assert pattern.matches("a" * 300) is False
    assert pattern.matches("a" * 300 + "b") is True


CONTEXTS = {
    "github": Partial({"event_name": "pull_request"}),
    "runner": Partial({"os": "Linux"}),
    "matrix": {"os": "ubuntu-latest", "python-version": 3.1, "streaming": False},
    "env": {"MODE": "ci"},
    "inputs": {"code-changed": "true"},
}


@pytest.mark.parametrize(("condition", "expected"), [
    (None, True), ("", True), (True, True),
    ("github.event_name == 'pull_request' && !matrix.streaming", True),
    ("${{ matrix.os == 'windows-latest' }}", False),
    ("runner.os == 'linux'", True),  # strings compare case-insensitively
    ("matrix.python-version == '3.1'", True),  # different types compare as numbers
    ("failure()", False), ("always()", True), ("contains(fromJSON('[\"a\", \"b\"]'), 'B')", True),
    ("startsWith(env.MODE, 'C') && inputs.code-changed == 'true'", True),
    ("false && secrets.TOKEN", False), ("true || steps.x.outputs.y", True),
    ("secrets.TOKEN != ''", Unknown("secrets.TOKEN")),
    ("github.repository == 'vuejs/core'", Unknown("github.repository")),
    ("needs.plan.outputs.code == 'true'", Unknown("needs.plan")),
    ("((((", Unknown("${{ (((( }}")),
])  # fmt: skip
def test_conditions_evaluate_with_what_planning_knows(condition: object,
                                                      expected: object) -> None:
    assert evaluate_condition(condition, CONTEXTS) == expected


def test_interpolation_writes_values_as_github_does_or_names_the_unknown() -> None:
    assert interpolate("pytest --py ${{ matrix.python-version }} ${{ format('{0}-x', "
                       "matrix.os) }}", CONTEXTS) == "pytest --py 3.1 ubuntu-latest-x"
    assert interpolate("echo ${{ matrix.streaming }} ${{ matrix.missing }}.", CONTEXTS) == (
        "echo false .")
    assert interpolate("login ${{ secrets.NPM_TOKEN }}", CONTEXTS) == Unknown("secrets.NPM_TOKEN")
    assert interpolate("x ${{ '}}' }} y", CONTEXTS) == "x }} y"


def test_a_matrix_expands_in_githubs_order_with_exclude_and_include() -> None:
    matrix = {"os": ["ubuntu-latest", "windows-latest"], "node": [18, 20],
              "exclude": [{"os": "windows-latest", "node": 18}],
              "include": [{"os": "ubuntu-latest", "experimental": True}, {"os": "macos-14"}]}
    assert list(combinations(matrix)) == [
        {"os": "ubuntu-latest", "node": 18, "experimental": True},
        {"os": "ubuntu-latest", "node": 20, "experimental": True},
        {"os": "windows-latest", "node": 20},
        {"os": "macos-14"},
    ]
    bomb = {f"k{i}": list(range(10)) for i in range(20)}  # 10**20 combinations
    assert len(list(combinations(bomb))) == 256


@pytest.mark.parametrize(("script", "name", "expected"), [
    ("pnpm install --frozen-lockfile", None, "install"),
    ("npm ci", None, "install"), ("yarn install --immutable", None, "install"),
    ("uv sync --all-extras --locked", None, "install"),
    ("pip install uv\nuv pip install -r requirements-dev.txt", None, "install"),
    ("python -m pip install -e .[test]", None, "install"), ("cargo fetch", None, "install"),
    ("rustup component add clippy", None, "host"), ("pip install tox", None, "host"),
    ("npm install -g pnpm@9", None, "host"), ("sudo apt-get install -y libxml2", None, "host"),
    ('echo "DIR=$PWD" >> "$GITHUB_ENV"', None, "bookkeeping"),
    ('echo "dir=$(pnpm store path)" >> $GITHUB_OUTPUT', None, "bookkeeping"),
    ("rustup target add wasm32-wasip1\necho \"$HOME/.cargo/bin\" >> $GITHUB_PATH", None, "host"),
    ("cargo test --all && echo ok >> $GITHUB_STEP_SUMMARY", None, "check"),
    ("npm publish --provenance", None, "publish"), ("twine upload dist/*", None, "publish"),
    ("pnpx pkg-pr-new publish --compact", None, "publish"),
    ("make dist", "Deploy the docs", "publish"),
    ("pnpm run lint --fix", None, "fix"),
    ("pnpm install\npnpm test", None, "check"), ("cargo test --workspace", None, "check"),
])  # fmt: skip
def test_a_run_script_is_an_install_host_preparation_bookkeeping_a_release_or_a_check(
    script: str, name: str | None, expected: str,
) -> None:
    assert role(script, name, uses(script)) == expected


def uses(script: str, package: dict[str, object] | None = None) -> list[ToolUse]:
    return [use for line in commands(script) for use in line_uses(line, package or {})]


def test_a_checks_kind_ecosystem_and_command_come_from_its_script() -> None:
    assert kind_of("cargo clippy --workspace -- -D warnings", None) == "lint"
    assert kind_of("pnpm run check", "Run tsc") == "typecheck"
    assert kind_of("npx prettier --check .", None, uses("npx prettier --check .")) == "lint"
    assert kind_of("cargo fmt --all --check", "Format") == "lint"
    assert role("cargo fmt --all", None, uses("cargo fmt --all")) == "fix"
    # A package script the step runs is read for what it runs: `check` type-checks, `format`
    # rewrites the files it formats.
    package: dict[str, object] = {"check": "tsc --incremental --noEmit", "format": "prettier -w ."}
    assert kind_of("pnpm run check", None, uses("pnpm run check", package)) == "typecheck"
    assert role("pnpm run format", None, uses("pnpm run format", package)) == "fix"
    assert kind_of("uv run pytest -n auto", None) == "test"
    assert kind_of("maturin develop", None) == "build"
    assert kind_of("./scripts/guard.sh", None) == "custom"
    assert ecosystems_of("cd web && CI=1 pnpm -r test") == {Ecosystem.NODE}
    assert ecosystems_of("cargo build\nuv run pytest") == {Ecosystem.RUST, Ecosystem.PYTHON}
    assert ecosystems_of("make test") == frozenset()
    # One line runs as written; several through the step's shell, failing on the first error.
    assert command_line("pytest -q", shell_of(None), {"A": "1 2"}) == "export A='1 2'; pytest -q"
    assert command_line("cd web\nnpm test\n", shell_of("bash"), {}) == (
        "bash --noprofile --norc -eo pipefail -c 'cd web\nnpm test\n'")
    assert not shell_of("pwsh").runs and shell_of("bash -eo pipefail {0}").runs
