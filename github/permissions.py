"""``GitHubAuthorizer``: who may signal a run on GitHub (the runner's ``Authorizer`` port).

A signal from GitHub (a ``/ratchet`` command, a check run's button) is accepted from someone
with write access to the run's repository, as prow and slash-command-dispatch require by
default: GitHub's ``GET /repos/{o}/{r}/collaborators/{user}/permission`` answers ``admin``,
``write`` (``maintain`` reads as write), ``read`` (``triage`` reads as read) or ``none``. Bots
never signal: the App's own bot (``<slug>[bot]``, so Ratchet cannot command itself) and every
other ``[bot]`` login, unless the operator lists it in ``allowed_bots`` (then it is trusted as
configured, without asking GitHub, which has no collaborator permission for App bots). Signals
from this host's operator (origin ``local``) are allowed.

Answers are cached per (installation, repository, user) for at most ``PERMISSION_TTL``
seconds, so a burst of commands costs one call, and never past a webhook saying someone's
access changed (``PERMISSION_EVENTS``): ``changes`` counts those the ledger recorded, so a
delivery received by any process drops every process's cached answers. A failure to ask
(GitHub unavailable, rate limited) is raised, never turned into a refusal: the signal stays
pending and is answered later.

(``PERMISSION_EVENTS`` are ``github/routing.py``'s.) ``Permissions`` is the cached lookup; the
trigger label's check (``github/triggers.py``) uses it too, with the role the operator requires
(``RATCHET_TRIGGER_PERMISSION``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from runner.ledger.records import Run, Signal
from runner.names import GITHUB_ORIGIN, LOCAL_ORIGIN
from runner.signals import Authorization

from .client import GitHubClient
from .errors import NotFound
from .repository import RepoAPI, RepoTarget

log = logging.getLogger(__name__)

# Seconds a permission answer is reused: a revoked collaborator keeps signalling at most this
# long, unless a webhook says the access changed first.
PERMISSION_TTL = 60.0
# GitHub's repository roles, weakest first (a custom role is ranked by its base permission).
ROLES = ("none", "read", "triage", "write", "maintain", "admin")
SIGNAL_ROLE = "write"  # the least role that may signal a run
PERMISSION = "/repos/{owner}/{repo}/collaborators/{username}/permission"
BOT_SUFFIX = "[bot]"

Locate = Callable[[Run], RepoTarget]  # the repository (and installation) a run belongs to
_Key = tuple[int | None, str, str]


@dataclass(frozen=True)
class Role:
    """A user's role on a repository as GitHub names it, and its rank in ``ROLES``."""

    name: str  # "triage", "maintain", a custom role's name, or "none"
    rank: int

    def at_least(self, role: str) -> bool:
        return self.rank >= ROLES.index(role)


NO_ACCESS = Role("none", 0)


class Permissions:
    """Users' roles on repositories, asked of GitHub and cached (see the module docstring).

    ``changes`` returns how many access-changing webhooks the ledger has recorded (a cached
    answer from before the latest is asked again); ``clock`` (seconds) times the cache.
    """

    def __init__(self, client: GitHubClient, *, changes: Callable[[], int] = lambda: 0,
                 ttl: float = PERMISSION_TTL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.changes = changes
        self.ttl = min(ttl, PERMISSION_TTL)
        self.clock = clock
        self._cache: dict[_Key, tuple[float, int, Role]] = {}
        self._lock = threading.Lock()

    def role(self, target: RepoTarget, login: str) -> Role:
        """``login``'s role on ``target`` (``NO_ACCESS`` when GitHub knows no such user with
        access); GitHub's failures are raised."""
        key = (target.installation, target.full_name.lower(), login.lower())
        generation, now = self.changes(), self.clock()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] > now and cached[1] == generation:
            return cached[2]
        role = self._ask(target, login)
        with self._lock:
            self._cache[key] = (now + self.ttl, generation, role)
        return role

    def _ask(self, target: RepoTarget, login: str) -> Role:
        try:
            found = RepoAPI(self.client, target).get(PERMISSION, username=login)
        except NotFound:
            return NO_ACCESS
        permission = str(found.get("permission") or "none")
        name = str(found.get("role_name") or permission)
        base = name if name in ROLES else permission
        return Role(name, ROLES.index(base) if base in ROLES else 0)


class GitHubAuthorizer:
    """``Authorizer`` asking GitHub for a signal author's permission (see the module docstring).

    ``locate`` maps a run to its ``RepoTarget`` (owner, repo, installation); ``bot_login`` is
    the App's bot user; ``ttl``, ``clock`` and ``changes`` are ``Permissions``'.
    """

    def __init__(
        self,
        client: GitHubClient,
        *,
        locate: Locate,
        bot_login: str | None,
        allowed_bots: Collection[str] = (),
        ttl: float = PERMISSION_TTL,
        clock: Callable[[], float] = time.monotonic,
        changes: Callable[[], int] = lambda: 0,
    ) -> None:
        self.locate = locate
        self.bot_login = bot_login.lower() if bot_login else None
        self.allowed_bots = frozenset(b.lower() for b in allowed_bots)
        self.permissions = Permissions(client, changes=changes, ttl=ttl, clock=clock)

    def authorize(self, run: Run, signal: Signal) -> Authorization:
        if signal.origin == LOCAL_ORIGIN:
            return Authorization(True, "the operator on this host")
        if signal.origin != GITHUB_ORIGIN:
            return Authorization(
                False, f"signals from {signal.origin!r} are not accepted for a GitHub run"
            )
        login = signal.author.lower()
        if self.bot_login is not None and login == self.bot_login:
            return Authorization(False, f"{signal.author} is Ratchet's own bot")
        if login.endswith(BOT_SUFFIX):
            if login in self.allowed_bots:
                return Authorization(True, f"{signal.author} is an allowed bot")
            return Authorization(
                False,
                f"{signal.author} is a bot; bots may not signal runs"
                " unless the operator allows them",
            )
        target = self.locate(run)
        role = self.permissions.role(target, signal.author)
        if role is NO_ACCESS:
            return Authorization(
                False, f"GitHub knows no user {signal.author} with access to {target.full_name}"
            )
        if role.at_least(SIGNAL_ROLE):
            return Authorization(True, f"{signal.author} has {role.name} access to"
                                       f" {target.full_name}")
        log.info("%r has %r access to %r: not enough to signal", signal.author, role.name,
                 target.full_name)
        return Authorization(
            False,
            f"{signal.author} has {role.name} access to {target.full_name}; signalling"
            " a run needs write access (write, maintain or admin)",
        )
