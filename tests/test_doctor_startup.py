"""``ratchet serve`` runs the doctor's checks at start: it logs each line, and ``/readyz``
answers 503 naming the check and what to do while a fatal one fails (a real ``ratchet serve``
subprocess). The public URL is asked once the service listens: here, the service's own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from app.doctor.findings import REMEDIES, Check
from tests.services import free_port
from tests.test_doctor import KEY_VALUE, environ, stub_folder

ROOT = Path(__file__).resolve().parents[1]
AFTER = " (the service's log and `ratchet doctor` name the cause)"


def serve(tmp_path: Path, env: dict[str, str], port: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "app.cli", "-v", "serve", "--port", str(port)],
                            env=environ(tmp_path, {"RATCHET_AGENT": "gemini", **env}), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def readyz(proc: subprocess.Popen[str], port: int, *, settled: bool = False
           ) -> httpx.Response:
    """/readyz once the service answers (and, with ``settled``, once no check is pending)."""
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, "ratchet serve exited"
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
            if not settled or "pending" not in answer.json()["checks"].values():
                return answer
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "ratchet serve never answered /readyz"
        time.sleep(0.2)


def stop(proc: subprocess.Popen[str]) -> str:
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    return err


def test_a_missing_agent_cli_fails_readyz_naming_the_check(tmp_path: Path) -> None:
    port = free_port()
    proc = serve(tmp_path, {"GEMINI_API_KEY": KEY_VALUE}, port)
    try:
        answer = readyz(proc, port)
    finally:
        log = stop(proc)
    assert answer.status_code == 503
    body = answer.json()
    assert body["ledger"] == "ok" and body["broker"] == "in-process"
    assert body["failing"] == [{"check": "agent", "next": REMEDIES[Check.AGENT] + AFTER}]
    assert body["checks"]["agent"] == "FAIL" and body["checks"]["credentials"] == "ok"
    assert ("ERROR app.doctor.startup: check FAIL  agent: 'gemini' is not on the agents' PATH:"
            " install it (npm install -g @google/gemini-cli") in log
    assert "INFO app.doctor.startup: check ok    credentials: GEMINI_API_KEY set" in log
    assert KEY_VALUE not in log and KEY_VALUE not in answer.text


def test_with_every_check_holding_readyz_is_200_and_each_line_is_logged(tmp_path: Path) -> None:
    port = free_port()
    own = f"http://127.0.0.1:{port}"
    proc = serve(tmp_path, {"PATH": f"{stub_folder(tmp_path)}:/usr/bin:/bin",
                            "GEMINI_API_KEY": KEY_VALUE, "RATCHET_PUBLIC_URL": own}, port)
    try:
        answer = readyz(proc, port, settled=True)
    finally:
        log = stop(proc)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "ledger": "ok", "broker": "in-process", "failing": [],
        "checks": {"agent": "ok", "credentials": "ok", "sandbox": "ok", "ledger": "ok",
                   "broker": "ok", "github-app": "skip", "webhook-secret": "skip",
                   "public-url": "ok"}}
    lines = [line.split(": check ", 1)[1] for line in log.splitlines() if ": check " in line]
    assert [line.split(":")[0].split()[-1] for line in lines] == [
        "agent", "credentials", "sandbox", "ledger", "broker", "github-app", "webhook-secret",
        "public-url"]
    assert f"ok    public-url: {own}/healthz answers" in lines
    assert json.dumps(answer.json()).count(KEY_VALUE) == 0
