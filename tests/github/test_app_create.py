"""``ratchet github-app create`` through the command line and the fake GitHub's manifest flow:
a browser (httpx) opens the command's page, posts its form to GitHub's page, which creates the
App and sends it back; the command trades the code and writes the credentials file that
``ratchet doctor`` (as ``serve``) then reads with no other GitHub setting."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from github.manifest import EVENTS, PERMISSIONS
from tests.fakes.fakegithub import FakeGitHub
from tests.test_doctor import KEY_VALUE, doctor, public_url, stub_folder  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
CONVERSION = "apps/create-from-manifest"
PAGE = re.compile(r"Open (http://127\.0\.0\.1:\d+)/ ")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.oauth.sign_in_browser("alice")
        fake.create_organization("acme")
        yield fake
        assert fake.response_mismatches == [] and fake.crashes == []


def environ(tmp_path: Path, github: FakeGitHub, **extra: str) -> dict[str, str]:
    """No Ratchet setting of this host's; a config folder under ``tmp_path``; the fake's API and
    web pages as GitHub's."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RATCHET_", "XDG_"))}
    return {**base, "HOME": str(tmp_path / "user"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "RATCHET_HOME": str(tmp_path / "home"), "RATCHET_GITHUB_API_URL": github.base_url,
            "RATCHET_GITHUB_WEB_URL": github.base_url, "PYTHONPATH": str(ROOT), **extra}


def credentials_file(tmp_path: Path) -> Path:
    return tmp_path / "config" / "ratchet" / "github-app.json"


class _Form(HTMLParser):
    """The page's form: where it posts and its fields."""

    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.action = values["action"]
        elif tag == "input":
            self.fields[values["name"]] = values["value"]


@dataclass
class Create:
    """A running ``ratchet github-app create``: its page's address, then how it ended."""

    process: subprocess.Popen[str]
    url: str
    first_line: str

    @classmethod
    def start(cls, env: dict[str, str], *args: str, verbose: bool = False) -> Create:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", *(["-vv"] if verbose else []), "github-app",
             "create", *args], env=env,
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None
        line = process.stdout.readline()  # the command prints its page's address, then waits
        found = PAGE.search(line)
        if found is None:
            process.kill()
            raise AssertionError(f"no page address in {line!r}: {process.communicate()}")
        return cls(process, found.group(1), line)

    def form(self) -> _Form:
        page = httpx.get(f"{self.url}/")
        assert page.status_code == 200
        form = _Form()
        form.feed(page.text)
        return form

    def click_create(self) -> httpx.Response:
        """What a browser does: post the page's form to GitHub (which creates the App at the
        click) and follow GitHub's redirect back to the command."""
        form = self.form()
        github = httpx.post(form.action, data=form.fields)
        assert github.status_code == 302, github.text
        assert github.headers["location"].startswith(f"{self.url}/created?")
        return httpx.get(github.headers["location"])

    def state(self) -> str:
        found = re.search(r"[?&]state=([^&]+)", self.form().action)
        assert found is not None
        return found.group(1)

    def finish(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=120)
        return self.process.returncode, self.first_line + out, err

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


def assert_no_secret(text: str, path: Path, github: FakeGitHub) -> None:
    """Neither the key (any line of it), the webhook or client secret nor the code shows."""
    saved = json.loads(path.read_text())
    body = [line for line in saved["private_key"].splitlines() if "PRIVATE KEY" not in line]
    assert not any(line[:16] in text for line in body)
    assert saved["webhook_secret"] not in text and saved["client_secret"] not in text
    for call in github.calls(operation_id=CONVERSION):
        assert call.path.split("/")[2] not in text


