"""Redaction works on bytes: a secret is masked whatever surrounds it."""

from __future__ import annotations

import os

from runner.redact import Redactor
from runner.scratch import remove_scratch, scrub_scratch

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


def test_an_output_folder_1100_deep_is_scrubbed_without_recursion(tmp_path):
    """An agent's output tree of any depth goes (unread) when its run stops; logs stay."""
    log = tmp_path / "1" / "research.1" / "agent.1.log"
    out = tmp_path / "1" / "research.1" / "out"
    out.mkdir(parents=True)
    log.write_bytes(b"token " + SECRET.encode() + b"\n")
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1100):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)

    scrub_scratch(tmp_path, Redactor([SECRET]))

    assert log.read_bytes() == b"token ***\n"
    assert not out.exists()
    remove_scratch(tmp_path / "1")
    assert not (tmp_path / "1").exists()


def test_a_secret_printed_encoded_is_masked_in_every_alignment():
    """base64 (either alphabet, anywhere in a longer stream), hex and percent-encoding of a
    known value are masked in text and bytes; what surrounds it stays readable."""
    import base64
    from urllib.parse import quote

    redact = Redactor([SECRET, "p@ss/word+1"])
    for prefix in (b"", b"K", b"KE", b"KEY=", b"\xff\x00\x01"):
        for suffix in (b"", b"\n", b"!?", b"tail bytes"):
            stream = prefix + SECRET.encode() + suffix
            for encoded in (base64.b64encode(stream), base64.urlsafe_b64encode(stream)):
                assert redact(encoded.decode()) != encoded.decode(), stream
                assert b"***" in redact.bytes(b"out: " + encoded), stream
    for shown in (SECRET.encode().hex(), SECRET.encode().hex().upper(),
                  quote("p@ss/word+1", safe="")):
        assert redact(f"x {shown} y") == "x *** y"
    assert redact("nothing secret: aGVsbG8gd29ybGQ= 68656c6c6f") == (
        "nothing secret: aGVsbG8gd29ybGQ= 68656c6c6f")


def test_the_apps_private_key_is_masked_whole_line_by_line_and_encoded(tmp_path):
    import base64

    from app.settings import Settings

    body = ["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
            "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"]
    pem = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"])
    key = tmp_path / "app-key.pem"
    key.write_text(pem)
    redact = Settings(home=tmp_path / "home", github_private_key_file=key).engine_settings().redact
    assert redact(f"key: {body[1]}") == "key: ***"
    assert "***" in redact(base64.b64encode(f"k={body[0]}".encode()).decode())
    assert redact(pem).count(body[0]) == 0
