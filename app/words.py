"""The command line's vocabulary: how a person acts on a run from this host's shell.

``runner/render.py`` asks it for the exact commands to print in the tracking comment, the pull
request body, replies and ``ratchet status``; a forge has its own (slash commands).
"""

from __future__ import annotations

import shlex

from runner.neutralise import escape_controls
from runner.render import say_next_action, say_usage
from runner.views import RunStatus


class CommandLineWords:
    def approve(self, run_id: str, spec_prefix: str) -> str:
        return f"ratchet approve-spec {run_id} --hash {spec_prefix}"

    def approve_diff(self, run_id: str, diff_sha256: str) -> str:
        return f"ratchet approve-diff {run_id} {diff_sha256}"

    def request_changes(self, run_id: str) -> str:
        return f"ratchet request-changes {run_id} --message TEXT"

    def retry(self, run_id: str) -> str:
        return f"ratchet retry {run_id}"

    def retry_with_agent(self, run_id: str) -> str:
        return f"ratchet retry {run_id} --agent-command TEMPLATE"

    def cancel(self, run_id: str) -> str:
        return f"ratchet cancel {run_id}"

    def resume(self, run_id: str) -> str:
        return f"ratchet resume {run_id}"

    def mention(self, author: str) -> str:
        return shlex.quote(author)

    def budget(self, run_id: str, amount: str) -> str:
        return f"ratchet budget {run_id} --add {shlex.quote(amount)}"

    def closes(self, issue: int) -> str:
        return ""  # a local run's branch closes nothing


CLI_WORDS = CommandLineWords()


def status_text(status: RunStatus) -> str:
    """``ratchet status`` for people: the four answers, one per line."""
    lines = [
        f"run {status.run_id}: {status.state} (step {status.step}, attempt {status.attempt})",
        f"completed: {', '.join(status.completed_steps) or 'nothing yet'}",
    ]
    if status.reason:
        lines.append(f"reason: {escape_controls(status.reason)}")
    lines += [f"problem: {escape_controls(problem)}" for problem in status.problems]
    if status.subagents:
        lines.append("subagents: " + ", ".join(
            f"{row['name']} {row['status']}" + (f" ({row['artifact']})" if row.get("artifact")
                                                else "")
            for row in status.subagents))
    if status.usage.get("total", {}).get("agent_runs"):
        lines.append(f"spent: {say_usage(status.usage)}")
    lines.append("effects:" if status.effects else "effects: none")
    lines += [f"  {e['key']} {e['kind']} {e['status']}" for e in status.effects]
    if status.pending_signals:
        lines.append("pending signals: " + ", ".join(
            f"{s['kind']} by {s['author']}" for s in status.pending_signals))
    lines.append(f"next: {say_next_action(status.next_action.to_dict(), status.run_id, CLI_WORDS)}")
    return "\n".join(lines)
