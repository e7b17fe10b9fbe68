"""The agent CLIs ``make test-agents`` runs, pinned, and where they are installed.

Each CLI is installed once per version into a cache outside the temporary folders
(``.cache/agents/`` in the checkout, or ``RATCHET_AGENTS_CACHE``): npm packages with
``npm install --prefix``, PyPI packages into a virtual environment of their own. A test finds
its CLI here or skips saying how to install it (``make test-agents``); under ``CI=true`` an
install that fails while its registry answers is a failure (``install.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Cli:
    """One pinned agent CLI: its registry (npm or pypi), package, version and program."""

    preset: str
    registry: str
    package: str
    version: str
    program: str

    @property
    def folder(self) -> Path:
        slug = self.package.strip("@").replace("/", "-")
        return cache() / self.registry / f"{slug}-{self.version}"

    @property
    def bin(self) -> Path:
        """The folder holding the program, for PATH."""
        return self.folder / ("node_modules/.bin" if self.registry == "npm" else "venv/bin")

    @property
    def installed(self) -> bool:
        return (self.bin / self.program).exists() and (self.folder / ".complete").exists()

    def skip_reason(self) -> str:
        return (f"{self.package} {self.version} is not installed in {self.folder}: run"
                " `make test-agents` (it installs the pinned CLIs from their registries)")


def cache() -> Path:
    return Path(os.environ.get("RATCHET_AGENTS_CACHE") or ROOT / ".cache" / "agents")


CLIS = {cli.preset: cli for cli in (
    Cli("claude", "npm", "@anthropic-ai/claude-code", "2.1.332", "claude"),
    Cli("codex", "npm", "@openai/codex", "0.171.0", "codex"),
    Cli("opencode", "npm", "opencode-ai", "1.18.33", "opencode"),
    Cli("aider", "pypi", "aider-chat", "0.86.2", "aider"),
    Cli("gemini", "npm", "@google/gemini-cli", "0.61.0", "gemini"),
    Cli("copilot", "npm", "@github/copilot", "1.0.102", "copilot"),
)}
