"""``ratchet doctor`` through the command line: each check passing and failing once, with real
parts (bubblewrap, SQLite, a stand-in agent CLI on PATH, the fake GitHub verifying the App's
JWT against its public key, an HTTP server on 127.0.0.1, closed ports for what is down).
PostgreSQL and Redis are in ``test_doctor_services.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from runner.ledger.schema import LATEST as SCHEMA_VERSION
from tests.fakes.fakegithub import FakeGitHub
from tests.services import free_port

ROOT = Path(__file__).resolve().parents[1]
APP_ID, SLUG = 4242, "ratchet-doctor"
KEY_VALUE = "gemini-key-never-printed-7"
WEBHOOK_SECRET = "webhook-secret-never-printed-9"
# A stand-in for the gemini CLI: it answers --version (and would not run a prompt).
STUB = """#!{interpreter}
import sys
if sys.argv[1:] != ["--version"]:
    sys.exit(3)
print("0.0.1-stub")
"""


def make_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


@pytest.fixture(scope="module")
def app_key() -> bytes:
    return make_key()


@pytest.fixture(scope="module")
def github(app_key: bytes) -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.register_app(app_id=APP_ID, slug=SLUG, private_key_pem=app_key)
        yield fake


class _Healthz(BaseHTTPRequestHandler):
    """Answers /healthz as Ratchet does; anything else is another service's 404."""

    def do_GET(self) -> None:
        body, status = (b"ok", 200) if self.path == "/healthz" else (b"nothing here", 404)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def public_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Healthz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@dataclass
class Doctor:
    """One ``ratchet doctor`` run: its exit code, its lines by check, its output."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> dict[str, str]:
        found = {}
        for line in self.stdout.splitlines():
            verdict, _, rest = line.partition(" ")
            check, _, text = rest.strip().partition(": ")
            found[check] = f"{verdict} {text}"
        return found


def stub_folder(root: Path, *, interpreter: str = sys.executable) -> Path:
    folder = root / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    stub = folder / "gemini"
    stub.write_text(STUB.format(interpreter=interpreter))
    stub.chmod(0o755)
    return folder


def environ(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """This process's environment without Ratchet's settings or model keys, a home under
    ``tmp_path``, the system's PATH, then ``env``."""
    base = {name: value for name, value in os.environ.items()
            if not name.startswith("RATCHET_") and not name.endswith(("_API_KEY", "_BASE_URL"))}
    return {**base, "RATCHET_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", **env}


def doctor(tmp_path: Path, env: dict[str, str], *args: str) -> Doctor:
    done = subprocess.run([sys.executable, "-m", "app.cli", "doctor", *args],
                          env=environ(tmp_path, env), capture_output=True, text=True,
                          timeout=240, check=False, cwd=ROOT)
    return Doctor(done.returncode, done.stdout, done.stderr)


def app_env(github: FakeGitHub, key_file: Path, *, app_id: int = APP_ID) -> dict[str, str]:
    return {"RATCHET_GITHUB_APP_ID": str(app_id), "RATCHET_GITHUB_APP_SLUG": SLUG,
            "RATCHET_GITHUB_PRIVATE_KEY_FILE": str(key_file),
            "RATCHET_GITHUB_API_URL": github.base_url}


def key_file(tmp_path: Path, pem: bytes) -> Path:
    path = tmp_path / "app.pem"
    path.write_bytes(pem)
    return path


def assert_no_secret(done: Doctor, pem: bytes) -> None:
    """Neither a key line nor a secret's value, nor any part of it, reaches the output."""
    output = done.stdout + done.stderr
    assert KEY_VALUE not in output and WEBHOOK_SECRET not in output
    body = [line for line in pem.decode().splitlines() if "PRIVATE KEY" not in line]
    assert not any(line[:12] in output for line in body)


