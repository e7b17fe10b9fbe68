"""A hostile `.github/ratchet.yml` is refused fast, naming the file, before anything walks it.

The repository under review writes the config, so it may be built to exhaust memory (nested
aliases), never end (an alias inside its own anchor), overflow the stack (deep nesting), be huge,
not be text, or point a check's report outside its workspace. Each case is a ConfigError, and
`ratchet verify` exits 2 naming the file within seconds, at a revision and in the working tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.config import load_repository_config, parse_repository_config
from tests.gitrepo import commit_all, git, make_repo, write_files
from verification.config import (
    CONFIG_PATH,
    MAX_CONFIG_BYTES,
    MAX_EXPANDED_NODES,
    MAX_NESTING_DEPTH,
    ConfigError,
    VerifyConfig,
    read_config_file,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

# A guard against hanging, not a speed target (bench/config.py measures how fast hostile files
# are refused, against a legitimate one): the real cost is milliseconds; a regression takes
# minutes or never ends.
HANG_SECONDS = 60.0


def billion_laughs(levels: int = 9, width: int = 10) -> str:
    """`width ** levels` strings from a file of a few hundred bytes."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def many_checks(count: int) -> str:
    return "verify:\n  checks:\n" + "".join(f"    - {{id: c{i}, run: x}}\n" for i in range(count))


# Hostile files `ratchet verify` must refuse with exit 2: name -> content.
HOSTILE: dict[str, bytes] = {
    "billion-laughs": billion_laughs().encode(),
    "recursive-sequence": b"a: &a [*a]\n",
    "recursive-mapping": b"a: &a {b: *a}\n",
    "deep-nesting": b"[" * 10_000 + b"]" * 10_000,
    "oversized": b"verify: {}\n" + b"#" * MAX_CONFIG_BYTES,
    "400k-checks": many_checks(400_000).encode(),
    "not-utf8": b"verify:\n  timeout: 10\n# caf\xe9\n",
    "infinite-timeout": b"verify:\n  timeout: .inf\n",
    "junit-outside": b"verify:\n  checks:\n    - {id: t, run: pytest, junit: ../x.xml}\n",
}


def parse_error(source: str | bytes) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_repository_config(source)
    return caught.value


def test_billion_laughs_is_refused_at_the_anchor_that_crosses_the_cap() -> None:
    error = parse_error(billion_laughs())
    # a4 is the first level past the cap: 1 + 10 * (1 + 10 * (...)) nodes.
    assert (error.path, error.line, error.field) == (CONFIG_PATH, 5, "a4")
    assert f"more than {MAX_EXPANDED_NODES} YAML nodes" in error.problem
    assert "aliases" in error.problem


def test_laughs_through_mappings_and_merge_keys_are_refused() -> None:
    text = "x0: &x0 {a: 1, b: 2}\n"
    for level in range(1, 9):
        keys = ", ".join(f"k{i}: *x{level - 1}" for i in range(10))
        text += f"x{level}: &x{level} {{<<: *x{level - 1}, {keys}}}\n"
    error = parse_error(text)
    assert "YAML nodes" in error.problem


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("a: &a [*a]\n", 1, "a[0]"),
        ("a: &a {b: *a}\n", 1, "a.b"),
        ("a: &a {*a : 1}\n", 1, "a.?"),
        ("verify: &v\n  checks:\n    - id: x\n      run: *v\n", 3, "verify.checks[0].run"),
    ],
    ids=["sequence", "mapping", "key", "in-a-check"],
)
def test_recursive_alias_is_refused(text: str, line: int, field: str) -> None:
    error = parse_error(text)
    assert (error.line, error.field) == (line, field)
    assert "never ends" in error.problem


@pytest.mark.parametrize(
    "text",
    ["[" * 10_000, "[" * 10_000 + "]" * 10_000, "{a: " * 10_000, "- " * 10_000 + "x\n"],
    ids=["flow-sequence", "closed", "flow-mapping", "block-sequence"],
)
def test_deep_nesting_is_a_config_error_not_a_recursion_error(text: str) -> None:
    error = parse_error(text)
    assert error.line == 1
    assert f"nest more than {MAX_NESTING_DEPTH} levels" in error.problem


def test_aliases_cannot_nest_deeper_than_the_text() -> None:
    nested = "[" * 20 + "1" + "]" * 20
    text = f"a: &a {nested}\nb: &b [[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]\n"
    error = parse_error(text)
    assert error.line == 2
    assert error.field.startswith("b[0]")  # the innermost value past the cap
    assert "levels deep once aliases are expanded" in error.problem


