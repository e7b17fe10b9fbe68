"""A fork's pull request, verified by ``ratchet serve``, gets nothing to steal (issue 20).

The fork's test (``tests/fixtures/hostile_fork.py``) walks the environment, its home and the
service user's, ``~/.ssh``, the shared agent folder, Ratchet's home, ``/proc``, the checkout's
git dir and the mirror behind it, and loopback listeners (``ratchet serve``, the fake GitHub,
git over HTTP, a listener of the test's), prints it all base64-encoded and fails. The fork's own
``.github/ratchet.yml`` asks for secrets and the network; the base's config, which asks for one
secret the operator allows to checks, decides. Asserted from outside: no secret Ratchet holds
(model API key, ``GH_TOKEN``, the secret the base asks for, every installation token the fake
minted, the webhook secret, the App's private key) appears in any form in what Ratchet sent
GitHub, the ledger, Ratchet's home or its log; the listener saw no connection; nothing was
planted; and what the fork printed, decoded, shows an environment of the protocol's names only.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from plumbing.environment import BASE_NAMES, BASE_PREFIXES
from runner.redact import encoded_forms
from tests.e2e.github_app import OWNER, REPO, SECRET, AppScene, scenes
from tests.e2e.harness import ROOT
from tests.fakes.fakegithub.state import AuthKind
from tests.gitrepo import git

HOSTILE = ROOT / "tests" / "fixtures" / "hostile_fork.py"
MALLORY = "mallory"
MODEL_KEY = "sk-ant-api03-" + "Fk3xQ9vLm2Rt7YwZ8pNc4Hs6Jd1Ug5Be0Ka-Tq"
GH_TOKEN = "ghp_" + "Zq8Wv3Nx6Lp1Rm4Ts7Yk2Hc5Jf9Bd0Ga3Se"
NPM_TOKEN = "npm_" + "Xc7Vb2Nm5Lk8Jh1Gf4Ds9Aq3Wz6Er0Ty2Ui"
# The base's checks, asking for a secret the operator allows to checks (a writer's change
# would get it; a pull request's head must not).
BASE_CONFIG = """\
verify:
  env: [NPM_TOKEN]
  checks:
    - {id: unit, kind: test, run: "python3 -m unittest -q", timeout: 600}
"""
# The fork's own config: more secrets, the network, and a command that prints the environment.
FORK_CONFIG = """\
verify:
  env: [NPM_TOKEN, GH_TOKEN, ANTHROPIC_API_KEY]
  network: ["*"]
  checks:
    - {id: unit, kind: test, run: "env | base64"}
"""
# What /bin/sh and Python add to a process's environment on their own.
SHELL_NAMES = {"PWD", "OLDPWD", "SHLVL", "_"}
PROTOCOL_NAMES = {"HOME", "TMPDIR", "RATCHET_JUNIT", "RATCHET_CHECK", "RATCHET_WORKSPACE",
                  *(f"{name}_PROXY" for name in ("HTTP", "HTTPS", "ALL", "NO")),
                  *(f"{name}_proxy" for name in ("http", "https", "all", "no"))}
LABELS = {"env", "env_names", "home", "user_home", "ssh", "credentials", "shared",
          "ratchet_home", "ledger", "key_file", "proc", "git_config", "git_dir",
          "git_credential_config", "mirror", "plant_shared", "plant_ratchet_home",
          "connect_serve", "connect_listener", "connect_github", "proxy_github"}


@pytest.fixture(scope="module")
def app_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


@pytest.fixture
def scene(tmp_path: Path, app_key: bytes) -> Iterator[AppScene]:
    yield from scenes(tmp_path, app_key)


class Listener:
    """A loopback service of the host's: it records every connection it accepts."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen()
        self.port = int(self.socket.getsockname()[1])
        self.accepted: list[tuple[str, int]] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.socket.accept()
            except OSError:
                return
            self.accepted.append(peer)
            conn.close()

    def close(self) -> None:
        self.socket.close()


