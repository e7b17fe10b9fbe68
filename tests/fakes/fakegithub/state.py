"""The fake's world: users, the App, installations, tokens and repositories with their objects.

Plain dataclasses guarded by one re-entrant lock (``World.lock``): the HTTP handler threads and
the test's seeding and reading calls all take it, so a test never sees half of an update. Git
data (refs, commits, the default branch) is deliberately absent: it is read live from each
repository's bare git directory (``gitdata.py``), as GitHub serves what was pushed.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from .clock import Clock


class AuthKind(StrEnum):
    """How a request authenticated; recorded on every call."""

    JWT = "jwt"  # the App itself, signed with its private key
    INSTALLATION = "installation"  # a ghs_ token minted by POST .../access_tokens
    TOKEN = "token"  # a configured token, e.g. an Actions GITHUB_TOKEN with fixed permissions
    ANONYMOUS = "anonymous"
    INVALID = "invalid"  # credentials present but refused (401)


# GitHub's repository roles and the legacy base permission the permission endpoint reports.
ROLE_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}

# App permission levels, ordered.
ACCESS_LEVELS = {"read": 1, "write": 2, "admin": 3}

# What a freshly registered App may do unless the test says otherwise.
DEFAULT_APP_PERMISSIONS = {
    "checks": "write",
    "contents": "write",
    "issues": "write",
    "metadata": "read",
    "pull_requests": "write",
}


def make_node_id(prefix: str, object_id: int) -> str:
    """A global relay id in GitHub's current style (``PR_kwDO...``); opaque to clients."""
    packed = base64.urlsafe_b64encode(object_id.to_bytes(8, "big")).decode().rstrip("=")
    return f"{prefix}_kwDO{packed}"


@dataclass
class User:
    login: str
    id: int
    type: str  # "User", "Bot" or "Organization"
    node_id: str


@dataclass
class App:
    id: int
    slug: str
    name: str
    owner: User
    bot: User
    public_key: RSAPublicKey | None  # None for a stand-in App that never signs JWTs
    permissions: dict[str, str]
    events: list[str]
    created_at: float


@dataclass
class Installation:
    id: int
    app_id: int
    account: User
    repositories: set[str] | None  # lower-case full names; None: every repository of account
    permissions: dict[str, str]
    created_at: float


@dataclass
class Token:
    value: str
    kind: AuthKind
    actor: User
    permissions: dict[str, str]
    repositories: frozenset[str] | None  # lower-case full names; None: no narrowing
    expires_at: float | None
    app: App | None = None
    installation_id: int | None = None


@dataclass(frozen=True)
class OAuthClient:
    """An App's OAuth client: sign-in with GitHub sends users back under ``callback_url``."""

    client_id: str
    client_secret: str
    callback_url: str


@dataclass
class ManifestCode:
    """An App someone created from a manifest on GitHub's page, whose credentials wait to be
    fetched once, within the hour, with the code GitHub sent to the manifest's redirect URL."""

    app: App
    pem: str
    webhook_secret: str | None
    client: OAuthClient
    expires_at: float
    used: bool = False


@dataclass
class Label:
    id: int
    node_id: str
    name: str
    color: str
    description: str | None
    default: bool = False


@dataclass
class Reaction:
    id: int
    node_id: str
    content: str
    user: User
    created_at: float


@dataclass
class IssueComment:
    id: int
    node_id: str
    issue_number: int
    body: str
    user: User
    created_at: float
    updated_at: float
    app: App | None  # performed_via_github_app
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class Issue:
    id: int
    node_id: str
    number: int
    title: str
    body: str | None
    user: User
    labels: list[str]
    created_at: float
    updated_at: float
    state: str = "open"
    closed_at: float | None = None


@dataclass
class PullRequest:
    id: int
    node_id: str
    number: int
    title: str
    body: str | None
    user: User
    head_ref: str
    head_sha: str  # last known; refreshed from git while the branch exists
    base_ref: str
    base_sha: str
    draft: bool
    created_at: float
    updated_at: float
    state: str = "open"
    closed_at: float | None = None
    maintainer_can_modify: bool = False


@dataclass
class ReviewComment:
    id: int
    node_id: str
    pull_number: int
    review_id: int
    body: str
    path: str
    line: int | None
    side: str
    commit_id: str
    user: User
    created_at: float
    updated_at: float
    diff_hunk: str
    in_reply_to_id: int | None = None


