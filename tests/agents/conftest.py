"""Real agent CLIs against the scripted model API: every test here is marked ``agents``
(``make test-agents``; ``make test-fast`` leaves them out) and skips, saying how to install,
when its pinned CLI is not in the cache (``clis.py``).

``RATCHET_AGENTS_FROM_PATH=1`` (``make try-agent AGENT=claude``) runs the CLI found on PATH
instead, shown to the sandbox by the operator's own ``RATCHET_SANDBOX_RO``: an operator learns
what the preset still lacks on this host before a real issue fails."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.agents.clis import CLIS, cache
from tests.e2e.harness import Ratchet, make_target_repo
from tests.fakes.modelapi import ModelServer, Script

HERE = Path(__file__).parent
# What the runner holds: the proxy adds it upstream; the agent never sees it.
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-runner-key-21a", "OPENAI_API_KEY": "sk-openai-runner-key-21b",
        "GEMINI_API_KEY": "gemini-runner-key-21c"}
# The variable pointing each preset's model API at the scripted one (OpenAI's by default).
BASE_URLS = {"claude": "ANTHROPIC_BASE_URL", "gemini": "GOOGLE_GEMINI_BASE_URL"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.agents)


@dataclass(frozen=True)
class Installed:
    """Where a preset's CLI is: the folder for PATH and what the sandbox must show
    (RATCHET_SANDBOX_RO)."""

    preset: str
    bin: Path
    readable: str


def installed(preset: str) -> Installed:
    """The pinned CLI for ``preset`` (or the one on PATH, RATCHET_AGENTS_FROM_PATH); skips the
    test when there is none."""
    cli = CLIS[preset]
    if os.environ.get("RATCHET_AGENTS_FROM_PATH"):
        program = shutil.which(cli.program)
        if program is None:
            pytest.skip(f"{cli.program} is not on PATH (RATCHET_AGENTS_FROM_PATH)")
        return Installed(preset, Path(program).parent, os.environ.get("RATCHET_SANDBOX_RO", ""))
    if not cli.installed:
        pytest.skip(cli.skip_reason())
    return Installed(preset, cli.bin, str(cli.folder))


@dataclass
class AgentRatchet(Ratchet):
    """The harness's Ratchet with a preset instead of the scripted agent command."""

    cli: Installed | None = None
    model: ModelServer | None = None

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        assert self.cli is not None and self.model is not None
        env = super().environ(extra)
        env.pop("RATCHET_AGENT_COMMAND", None)
        variable = BASE_URLS.get(self.cli.preset, "OPENAI_BASE_URL")
        base = self.model.url + ("/v1" if variable == "OPENAI_BASE_URL" else "")
        return {
            **env, **KEYS,
            "RATCHET_AGENT": self.cli.preset,
            "PATH": f"{self.cli.bin}{os.pathsep}{env['PATH']}",
            # The CLI's installation is a toolchain the sandbox shows read-only.
            "RATCHET_SANDBOX_RO": self.cli.readable,
            variable: base,
            **self.env, **(extra or {}),
        }


MakeRatchet = Callable[..., AgentRatchet]


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer(Script()) as server:
        yield server


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder for the Ratchet home outside /tmp, as in service: Codex refuses to make its
    sandbox helper under the temporary folder, where the tests' homes would be."""
    parent = cache().parent
    if parent.resolve().is_relative_to(Path(tempfile.gettempdir()).resolve()):
        # A checkout under /tmp (`git clone . /tmp/x`): its cache is there too.
        parent = Path.home() / ".cache" / "ratchet-tests"
        parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="home-", dir=parent))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def agent_ratchet(tmp_path: Path, model: ModelServer, outside_tmp: Path) -> MakeRatchet:
    """A Ratchet home and a target repository whose agent is ``preset``'s real CLI, pointed
    at ``model``."""

    def make(preset: str, *, config: str | None = None,
             env: dict[str, str] | None = None) -> AgentRatchet:
        cli = installed(preset)
        repo = make_target_repo(tmp_path / "repo", **({"config": config} if config else {}))
        return AgentRatchet(home=outside_tmp / "home", repo=repo, env=dict(env or {}),
                            cli=cli, model=model, lease_seconds=30.0)

    return make