def test_oversized_file_is_refused_before_parsing(tmp_path: Path) -> None:
    data = HOSTILE["oversized"]
    error = parse_error(data)
    assert (error.path, error.line, error.field) == (CONFIG_PATH, None, "")
    assert error.problem.startswith(
        f"the file is {len(data)} bytes; the limit is {MAX_CONFIG_BYTES} bytes (256 KiB)"
    )
    write_files(tmp_path, {CONFIG_PATH: data})
    with pytest.raises(ConfigError, match=f"the file is {len(data)} bytes"):
        load_repository_config(tmp_path)
    # The cap itself is allowed.
    write_files(tmp_path, {CONFIG_PATH: b"verify: {}\n" + b"#" * (MAX_CONFIG_BYTES - 11)})
    assert load_repository_config(tmp_path).verify.timeout == 900


def test_400k_checks_are_refused_by_size_in_well_under_the_bound() -> None:
    error = parse_error(HOSTILE["400k-checks"])
    assert "the file is" in error.problem


def test_a_duplicate_among_100000_checks_is_found() -> None:
    # No file, no size cap: 100,000 checks straight into the model, a duplicate id at the very
    # end (bench/config.py shows the validation grows linearly).
    checks = [{"id": f"c{i}", "run": "x"} for i in range(100_000)]
    workspaces = [{"path": f"w{i}"} for i in range(50_000)]
    with pytest.raises(ValueError, match="check id 'c7' is used twice"):
        VerifyConfig.from_dict({"checks": [*checks, {"id": "c7", "run": "y"}]})
    with pytest.raises(ValueError, match="workspace 'w5' is listed twice"):
        VerifyConfig.from_dict({"workspaces": [*workspaces, {"path": "w5/"}]})


def test_a_big_but_allowed_file_parses() -> None:
    text = many_checks(9_000)
    assert len(text) < MAX_CONFIG_BYTES
    config = parse_repository_config(text.encode())
    assert len(config.verify.checks) == 9_000


def test_not_utf8_names_the_byte_and_line(tmp_path: Path) -> None:
    data = HOSTILE["not-utf8"]
    error = parse_error(data)
    offset = data.index(b"\xe9")
    assert (error.line, error.field) == (3, "")
    assert error.problem == f"not valid UTF-8 at byte {offset}; save the file as UTF-8"
    write_files(tmp_path, {CONFIG_PATH: data})
    with pytest.raises(ConfigError, match=f"not valid UTF-8 at byte {offset}"):
        load_repository_config(tmp_path)
    error = parse_error("verify: {}\n".encode("utf-16"))
    assert "not valid UTF-8 at byte 0" in error.problem


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("verify:\n  timeout: .inf\n", 2, "verify.timeout"),
        ("verify:\n  timeout: -.inf\n", 2, "verify.timeout"),
        ("verify:\n  timeout: 1.0e+999\n", 2, "verify.timeout"),
        ("verify:\n  checks:\n    - {id: a, run: x, timeout: .nan}\n", 3,
         "verify.checks[0].timeout"),
        ("verify:\n  workspaces:\n    - path: w\n      checks:\n        - id: a\n          run: x\n"
         "          timeout: .NaN\n", 7, "verify.workspaces[0].checks[0].timeout"),
    ],
    ids=["inf", "minus-inf", "overflow", "nan", "workspace-nan"],
)  # fmt: skip
def test_non_finite_numbers_are_refused(text: str, line: int, field: str) -> None:
    error = parse_error(text)
    assert (error.line, error.field) == (line, field)
    assert "finite number" in error.problem


@pytest.mark.parametrize("junit", ["../x.xml", "/abs.xml", "reports/../../x.xml", ".", "''"])
def test_junit_must_stay_inside_its_workspace(junit: str) -> None:
    text = "verify:\n  workspaces:\n    - path: api\n      checks:\n        - id: t\n"
    text += f"          run: pytest\n          junit: {junit}\n"
    error = parse_error(text)
    assert (error.line, error.field) == (7, "verify.workspaces[0].checks[0].junit")
    assert "inside the workspace" in error.problem


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("verify:\n  timeout: 2001-02-30\n", 2, "cannot read this value: day is out of range"),
        ("repair:\n  max_attempts: " + "9" * 5_000 + "\n", 2, "cannot read this value"),
        ("verify:\n  timeout: 1\x00\n", 2, "the character U+0000 is not allowed in YAML"),
        ("? [a, b]\n: 1\n", 1, "invalid YAML: found unhashable key"),
        ("verify: !!python/object:os.system {}\n", 1, "could not determine a constructor"),
    ],
    ids=["impossible-date", "5000-digit-int", "nul", "list-key", "python-tag"],
)
def test_values_pyyaml_cannot_build_are_config_errors(text: str, line: int, problem: str) -> None:
    error = parse_error(text)
    assert error.line == line
    assert problem in error.problem


