"""Who may start and command runs, through ``ratchet serve``, signed webhooks and the fake
GitHub: a triager's label starts nothing and gets one reply; hidden or quoted commands do
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.e2e.github_app import BOT, OWNER, REPO, WRITER, AppScene, scenes

ISSUE = 1
TRIAGER = "tess"


@pytest.fixture(scope="module")
def app_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


@pytest.fixture
def scene(tmp_path: Path, app_key: bytes) -> Iterator[AppScene]:
    yield from scenes(tmp_path, app_key)


def bot_replies(scene: AppScene) -> list[str]:
    return [c.body for c in scene.fake.comments(OWNER, REPO, ISSUE) if c.user.login == BOT]


def test_a_triagers_label_starts_no_run_and_gets_one_reply(scene: AppScene) -> None:
    scene.fake.set_permission(OWNER, REPO, TRIAGER, "triage")
    scene.serve()
    first = scene.deliver("issues", scene.labeled(ISSUE, sender=TRIAGER))
    assert first.status_code == 200 and first.json()["decision"] == "ignore"
    assert "tess has triage access" in first.json()["reason"]
    [reply] = scene.wait_for("the refusal's reply", lambda: bot_replies(scene))
    assert "@tess" in reply and "write access or more (write, maintain, admin)" in reply
    # Again within the minute: still no run, no second reply.
    again = scene.deliver("issues", scene.labeled(ISSUE, sender=TRIAGER))
    assert again.json()["decision"] == "ignore"
    assert scene.run_state() is None
    # A writer's label starts the run (its tracking comment is the bot's next comment).
    started = scene.deliver("issues", scene.labeled(ISSUE, sender=WRITER))
    assert started.status_code == 202 and started.json()["decision"] == "start"
    assert scene.run_state() is not None
    assert len([b for b in bot_replies(scene) if "@tess" in b]) == 1


@pytest.mark.parametrize("body", [
    "> /ratchet cancel",
    "```\n/ratchet cancel\n```",
    "<!-- /ratchet cancel -->",
    "looks fine <!--\n/ratchet cancel\n-->",
])
def test_a_quoted_fenced_or_hidden_command_does_nothing(scene: AppScene, body: str) -> None:
    scene.serve()
    assert scene.deliver("issues", scene.labeled(ISSUE, sender=WRITER)).status_code == 202
    _, answer = scene.command(ISSUE, body, author=WRITER)
    assert answer.status_code == 200
    assert (answer.json()["decision"], answer.json()["reason"]) == (
        "ignore", "no /ratchet command")
    assert scene.run_state()["state"] not in {"cancelled"}