def open_fork_pull_request(scene: AppScene, targets: dict[str, object]) -> tuple[int, str]:
    """The base gets ``BASE_CONFIG``; mallory's fork adds the hostile test and its own config
    and opens pull request; its head, as GitHub keeps it, is ``refs/pull/<n>/head``."""
    bare = scene.root / "git" / OWNER / f"{REPO}.git"
    work = scene.root / "mallory-clone"
    git(scene.root, "clone", "--quiet", bare.as_uri(), str(work))
    identity = ("-c", "user.name=mallory", "-c", "user.email=mallory@example.com")
    (work / ".github" / "ratchet.yml").write_text(BASE_CONFIG)
    git(work, "add", "--all")
    git(work, *identity, "commit", "--quiet", "-m", "checks ask for NPM_TOKEN")
    git(work, "push", "--quiet", "origin", "main")
    git(work, "checkout", "--quiet", "-b", "mallory-patch")
    shutil.copyfile(HOSTILE, work / "test_fork.py")
    (work / "fork_targets.json").write_text(json.dumps(targets))
    (work / ".github" / "ratchet.yml").write_text(FORK_CONFIG)
    git(work, "add", "--all")
    git(work, *identity, "commit", "--quiet", "-m", "Fix a typo")
    git(work, "push", "--quiet", "origin", "mallory-patch")
    head = git(work, "rev-parse", "HEAD").strip()
    number = scene.fake.create_pull(OWNER, REPO, head="mallory-patch", base="main",
                                    title="Fix a typo", author=MALLORY)
    git(work, "push", "--quiet", "origin", f"HEAD:refs/pull/{number}/head")
    return number, head


def fork_payload(scene: AppScene, number: int) -> dict[str, object]:
    """``pull_request.opened`` as GitHub sends it for a fork: the head is another repository."""
    payload = scene.pull_request_event(number, "opened", sender=MALLORY)
    pull = payload["pull_request"]
    assert isinstance(pull, dict)
    fork = dict(pull["head"]["repo"])
    fork.update(id=fork["id"] + 1000, full_name=f"{MALLORY}/{REPO}", fork=True,
                owner={**fork["owner"], "login": MALLORY, "id": fork["owner"]["id"] + 1000},
                clone_url=f"https://github.com/{MALLORY}/{REPO}.git")
    pull["head"] = {**pull["head"], "repo": fork, "label": f"{MALLORY}:mallory-patch"}
    return payload


def forms(value: str) -> set[bytes]:
    """``value`` as a check could print it: plain, base64, hex, percent-encoded."""
    raw = value.encode()
    return {raw, *encoded_forms(raw)}


def secrets_held(scene: AppScene, app_key: bytes) -> dict[str, str]:
    """Every secret the running service holds, by name; the private key by each line too."""
    minted = [t.value for t in scene.fake.world.tokens.values()
              if t.kind is AuthKind.INSTALLATION]
    assert minted, "Ratchet fetched the fork's head with an installation token"
    key_lines = [line for line in app_key.decode().splitlines() if "PRIVATE KEY" not in line]
    return {
        "model API key": MODEL_KEY, "GH_TOKEN": GH_TOKEN, "NPM_TOKEN": NPM_TOKEN,
        "webhook secret": SECRET, "private key": app_key.decode(),
        **{f"installation token {i}": token for i, token in enumerate(minted)},
        **{f"private key line {i}": line for i, line in enumerate(key_lines)},
    }


def found(text: str) -> dict[str, bytes]:
    """What the fork printed on its FOUND lines, decoded (a masked line would not decode)."""
    lines = re.findall(r"^FOUND (\S+) (\S*)$", text, re.MULTILINE)
    return {label: base64.b64decode(value, validate=True) for label, value in lines}


