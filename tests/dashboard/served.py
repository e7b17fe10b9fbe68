"""``ratchet serve`` as a subprocess on loopback, for the tests that go through the real
service: start it, read the one-time sign-in link it prints, stop it."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.e2e.harness import Ratchet

LINK = re.compile(r"this link signs you in once\): (http://\S+/\?token=\S+)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(ratchet: Ratchet, port: int, log: Path, extra: dict[str, str] | None = None,
          host: str = "127.0.0.1") -> subprocess.Popen[bytes]:
    """``ratchet serve`` on ``host``:``port``, its output in ``log``, once it answers."""
    ratchet.shared.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", host, "--port", str(port)],
            cwd=ratchet.home.parent, stdout=out, stderr=subprocess.STDOUT,
            env=ratchet.environ(extra), start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"http://{host}:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"ratchet serve did not start:\n{log.read_text()}"
        time.sleep(0.1)


def sign_in_link(log: Path) -> str:
    """The newest one-time sign-in link ``ratchet serve`` printed."""
    deadline = time.monotonic() + 30
    while not (found := LINK.findall(log.read_text())):
        assert time.monotonic() < deadline, f"no sign-in link printed:\n{log.read_text()}"
        time.sleep(0.1)
    return found[-1]


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
