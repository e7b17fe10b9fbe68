"""The environment of untrusted processes (agents, checks): built by allowlist, never inherited.

The runner's own environment holds what it must never hand on: API keys, ``GITHUB_TOKEN``,
database URLs. An agent or a check starts from ``base_environment`` (where programs are, the
locale, the terminal) and gains only variables someone named on purpose (``pick``); the caller
adds its own (``HOME``, ``TMPDIR``, the protocol's ``RATCHET_*``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Passed from the host: what a program needs to run, nothing that identifies or authorises
# (where a toolchain that finds itself through a variable is installed: paths, never secrets).
BASE_NAMES = frozenset({"PATH", "LANG", "LANGUAGE", "TERM", "TZ",
                        "RUSTUP_HOME", "GOROOT", "JAVA_HOME"})
BASE_PREFIXES = ("LC_",)
# Names that configure Ratchet itself: never passed on, whoever names them.
RESERVED_PREFIX = "RATCHET_"
# Set by whoever starts the process (a fresh folder, the sandbox's private /tmp), never taken
# from the host.
OWN_NAMES = frozenset({"HOME", "TMPDIR"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def base_environment(host: Mapping[str, str]) -> dict[str, str]:
    """The part of ``host`` every untrusted process gets: PATH, the locale (LANG, LANGUAGE,
    LC_*), TERM, TZ, and where toolchains are (RUSTUP_HOME, GOROOT, JAVA_HOME)."""
    return {name: value for name, value in host.items()
            if name in BASE_NAMES or name.startswith(BASE_PREFIXES)}


def pick(host: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """The variables of ``host`` that ``names`` lists and that are set (a reserved or own name
    never is)."""
    return {name: host[name] for name in names
            if name in host and name not in OWN_NAMES and not name.startswith(RESERVED_PREFIX)}


def parse_names(text: str) -> tuple[str, ...]:
    """A comma-separated list of variable names (``ANTHROPIC_API_KEY, OPENAI_API_KEY``).

    Raises ``ValueError`` naming a word that is not a variable name, or one that can never be
    passed (Ratchet's own settings, HOME, TMPDIR).
    """
    names = tuple(word.strip() for word in text.split(",") if word.strip())
    for name in names:
        problem = name_problem(name)
        if problem:
            raise ValueError(problem)
    return names


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be named for an agent or a check, or None."""
    if not _NAME.fullmatch(name):
        return f"{name!r} is not an environment variable name"
    if name.startswith(RESERVED_PREFIX):
        return f"{name} configures Ratchet and never reaches an agent or a check"
    if name in OWN_NAMES:
        return f"{name} is set by Ratchet for each agent and check (a fresh folder)"
    return None
