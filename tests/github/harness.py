"""A run's outbox against the fake GitHub: the real ledger, the real ``Outbox``, the executor.

A ``Scene`` is one run (``run-1`` on acme/widgets, issue #1) in a SQLite ledger, its lease, and
a ``GitHubExecutor`` talking over HTTP to the fake. Effects are recorded the way the session
records them (a fenced ``Change`` carrying ``effects``) and sent by ``Outbox.flush``. Builders
make each kind's request with the payload the core decides; ``Cost`` counts the API calls a
stretch of work made, from the fake's own records. Shared by the tests and
``bench/github_calls.py``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from github.client import GitHubClient
from github.credentials import AppCredentials
from github.effects import GitHubExecutor
from github.words import GitHubWords
from plumbing.git import GitError
from runner.checkruns import VERIFY_CHECK, CheckRunId
from runner.checkruns import verify_check as verify_check_payload
from runner.effects import EffectRequest, Outbox, effect_key
from runner.errors import AmbiguousFailure, StepFailure, TransientFailure
from runner.ledger import open_store
from runner.ledger.records import Change, Effect, EffectStatus, Lease, NewRun
from runner.ledger.store import Store
from runner.names import EffectKind
from runner.origin import LocalOrigin
from runner.tracking import tracking_edit
from runner.workflow import State
from runner.worktrees import NO_ACCESS, GitCommandFailed, RemoteAccess, Worktrees
from tests.fakes.conftest import APP_ID, APP_SLUG, BRANCH, OWNER, REPO, Origin
from tests.fakes.fakegithub import FakeGitHub
from tests.gitrepo import git, make_repo
from verification.annotations import Annotation
from verification.evidence import CheckEvidence, EvidenceReport

RUN_ID = "run-1"
ISSUE = 1
INSTALLATION = 77
BOT = f"{APP_SLUG}[bot]"
WHEN = 1_700_000_000.0  # the run's creation time: commit dates and tracking views use it
DETAILS_URL = "https://ratchet.example/runs/run-1"
# Calls that fetch credentials, not effects: counted apart from an effect's cost.
CREDENTIAL_OPERATIONS = frozenset(
    {"apps/create-installation-access-token", "apps/get-repo-installation"}
)


class FlakyWorktrees(Worktrees):
    """Real worktrees whose next ``drop_pushes`` pushes land and then report a lost connection
    (git's answer never arrived), and which count the pushes git made."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.drop_pushes = 0
        self.pushes = 0

    def push(
        self,
        worktree: Path,
        *,
        remote: str,
        commit: str,
        branch: str,
        expect: str | None,
        access: RemoteAccess = NO_ACCESS,
    ) -> None:
        super().push(
            worktree, remote=remote, commit=commit, branch=branch, expect=expect, access=access
        )
        self.pushes += 1
        if self.drop_pushes > 0:
            self.drop_pushes -= 1
            raise GitCommandFailed(
                GitError(
                    ["push", remote],
                    worktree,
                    None,
                    reason="the connection was reset after the remote accepted the push",
                )
            )


@dataclass
class Cost:
    """API calls of one stretch of work, from the fake's records."""

    lookups: list[str] = field(default_factory=list)  # GETs
    writes: list[str] = field(default_factory=list)  # POST/PATCH/PUT/DELETE, GraphQL included
    credentials: int = 0  # token mints and installation lookups

    @property
    def calls(self) -> int:
        return len(self.lookups) + len(self.writes)

    def __str__(self) -> str:
        return f"{len(self.lookups)} lookup(s) + {len(self.writes)} write(s)"


@dataclass
class Scene:
    fake: FakeGitHub
    client: GitHubClient
    store: Store
    lease: Lease
    origin: Origin
    worktrees: FlakyWorktrees
    work_root: Path
    run_id: str = RUN_ID
    _worktree: Path | None = None

    # -- the run's outbox ----------------------------------------------------------------------

    def executor(self) -> GitHubExecutor:
        """The executor a session wires for this run (built per flush, as sessions do)."""
        return GitHubExecutor(
            self.client,
            owner=OWNER,
            repo=REPO,
            installation=INSTALLATION,
            issue=ISSUE,
            worktrees=self.worktrees,
            worktree=self._worktree,
            words=GitHubWords(),
            ledger=lambda: self.store.effects(self.run_id),
            details_url=DETAILS_URL,
            artifacts_url=f"{DETAILS_URL}/artifacts",
            bot_login=BOT,
        )

    def record(self, *requests: EffectRequest) -> None:
        """Record ``requests`` as intended, in one fenced change that keeps the run's state."""
        run = self.store.get_run(self.run_id)
        self.store.apply(
            self.lease,
            Change(
                run.version,
                run.state,
                run.step,
                attempt=run.attempt,
                effects=tuple(r.intent() for r in requests),
            ),
        )

    def flush(self) -> list[Effect]:
        return Outbox(self.store, lambda: self.lease, self.executor()).flush(self.run_id)

    def settle(self, *, rounds: int = 4) -> list[StepFailure]:
        """Flush until the outbox is empty, as the engine's retries would; the failures seen
        on the way (each must be one the engine retries: transient or ambiguous)."""
        failures: list[StepFailure] = []
        for _ in range(rounds):
            try:
                self.flush()
                return failures
            except (TransientFailure, AmbiguousFailure) as failure:
                failures.append(failure)
                self.wait_for_late_writes()
        raise AssertionError(f"the outbox did not empty in {rounds} flushes: {failures}")

    def effect(self, key: str) -> Effect:
        found = self.store.get_effect(key)
        assert found is not None, f"no effect {key}"
        return found

    def resource(self, key: str) -> dict[str, Any]:
        """The remote identity the ledger recorded for the confirmed effect ``key``."""
        effect = self.effect(key)
        assert effect.status is EffectStatus.CONFIRMED and effect.resource is not None, effect
        return effect.resource

    def pending(self) -> list[Effect]:
        return [e for e in self.store.effects(self.run_id) if e.status is EffectStatus.INTENDED]

    # -- what the fake saw ---------------------------------------------------------------------

    def mark(self) -> int:
        return len(self.fake.calls())

    def cost(self, since: int) -> Cost:
        cost = Cost()
        for call in self.fake.calls()[since:]:
            if call.operation_id in CREDENTIAL_OPERATIONS:
                cost.credentials += 1
            elif call.method == "GET":
                cost.lookups.append(f"GET {call.path}")
            else:
                cost.writes.append(f"{call.method} {call.path}")
        return cost

    def wait_for_late_writes(self, timeout: float = 5.0) -> None:
        """Wait until every delayed request has been applied (GitHub finishing what a client
        gave up on), so the next lookup sees the world as it will stay."""
        deadline = time.monotonic() + timeout
        while any(c.fault == "delay" and c.status is None for c in self.fake.calls()):
            if time.monotonic() > deadline:
                raise AssertionError("a delayed request never finished")
            time.sleep(0.02)

    def tokens(self) -> list[str]:
        """Every installation token the fake minted (none may leak)."""
        with self.fake.world.lock:
            return [
                t
                for t, seeded in self.fake.world.tokens.items()
                if seeded.installation_id is not None
            ]

    # -- the run's git dir ---------------------------------------------------------------------

    @property
    def worktree(self) -> Path:
        if self._worktree is None:
            self._worktree = self.worktrees.checkout(
                self.run_id, self.lease.epoch, self.origin.bare.as_uri(), self.origin.main_sha
            )
        return self._worktree

    def remote_head(self, branch: str) -> str | None:
        out = git(
            self.origin.bare, "for-each-ref", "--format=%(objectname)", f"refs/heads/{branch}"
        ).strip()
        return out or None


# -- the world ---------------------------------------------------------------------------------


def new_app_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def build_origin(root: Path) -> Origin:
    """``main`` and ``ratchet/issue-1`` (one commit ahead) in a bare repository under ``root``."""
    bare = root / "widgets.git"
    git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    work = root / "work"
    main_sha = make_repo(work, {"README.md": "widgets\n"})
    git(work, "push", "--quiet", bare.as_uri(), "main")
    origin = Origin(bare, work, main_sha, "")
    origin.branch_sha = origin.push_commit(BRANCH, {"fix.txt": "fixed\n"})
    git(work, "checkout", "--quiet", "main")
    return origin


def seed_fake(fake: FakeGitHub, key: bytes, origin: Origin) -> FakeGitHub:
    """What the ``fake`` fixture seeds: the App, acme/widgets on installation 77, issue #1."""
    fake.register_app(app_id=APP_ID, slug=APP_SLUG, private_key_pem=key)
    fake.create_repo(OWNER, REPO, git_dir=origin.bare)
    fake.install_app(repos=[f"{OWNER}/{REPO}"], installation_id=INSTALLATION)
    fake.create_issue(OWNER, REPO, title="Widgets wobble", body="Fix it", author="alice")
    return fake


def make_scene(
    fake: FakeGitHub, key: bytes, origin: Origin, tmp: Path, **client_options: Any
) -> Scene:
    """A run in a fresh SQLite ledger, leased, with a client on ``fake`` (no pacing)."""
    options: dict[str, Any] = {
        "mutation_interval": 0.0,
        "request_timeout": 5.0,
        "clock": fake.clock.now,
    }
    credentials = AppCredentials.from_values(
        app_id=str(APP_ID), private_key=key.decode(), api_url=fake.base_url
    )
    client = GitHubClient(credentials, **(options | client_options))
    store = open_store(str(tmp / "ledger.db"))
    store.create_run(
        NewRun(
            id=RUN_ID,
            repo=origin.bare.as_uri(),
            title="Widgets wobble",
            issue=ISSUE,
            base_revision=origin.main_sha,
            origin=LocalOrigin(branch=BRANCH),
        ),
        now=WHEN,
    )
    lease = store.acquire_lease(RUN_ID, "worker-1", ttl=3600)
    assert lease is not None
    work_root = tmp / "work"
    return Scene(fake, client, store, lease, origin, FlakyWorktrees(work_root), work_root)


def copy_origin(template: Origin, root: Path) -> Origin:
    """A private copy of ``template`` under ``root`` (git is the slow part: build it once)."""
    bare, work = root / "widgets.git", root / "work"
    shutil.copytree(template.bare, bare)
    shutil.copytree(template.work, work)
    return Origin(bare, work, template.main_sha, template.branch_sha)


@contextmanager
def standalone_scene(root: Path, *, key: bytes, template: Origin) -> Iterator[Scene]:
    """A whole world outside pytest fixtures (for ``bench/github_calls.py``): a copy of the
    origin, a running fake seeded like the ``fake`` fixture, and the run."""
    origin = copy_origin(template, root / "origin")
    with FakeGitHub() as fake:
        seed_fake(fake, key, origin)
        scene = make_scene(fake, key, origin, root)
        try:
            yield scene
        finally:
            scene.store.close()
        fake.assert_clean()


# -- requests as the core decides them ---------------------------------------------------------


def tracking(scene: Scene, n: int, *, state: State = State.RESEARCH) -> EffectRequest:
    """The ``n``-th tracking edit (a distinct key each: ``<run>:<state>.<n>:tracking.<state>``)."""
    run = scene.store.get_run(scene.run_id)
    return tracking_edit(
        run,
        state=state,
        step=f"{state.value}.{n}",
        reason=None,
        completed=[],
        spec_sha256=None,
        at=WHEN + n,
    )


def reply(
    scene: Scene, *, comment_id: int, issue: int = ISSUE, author: str = "mallory"
) -> EffectRequest:
    """The reply refusing a signal typed in comment ``comment_id``."""
    return EffectRequest(
        effect_key(scene.run_id, "awaiting_approval.1", "reply.approve.0123456789ab"),
        scene.run_id,
        "awaiting_approval.1",
        EffectKind.REPLY,
        {
            "run": scene.run_id,
            "signal": "delivery-1",
            "author": author,
            "refusal": "not_permitted",
            "params": {"author": author, "detail": f"{author} has read access to acme/widgets"},
            "in_reply_to": {"id": comment_id, "issue": issue},
        },
    )


def reaction(scene: Scene, *, comment_id: int, issue: int = ISSUE) -> EffectRequest:
    return EffectRequest(
        effect_key(scene.run_id, "awaiting_approval.1", "ack.approve.0123456789ab"),
        scene.run_id,
        "awaiting_approval.1",
        EffectKind.REACTION,
        {
            "run": scene.run_id,
            "signal": "delivery-2",
            "content": "eyes",
            "comment": {"id": comment_id, "issue": issue},
        },
    )


def push(
    scene: Scene,
    *,
    branch: str,
    expect: str | None,
    step: str = "specify.1",
    message: str = "Specification: Widgets wobble\n",
) -> tuple[EffectRequest, str]:
    """A push of a new commit (the base's tree on ``expect`` or the base) and its sha."""
    worktree = scene.worktree
    tree = scene.worktrees.tree_of(worktree)
    parent = expect or scene.origin.main_sha
    if not scene.worktrees.has_commit(worktree, parent):
        scene.worktrees.fetch_branch(worktree, remote=scene.origin.bare.as_uri(), branch=branch)
    commit = scene.worktrees.commit(
        worktree,
        tree=tree,
        parent=parent,
        message=message,
        when=datetime.fromtimestamp(WHEN, tz=UTC),
    )
    request = EffectRequest(
        effect_key(scene.run_id, step, "push"),
        scene.run_id,
        step,
        EffectKind.PUSH,
        {
            "remote": scene.origin.bare.as_uri(),
            "branch": branch,
            "commit": commit,
            "expect": expect,
            "recipe": {"tree": tree, "parent": parent, "message": message, "date": WHEN},
        },
    )
    return request, commit


def pull_request(
    scene: Scene,
    *,
    draft: bool,
    step: str = "specify.1",
    summary: str | None = None,
    spec: str = "# Spec\n\nMake widgets steady.\n",
) -> EffectRequest:
    payload: dict[str, Any] = {
        "run": scene.run_id,
        "branch": BRANCH,
        "base": "main",
        "title": "Widgets wobble",
        "draft": draft,
        "spec": {"sha256": "ab" * 32, "text": spec},
    }
    if summary:
        payload["summary"] = summary
    return EffectRequest(
        effect_key(scene.run_id, step, "pull-request"),
        scene.run_id,
        step,
        EffectKind.PULL_REQUEST,
        payload,
    )


def published_pull_request(scene: Scene, check: EffectRequest, *, step: str = "publish.1",
                           summary: str = "Fixed the sign in widgets.wobble.") -> EffectRequest:
    """The ready pull request as the publish step decides it: the draft's fields, the
    passing summary, the verification naming its check run (``check``), the issue it closes."""
    request = pull_request(scene, draft=False, step=step, summary=summary)
    payload = {**request.payload, "issue": ISSUE, "verification": {
        "conclusion": "success", "plan": "ef" * 32, "head": check.payload["head_sha"],
        "repairs": 1, "checks": [{"id": "unit", "status": "passed"}],
        "check_name": VERIFY_CHECK, "check_run": check.payload["external_id"]}}
    payload["spec"] = {**payload["spec"], "by": "alice"}
    return EffectRequest(request.key, request.run_id, request.step, request.kind, payload)


def annotation(i: int) -> dict[str, Any]:
    """One annotation as the runner records it (``dataclasses.asdict`` of verification's)."""
    return {
        "path": "widgets.py",
        "start_line": i + 1,
        "end_line": i + 1,
        "level": "failure",
        "message": f"assertion {i} failed",
        "title": f"test_{i}",
    }


def verify_check(
    scene: Scene,
    *,
    annotations: int = 0,
    step: str = "verify.1",
    conclusion: str = "failure",
    head_sha: str | None = None,
) -> EffectRequest:
    """The verification's check run as the verify step decides it: its evidence as data (one
    check, ``unit``, failed unless ``conclusion`` is a success; ``annotations`` found)."""
    head = head_sha or scene.origin.branch_sha
    status = "passed" if conclusion == "success" else "failed"
    report = EvidenceReport(
        plan_sha256="ab" * 32, planned=1, conclusion=conclusion, reason=None,
        results=(CheckEvidence("unit", "test", "pytest", status, int(status != "passed"), 1.5,
                               13, "0" * 64, log_tail="" if status == "passed" else "1 failed"),),
        annotations=tuple(Annotation(**annotation(i)) for i in range(annotations)),
    )
    return EffectRequest(
        effect_key(scene.run_id, step, "verify-check"),
        scene.run_id,
        step,
        EffectKind.CHECK_RUN,
        verify_check_payload(scene.run_id, CheckRunId(scene.run_id, VERIFY_CHECK, head), report),
    )


def recorded_verify_check(
    scene: Scene,
    *,
    annotations: int = 0,
    step: str = "verify.1",
    summary: str = "1 of 1 checks did not pass",
    text: str = "pytest failed",
) -> EffectRequest:
    """The verification's check run as Ratchet recorded it before evidence travelled as data:
    its output rendered (title, summary, text, annotations in batches of 50). Older ledgers
    hold such effects; they are still sent."""
    head = scene.origin.branch_sha
    notes = [annotation(i) for i in range(annotations)]
    batches = [notes[i : i + 50] for i in range(0, len(notes), 50)]
    return EffectRequest(
        effect_key(scene.run_id, step, "verify-check"),
        scene.run_id,
        step,
        EffectKind.CHECK_RUN,
        {
            "run": scene.run_id,
            "name": "ratchet/verify",
            "head_sha": head,
            "external_id": f"{scene.run_id}:ratchet/verify:{head}",
            "conclusion": "failure",
            "output": {
                "title": "1 of 1 checks did not pass",
                "summary": summary,
                "text": text,
                "annotation_batches": batches,
            },
        },
    )


def spec_check(scene: Scene, *, step: str = "specify.1") -> EffectRequest:
    head, spec_sha = scene.origin.branch_sha, "cd" * 32
    return EffectRequest(
        effect_key(scene.run_id, step, "spec-check"),
        scene.run_id,
        step,
        EffectKind.CHECK_RUN,
        {
            "run": scene.run_id,
            "name": "ratchet/spec",
            "head_sha": head,
            "external_id": f"{scene.run_id}:ratchet/spec:{head}",
            "conclusion": "action_required",
            "review": {"spec_sha256": spec_sha},
            "actions": [
                {
                    "identifier": "approve",
                    "label": "Approve spec",
                    "description": f"Approve spec {spec_sha[:12]}",
                }
            ],
        },
    )


# -- one effect per kind, for the fault matrix and the bench -----------------------------------


@dataclass
class Case:
    """One kind's effect: its request, where its write goes (faults are injected there), the
    remote objects it makes, and the identity the ledger must hold for them."""

    kind: EffectKind
    request: EffectRequest
    write: tuple[str, str]  # method and path template of the effect's write
    objects: Callable[[], list[Any]]
    identity: Callable[[list[Any]], dict[str, Any]]  # expected resource fields


def command_comment(scene: Scene) -> int:
    return scene.fake.add_issue_comment(
        OWNER, REPO, ISSUE, body="/ratchet approve 0123456789", author="mallory"
    )


def case_for(kind: EffectKind, scene: Scene) -> Case:
    fake = scene.fake
    comments = "/repos/{owner}/{repo}/issues/{issue_number}/comments"

    def bot_comments() -> list[Any]:
        return [c for c in fake.comments(OWNER, REPO, ISSUE) if c.user.login == BOT]

    if kind is EffectKind.COMMENT:
        return Case(
            kind,
            tracking(scene, 1),
            ("POST", comments),
            bot_comments,
            lambda found: {"comment_id": found[0].id, "issue": ISSUE},
        )
    if kind is EffectKind.REPLY:
        request = reply(scene, comment_id=command_comment(scene))
        return Case(
            kind,
            request,
            ("POST", comments),
            bot_comments,
            lambda found: {"comment_id": found[0].id, "issue": ISSUE},
        )
    if kind is EffectKind.REACTION:
        target = command_comment(scene)
        return Case(
            kind,
            reaction(scene, comment_id=target),
            ("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
            lambda: fake.reactions(OWNER, REPO, target),
            lambda found: {"reaction_id": found[0].id, "comment_id": target},
        )
    if kind is EffectKind.PUSH:
        request, commit = push(scene, branch="ratchet/run-1", expect=None)
        return Case(
            kind,
            request,
            ("POST", "/app/installations/{installation_id}/access_tokens"),
            lambda: [h for h in [scene.remote_head("ratchet/run-1")] if h],
            lambda found: {"branch": "ratchet/run-1", "commit": commit},
        )
    if kind is EffectKind.PULL_REQUEST:
        return Case(
            kind,
            pull_request(scene, draft=True),
            ("POST", "/repos/{owner}/{repo}/pulls"),
            lambda: [p for p in fake.pulls(OWNER, REPO) if p.head_ref == BRANCH],
            lambda found: {"number": found[0].number, "draft": True},
        )
    return Case(
        kind,
        verify_check(scene, annotations=3),
        ("POST", "/repos/{owner}/{repo}/check-runs"),
        lambda: fake.check_runs(OWNER, REPO, scene.origin.branch_sha),
        lambda found: {"check_run_id": found[0].id, "head_sha": scene.origin.branch_sha},
    )
