"""`.github/ratchet.yml` parsing: defaults, and errors naming file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.config import RepositoryConfig, load_repository_config, parse_repository_config
from verification.config import ConfigError


def write_config(root: Path, text: str) -> None:
    (root / ".github").mkdir(parents=True, exist_ok=True)
    (root / ".github" / "ratchet.yml").write_text(text)


def error_for(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_repository_config(text)
    return caught.value


def test_missing_and_empty_files_give_defaults(tmp_path: Path) -> None:
    assert load_repository_config(tmp_path) == RepositoryConfig()
    write_config(tmp_path, "")
    config = load_repository_config(tmp_path)
    assert config == RepositoryConfig()
    assert config.verify.timeout == 900
    assert config.verify.concurrency is None
    assert config.verify.network is False  # checks reach no network unless it lists hosts
    assert config.repair.max_attempts == 3
    assert config.limits.max_file_bytes == 10 * 1024 * 1024


def test_full_file_parses(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """\
verify:
  concurrency: 3
  timeout: 120
  network: [pypi.org, "*.pythonhosted.org"]
  checks:
    - id: lint
      kind: lint
      run: ruff check .
  workspaces:
    - path: packages/api
      setup: [pip install -e .]
      checks:
        - {id: unit, kind: test, run: pytest, timeout: 30, junit: ./reports/unit.xml}
repair:
  max_attempts: 0
limits:
  max_file_bytes: 1000
""",
    )
    config = load_repository_config(tmp_path)
    assert config.verify.concurrency == 3
    assert config.verify.network == ["pypi.org", "*.pythonhosted.org"]
    assert config.verify.checks[0].run == "ruff check ."
    workspace = config.verify.workspaces[0]
    assert (workspace.path, workspace.setup) == ("packages/api", ["pip install -e ."])
    assert workspace.checks[0].junit == "reports/unit.xml"
    assert config.repair.max_attempts == 0
    assert config.limits.max_file_bytes == 1000


def test_wrong_type_names_file_line_and_field() -> None:
    text = "verify:\n  timeout: 10\n  checks:\n    - id: unit\n      run: pytest\n"
    text += "      timeout: soon\n"
    error = error_for(text)
    assert (error.path, error.line) == (".github/ratchet.yml", 6)
    assert error.field == "verify.checks[0].timeout"
    assert str(error) == (".github/ratchet.yml:6: verify.checks[0].timeout: 'soon' is no timeout:"
                          " give a finite number of seconds greater than 0, e.g. 600")


def test_unknown_top_level_key_is_an_error() -> None:
    error = error_for("verify: {}\nverfy: {}\n")
    assert (error.line, error.field) == (2, "verfy")
    assert "unknown key" in str(error)


def test_unknown_check_key_and_missing_run() -> None:
    error = error_for("verify:\n  checks:\n    - id: a\n      command: make\n")
    assert (error.line, error.field) == (4, "verify.checks[0].command")
    error = error_for("verify:\n  workspaces:\n    - path: x\n      checks:\n        - id: a\n")
    assert (error.line, error.field) == (5, "verify.workspaces[0].checks[0].run")


def test_yaml_syntax_error_gives_the_line() -> None:
    error = error_for("verify:\n  checks:\n    - id: a\n     run: x\n")
    assert error.line == 4
    assert error.field == ""
    assert "invalid YAML" in str(error)


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("repair:\n  max_attempts: -1\n", 2, "repair.max_attempts"),
        ("verify:\n  concurrency: 0\n", 2, "verify.concurrency"),
        ("verify:\n  workspaces:\n    - path: ../outside\n", 3, "verify.workspaces[0].path"),
        ("verify:\n  timeout: 1\n  timeout: 2\n", 3, "verify.timeout"),
        ("- just a list\n", 1, ""),
        ("limits:\n  max_file_bytes: 0\n", 2, "limits.max_file_bytes"),
        ("verify:\n  network: sometimes\n", 2, "verify.network"),
        ("verify:\n  network: [https://pypi.org]\n", 2, "verify.network"),
        ("agent:\n  network:\n    allow: [pypi.org/simple]\n", 3, "agent.network.allow"),
    ],
)
def test_invalid_values_are_located(text: str, line: int, field: str) -> None:
    error = error_for(text)
    assert (error.line, error.field) == (line, field)


def test_duplicate_check_ids_are_refused() -> None:
    error = error_for("verify:\n  checks:\n    - {id: a, run: x}\n    - {id: a, run: y}\n")
    assert error.field == "verify"
    assert "used twice" in str(error)


def test_a_file_that_is_not_a_mapping_lists_every_section() -> None:
    error = error_for("just text\n")
    assert error.problem == (
        "the file must be a mapping with sections trigger_label, verify, repair, limits, approval,"
        " budget, agent, research, publish")


def test_duplicate_workspaces_are_refused() -> None:
    text = "verify:\n  workspaces:\n    - path: a\n    - path: b/\n    - path: ./a\n"
    error = error_for(text)
    assert error.field == "verify"
    assert "workspace 'a' is listed twice" in str(error)


def test_ignore_patterns_must_stay_inside_the_repository() -> None:
    error = error_for("verify:\n  ignore:\n    - scripts/\n    - ../elsewhere/*.sh\n")
    assert (error.line, error.field) == (2, "verify.ignore")
    assert "'../elsewhere/*.sh' must be a glob relative to the repository root" in str(error)


def test_verify_env_names_variables_and_never_ratchets_own() -> None:
    config = parse_repository_config("verify:\n  env: [NPM_TOKEN, CARGO_REGISTRY_TOKEN]\n")
    assert config.verify.env == ["NPM_TOKEN", "CARGO_REGISTRY_TOKEN"]
    assert "RATCHET_STORE_URL configures Ratchet" in str(
        error_for("verify:\n  env: [RATCHET_STORE_URL]\n"))
    assert "is not an environment variable name" in str(error_for("verify:\n  env: ['A B']\n"))