def test_read_config_file_refuses_symlinks_fifos_and_devices(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    config = tmp_path / CONFIG_PATH
    outside = tmp_path.parent / "outside.yml"
    outside.write_text("verify: {}\n")
    config.symlink_to(outside)
    with pytest.raises(ConfigError, match=r"ratchet\.yml is a symlink"):
        read_config_file(tmp_path)
    config.unlink()
    config.symlink_to("/dev/zero")  # would never end if followed
    with pytest.raises(ConfigError, match="is a symlink"):
        read_config_file(tmp_path)
    config.unlink()
    os.mkfifo(config)  # would block forever if opened for reading without O_NONBLOCK
    with pytest.raises(ConfigError, match="is not a regular file"):
        read_config_file(tmp_path)
    config.unlink()
    (tmp_path / ".github").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "ratchet.yml").write_text("verify: {}\n")
    (tmp_path / ".github").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match=r"\.github is a symlink or not a folder"):
        read_config_file(tmp_path)
    (tmp_path / ".github").unlink()
    assert read_config_file(tmp_path) is None


# End to end, through the real `ratchet verify` command in a subprocess.


def verify_command(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m app.cli verify`; fail (TimeoutExpired) if it hangs."""
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "verify", "--repo", str(repo), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    return result


@pytest.fixture(scope="module")
def hostile_branches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose `main` has no config and a branch per hostile file that adds it."""
    repo = tmp_path_factory.mktemp("hostile") / "repo"
    make_repo(repo, {"README.md": "# hostile\n"})
    for name, data in HOSTILE.items():
        git(repo, "checkout", "--quiet", "-b", name, "main")
        write_files(repo, {CONFIG_PATH: data})
        commit_all(repo, f"add a {name} config")
    git(repo, "checkout", "--quiet", "main")
    return repo


def cli_cases(fast: str) -> list[object]:
    """Every hostile file, all but ``fast`` marked slow: the parser refuses each of them in this
    process above; through the command, one of them stands for the rest in make test-fast."""
    return [pytest.param(name, marks=() if name == fast else pytest.mark.slow)
            for name in HOSTILE]


@pytest.mark.parametrize("name", cli_cases("billion-laughs"))
def test_verify_at_a_revision_exits_2_naming_the_file(hostile_branches: Path, name: str) -> None:
    # The config is read where the change starts: the hostile branch is the base here.
    result = verify_command(hostile_branches, "--base", name, "--head", name)
    assert result.returncode == 2, result.stderr
    assert CONFIG_PATH in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("name", cli_cases("oversized"))
def test_verify_of_the_working_tree_never_reads_the_changes_config(tmp_path: Path,
                                                                    name: str) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {"README.md": "# hostile\n"})
    write_files(repo, {CONFIG_PATH: HOSTILE[name]})  # uncommitted: the change's config
    result = verify_command(repo, "--base", "main")
    # Read at the base (none there): the change's file is not parsed, only noted, and a
    # change to the config that no check covers is not verified (exit 3).
    assert result.returncode == 3, result.stderr
    assert f"this change edits {CONFIG_PATH}; the checks come from the base's" in result.stderr


def test_verify_refuses_a_symlinked_config_or_folder_at_a_revision(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {"README.md": "# hostile\n", "elsewhere/ratchet.yml": "verify: {}\n"})
    git(repo, "checkout", "--quiet", "-b", "file-link")
    (repo / ".github").mkdir()
    (repo / CONFIG_PATH).symlink_to("/etc/hostname")
    commit_all(repo, "a symlinked config")
    git(repo, "checkout", "--quiet", "-b", "folder-link", "main")
    (repo / ".github").symlink_to("elsewhere")
    commit_all(repo, "a symlinked .github folder")
    result = verify_command(repo, "--base", "file-link", "--head", "file-link")
    assert result.returncode == 2, result.stderr
    assert f"{CONFIG_PATH} is a symlink or not a file" in result.stderr
    result = verify_command(repo, "--base", "folder-link", "--head", "folder-link")
    assert result.returncode == 2, result.stderr
    assert ".github is not a folder" in result.stderr
