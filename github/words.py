"""GitHub's vocabulary: the ``/ratchet`` slash commands people type in a comment.

``runner/render.py`` asks a ``Vocabulary`` for the exact text that acts on a run; on GitHub it
is a command typed on the run's issue or pull request (the run is found from there, so its id
is not part of the command). The commands are the ones ``github.commands`` parses.

Resuming needs no command on GitHub: a runnable run is woken by the queue or the reaper
without anyone asking (a stopped run is taken up again with ``/ratchet retry``), so ``resume``
is empty and the text says the run continues on its own.
"""

from __future__ import annotations

# What every command starts with (``github.commands.PREFIX`` parses the same word).
COMMAND = "/ratchet"


class GitHubWords:
    """``Vocabulary`` for text Ratchet posts on GitHub."""

    def approve(self, run_id: str, spec_prefix: str) -> str:
        return f"{COMMAND} approve {spec_prefix}"

    def approve_diff(self, run_id: str, diff_sha256: str) -> str:
        return f"{COMMAND} approve-diff {diff_sha256}"

    def request_changes(self, run_id: str) -> str:
        return f"{COMMAND} request-changes <feedback>"

    def retry(self, run_id: str) -> str:
        return f"{COMMAND} retry"

    def retry_with_agent(self, run_id: str) -> str:
        return ""  # what a run executes is the operator's to choose, never a comment's

    def cancel(self, run_id: str) -> str:
        return f"{COMMAND} cancel"

    def resume(self, run_id: str) -> str:
        return ""

    def mention(self, author: str) -> str:
        return f"@{author}"

    def budget(self, run_id: str, amount: str) -> str:
        return f"{COMMAND} budget {amount}"

    def closes(self, issue: int) -> str:
        # A closing keyword: merging the pull request closes the issue (GitHub docs, "Linking
        # a pull request to an issue").
        return f"Closes #{issue}"


GITHUB_WORDS = GitHubWords()