def test_the_app_is_created_saved_0600_and_doctor_reads_it(
        tmp_path: Path, github: FakeGitHub, public_url: str) -> None:  # noqa: F811
    # At debug level, so that no log line (of httpx's, say) shows a secret or the code either.
    create = Create.start(environ(tmp_path, github, RATCHET_PUBLIC_URL=public_url),
                          verbose=True)
    try:
        back = create.click_create()
        code, out, err = create.finish()
    finally:
        create.stop()
    assert back.status_code == 200 and "/apps/ratchet/installations/new" in back.text
    assert code == 0, out + err
    path = credentials_file(tmp_path)
    assert out.splitlines()[1:] == [
        f"App 'ratchet' (id {github.app('ratchet').id}) is registered; its id, key, webhook"
        f" secret and OAuth client are in {path} (mode 0600), which serve, worker and doctor"
        " read.",
        "Install it on the repositories it may work on:"
        " https://github.com/apps/ratchet/installations/new",
        "Then check the setup with `ratchet doctor` and start `ratchet serve`."]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert list(path.parent.iterdir()) == [path]  # no temporary file left beside it
    saved = json.loads(path.read_text())
    app = github.app("ratchet")
    assert (saved["app_id"], saved["slug"], saved["api_url"]) == (app.id, "ratchet",
                                                                  github.base_url)
    key = load_pem_private_key(saved["private_key"].encode(), password=None)
    assert isinstance(key, RSAPrivateKey) and app.public_key is not None
    assert key.public_key().public_numbers() == app.public_key.public_numbers()
    # GitHub was asked for exactly the App Ratchet needs, its webhook and sign-in at the public
    # URL and the browser sent back to the command's own page.
    (page,) = github.calls(operation_id="apps/new-from-manifest")
    manifest = json.loads(page.body["manifest"])
    assert manifest["hook_attributes"]["url"] == f"{public_url}/webhooks/github"
    assert manifest["callback_urls"] == [f"{public_url}/auth/callback"]
    assert manifest["redirect_url"] == f"{create.url}/created"
    assert (app.permissions, app.events) == (PERMISSIONS, EVENTS)
    assert [call.status for call in github.calls(operation_id=CONVERSION)] == [201]
    assert_no_secret(out + err, path, github)

    # `ratchet doctor` (the checks serve runs at start) with no RATCHET_GITHUB_* variable:
    # the App, its slug and its webhook secret all come from the file.
    checked = doctor(tmp_path, {
        "PATH": f"{stub_folder(tmp_path)}:/usr/bin:/bin", "RATCHET_AGENT": "gemini",
        "GEMINI_API_KEY": KEY_VALUE, "XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.lines["github-app"] == (f"ok {github.base_url} accepts the App's JWT: App"
                                           f" 'ratchet' (id {app.id}), credentials from {path}")
    assert checked.lines["webhook-secret"] == ("ok set: deliveries without its signature are"
                                               " refused")
    assert checked.lines["public-url"] == f"ok {public_url}/healthz answers"
    assert_no_secret(checked.stdout + checked.stderr, path, github)

    # A file others may read works, but doctor says to close it.
    path.chmod(0o644)
    exposed = doctor(tmp_path, {"PATH": f"{stub_folder(tmp_path)}:/usr/bin:/bin",
                                "RATCHET_AGENT": "gemini", "GEMINI_API_KEY": KEY_VALUE,
                                "XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert exposed.returncode == 0
    assert exposed.lines["github-app"].startswith("warn ")
    assert exposed.lines["github-app"].endswith(
        f"; but {path} is readable by others (mode 644), and it holds the App's key: chmod 600"
        f" {path}")
    path.chmod(0o600)

    # A key in the file that is not the App's: doctor names the file and what to do.
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    saved["private_key"] = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption()).decode()
    path.write_text(json.dumps(saved))
    refused = doctor(tmp_path, {"PATH": f"{stub_folder(tmp_path)}:/usr/bin:/bin",
                                "RATCHET_AGENT": "gemini", "GEMINI_API_KEY": KEY_VALUE,
                                "XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert refused.returncode == 1
    assert refused.lines["github-app"] == (
        f"FAIL {github.base_url} refused the App's JWT (401 A JSON web token could not be"
        f" decoded): the private key in {path} is not App {app.id}'s; generate one on the App's"
        " settings page and point RATCHET_GITHUB_PRIVATE_KEY_FILE at it, or register it again"
        " with `ratchet github-app create --force`")


def test_an_organizations_app_is_registered_on_its_page(tmp_path: Path,
                                                        github: FakeGitHub) -> None:
    create = Create.start(environ(tmp_path, github,
                                  RATCHET_PUBLIC_URL="https://ratchet.example.com"),
                          "--org", "acme", "--name", "Acme Ratchet")
    try:
        assert create.form().action.startswith(
            f"{github.base_url}/organizations/acme/settings/apps/new?state=")
        assert create.click_create().status_code == 200
        code, out, err = create.finish()
    finally:
        create.stop()
    assert code == 0, out + err
    assert github.app("acme-ratchet").owner.login == "acme"
    assert "https://github.com/apps/acme-ratchet/installations/new" in out


def test_a_redirect_without_the_pages_state_is_refused_and_its_code_never_used(
        tmp_path: Path, github: FakeGitHub) -> None:
    create = Create.start(environ(tmp_path, github,
                                  RATCHET_PUBLIC_URL="https://ratchet.example.com"))
    try:
        # Someone else's page posts the same manifest (a forged registration): GitHub sends the
        # browser back to the command with a real code, but not the command's state.
        form = create.form()
        manifest = {**json.loads(form.fields["manifest"]), "name": "Forged"}
        forged = httpx.post(form.action.split("?")[0], params={"state": "forged"},
                            data={"manifest": json.dumps(manifest)})
        refused = httpx.get(forged.headers["location"])
        assert refused.status_code == 400 and "Nothing was done" in refused.text
        no_state = httpx.get(f"{create.url}/created", params={"code": "x"})
        assert no_state.status_code == 400
        assert github.calls(operation_id=CONVERSION) == []
        assert create.process.poll() is None  # still waiting for its own page's answer
        assert not credentials_file(tmp_path).exists()
        assert create.click_create().status_code == 200
        code, out, err = create.finish()
    finally:
        create.stop()
    assert code == 0, out + err
    assert [call.status for call in github.calls(operation_id=CONVERSION)] == [201]


def test_a_code_used_already_is_refused_and_nothing_is_written(tmp_path: Path,
                                                               github: FakeGitHub) -> None:
    env = environ(tmp_path, github, RATCHET_PUBLIC_URL="https://ratchet.example.com")
    first = Create.start(env)
    try:
        first.click_create()
        assert first.finish()[0] == 0
    finally:
        first.stop()
    (used,) = github.calls(operation_id=CONVERSION)
    spent = used.path.split("/")[2]
    other = tmp_path / "other.json"
    second = Create.start(env, "--credentials", str(other))
    try:
        answer = httpx.get(f"{second.url}/created",
                           params={"code": spent, "state": second.state()})
        code, _out, err = second.finish()
    finally:
        second.stop()
    assert answer.status_code == 502
    assert code == 1
    assert err.strip() == (f"ratchet: {github.base_url} knows no such code (404): it was used"
                           " already or is more than an hour old; run `ratchet github-app"
                           " create` again")
    assert [call.status for call in github.calls(operation_id=CONVERSION)] == [201, 404]
    assert not other.exists()


def test_without_a_public_url_or_over_an_existing_file_it_says_what_to_do(
        tmp_path: Path, github: FakeGitHub) -> None:
    def create(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "app.cli", "github-app", "create", *args],
            env=environ(tmp_path, github, **extra), cwd=ROOT, capture_output=True, text=True,
            timeout=120, check=False)

    missing = create()
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == ("ratchet: set RATCHET_PUBLIC_URL to where GitHub will reach this"
                              " service (e.g. https://ratchet.example.com, or a tunnel's URL):"
                              " the App's webhook and sign-in callback are registered under"
                              " it\n")
    existing = tmp_path / "app.json"
    existing.write_text("{}")
    refused = create("--credentials", str(existing),
                     RATCHET_PUBLIC_URL="https://ratchet.example.com")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == (f"ratchet: {existing} already holds an App's credentials: pass"
                              " --force to replace them, or --credentials PATH to write"
                              " another file\n")
    assert existing.read_text() == "{}" and github.calls() == []
