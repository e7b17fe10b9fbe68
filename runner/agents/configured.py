"""The agent a step runs, built from the engine's settings: one place for how a preset's CLI
or a command template gets its environment, sandbox, network, home seeds and caps (the engine
runs it; ``ratchet doctor`` starts its program with ``--version`` the same way)."""

from __future__ import annotations

from runner.agents.command import CommandAgent, agent_environment
from runner.agents.presets import Preset
from runner.settings import EngineSettings


def agent_of(settings: EngineSettings, *, command: str | None = None,
             preset: Preset | None = None) -> CommandAgent:
    """The agent of ``preset``, or of the template ``command``; ``ValueError`` for a template
    that cannot be parsed."""
    names = settings.agent_env if preset is None else (*preset.env, *settings.agent_env)
    templates = preset.templates if preset is not None else command
    if templates is None:
        raise ValueError("an agent needs a preset or a command template")
    return CommandAgent(templates, preset=preset,
                        env=agent_environment(settings.environ, names),
                        sandbox=settings.sandbox, network=settings.network,
                        home_seed=settings.agent_home_seed, prices=settings.agent_prices,
                        max_output_bytes=settings.max_output_bytes,
                        max_log_bytes=settings.max_log_bytes)
