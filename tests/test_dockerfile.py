"""A lint of the Dockerfile's text: the properties the service and workers rely on.

No Docker engine runs here or in CI, so the image is never built by the suite: these tests read
the Dockerfile and catch a regression in what matters at run time (non-root user, signals
reaching ``ratchet``, a health check on /healthz, git present), not whether the build works.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The distribution's top-level packages.
PACKAGES = ["app", "runner", "verification", "github", "plumbing"]


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with comments dropped and continuations joined."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    result = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, arguments = line.strip().partition(" ")
            result.append((keyword.upper(), " ".join(arguments.split())))
    return result


@pytest.fixture(scope="module")
def instructions() -> list[tuple[str, str]]:
    return _instructions((ROOT / "Dockerfile").read_text())


def _only(instructions: list[tuple[str, str]], keyword: str) -> str:
    found = [arguments for name, arguments in instructions if name == keyword]
    assert len(found) == 1, f"expected one {keyword} in the Dockerfile, found {len(found)}"
    return found[0]


def _index(instructions: list[tuple[str, str]], keyword: str) -> int:
    return max(i for i, (name, _) in enumerate(instructions) if name == keyword)


def test_base_is_slim_python_311(instructions: list[tuple[str, str]]) -> None:
    assert _only(instructions, "FROM").startswith("python:3.11-slim")


def test_git_and_bubblewrap_are_installed_without_recommends_and_lists_cleaned(
    instructions: list[tuple[str, str]],
) -> None:
    runs = [arguments for name, arguments in instructions if name == "RUN"]
    apt = [run for run in runs if "apt-get install" in run]
    assert len(apt) == 1
    assert re.search(r"--no-install-recommends\b.*\bgit\b", apt[0])
    assert re.search(r"--no-install-recommends\b.*\bbubblewrap\b", apt[0])  # the sandbox
    assert "rm -rf /var/lib/apt/lists/*" in apt[0]  # in the same layer, or it saves nothing


def test_runs_as_non_root_before_the_entrypoint(instructions: list[tuple[str, str]]) -> None:
    user = _only(instructions, "USER")
    assert user.split(":")[0] not in {"root", "0"}
    assert _index(instructions, "USER") < _index(instructions, "ENTRYPOINT")


def test_entrypoint_is_exec_form_so_signals_reach_ratchet(
    instructions: list[tuple[str, str]],
) -> None:
    # Shell form would run `/bin/sh -c ratchet`: docker stop's SIGTERM would stop at the shell.
    assert json.loads(_only(instructions, "ENTRYPOINT")) == ["ratchet"]
    assert json.loads(_only(instructions, "CMD")) == [
        "serve", "--host", "0.0.0.0", "--port", "8000",
    ]


def test_healthcheck_asks_healthz_without_curl(instructions: list[tuple[str, str]]) -> None:
    healthcheck = _only(instructions, "HEALTHCHECK")
    command = json.loads(healthcheck[healthcheck.index("CMD ") + 4:])
    assert command[0] == "python"
    assert "urllib.request" in command[-1]
    assert "http://127.0.0.1:8000/healthz" in command[-1]
    assert _only(instructions, "EXPOSE") == "8000"


def test_ratchet_home_is_a_volume(instructions: list[tuple[str, str]]) -> None:
    envs = " ".join(arguments for name, arguments in instructions if name == "ENV")
    assert "RATCHET_HOME=/var/lib/ratchet" in envs
    assert json.loads(_only(instructions, "VOLUME")) == ["/var/lib/ratchet"]


def test_installs_the_project_from_exactly_its_sources(
    instructions: list[tuple[str, str]],
) -> None:
    sources = " ".join(arguments for name, arguments in instructions if name == "COPY")
    for needed in ["pyproject.toml", "README.md", *(f"{p}/" for p in PACKAGES)]:
        assert needed in sources.split(), f"the Dockerfile does not COPY {needed}"
    assert any("pip install --no-cache-dir ." in arguments
               for name, arguments in instructions if name == "RUN")


def test_dockerignore_lets_the_copied_sources_through() -> None:
    rules = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert rules[0] == "*", "start from an allow-list so secrets and .venv never reach the build"
    for needed in ["pyproject.toml", "README.md", *(f"{p}/" for p in PACKAGES)]:
        assert f"!{needed}" in rules
