"""A GitHub Actions job for ``action.yml``, against the fake GitHub and a local bare origin.

``acme/widgets`` is a bare repository on disk (its ``clone_url`` is its ``file://`` URL, so
git reaches it without a server; ``github.gitauth``'s helper is harmless there), and the
job's ``GITHUB_SERVER_URL`` is the folder that holds it; the fake
GitHub serves the API and checks the job's token on every call. Event payloads are GitHub's
documented examples (``tests/data``) with the repository, issue, comment and pull request
replaced by the fake's own REST representations. The action's install is a warm cache entry:
a venv whose ``ratchet`` runs this checkout.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.action.actions_runner import (
    ActionResult,
    ActionRun,
    ActionsRunner,
    FakeActionsCache,
    Job,
)
from tests.fakes.fakegithub import FakeGitHub
from tests.gitrepo import git
from tests.webhook_examples import example

ROOT = Path(__file__).resolve().parents[2]
OWNER, REPO = "acme", "widgets"
TESTER = "tester"  # the test's own reads of the fake
WRITER, READER = "alice", "rita"
# Not a token shape the redactor knows: a leak check finds it only if it was masked by value.
JOB_TOKEN = "actions-job-token-" + secrets.token_hex(12)
READ_ONLY_TOKEN = "actions-fork-token-" + secrets.token_hex(12)
WRITE_PERMISSIONS = {"contents": "write", "issues": "write", "pull_requests": "write",
                     "checks": "write", "metadata": "read"}




@pytest.fixture(scope="session")
def warm_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the action's install step leaves (a venv with ``bin/ratchet``), made from this
    checkout instead of a pip install: the cache entry a previous job saved."""
    venv = tmp_path_factory.mktemp("venv") / "ratchet-action-venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "ratchet"
    script.write_text(f"#!{sys.executable}\nimport sys\n\nfrom app.cli import main\n\n"
                      "sys.exit(main())\n")
    script.chmod(0o755)
    return venv


@dataclass
class Scene:
    """The fake GitHub, the origin, and jobs running ``action.yml``."""

    root: Path
    fake: FakeGitHub
    actions: ActionsRunner
    tester_token: str = "tester-token-" + "0" * 20
    _http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))
    _runs: int = 1000

    @property
    def bare(self) -> Path:
        return self.root / "git" / OWNER / f"{REPO}.git"

    @property
    def server_url(self) -> str:
        """Where the job finds its repository: ``{server_url}/acme/widgets.git`` is the bare
        repository's ``file://`` URL, as GitHub's ``clone_url`` is on github.com."""
        return (self.root / "git").resolve().as_uri()

    @property
    def shared(self) -> Path:
        return self.root / "shared"

    def read(self, path: str) -> Any:
        answer = self._http.get(f"{self.fake.base_url}{path}",
                                headers={"Authorization": f"token {self.tester_token}"})
        answer.raise_for_status()
        return answer.json()

    def user(self, login: str) -> dict[str, Any]:
        sender = example("issues", "labeled")["sender"]
        sender.update(login=login, id=abs(hash(login)) % 100_000 + 1,
                      type="Bot" if login.endswith("[bot]") else "User")
        return sender

    def common(self, payload: dict[str, Any], sender: str) -> dict[str, Any]:
        payload["repository"] = self.read(f"/repos/{OWNER}/{REPO}")
        payload["sender"] = self.user(sender)
        for key in ("installation", "organization", "enterprise"):
            payload.pop(key, None)  # an Actions event carries no App installation
        return payload

    def job(self, event_name: str, event: dict[str, Any], *, token: str = JOB_TOKEN,
            workspace: Path | None = None, run_id: str | None = None, attempt: int = 1,
            env: dict[str, str] | None = None) -> Job:
        """A job of a new workflow run (or ``run_id``'s re-run ``attempt``)."""
        if run_id is None:
            self._runs += 1
            run_id = str(self._runs)
        temp = self.root / "runner" / f"{run_id}.{attempt}" / "_temp"
        temp.mkdir(parents=True)
        work = workspace or self.root / "runner" / f"{run_id}.{attempt}" / "workspace"
        work.mkdir(parents=True, exist_ok=True)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("RATCHET_", "AGENT_", "GIT_", "GITHUB_", "INPUT_",
                                     "ACTIONS_", "RUNNER_"))}
        return Job(workspace=work, temp=temp, event_name=event_name, event=event, token=token,
                   repository=f"{OWNER}/{REPO}", api_url=self.fake.base_url,
                   server_url=self.server_url, run_id=run_id, run_attempt=attempt,
                   env={**base, **(env or {})})

    def run(self, job: Job, **inputs: str) -> ActionResult:
        return self.actions.run(job, _inputs(inputs))

    def start(self, job: Job, **inputs: str) -> ActionRun:
        return self.actions.start(job, _inputs(inputs))


def _inputs(given: dict[str, str]) -> dict[str, str]:
    return {name.replace("_", "-"): value for name, value in given.items()}


def seed_origin(root: Path, files: dict[str, str]) -> Path:
    """``acme/widgets`` with ``files`` on main, in a bare repository."""
    from tests.gitrepo import make_repo

    work = root / "seed"
    make_repo(work, files)
    bare = root / "git" / OWNER / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    git(work, "push", "--quiet", bare.as_uri(), "main")
    return bare


@pytest.fixture
def open_scene(tmp_path: Path, warm_venv: Path) -> Iterator[Any]:
    """``open_scene(files)``: the world around a repository whose main holds ``files``."""
    with ExitStack() as stack:
        def build(files: dict[str, str]) -> Scene:
            bare = seed_origin(tmp_path, files)
            fake = stack.enter_context(FakeGitHub())
            fake.create_repo(OWNER, REPO, git_dir=bare)
            fake.set_permission(OWNER, REPO, WRITER, "write")
            fake.set_permission(OWNER, REPO, READER, "read")
            fake.add_token(JOB_TOKEN, login="github-actions[bot]",
                           permissions=WRITE_PERMISSIONS, repos=[f"{OWNER}/{REPO}"])
            actions_cache = FakeActionsCache(tmp_path / "actions-cache")
            actions_cache.warm(lambda key: key.startswith("ratchet-action-Linux-"), warm_venv)
            scene = Scene(tmp_path, fake, ActionsRunner(ROOT, actions_cache))
            fake.add_token(scene.tester_token, login=TESTER, permissions={
                "contents": "read", "issues": "read", "pull_requests": "read",
                "checks": "read", "metadata": "read"})
            return scene

        yield build
