"""The dashboard's vocabulary: how a person acts on a run from its page (the buttons there).

``runner.render.say_next_action`` asks it for the text that performs each action; resuming
has no button (a worker or the reaper takes a runnable run up by itself), so it names the
command that does it on the host.
"""

from __future__ import annotations

from app.words import CLI_WORDS


class WebWords:
    def approve(self, run_id: str, spec_prefix: str) -> str:
        return f"Approve spec {spec_prefix}" if spec_prefix else "Approve spec"

    def approve_diff(self, run_id: str, diff_sha256: str) -> str:
        return f"Approve diff {diff_sha256[:12]}" if diff_sha256 else "Approve diff"

    def request_changes(self, run_id: str) -> str:
        return "Request changes"

    def retry(self, run_id: str) -> str:
        return "Retry"

    def retry_with_agent(self, run_id: str) -> str:
        return CLI_WORDS.retry_with_agent(run_id)  # the operator's: no button chooses an agent

    def cancel(self, run_id: str) -> str:
        return "Cancel run"

    def resume(self, run_id: str) -> str:
        return CLI_WORDS.resume(run_id)

    def mention(self, author: str) -> str:
        return author

    def budget(self, run_id: str, amount: str) -> str:
        return CLI_WORDS.budget(run_id, amount)

    def closes(self, issue: int) -> str:
        return ""  # the page closes nothing; a forge's pull request may


WEB_WORDS = WebWords()
