"""``FakeGitHub``: start the server, seed the world, inject faults, read what happened.

    with FakeGitHub() as fake:
        fake.register_app(app_id=1, slug="ratchet", private_key_pem=pem)
        fake.create_repo("acme", "widgets", git_dir=bare)
        installation_id = fake.install_app(repos=["acme/widgets"])
        fake.create_issue("acme", "widgets", title="Fix it", author="alice")
        fake.inject("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
                    faults.drop_after_apply())
        ...  # the code under test talks to fake.base_url
        assert fake.comments("acme", "widgets", 1)[0].user.login == "ratchet[bot]"
        fake.assert_clean()

Seeding and reading are Python calls on the shared state (never HTTP), so they are neither
recorded nor subject to faults. Readers return copies taken under the lock.

Sign-in with GitHub (the OAuth web flow on github.com's pages, and ``GET /user``) is served
by ``fake.oauth`` (``oauth.py``): ``fake.oauth.add_client(client_id=..., client_secret=...,
callback_url=...)``, then ``fake.oauth.sign_in_browser("alice")`` says who approves. The same
browser creates Apps from manifests posted to ``/settings/apps/new`` (``manifests.py``).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from . import gitdata
from .auth import Principal
from .clock import Clock
from .faults import Fault, FaultTable, Injection
from .manifests import ManifestWeb
from .oauth import OAuthWeb
from .openapi import Spec, load_spec
from .pipeline import Outcome, Pipeline, RawRequest
from .ratelimit import RateLimits
from .recording import Call, Recorder, ValidationFailure
from .render.links import Links
from .routes import ROUTES
from .routes.pulls import sync_pull
from .server import HttpServer
from .state import (
    ACCESS_LEVELS,
    DEFAULT_APP_PERMISSIONS,
    ROLE_PERMISSION,
    App,
    AuthKind,
    CheckRun,
    Installation,
    Issue,
    IssueComment,
    PullRequest,
    Reaction,
    Repo,
    ReviewComment,
    Token,
    World,
    ensure_label,
    make_node_id,
    open_issue,
)

T = TypeVar("T")

_DEFAULT_EVENTS = ("check_run", "issue_comment", "issues", "pull_request")


def _snapshot(item: T) -> T:
    """A copy whose lists are copies too, so later requests do not change what a test holds."""
    clone = copy.copy(item)
    if dataclasses.is_dataclass(clone):
        for field in dataclasses.fields(clone):
            value = getattr(clone, field.name)
            if isinstance(value, list):
                setattr(clone, field.name, list(value))
    return clone


class FakeGitHub:
    """A GitHub REST (+ one GraphQL mutation) server for tests; see the module docstring."""

    def __init__(self, *, host: str = "127.0.0.1", spec: Spec | None = None) -> None:
        self.clock = Clock()
        self.world = World(self.clock)
        self.faults = FaultTable()
        self.recorder = Recorder()
        self.limits = RateLimits()
        self.spec = spec or load_spec()
        # github.com's OAuth web flow and GET /user, outside the OpenAPI subset (oauth.py).
        self.oauth = OAuthWeb(self.world, self.recorder)
        # The App manifest flow's page on github.com (manifests.py), for whoever is signed in.
        self.manifests = ManifestWeb(self.world, self.recorder, self.oauth)
        self._host = host
        self._http: HttpServer | None = None
        self._pipeline: Pipeline | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        """Bind a free port on ``host`` and serve from a background thread."""
        if self._http is not None:
            raise RuntimeError("this FakeGitHub is already running")
        self._http = HttpServer(self._handle, host=self._host)
        self._pipeline = Pipeline(
            world=self.world,
            spec=self.spec,
            routes=ROUTES,
            faults=self.faults,
            recorder=self.recorder,
            limits=self.limits,
            links=Links(self._http.base_url),
        )
        self._http.start()
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.stop()
            self._http = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _handle(self, raw: RawRequest) -> Outcome:
        if self._pipeline is None:
            raise RuntimeError("request before start()")
        web = self.oauth.handle(raw, links=self._pipeline.links) or self.manifests.handle(raw)
        return web if web is not None else self._pipeline.handle(raw)

    @property
    def base_url(self) -> str:
        """The API root, e.g. ``http://127.0.0.1:54321`` (gidgethub's ``base_url``)."""
        if self._http is None:
            raise RuntimeError("start the FakeGitHub (or enter it) before asking for its URL")
        return self._http.base_url

    @property
    def graphql_url(self) -> str:
        return f"{self.base_url}/graphql"

    # -- seeding ---------------------------------------------------------------------------

    def register_app(
        self,
        *,
        app_id: int,
        slug: str,
        private_key_pem: str | bytes,
        name: str | None = None,
        owner: str = "app-owner",
        permissions: dict[str, str] | None = None,
        events: Iterable[str] = _DEFAULT_EVENTS,
    ) -> App:
        """Register a GitHub App whose JWTs are verified with the key's public half.

        Its bot user is ``<slug>[bot]``: comments and check runs made with its installation
        tokens are authored by it.
        """
        pem = private_key_pem.encode() if isinstance(private_key_pem, str) else private_key_pem
        # Only the public half is kept (GitHub never holds an App's private key); the key is
        # the test's own, so its costly consistency check (30 ms) is skipped.
        key = load_pem_private_key(pem, password=None, unsafe_skip_rsa_key_validation=True)
        if not isinstance(key, RSAPrivateKey):
            raise ValueError("GitHub Apps sign with RSA keys; pass an RSA private key PEM")
        world = self.world
        with world.lock:
            app = App(
                id=app_id,
                slug=slug,
                name=name or slug,
                owner=world.user(owner, type="Organization"),
                bot=world.user(f"{slug}[bot]", type="Bot"),
                public_key=key.public_key(),
                permissions=dict(permissions or DEFAULT_APP_PERMISSIONS),
                events=list(events),
                created_at=self.clock.now(),
            )
            world.apps[app_id] = app
        return app

    def create_repo(
        self,
        owner: str,
        name: str,
        *,
        git_dir: Path | str,
        private: bool = False,
        owner_type: str = "Organization",
        description: str | None = None,
        clone_url: str | None = None,
    ) -> Repo:
        """A repository backed by the bare git repository at ``git_dir`` (read live); its
        ``clone_url`` is ``git_dir``'s ``file://`` URL unless one is given (a git server over
        HTTP in front of ``git_dir``)."""
        git_path = Path(git_dir)
        if not (git_path / "HEAD").is_file() or not (git_path / "objects").is_dir():
            raise ValueError(
                f"{git_path} is not a bare git repository; create it with "
                "`git init --bare` and push to it with a file:// URL"
            )
        world = self.world
        with world.lock:
            if world.repo(owner, name) is not None:
                raise ValueError(f"repository {owner}/{name} already exists in the fake")
            repo_id = world.next_id()
            repo = Repo(
                id=repo_id,
                node_id=make_node_id("R", repo_id),
                owner=world.user(owner, type=owner_type),
                name=name,
                git_dir=git_path,
                private=private,
                created_at=self.clock.now(),
                description=description,
                clone_url=clone_url,
            )
            world.repos[repo.key] = repo
        return repo

    def install_app(
        self,
        *,
        app_id: int | None = None,
        repos: Iterable[str] | None = None,
        account: str | None = None,
        installation_id: int | None = None,
        permissions: dict[str, str] | None = None,
    ) -> int:
        """Install the App on ``repos`` (``"owner/name"``), or on every repository of
        ``account``; returns the installation id."""
        world = self.world
        with world.lock:
            app = self._app(app_id)
            selected = None if repos is None else {r.lower() for r in repos}
            if selected is not None:
                unknown = sorted(r for r in selected if r not in world.repos)
                if unknown:
                    raise ValueError(f"create these repositories first: {unknown}")
                owners = {r.split("/")[0] for r in selected}
                account = account or (next(iter(owners)) if len(owners) == 1 else None)
            if account is None:
                raise ValueError("name the installation's account, or repositories of one owner")
            owner = world.users.get(account.lower()) or world.user(account, type="Organization")
            new_id = installation_id or world.next_id()
            world.installations[new_id] = Installation(
                id=new_id,
                app_id=app.id,
                account=owner,
                repositories=selected,
                permissions=dict(permissions or app.permissions),
                created_at=self.clock.now(),
            )
        return new_id

    def add_token(
        self,
        token: str,
        *,
        login: str = "github-actions[bot]",
        permissions: dict[str, str],
        repos: Iterable[str] | None = None,
        app_id: int | None = None,
        expires_in: float | None = None,
    ) -> Token:
        """A token with fixed permissions, like an Actions ``GITHUB_TOKEN``.

        A ``[bot]`` login acts for an App (``app_id`` of a registered one, or a stand-in App
        named after the login, as ``github-actions``), so it may create check runs when its
        permissions allow; any other login is a user token, which GitHub refuses for checks.
        """
        unknown = {level for level in permissions.values() if level not in ACCESS_LEVELS}
        if unknown:
            raise ValueError(f"permission levels are read, write or admin; got {sorted(unknown)}")
        world = self.world
        with world.lock:
            app = None
            if login.endswith("[bot]"):
                app = world.apps.get(app_id) if app_id is not None else None
                if app is None:
                    slug = login.removesuffix("[bot]")
                    app = next((a for a in world.apps.values() if a.slug == slug), None)
                if app is None:
                    app = self._stand_in_app(login)
            actor = world.user(login, type="Bot" if app is not None else "User")
            seeded = Token(
                value=token,
                kind=AuthKind.TOKEN,
                actor=actor,
                permissions=dict(permissions),
                repositories=None if repos is None else frozenset(r.lower() for r in repos),
                expires_at=None if expires_in is None else self.clock.now() + expires_in,
                app=app,
            )
            world.tokens[token] = seeded
        return seeded

    def _stand_in_app(self, login: str) -> App:
        """An App record for a bot token whose App the test did not register."""
        slug = login.removesuffix("[bot]")
        world = self.world
        app_id = world.next_id()
        return App(
            id=app_id,
            slug=slug,
            name=slug,
            owner=world.user("github", type="Organization"),
            bot=world.user(login, type="Bot"),
            public_key=None,  # no key: no JWT can speak for it
            permissions={},
            events=[],
            created_at=self.clock.now(),
        )

    def create_issue(
        self,
        owner: str,
        repo: str,
        *,
        title: str,
        body: str | None = "",
        labels: Iterable[str] = (),
        author: str = "octocat",
        number: int | None = None,
    ) -> int:
        """An open issue; returns its number (the next free one unless given)."""
        world = self.world
        with world.lock:
            target = self._repo(owner, repo)
            issue = open_issue(
                world,
                target,
                title=title,
                body=body,
                user=world.user(author),
                now=self.clock.now(),
                number=number,
            )
            for label in labels:
                issue.labels.append(ensure_label(world, target, label).name)
        return issue.number

    def add_issue_comment(
        self, owner: str, repo: str, number: int, *, body: str, author: str
    ) -> int:
        """A comment someone else wrote (e.g. a command); returns its id."""
        world = self.world
        with world.lock:
            target = self._repo(owner, repo)
            if number not in target.issues:
                raise ValueError(f"create {target.full_name}#{number} first")
            comment_id = world.next_id()
            now = self.clock.now()
            target.comments[comment_id] = IssueComment(
                id=comment_id,
                node_id=make_node_id("IC", comment_id),
                issue_number=number,
                body=body,
                user=world.user(author),
                created_at=now,
                updated_at=now,
                app=None,
            )
        return comment_id

    def set_permission(self, owner: str, repo: str, login: str, role: str) -> None:
        """Give ``login`` a role: admin, maintain, write, triage or read."""
        if role not in ROLE_PERMISSION:
            raise ValueError(f"role must be one of {sorted(ROLE_PERMISSION)}, got {role!r}")
        with self.world.lock:
            self._repo(owner, repo).roles[login.lower()] = (self.world.user(login), role)

    def create_organization(self, login: str) -> None:
        """An organization, for Apps registered as its own (``manifests.py``)."""
        self.world.user(login, type="Organization")

    def app(self, slug: str) -> App:
        """The App named ``slug`` (seeded, or created from a manifest); KeyError if none."""
        with self.world.lock:
            for app in self.world.apps.values():
                if app.slug == slug:
                    return _snapshot(app)
        raise KeyError(f"no App {slug!r}")

    def mark_missing_user(self, login: str) -> None:
        """Make ``login`` an account GitHub does not know (the permission endpoint says 404)."""
        with self.world.lock:
            self.world.missing_users.add(login.lower())

    def create_pull(
        self,
        owner: str,
        repo: str,
        *,
        head: str,
        base: str,
        title: str,
        body: str | None = "",
        draft: bool = False,
        author: str = "octocat",
    ) -> int:
        """A pull request someone opened earlier (both branches must be in git)."""
        world = self.world
        with world.lock:
            target = self._repo(owner, repo)
            head_ref = gitdata.find_ref(target.git_dir, f"refs/heads/{head}")
            base_ref = gitdata.find_ref(target.git_dir, f"refs/heads/{base}")
            if head_ref is None or base_ref is None:
                raise ValueError(f"push both {head!r} and {base!r} to {target.git_dir} first")
            number = self.create_issue(owner, repo, title=title, body=body, author=author)
            pull_id = world.next_id()
            now = self.clock.now()
            target.pulls[number] = PullRequest(
                id=pull_id,
                node_id=make_node_id("PR", pull_id),
                number=number,
                title=title,
                body=body,
                user=world.user(author),
                head_ref=head,
                head_sha=head_ref.sha,
                base_ref=base,
                base_sha=base_ref.sha,
                draft=draft,
                created_at=now,
                updated_at=now,
            )
        return number

    def add_review_comment(
        self,
        owner: str,
        repo: str,
        pull_number: int,
        *,
        body: str,
        path: str,
        author: str,
        line: int | None = None,
        side: str = "RIGHT",
        commit_id: str | None = None,
        in_reply_to: int | None = None,
    ) -> int:
        """A review comment on a pull request's diff; returns its id."""
        world = self.world
        with world.lock:
            target = self._repo(owner, repo)
            pull = target.pulls.get(pull_number)
            if pull is None:
                raise ValueError(f"create pull request {target.full_name}#{pull_number} first")
            comment_id, review_id = world.next_id(), world.next_id()
            now = self.clock.now()
            target.review_comments[comment_id] = ReviewComment(
                id=comment_id,
                node_id=make_node_id("PRRC", comment_id),
                pull_number=pull_number,
                review_id=review_id,
                body=body,
                path=path,
                line=line,
                side=side,
                commit_id=commit_id or pull.head_sha,
                user=world.user(author),
                created_at=now,
                updated_at=now,
                diff_hunk=f"@@ -1 +1 @@ {path}",
                in_reply_to_id=in_reply_to,
            )
        return comment_id

    def git_allows(self, owner: str, repo: str, token: str, *, write: bool) -> bool:
        """Would github.com let ``token`` fetch (or, with ``write``, push to) ``owner/repo``
        over HTTPS: a live token that sees the repository with ``contents`` access."""
        world = self.world
        with world.lock:
            found = world.tokens.get(token)
            target = world.repo(owner, repo)
            if found is None or target is None:
                return False
            if found.expires_at is not None and found.expires_at <= self.clock.now():
                return False
            principal = Principal(found.kind, actor=found.actor, app=found.app, token=found)
            return principal.sees(world, target) and principal.may(
                "contents", "write" if write else "read")

    def advance_clock(self, seconds: float) -> None:
        """Move the fake's clock forward: tokens expire, JWTs age, rate windows reset."""
        self.clock.advance(seconds)

    # -- faults ----------------------------------------------------------------------------

    def inject(self, method: str, path_pattern: str, fault: Fault, *, times: int = 1) -> Injection:
        """Make the next ``times`` matching requests suffer ``fault`` (see ``faults``)."""
        return self.faults.add(method, path_pattern, fault, times=times)

    def clear_faults(self) -> None:
        self.faults.clear()

    # -- recording -------------------------------------------------------------------------

    def calls(
        self,
        *,
        method: str | None = None,
        path_pattern: str | None = None,
        status: int | None = None,
        operation_id: str | None = None,
    ) -> list[Call]:
        """Requests received, in order, filtered by every criterion given."""
        return self.recorder.calls(
            method=method, path_pattern=path_pattern, status=status, operation_id=operation_id
        )

    @property
    def validation_failures(self) -> list[ValidationFailure]:
        """Requests GitHub would refuse as malformed (bad JSON, body, parameters)."""
        return self.recorder.validation_failures

    @property
    def unknown_calls(self) -> list[Call]:
        """Requests for endpoints the fake (and so the vendored description) does not have."""
        return [call for call in self.recorder.calls() if call.operation_id is None]

    @property
    def response_mismatches(self) -> list[tuple[Call, tuple[str, ...]]]:
        """Responses of the fake that depart from GitHub's schema (a bug in the fake)."""
        return self.recorder.response_mismatches

    @property
    def crashes(self) -> list[BaseException]:
        """Exceptions the fake itself raised while serving (answered as 500)."""
        return self._http.crashes if self._http is not None else []

    def assert_clean(self) -> None:
        """Fail naming the first request GitHub would have refused, or a fake malfunction."""
        problems: list[str] = []
        for failure in self.validation_failures:
            call = failure.call
            problems.append(f"invalid request {call.method} {call.path}: {list(failure.problems)}")
        for call in self.unknown_calls:
            problems.append(f"unknown endpoint {call.method} {call.path}")
        for call, mismatch in self.response_mismatches:
            problems.append(f"fake answered {call.method} {call.path} off-schema: {mismatch[:3]}")
        problems += [f"fake crashed: {crash!r}" for crash in self.crashes]
        if problems:
            raise AssertionError("fake GitHub saw problems:\n" + "\n".join(problems))

    # -- state -----------------------------------------------------------------------------

    def _repo(self, owner: str, name: str) -> Repo:
        repo = self.world.repo(owner, name)
        if repo is None:
            raise ValueError(f"no repository {owner}/{name}; call create_repo first")
        return repo

    def _app(self, app_id: int | None) -> App:
        if app_id is not None:
            if app_id not in self.world.apps:
                raise ValueError(f"register App {app_id} first")
            return self.world.apps[app_id]
        if len(self.world.apps) != 1:
            raise ValueError("register exactly one App, or pass app_id")
        return next(iter(self.world.apps.values()))

    def issue(self, owner: str, repo: str, number: int) -> Issue:
        with self.world.lock:
            return _snapshot(self._repo(owner, repo).issues[number])

    def labels(self, owner: str, repo: str, number: int) -> list[str]:
        with self.world.lock:
            return list(self._repo(owner, repo).issues[number].labels)

    def comments(self, owner: str, repo: str, number: int) -> list[IssueComment]:
        """The issue's (or pull request's) conversation comments, oldest first."""
        with self.world.lock:
            target = self._repo(owner, repo)
            found = sorted(
                (c for c in target.comments.values() if c.issue_number == number),
                key=lambda c: c.id,
            )
            return [_snapshot(c) for c in found]

    def comment(self, owner: str, repo: str, comment_id: int) -> IssueComment:
        with self.world.lock:
            return _snapshot(self._repo(owner, repo).comments[comment_id])

    def reactions(self, owner: str, repo: str, comment_id: int) -> list[Reaction]:
        with self.world.lock:
            return list(self._repo(owner, repo).comments[comment_id].reactions)

    def pulls(self, owner: str, repo: str) -> list[PullRequest]:
        """Every pull request, by number, with head and base shas refreshed from git."""
        with self.world.lock:
            target = self._repo(owner, repo)
            for pull in target.pulls.values():
                sync_pull(target, pull)
            return [_snapshot(target.pulls[n]) for n in sorted(target.pulls)]

    def pull(self, owner: str, repo: str, number: int) -> PullRequest:
        return next(p for p in self.pulls(owner, repo) if p.number == number)

    def check_runs(self, owner: str, repo: str, head_sha: str | None = None) -> list[CheckRun]:
        """Check runs (all, or on ``head_sha``), oldest first."""
        with self.world.lock:
            runs = sorted(self._repo(owner, repo).check_runs.values(), key=lambda r: r.id)
            return [_snapshot(r) for r in runs if head_sha is None or r.head_sha == head_sha]