@dataclass
class CheckRun:
    id: int
    node_id: str
    head_sha: str
    name: str
    status: str
    conclusion: str | None
    started_at: float | None
    completed_at: float | None
    external_id: str
    details_url: str | None
    app: App
    check_suite_id: int
    output_title: str | None = None
    output_summary: str | None = None
    output_text: str | None = None
    annotations: list[dict[str, object]] = field(default_factory=list)
    actions: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Repo:
    id: int
    node_id: str
    owner: User
    name: str
    git_dir: Path
    private: bool
    created_at: float
    description: str | None = None
    clone_url: str | None = None  # where git reaches it; None: the bare repository's file:// URL
    issues: dict[int, Issue] = field(default_factory=dict)
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    comments: dict[int, IssueComment] = field(default_factory=dict)
    review_comments: dict[int, ReviewComment] = field(default_factory=dict)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    check_suites: dict[tuple[int, str], int] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)  # by lower-case name
    roles: dict[str, tuple[User, str]] = field(default_factory=dict)  # lower login -> role
    next_number: int = 1

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"

    @property
    def key(self) -> str:
        return self.full_name.lower()


class World:
    """Everything the fake knows; every read or write happens under ``lock``."""

    def __init__(self, clock: Clock) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        self.users: dict[str, User] = {}
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        self.tokens: dict[str, Token] = {}
        self.repos: dict[str, Repo] = {}
        self.missing_users: set[str] = set()  # logins that are not GitHub users at all
        self.oauth_clients: dict[str, OAuthClient] = {}  # client id -> its App's OAuth client
        self.manifest_codes: dict[str, ManifestCode] = {}  # code -> the App created with it
        self._next_id = 1000

    def next_id(self) -> int:
        """A fresh object id; ids are unique across object kinds, as GitHub's look."""
        with self.lock:
            self._next_id += 1
            return self._next_id

    def user(self, login: str, *, type: str = "User") -> User:
        """The user ``login``, created on first mention (GitHub logins are case-insensitive)."""
        with self.lock:
            found = self.users.get(login.lower())
            if found is None:
                user_id = self.next_id()
                prefix = {"Bot": "BOT", "Organization": "O"}.get(type, "U")
                found = User(login, user_id, type, make_node_id(prefix, user_id))
                self.users[login.lower()] = found
            return found

    def repo(self, owner: str, name: str) -> Repo | None:
        return self.repos.get(f"{owner}/{name}".lower())

    def repo_by_id(self, repo_id: int) -> Repo | None:
        return next((repo for repo in self.repos.values() if repo.id == repo_id), None)

    def installation_for(self, app_id: int, repo: Repo) -> Installation | None:
        """The installation of App ``app_id`` that covers ``repo``, if any."""
        for installation in self.installations.values():
            if installation.app_id != app_id:
                continue
            if installation.repositories is None:
                if installation.account.login.lower() == repo.owner.login.lower():
                    return installation
            elif repo.key in installation.repositories:
                return installation
        return None


# GitHub's colour for a label created implicitly by adding it to an issue.
IMPLICIT_LABEL_COLOR = "ededed"


def ensure_label(world: World, repo: Repo, name: str) -> Label:
    """The repository's label ``name`` (case-insensitive), created as GitHub does if absent."""
    label = repo.labels.get(name.lower())
    if label is None:
        label_id = world.next_id()
        label = Label(
            id=label_id,
            node_id=make_node_id("LA", label_id),
            name=name,
            color=IMPLICIT_LABEL_COLOR,
            description=None,
        )
        repo.labels[name.lower()] = label
    return label


def open_issue(
    world: World,
    repo: Repo,
    *,
    title: str,
    body: str | None,
    user: User,
    now: float,
    number: int | None = None,
) -> Issue:
    """File an issue under the next number (or ``number``); pull requests take one too."""
    number = number or repo.next_number
    if number in repo.issues:
        raise ValueError(f"{repo.full_name}#{number} already exists")
    repo.next_number = max(repo.next_number, number + 1)
    issue_id = world.next_id()
    issue = Issue(
        id=issue_id,
        node_id=make_node_id("I", issue_id),
        number=number,
        title=title,
        body=body,
        user=user,
        labels=[],
        created_at=now,
        updated_at=now,
    )
    repo.issues[number] = issue
    return issue