def test_a_fork_that_prints_every_secret_it_finds_prints_none(scene: AppScene,
                                                                app_key: bytes) -> None:
    listener = Listener()
    scene.serve({"ANTHROPIC_API_KEY": MODEL_KEY, "GH_TOKEN": GH_TOKEN, "NPM_TOKEN": NPM_TOKEN,
                 "RATCHET_CHECK_ENV": "NPM_TOKEN"})
    scene.shared.mkdir(parents=True, exist_ok=True)
    fake_port = int(scene.fake.base_url.rsplit(":", 1)[1].split("/")[0])
    targets = {
        "shared": str(scene.shared), "ratchet_home": str(scene.home),
        "key_file": str(scene.key_file),
        "ports": {"serve": scene.port, "listener": listener.port, "github": fake_port},
    }
    number, head = open_fork_pull_request(scene, targets)

    answer = scene.deliver("pull_request", fork_payload(scene, number))
    assert answer.status_code == 202, answer.text
    [check] = scene.wait_for("the fork's check run", lambda: [
        c for c in scene.fake.check_runs(OWNER, REPO, head) if c.status == "completed"])
    listener.close()

    # Verified with the base's check, not the fork's, and reported as a failure (it failed).
    assert check.name == "ratchet/verify" and check.conclusion == "failure"
    shown = "\n".join(str(part) for part in (
        check.output_title, check.output_summary, check.output_text,
        json.dumps(check.annotations)))
    assert "python3 -m unittest -q" in shown and "env | base64" not in shown
    # What the fork printed reached the check run, and decodes: nothing on it was masked.
    # (Its FULL lines show bubblewrap's own command line, from /proc/1/cmdline: the path of
    # the App's key file there is masked, RATCHET_GITHUB_PRIVATE_KEY_FILE being named like a
    # secret. The path, never the key.)
    seen = found(check.output_text or "")
    assert set(seen) == LABELS
    names = set(seen["env_names"].decode().split(","))
    assert "PATH" in names and seen["env"].startswith(b"{")
    extra = {n for n in names - PROTOCOL_NAMES - SHELL_NAMES - BASE_NAMES
             if not n.startswith(BASE_PREFIXES)}
    assert not extra, f"the fork's checks saw variables beyond the protocol: {extra}"
    assert b"url" not in seen["git_config"] and b"helper" not in seen["git_config"]
    for port in ("serve", "listener", "github"):
        assert seen[f"connect_{port}"].startswith(b"refused"), seen[f"connect_{port}"]
    assert seen["proxy_github"].startswith(b"HTTP/1.1 403"), seen["proxy_github"]
    assert seen["plant_shared"].startswith(b"not planted")
    for label in ("ssh", "ledger", "key_file", "mirror", "home", "shared"):
        assert b"PRIVATE KEY" not in seen[label] and b"SQLite" not in seen[label], label

    # Ratchet's files hold still from here: the run ended, the service stopped.
    scene.wait_for("the run's end", lambda: (scene.run_state() or {}).get("state") == "done")
    for service in scene.services:
        service.stop()
    # From outside: nobody connected, nothing was planted (Ratchet's home, hidden behind an
    # empty folder in there, took the fork's file in that folder only).
    assert listener.accepted == []
    assert not (scene.shared / "planted-by-fork").exists()
    assert not (scene.home / "planted-by-fork").exists()
    ledger = b"".join(p.read_bytes() for p in scene.home.glob("ratchet.db*"))
    assert re.search(rb"api\.github\.com[^\n]{0,300}verify\.network", ledger), (
        "the run records the blocked host and the setting that allows it")
    # No secret, in any form, in what Ratchet sent GitHub, its home (ledger, runs) or its log.
    places = {f"{c.method} {c.path} (#{c.seq})": json.dumps(c.body).encode()
              for c in scene.ratchet_calls() if c.body is not None}
    places["check run"] = shown.encode()
    places.update({str(p): p.read_bytes() for p in scene.home.rglob("*")
                   if p.is_file() and not p.is_symlink()})
    places.update({s.log.name: s.log.read_bytes() for s in scene.services})
    for name, secret in secrets_held(scene, app_key).items():
        for form in forms(secret):
            for place, data in places.items():
                assert form not in data, f"the {name} ({form[:8]!r}...) is in {place}"
    scene.fake.assert_clean()
