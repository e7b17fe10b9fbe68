"""The two readers of `.github/ratchet.yml` agree on the `verify` section.

`ratchet verify` reads only that section (``verification.config.parse_verify_config``, no
pydantic); a run reads the whole file (``runner.config.parse_repository_config``). For every
config the test suite writes, for hostile files and for generated ones, both give the same
``VerifyConfig``, or the same error when it is in `verify` or at the top level.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.config import RepositoryConfig, parse_repository_config
from verification.config import (
    MAX_CONFIG_BYTES,
    MAX_NESTING_DEPTH,
    SECTIONS,
    ConfigError,
    VerifyConfig,
    parse_verify_config,
)

TESTS = Path(__file__).resolve().parents[1]
# A string in a test that is a config file: it starts a line with one of its sections.
_CONFIG_TEXT = re.compile(rf"^({'|'.join(SECTIONS)}):", re.MULTILINE)


def configs_in_tests() -> list[str]:
    """Every literal config file text in the tests (f-strings and built ones aside)."""
    found: set[str] = set()
    for source in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and _CONFIG_TEXT.search(node.value)):
                found.add(node.value)
    return sorted(found)


def hostile_configs() -> list[str | bytes]:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n"
        for i in range(8))
    return [
        "verify: " + laughs.replace("\n", "\n  "),
        "verify:\n  checks: &c [*c]\n",
        "verify:\n  checks:\n" + "    - " * 0 + "[" * (MAX_NESTING_DEPTH + 5),
        b"verify:\n  checks:\n    - {id: a, run: \xff}\n",
        "verify:\n  timeout: .inf\n", "verify:\n  timeout: -1\n", "verify:\n  timeout: '30'\n",
        "verify:\n  timeout: true\n", "verify:\n  concurrency: 2.5\n", "verify: null\n",
        "verify: []\n", "verify:\n  checks: {id: a}\n", "verify:\n  checks: [null]\n",
        "verify:\n  checks:\n    - {id: 'bad id', run: x}\n",
        "verify:\n  checks:\n    - {id: a, run: x, kind: compile}\n",
        "verify:\n  checks:\n    - {id: a, run: x, junit: ../../etc/passwd}\n",
        "verify:\n  workspaces:\n    - {path: /abs}\n", "verify:\n  workspaces: [{setup: [x]}]\n",
        "verify:\n  network: [localhost:8080]\n", "verify:\n  env: [RATCHET_STORE_URL]\n",
        "verify:\n  ignore: ['/abs']\n", "verify:\n  checks:\n    - {id: a, run: x, needs: [a]}\n",
        "verify:\n  timeout: 2001-02-30\n", "? [a, b]\n: x\n", "1: x\n", "verify: {}\nverfy: {}\n",
        "\x07verify: {}\n", "verify:\n  <<: {timeout: 5}\n", "%YAML 1.1\n---\nverify: {}\n",
        "verify: {}\n---\nverify: {}\n", "x" * (MAX_CONFIG_BYTES + 1),
        "verify:\n  checks: [" + ", ".join(f"{{id: c{i}, run: x}}" for i in range(3000)) + "]\n",
    ]


def assert_readers_agree(source: str | bytes) -> None:
    try:
        whole = parse_repository_config(source)
    except ConfigError as error:
        section = re.split(r"[.\[]", error.field)[0]  # "" for the file itself
        if section == "verify" or section not in SECTIONS:
            with pytest.raises(ConfigError) as fast:
                parse_verify_config(source)
            assert str(fast.value) == str(error)
            return
        # Another section is wrong: the fast reader does not read it.
        try:
            parse_verify_config(source)
        except ConfigError as fast_error:
            assert fast_error.field.startswith("verify"), (fast_error, error)
        return
    assert parse_verify_config(source) == whole.verify


@pytest.mark.parametrize("source", configs_in_tests())
def test_every_config_of_the_test_suite_reads_the_same(source: str) -> None:
    assert_readers_agree(source)


def test_the_suite_has_configs_of_every_kind() -> None:
    # The scan finds what it should: valid files, errors in verify, errors elsewhere.
    outcomes = set()
    for source in configs_in_tests():
        try:
            parse_repository_config(source)
            outcomes.add("valid")
        except ConfigError as error:
            outcomes.add("verify" if error.field.startswith("verify") else "other")
    assert outcomes == {"valid", "verify", "other"}
    assert len(configs_in_tests()) >= 30


@pytest.mark.parametrize("source", hostile_configs(), ids=lambda s: repr(s[:30]))
def test_hostile_files_read_the_same(source: str | bytes) -> None:
    assert_readers_agree(source)


def test_the_sections_are_the_whole_files_fields() -> None:
    assert tuple(RepositoryConfig.model_fields) == SECTIONS


def test_the_checkpointed_section_reads_back_the_same() -> None:
    text = ("verify:\n  concurrency: 2\n  network: [pypi.org]\n  env: [NPM_TOKEN]\n"
            "  checks:\n    - {id: a, run: x, timeout: 5, needs: []}\n"
            "  workspaces:\n    - path: web/\n      setup: [npm ci]\n"
            "      checks: [{id: t, kind: test, run: npm test, junit: ./r.xml, needs: [u]},"
            " {id: u, run: y}]\n  ignore: [' scripts/ ']\n")
    config = parse_repository_config(text)
    recorded = config.model_dump(mode="json")
    assert RepositoryConfig.model_validate(recorded) == config
    assert parse_verify_config(yaml.safe_dump({"verify": recorded["verify"]})) == config.verify


# Generated `verify` sections: the keys the schema has and some it does not, each with a value
# of the right shape or not.
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True),
                     st.text(max_size=6), st.sampled_from(["pypi.org", "x", "./r.xml", "..",
                                                           "test", "1e3", "A_B", "web"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
_CHECK = st.dictionaries(
    st.sampled_from(["id", "run", "kind", "timeout", "junit", "needs", "command"]),
    st.one_of(_VALUES, st.sampled_from(["a", "b", "lint", "test"]),
              st.lists(st.sampled_from(["a", "b", "web:a"]), max_size=2)), max_size=6)
_WORKSPACE = st.dictionaries(st.sampled_from(["path", "setup", "checks", "env"]),
                             st.one_of(_VALUES, st.sampled_from(["web", "./api/", "."]),
                                       st.lists(_CHECK, max_size=3)), max_size=3)
_VERIFY = st.dictionaries(
    st.sampled_from(["concurrency", "timeout", "network", "env", "checks", "workspaces",
                     "ignore", "timeuot"]),
    st.one_of(_VALUES, st.lists(_CHECK, max_size=3), st.lists(_WORKSPACE, max_size=3)),
    max_size=5)
_FILE = st.dictionaries(st.sampled_from([*SECTIONS, "verfy"]),
                        st.one_of(_VERIFY, _VALUES), max_size=3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_FILE)
def test_generated_files_read_the_same(data: dict[str, object]) -> None:
    assert_readers_agree(yaml.safe_dump(data, allow_unicode=True))


def test_defaults_without_a_verify_section() -> None:
    assert parse_verify_config("") == VerifyConfig()
    assert parse_verify_config("budget:\n  max_cost_usd: 5\n") == VerifyConfig()
