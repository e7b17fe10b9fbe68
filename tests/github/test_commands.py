"""Commands are read only from a comment's plain text: a quoted, code, hidden or collapsed
command does nothing (pure)."""

from __future__ import annotations

import pytest

from github.commands import parse_command
from runner.names import SignalKind

HASH = "0123456789abcdef"


@pytest.mark.parametrize("body", [
    f"> /ratchet approve {HASH}",
    f"Earlier someone wrote:\n\n> quoted\n> /ratchet approve {HASH}\n",
    f"```\n/ratchet approve {HASH}\n```",
    "~~~text\n/ratchet cancel\n~~~",
    f"Run this:\n\n    /ratchet approve {HASH}\n",
    f"`/ratchet approve {HASH}`",
    f"<!-- /ratchet approve {HASH} -->",
    f"<!--\n/ratchet approve {HASH}\n-->\nlooks good",
    f"looks good <!--\n/ratchet approve {HASH}\n--> to me",
    f"<details>\n\n/ratchet approve {HASH}\n\n</details>",
    f"<details><summary>more</summary>\n/ratchet approve {HASH}\n</details>",
    f"- /ratchet approve {HASH}",
    f"# /ratchet approve {HASH}",
    f"I will `/ratchet approve {HASH}` tomorrow",
])
def test_a_command_that_is_quoted_shown_as_code_or_hidden_is_none(body):
    assert parse_command(body) is None


@pytest.mark.parametrize("body", [
    f"/ratchet approve {HASH}",
    f"Looks right to me.\n/ratchet approve {HASH}",
    f"> /ratchet cancel\n\n/ratchet approve {HASH}",
    f"<!-- note -->\n\n/ratchet approve {HASH}",
    f"<details>\n\nold\n\n</details>\n\n/ratchet approve {HASH}",
    f"text <!-- a\ncomment --> more\n/ratchet approve {HASH}",
    f"**/ratchet approve {HASH}**",
])
def test_a_command_in_the_plain_text_is_read(body):
    command = parse_command(body)
    assert command is not None and command.kind is SignalKind.APPROVE
    assert command.argument == HASH


def test_request_changes_takes_every_line_after_it_code_included():
    body = ("<!--\n/ratchet request-changes hidden\n-->\n"
            "/ratchet request-changes cover the empty case\n\n```\nassert f('') == 0\n```\n")
    command = parse_command(body)
    assert command is not None and command.kind is SignalKind.REQUEST_CHANGES
    assert command.argument == "cover the empty case\n\n```\nassert f('') == 0\n```"
