"""Fixtures for the fake GitHub's own tests: an App key, a bare origin, a seeded running fake."""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.fakegithub import FakeGitHub
from tests.gitrepo import commit_all, git, make_repo, write_files

APP_ID = 4242
APP_SLUG = "ratchet"
OWNER, REPO = "acme", "widgets"
BRANCH = "ratchet/issue-1"


@pytest.fixture(scope="session")
def app_key() -> bytes:
    """A fresh RSA key in PEM, as GitHub hands out for an App (one per session: keygen is slow)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


@functools.cache
def _signing_key(pem: bytes) -> rsa.RSAPrivateKey:
    # Parsing a PEM validates the RSA key (30 ms); parse each key once.
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    return key


def app_jwt(key: bytes, *, iat_offset: int = -60, lifetime: int = 540, iss: str = "") -> str:
    """A JWT as gidgethub builds one: issued a minute ago, expiring ``lifetime`` after that."""
    issued = int(time.time()) + iat_offset
    claims = {"iat": issued, "exp": issued + lifetime, "iss": iss or str(APP_ID)}
    return jwt.encode(claims, _signing_key(key), algorithm="RS256")


@dataclass
class Origin:
    """A bare repository (what GitHub hosts) and a clone that pushes to it over file://."""

    bare: Path
    work: Path
    main_sha: str
    branch_sha: str

    def push_commit(self, branch: str, files: dict[str, str | bytes]) -> str:
        """Commit ``files`` on ``branch`` (created from HEAD if new) and push; returns the sha."""
        existing = git(self.work, "branch", "--list", branch).strip()
        git(self.work, "checkout", "--quiet", *([] if existing else ["-b"]), branch)
        write_files(self.work, files)
        sha = commit_all(self.work, f"change {sorted(files)}")
        git(self.work, "push", "--quiet", self.bare.as_uri(), f"{branch}:refs/heads/{branch}")
        return sha


@pytest.fixture(scope="session")
def origin_template(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    """``main`` with one commit and ``ratchet/issue-1`` one commit ahead, pushed to a bare repo.

    Built once (git is the slow part); each test gets a copy.
    """
    root = tmp_path_factory.mktemp("origin")
    bare = root / "widgets.git"
    git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    work = root / "work"
    main_sha = make_repo(work, {"README.md": "widgets\n"})
    git(work, "push", "--quiet", bare.as_uri(), "main")
    result = Origin(bare, work, main_sha, "")
    result.branch_sha = result.push_commit(BRANCH, {"fix.txt": "fixed\n"})
    git(work, "checkout", "--quiet", "main")
    return result


@pytest.fixture
def origin(origin_template: Origin, tmp_path: Path) -> Origin:
    """A private copy of the template origin: tests push to it freely."""
    bare, work = tmp_path / "widgets.git", tmp_path / "work"
    shutil.copytree(origin_template.bare, bare)
    shutil.copytree(origin_template.work, work)
    return Origin(bare, work, origin_template.main_sha, origin_template.branch_sha)


@pytest.fixture
def fake(app_key: bytes, origin: Origin) -> Iterator[FakeGitHub]:
    """A running fake with the App installed on acme/widgets, which has issue #1 by alice."""
    with FakeGitHub() as server:
        server.register_app(app_id=APP_ID, slug=APP_SLUG, private_key_pem=app_key)
        server.create_repo(OWNER, REPO, git_dir=origin.bare)
        server.install_app(repos=[f"{OWNER}/{REPO}"], installation_id=77)
        server.create_issue(OWNER, REPO, title="Widgets wobble", body="Fix it", author="alice")
        yield server
        # Whatever a test asked, the fake must have answered in GitHub's documented shapes.
        assert server.response_mismatches == []
        assert server.crashes == []


@pytest.fixture
def token(fake: FakeGitHub, app_key: bytes) -> str:
    """An installation token minted through the real endpoint."""
    response = httpx.post(
        f"{fake.base_url}/app/installations/77/access_tokens",
        headers={"Authorization": f"Bearer {app_jwt(app_key)}"},
        verify=False,  # plain HTTP; skipping the TLS context saves 30 ms a test
    )
    assert response.status_code == 201, response.text
    return str(response.json()["token"])
