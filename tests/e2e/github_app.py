"""A GitHub App deployment on one machine, for end-to-end tests of what maintainers see.

``ratchet serve`` (a real subprocess, with the App's private key and webhook secret) talks to
the fake GitHub over HTTP; the repository lives in a bare repository served over git's smart
HTTP protocol, which admits only a live installation token of the fake (as github.com does);
deliveries are real GitHub payloads (``@octokit/webhooks-examples``) whose issue, comment,
repository and check run are the fake's own REST representations, signed with the secret.
The scripted agent (``tests/fixtures/scripted_agent.py``) implements a bug, then repairs it.

The test reads the fake with its own user token (actor ``tester``), so the API calls Ratchet
made are those of any other actor.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.harness import AGENT, CONFIG, make_target_repo, with_agent_channels
from tests.fakes.fakegithub import FakeGitHub
from tests.fakes.fakegithub.recording import Call
from tests.github.githttp import GitHttpServer
from tests.gitrepo import git
from tests.webhook_examples import example

ROOT = Path(__file__).resolve().parents[2]
APP_ID = 4242
SLUG = "ratchet"
BOT = f"{SLUG}[bot]"
OWNER, REPO = "acme", "widgets"
INSTALLATION = 77
SECRET = "e2e-webhook-secret"
TESTER = "tester"  # the test's own reads of the fake
WRITER, READER = "alice", "rita"
PUBLIC_URL = "https://ratchet.example"
# Mutating endpoints Ratchet calls on the happy path (method, documented path template).
MUTATIONS = (
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("POST", "/repos/{owner}/{repo}/pulls"),
    ("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("POST", "/repos/{owner}/{repo}/check-runs"),
    ("POST", "/graphql"),
)


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Service:
    """One Ratchet process (``serve`` or ``worker``) and where its output goes."""

    proc: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL the process group: the process and the agents it started."""
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class AppScene:
    """The fake GitHub, git over HTTP, and Ratchet's processes for one test."""

    root: Path
    fake: FakeGitHub
    key_file: Path
    broker_url: str | None = None
    services: list[Service] = field(default_factory=list)
    port: int = 0
    tester_token: str = "ghp_" + "t" * 36
    queue: str = field(default_factory=lambda: f"e2e-{uuid.uuid4().hex[:12]}")
    _http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    # -- processes ---------------------------------------------------------------------------

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def shared(self) -> Path:
        return self.root / "shared"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environ(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("RATCHET_", "AGENT_", "GIT_"))}
        env = {
            **base,
            "RATCHET_HOME": str(self.home),
            "RATCHET_WEBHOOK_SECRET": SECRET,
            "RATCHET_GITHUB_APP_ID": str(APP_ID),
            "RATCHET_GITHUB_APP_SLUG": SLUG,
            "RATCHET_GITHUB_PRIVATE_KEY_FILE": str(self.key_file),
            "RATCHET_GITHUB_API_URL": self.fake.base_url,
            "RATCHET_GITHUB_MUTATION_INTERVAL": "0",
            "RATCHET_PUBLIC_URL": PUBLIC_URL,  # public: the dashboard needs GitHub sign-in
            "RATCHET_GITHUB_CLIENT_ID": "Iv1.ratchet-e2e",
            "RATCHET_GITHUB_CLIENT_SECRET": "ratchet-e2e-client-secret",
            "RATCHET_AGENT_COMMAND": f"{sys.executable} {AGENT}",
            "RATCHET_SANDBOX_RW": str(self.shared),
            "RATCHET_LEASE_SECONDS": "2",
            "RATCHET_REAP_SECONDS": "0.5",
            "AGENT_LOG": str(self.shared / "agent.log"),
            **({"RATCHET_BROKER_URL": self.broker_url,
                "RATCHET_QUEUE": self.queue} if self.broker_url else {}),
            **(extra or {}),
        }
        return with_agent_channels(env)

    def _start(self, *args: str, name: str, extra: dict[str, str] | None = None) -> Service:
        self.shared.mkdir(parents=True, exist_ok=True)
        log = self.root / f"{name}.{len(self.services)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", *args], cwd=self.root, env=self.environ(extra),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        service = Service(proc, log)
        self.services.append(service)
        return service

    def serve(self, extra: dict[str, str] | None = None) -> Service:
        """``ratchet serve``; returns once it answers /healthz."""
        self.port = self.port or free_port()
        service = self._start("serve", "--host", "127.0.0.1", "--port", str(self.port),
                              name="serve", extra=extra)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if service.proc.poll() is not None:
                raise AssertionError(f"ratchet serve exited:\n{service.log.read_text()}")
            try:
                if self._http.get(f"{self.base_url}/healthz").status_code == 200:
                    return service
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"ratchet serve did not answer:\n{service.log.read_text()}")

    def worker(self, extra: dict[str, str] | None = None) -> Service:
        """``ratchet worker`` on the scene's broker (one process, two threads)."""
        assert self.broker_url, "a worker needs the scene's broker"
        return self._start("worker", "--processes", "1", "--threads", "2", name="worker",
                           extra=extra)

    def logs(self) -> str:
        return "\n".join(f"--- {s.log.name}\n{s.log.read_text(errors='replace')[-6000:]}"
                         for s in self.services)

    # -- deliveries --------------------------------------------------------------------------

    def deliver(self, event: str, payload: dict[str, Any], *, delivery: str | None = None,
                secret: str | None = SECRET) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
                   "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/e2e"}
        if secret is not None:
            headers["X-Hub-Signature-256"] = sign(body, secret)
        return self._http.post(f"{self.base_url}/webhooks/github", content=body,
                               headers=headers)

    def read(self, path: str) -> Any:
        """GET from the fake as the test (not counted as Ratchet's calls)."""
        answer = self._http.get(f"{self.fake.base_url}{path}",
                                headers={"Authorization": f"token {self.tester_token}"})
        answer.raise_for_status()
        return answer.json()

    def _common(self, payload: dict[str, Any], sender: str) -> dict[str, Any]:
        payload["repository"] = self.read(f"/repos/{OWNER}/{REPO}")
        payload["sender"] = self._user(sender)
        payload["installation"] = {"id": INSTALLATION, "node_id": "MDIzOkludGVncmF0aW9uNzc="}
        payload.pop("organization", None)
        payload.pop("enterprise", None)
        return payload

    def _user(self, login: str) -> dict[str, Any]:
        sender = copy.deepcopy(example("issues", "labeled")["sender"])
        sender.update(login=login, id=abs(hash(login)) % 100_000 + 1,
                      type="Bot" if login.endswith("[bot]") else "User")
        return sender

    def labeled(self, issue: int, *, sender: str = WRITER, label: str = "ratchet"
                ) -> dict[str, Any]:
        payload = example("issues", "labeled")
        payload["issue"] = self.read(f"/repos/{OWNER}/{REPO}/issues/{issue}")
        payload["label"] = {**payload["label"], "name": label}
        return self._common(payload, sender)

    def unlabeled(self, issue: int, *, sender: str = WRITER) -> dict[str, Any]:
        payload = example("issues", "unlabeled")
        payload["issue"] = self.read(f"/repos/{OWNER}/{REPO}/issues/{issue}")
        payload["label"] = {**payload["label"], "name": "ratchet"}
        return self._common(payload, sender)

    def comment(self, comment_id: int, *, action: str = "created") -> dict[str, Any]:
        """``issue_comment.<action>`` for a comment already in the fake (anyone's)."""
        found = self.read(f"/repos/{OWNER}/{REPO}/issues/comments/{comment_id}")
        number = int(found["issue_url"].rsplit("/", 1)[1])
        payload = example("issue_comment", action)
        payload["comment"] = found
        payload["issue"] = self.read(f"/repos/{OWNER}/{REPO}/issues/{number}")
        return self._common(payload, found["user"]["login"])

    def command(self, issue: int, body: str, *, author: str) -> tuple[int, httpx.Response]:
        """``author`` types ``body`` on issue (or pull request) ``issue``; delivered once."""
        comment_id = self.fake.add_issue_comment(OWNER, REPO, issue, body=body, author=author)
        return comment_id, self.deliver("issue_comment", self.comment(comment_id))

    def check_run_event(self, check_id: int, action: str, *, sender: str,
                        identifier: str = "approve") -> dict[str, Any]:
        payload = example("check_run", action)
        payload["check_run"] = self.read(f"/repos/{OWNER}/{REPO}/check-runs/{check_id}")
        if action == "requested_action":
            payload["requested_action"] = {"identifier": identifier}
        return self._common(payload, sender)

    def pull_request_event(self, number: int, action: str, *, sender: str) -> dict[str, Any]:
        payload = example("pull_request", action)
        payload["pull_request"] = self.read(f"/repos/{OWNER}/{REPO}/pulls/{number}")
        payload["number"] = number
        payload.pop("before", None)
        payload.pop("after", None)
        return self._common(payload, sender)

    def review_event(self, number: int, *, state: str, body: str, author: str
                     ) -> dict[str, Any]:
        """``author`` submits a review of pull request ``number`` (GitHub's review button)."""
        payload = self.pull_request_event(number, "opened", sender=author)
        payload.update(action="submitted")
        review = example("pull_request_review", "submitted")["review"]
        review.update(id=abs(hash(body)) % 100_000 + 1, body=body, state=state,
                      user=self._user(author), commit_id=payload["pull_request"]["head"]["sha"])
        payload["review"] = review
        return payload

    def push_as_person(self, branch: str, files: dict[str, str], *, author: str) -> str:
        """``author`` pushes a commit changing ``files`` on top of ``branch``; its sha."""
        work = self.root / f"clone-{author}"
        bare = self.root / "git" / OWNER / f"{REPO}.git"
        if not work.exists():
            git(self.root, "clone", "--quiet", bare.as_uri(), str(work))
        git(work, "fetch", "--quiet", "origin")
        git(work, "checkout", "--quiet", "-B", branch, f"origin/{branch}")
        for name, text in files.items():
            (work / name).write_text(text)
        git(work, "add", "--all")
        git(work, "-c", f"user.name={author}", "-c", f"user.email={author}@example.com",
            "commit", "--quiet", "-m", f"{author}'s change")
        git(work, "push", "--quiet", "origin", f"{branch}:{branch}")
        return git(work, "rev-parse", "HEAD").strip()

    # -- what GitHub shows -------------------------------------------------------------------

    def ratchet_calls(self) -> list[Call]:
        return [c for c in self.fake.calls() if c.actor != TESTER]

    def bot_comments(self, number: int) -> list[Any]:
        return [c for c in self.fake.comments(OWNER, REPO, number) if c.user.login == BOT]

    def tracking_comments(self, number: int) -> list[Any]:
        return [c for c in self.bot_comments(number) if "<!-- ratchet:name=" in c.body]

    def replies(self, number: int) -> list[Any]:
        """The bot's answers to commands (each carries its effect's key, no name)."""
        return [c for c in self.bot_comments(number)
                if "<!-- ratchet:key=" in c.body and "<!-- ratchet:name=" not in c.body]

    def wait_for(self, what: str, condition: Callable[[], Any], *, timeout: float = 120) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            for service in self.services:
                code = service.proc.poll()
                if code is not None and code != -signal.SIGKILL and service.proc.returncode:
                    raise AssertionError(f"{service.log.name} exited {code}\n{self.logs()}")
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}\n{self.logs()}")

    def exported(self, run_id: str) -> Path:
        """The run's directory as ``ratchet export`` writes it."""
        folder = self.root / "exported"
        result = subprocess.run([sys.executable, "-m", "app.cli", "export", run_id, str(folder)],
                                cwd=self.root, env=self.environ(), capture_output=True,
                                text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        return folder / run_id

    def status(self, run_id: str) -> dict[str, Any]:
        """``ratchet status RUN --json``."""
        result = subprocess.run([sys.executable, "-m", "app.cli", "status", run_id, "--json"],
                                cwd=self.root, env=self.environ(), capture_output=True,
                                text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        return dict(json.loads(result.stdout))

    def run_state(self) -> dict[str, Any] | None:
        """The only run's status, as ``ratchet runs --json`` prints it (None before one exists)."""
        result = subprocess.run([sys.executable, "-m", "app.cli", "runs", "--json"],
                                cwd=self.root, env=self.environ(), capture_output=True,
                                text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        runs = json.loads(result.stdout)
        assert len(runs) <= 1, runs
        return runs[0] if runs else None


def github_state(scene: AppScene, issue: int) -> dict[str, Any]:
    """What a person sees on GitHub for the run of ``issue``, in a form two runs compare by:
    how many comments the bot wrote, the pull requests, check runs by name and conclusion."""
    comments = scene.fake.comments(OWNER, REPO, issue)
    return {
        "tracking_comments": len(scene.tracking_comments(issue)),
        "bot_comments": len([c for c in comments if c.user.login == BOT]),
        "pulls": [(p.head_ref, p.draft, p.state, p.user.login)
                  for p in scene.fake.pulls(OWNER, REPO)],
        "checks": sorted(Counter((c.name, c.conclusion)
                                 for c in scene.fake.check_runs(OWNER, REPO)).items()),
    }


def make_origin(root: Path, *, config: str = CONFIG) -> Path:
    """``acme/widgets``: the e2e target (a unittest suite and Ratchet's config) in a bare
    repository under ``root``, laid out as a git server serves it (``OWNER/REPO.git``); every
    ref update is logged (``git reflog``), so a test counts pushes."""
    work = make_target_repo(root / "seed", config=config)
    bare = root / "git" / OWNER / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    git(bare, "--git-dir", str(bare), "config", "core.logAllRefUpdates", "always")
    git(work, "push", "--quiet", bare.as_uri(), "main")
    return bare


def open_scene(stack: ExitStack, root: Path, key: bytes, *, broker_url: str | None = None,
               config: str = CONFIG) -> AppScene:
    """Everything but Ratchet's processes: the fake with the App installed on acme/widgets,
    issue #1 (by alice, who may write; rita may read), git over HTTP in front of the repo."""
    bare = make_origin(root, config=config)
    fake = stack.enter_context(FakeGitHub())
    gitserver = stack.enter_context(GitHttpServer(
        root / "git", username="x-access-token",
        accepts=lambda _user, token: fake.git_allows(OWNER, REPO, token, write=True)))
    fake.register_app(app_id=APP_ID, slug=SLUG, private_key_pem=key)
    fake.create_repo(OWNER, REPO, git_dir=bare,
                     clone_url=f"{gitserver.base_url}/{OWNER}/{REPO}.git")
    fake.install_app(repos=[f"{OWNER}/{REPO}"], installation_id=INSTALLATION)
    fake.set_permission(OWNER, REPO, WRITER, "write")
    fake.set_permission(OWNER, REPO, READER, "read")
    fake.create_issue(OWNER, REPO, title="Add calc", body="Add calc.add(a, b).", author=WRITER)
    key_file = root / "app-key.pem"
    key_file.write_bytes(key)
    key_file.chmod(0o600)
    scene = AppScene(root, fake, key_file, broker_url=broker_url)
    fake.add_token(scene.tester_token, login=TESTER, permissions={
        "contents": "read", "issues": "read", "pull_requests": "read", "checks": "read",
        "metadata": "read"})
    stack.callback(lambda: [s.stop() for s in reversed(scene.services)])
    return scene


def scenes(tmp_path: Path, key: bytes, *, broker_url: str | None = None,
           config: str = CONFIG) -> Iterator[AppScene]:
    with ExitStack() as stack:
        yield open_scene(stack, tmp_path, key, broker_url=broker_url, config=config)
