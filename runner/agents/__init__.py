"""Agent backends and their prompts: the ``Agent`` port, the command agent, prompt rendering."""

from runner.agents.base import Agent, AgentResult, AgentTask
from runner.agents.command import CommandAgent
from runner.agents.prompt import (
    PHASE_OUTPUTS,
    FailingCheck,
    FailingTest,
    PromptContext,
    output_path,
    render_prompt,
)

__all__ = [
    "PHASE_OUTPUTS",
    "Agent",
    "AgentResult",
    "AgentTask",
    "CommandAgent",
    "FailingCheck",
    "FailingTest",
    "PromptContext",
    "output_path",
    "render_prompt",
]
