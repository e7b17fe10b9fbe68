"""Redaction works on bytes: a secret is masked whatever surrounds it."""

from __future__ import annotations

from runner.redact import Redactor
from runner.scratch import scrub_scratch

SECRET = "tok-3f9a7c1e5b2d"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_a_secret_beside_a_byte_that_is_not_utf8_is_masked():
    redact = Redactor([SECRET])
    for raw in (b"\xff" + SECRET.encode(), SECRET.encode() + b"\xfe\n",
                b"token=\xc3" + SECRET.encode() + b"\xe2\x82",
                b"\xff gh=" + GITHUB_TOKEN.encode() + b"\xff"):
        clean = redact.bytes(raw)
        assert SECRET.encode() not in clean and GITHUB_TOKEN.encode() not in clean, raw
        assert b"***" in clean
    # Every other byte stays as it was.
    assert redact.bytes(b"\x00\xff" + SECRET.encode() + b"\x80 ok") == b"\x00\xff***\x80 ok"
    assert redact.bytes(b"\xff\xfe binary") == b"\xff\xfe binary"


def test_an_agent_log_with_a_stray_byte_is_scrubbed_of_its_secret(tmp_path):
    log = tmp_path / "implement" / "agent.1.log"
    log.parent.mkdir()
    log.write_bytes(b"starting\n\xff" + SECRET.encode() + b"\ndone\n")
    scrub_scratch(tmp_path, Redactor([SECRET]))
    assert log.read_bytes() == b"starting\n\xff***\ndone\n"