def test_every_check_holds_and_exit_is_0(tmp_path: Path, github: FakeGitHub, app_key: bytes,
                                         public_url: str) -> None:
    done = doctor(tmp_path, {
        "PATH": f"{stub_folder(tmp_path)}:/usr/bin:/bin", "RATCHET_AGENT": "gemini",
        "GEMINI_API_KEY": KEY_VALUE, "RATCHET_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "RATCHET_PUBLIC_URL": public_url, **app_env(github, key_file(tmp_path, app_key))})
    assert done.returncode == 0, done.stdout + done.stderr
    home = tmp_path / "home"
    assert done.lines == {
        "agent": f"ok gemini is {tmp_path}/bin/gemini (version 0.0.1-stub)",
        "credentials": "ok GEMINI_API_KEY set",
        "sandbox": "ok bwrap starts processes here",
        "ledger": f"ok SQLite {home}/ratchet.db is writable (schema version {SCHEMA_VERSION})",
        "broker": "ok embedded (no RATCHET_BROKER_URL: `ratchet serve` runs the in-process"
                  " worker)",
        "github-app": f"ok {github.base_url} accepts the App's JWT: App '{SLUG}' (id {APP_ID})",
        "webhook-secret": "ok set: deliveries without its signature are refused",
        "public-url": f"ok {public_url}/healthz answers",
    }
    assert_no_secret(done, app_key)


def test_every_check_fails_with_what_to_do_and_exit_is_1(
        tmp_path: Path, github: FakeGitHub, app_key: bytes) -> None:
    """Agent not on PATH, no key, no bwrap on PATH, a ledger under a file, a broker and a
    public URL on closed ports, a key that is not the App's, no webhook secret."""
    (tmp_path / "a-file").write_text("")
    closed = free_port()
    other_key = make_key()
    done = doctor(tmp_path, {
        "PATH": str(tmp_path / "empty"), "RATCHET_AGENT": "gemini",
        "RATCHET_STORE_URL": str(tmp_path / "a-file" / "ratchet.db"),
        "RATCHET_BROKER_URL": f"redis://:hunter2@127.0.0.1:{closed}/0",
        "RATCHET_PUBLIC_URL": f"http://127.0.0.1:{closed}",
        **app_env(github, key_file(tmp_path, other_key))})
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.lines
    assert list(lines) == ["agent", "credentials", "sandbox", "ledger", "broker", "github-app",
                           "webhook-secret", "public-url"]
    assert all(line.startswith("FAIL ") for line in lines.values()), lines
    assert lines["agent"] == ("FAIL 'gemini' is not on the agents' PATH: install it (npm install"
                              " -g @google/gemini-cli; https://geminicli.com/docs/cli/headless/)")
    assert lines["credentials"].startswith("FAIL set GEMINI_API_KEY in the runner's environment")
    assert lines["sandbox"].startswith("FAIL agents and checks run in a bubblewrap sandbox, but"
                                       " 'bwrap' is not installed (not on PATH); install")
    assert lines["ledger"].startswith(f"FAIL SQLite {tmp_path}/a-file/ratchet.db cannot be used:")
    assert lines["ledger"].endswith("make its folder writable by this user or set"
                                    " RATCHET_STORE_URL")
    assert lines["broker"].startswith(f"FAIL redis://127.0.0.1:{closed} does not answer")
    assert lines["broker"].endswith(": start it or fix RATCHET_BROKER_URL")
    assert "hunter2" not in done.stdout
    assert lines["github-app"] == (
        f"FAIL {github.base_url} refused the App's JWT (401 A JSON web token could not be"
        f" decoded): the private key is not App {APP_ID}'s; generate one on the App's settings"
        " page and point RATCHET_GITHUB_PRIVATE_KEY_FILE at it")
    assert lines["webhook-secret"] == ("FAIL not set, so every delivery is refused (503): set"
                                       " RATCHET_WEBHOOK_SECRET to the App's webhook secret")
    assert lines["public-url"].startswith(f"FAIL http://127.0.0.1:{closed}/healthz does not"
                                          " answer from this host (ConnectError:")
    assert lines["public-url"].endswith("the tunnel or proxy in front of the service is down,"
                                        " the service is not running, or RATCHET_PUBLIC_URL is"
                                        " wrong")
    assert_no_secret(done, other_key)


def test_an_unknown_app_id_and_a_key_that_does_not_parse_fail(
        tmp_path: Path, github: FakeGitHub, app_key: bytes) -> None:
    unknown = doctor(tmp_path, {"RATCHET_SANDBOX": "none", **app_env(
        github, key_file(tmp_path, app_key), app_id=APP_ID + 1)}, "--json")
    assert unknown.returncode == 1
    report = json.loads(unknown.stdout)
    assert report["ok"] is False
    assert {"check": "github-app", "status": "FAIL", "fatal": True,
            "text": f"{github.base_url} knows no App {APP_ID + 1} (404 Integration not found):"
                    " set RATCHET_GITHUB_APP_ID to the 'App ID' on the App's settings page (or"
                    " RATCHET_GITHUB_API_URL to its GitHub's API)"} in report["checks"]
    garbage = (b"-----BEGIN RSA PRIVATE KEY-----\nnot-a-key-at-all-0123456789\n"
               b"-----END RSA PRIVATE KEY-----\n")
    bad = doctor(tmp_path, {"RATCHET_SANDBOX": "none",
                            **app_env(github, key_file(tmp_path, garbage))})
    assert bad.returncode == 1
    assert bad.lines["github-app"] == (
        "FAIL RATCHET_GITHUB_PRIVATE_KEY_FILE is not an unencrypted PEM private key; use the"
        " .pem file GitHub generated for the App (it begins with '-----BEGIN RSA PRIVATE"
        " KEY-----')")
    assert "not-a-key" not in bad.stdout + bad.stderr


def test_without_an_app_the_github_lines_do_not_fail(tmp_path: Path) -> None:
    """No App, no agent, no sandbox: warnings and skipped checks, and exit 0."""
    done = doctor(tmp_path, {"RATCHET_SANDBOX": "none", "RATCHET_WEBHOOK_SECRET": WEBHOOK_SECRET})
    assert done.returncode == 0, done.stdout
    lines = done.lines
    assert lines["agent"] == ("warn none configured: set RATCHET_AGENT (a preset) or"
                              " RATCHET_AGENT_COMMAND, or give each `ratchet run` --agent or"
                              " --agent-command")
    assert lines["sandbox"].startswith("warn none (RATCHET_SANDBOX=none): agents and checks run"
                                       " unconfined")
    assert lines["github-app"] == "skip not configured (local runs only)"
    assert lines["webhook-secret"] == "skip not configured (local runs only)"
    assert lines["public-url"] == "skip RATCHET_PUBLIC_URL is not set (no links to run pages)"
    assert WEBHOOK_SECRET not in done.stdout


def test_an_agent_found_on_the_host_that_cannot_start_in_the_sandbox_fails(
        tmp_path: Path) -> None:
    """Its interpreter lives under /tmp, which the sandbox never shows: on the host it would
    start, in a step it cannot."""
    interpreter = tmp_path / "interp" / "python3"
    interpreter.parent.mkdir()
    interpreter.symlink_to(sys.executable)
    folder = stub_folder(tmp_path, interpreter=str(interpreter))
    done = doctor(tmp_path, {"PATH": f"{folder}:/usr/bin:/bin", "RATCHET_AGENT": "gemini",
                             "GEMINI_API_KEY": KEY_VALUE})
    assert done.returncode == 1
    assert done.lines["agent"].startswith(f"FAIL {folder}/gemini does not start where agents run:"
                                          " bwrap: execvp gemini")
    assert done.lines["agent"].endswith("show what it needs with RATCHET_SANDBOX_RO (its"
                                        " interpreter's folder) or install it under /usr or"
                                        " /opt")


def test_a_public_url_that_leads_elsewhere_fails(tmp_path: Path, public_url: str) -> None:
    done = doctor(tmp_path, {"RATCHET_SANDBOX": "none",
                             "RATCHET_PUBLIC_URL": f"{public_url}/another-service"})
    assert done.returncode == 1
    assert done.lines["public-url"] == (
        f"FAIL {public_url}/another-service/healthz answered 404, not Ratchet's /healthz:"
        " RATCHET_PUBLIC_URL (or the tunnel behind it) leads to another service")
