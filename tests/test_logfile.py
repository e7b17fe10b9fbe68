"""A capped log on disk: head and tail kept within the cap, cut between lines."""

from __future__ import annotations

import re
from pathlib import Path

from plumbing.logfile import CappedLog

LINE = re.compile(rb"token=tok-3f9a7c1e5b2d #\d+")


def test_the_cap_holds_and_every_kept_line_is_whole(tmp_path: Path) -> None:
    data = b"".join(b"token=tok-3f9a7c1e5b2d #%d\n" % i for i in range(5000))
    log = CappedLog(tmp_path / "agent.log", 4096)
    for start in range(0, len(data), 997):  # chunks that end inside lines
        log.write(data[start:start + 997])
    log.close()
    log.write(b"an orphan still printing\n")  # dropped

    kept = (tmp_path / "agent.log").read_bytes()
    assert len(kept) <= 4096
    head, rest = kept.split(b"\n... ", 1)
    marker, tail = rest.split(b"\n", 1)
    assert marker == (f"ratchet: {log.omitted} of {len(data)} bytes omitted here (the log is"
                      " capped at 4096 bytes by RATCHET_MAX_LOG_BYTES) ...").encode()
    assert head.startswith(b"token=tok-3f9a7c1e5b2d #0\n") and tail.endswith(b" #4999\n")
    assert all(LINE.fullmatch(line) for line in (head + tail).splitlines())
    assert log.omitted == len(data) - len(head) - len(tail)
