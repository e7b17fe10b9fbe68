"""GitHub's vocabulary: the commands Ratchet prints are the commands it accepts."""

from __future__ import annotations

import pytest

from github.commands import MAX_FEEDBACK_CHARS, CommandError, parse_command
from github.words import GitHubWords
from runner.names import SignalKind
from runner.render import Vocabulary, render_pull_request, render_reply, say_next_action

WORDS = GitHubWords()


def test_the_words_are_slash_commands_without_the_run_id() -> None:
    words: Vocabulary = WORDS
    assert words.approve("run-1", "0123456789ab") == "/ratchet approve 0123456789ab"
    assert words.request_changes("run-1") == "/ratchet request-changes <feedback>"
    assert words.retry("run-1") == "/ratchet retry"
    assert words.cancel("run-1") == "/ratchet cancel"
    assert words.resume("run-1") == ""  # a runnable run continues on its own
    assert words.mention("alice") == "@alice"


def test_every_printed_command_parses_back_to_its_signal() -> None:
    commands = pytest.importorskip("github.commands")
    printed = {
        SignalKind.APPROVE: WORDS.approve("run-1", "0123456789ab"),
        SignalKind.REQUEST_CHANGES: WORDS.request_changes("run-1"),
        SignalKind.RETRY: WORDS.retry("run-1"),
        SignalKind.CANCEL: WORDS.cancel("run-1"),
        SignalKind.BUDGET: WORDS.budget("run-1", "+30m"),
    }
    for kind, text in printed.items():
        parsed = commands.parse_command(text)
        assert parsed is not None and parsed.kind is kind, text
    # Verifying the checkpointed tree again has no place in the texts; it is typed.
    again = commands.parse_command("/ratchet verify-again\nthe database is back")
    assert again is not None and again.kind is SignalKind.VERIFY_AGAIN
    assert "`/ratchet verify-again`" in commands.USAGE
    assert commands.parse_command(printed[SignalKind.APPROVE]).argument == "0123456789ab"
    assert commands.parse_command(printed[SignalKind.BUDGET]).argument == "+30m"


def test_texts_for_people_use_the_commands() -> None:
    body = render_pull_request({"run": "run-1", "spec": {"sha256": "ab" * 32, "text": "x"}}, WORDS)
    assert "`/ratchet approve abababababab`" in body
    reply = render_reply(
        {
            "run": "run-1",
            "author": "bob",
            "refusal": "nothing_to_retry",
            "params": {"state": "implement"},
        },
        WORDS,
    )
    assert reply.startswith("@bob: there is nothing to retry")
    action = say_next_action({"kind": "human_decision", "reason": "branch moved"}, "run-1", WORDS)
    assert "`/ratchet retry`" in action and "`/ratchet cancel`" in action


def test_what_a_comment_carries_into_the_ledger_is_capped() -> None:
    """Feedback becomes a prompt and a record: longer than a GitHub body is refused; a hash and
    an unknown verb are cut before anything echoes them back."""
    longest = "x" * MAX_FEEDBACK_CHARS
    assert parse_command(f"/ratchet request-changes {longest}").argument == longest
    with pytest.raises(CommandError, match="longer than GitHub allows"):
        parse_command(f"/ratchet request-changes {longest}y")
    assert parse_command("/ratchet approve " + "a" * 500).argument == "a" * 64
    with pytest.raises(CommandError) as unknown:
        parse_command("/ratchet " + "z" * 500)
    assert len(str(unknown.value)) < 400


def test_ratchets_own_lines_hold_text_they_did_not_write_inert() -> None:
    """A typed hash, a failure's reason and a spec cannot act or break Ratchet's lines; the
    mention of who typed the command and the approve command still work."""
    reply = render_reply({"run": "run-1", "author": "bob", "refusal": "stale_hash",
                          "params": {"given": "x`@org/team`", "current": "ab" * 32}}, WORDS)
    assert reply.startswith("@bob: `` x`@org/team` `` is not")
    action = say_next_action({"kind": "human_decision",
                              "reason": "```\nFixes #7 <!-- hide -->"}, "run-1", WORDS)
    assert "Fixes ````#7```` &lt;!-- hide -->; then `/ratchet retry`" in action
    body = render_pull_request({"run": "run-1", "spec": {
        "sha256": "ab" * 32, "text": "```\nunclosed @x"}}, WORDS)
    assert body.endswith("```\nunclosed @x\n```\n")  # the spec's fence closes before the end
    assert body.index("`/ratchet approve abababababab`") < body.index("---")


def test_a_published_body_reads_as_finished_work_and_holds_agent_text_inert() -> None:
    from app.words import CLI_WORDS

    payload = {"run": "run-1", "draft": False, "issue": 1,
               "spec": {"sha256": "ab" * 32, "text": "Do it. Closes #4 @bob\n", "by": "alice"},
               "summary": "Fixed the sign.\nFixes #9 cc @team",
               "verification": {"conclusion": "success", "plan": "ef" * 32, "head": "12" * 20,
                                "repairs": 2, "checks": [{"id": "unit", "status": "passed"}],
                                "check_name": "ratchet/verify", "check_run": "run-1:x"}}
    body = render_pull_request(payload, WORDS, check_run_url="https://github.com/a/b/runs/5",
                               artifacts_url="https://r.example/runs/run-1/artifacts/")
    assert "/ratchet " not in body  # nothing is pending
    assert "Fixes `#9` cc `@team`" in body and "Closes `#4` `@bob`" in body
    assert ("1 of 1 checks passed on `121212121212`, after 2 repairs:"
            " [ratchet/verify](https://github.com/a/b/runs/5)") in body
    assert "[`spec.md`](https://r.example/runs/run-1/artifacts/spec.md)" in body
    assert body.endswith("\n\nCloses #1\n") and body.count("Closes #") == 1
    # Where there is no forge: the same words, nothing to close, nothing to link.
    local = render_pull_request(payload, CLI_WORDS)
    assert "Closes #1" not in local and "`ratchet/verify` (plan" in local
    assert "`spec.md` in the run's artifacts" in local
