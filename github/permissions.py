"""``GitHubAuthorizer``: who may signal a run on GitHub (the runner's ``Authorizer`` port).

A signal from GitHub (a ``/ratchet`` command, a check run's button) is accepted from someone
with write access to the run's repository, as prow and slash-command-dispatch require by
default: GitHub's ``GET /repos/{o}/{r}/collaborators/{user}/permission`` answers ``admin``,
``write`` (``maintain`` reads as write), ``read`` (``triage`` reads as read) or ``none``. Bots
never signal: the App's own bot (``<slug>[bot]``, so Ratchet cannot command itself) and every
other ``[bot]`` login, unless the operator lists it in ``allowed_bots`` (then it is trusted as
configured, without asking GitHub, which has no collaborator permission for App bots). Signals
from this host's operator (origin ``local``) are allowed.

Answers are cached per (installation, repository, user) for ``PERMISSION_TTL`` seconds, so a
burst of commands costs one call. A failure to ask (GitHub unavailable, rate limited) is
raised, never turned into a refusal: the signal stays pending and is answered later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection

from runner.ledger.records import Run, Signal
from runner.names import GITHUB_ORIGIN, LOCAL_ORIGIN
from runner.signals import Authorization

from .client import GitHubClient
from .errors import NotFound
from .repository import RepoAPI, RepoTarget

log = logging.getLogger(__name__)

# Seconds a permission answer is reused: a revoked collaborator keeps signalling at most this long.
PERMISSION_TTL = 60.0
# GitHub's base permissions that may signal a run ("maintain" is reported as "write").
SIGNALLING_PERMISSIONS = frozenset({"admin", "write"})
PERMISSION = "/repos/{owner}/{repo}/collaborators/{username}/permission"
BOT_SUFFIX = "[bot]"

Locate = Callable[[Run], RepoTarget]  # the repository (and installation) a run belongs to
_Key = tuple[int | None, str, str]


class GitHubAuthorizer:
    """``Authorizer`` asking GitHub for a signal author's permission (see the module docstring).

    ``locate`` maps a run to its ``RepoTarget`` (owner, repo, installation); ``bot_login`` is
    the App's bot user; ``clock`` (seconds) times the cache.
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
    ) -> None:
        self.client = client
        self.locate = locate
        self.bot_login = bot_login.lower() if bot_login else None
        self.allowed_bots = frozenset(b.lower() for b in allowed_bots)
        self.ttl = ttl
        self.clock = clock
        self._cache: dict[_Key, tuple[float, Authorization]] = {}
        self._lock = threading.Lock()

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
        key = (target.installation, target.full_name.lower(), login)
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        answer = self._ask(target, signal.author)
        with self._lock:
            self._cache[key] = (now + self.ttl, answer)
        return answer

    def _ask(self, target: RepoTarget, author: str) -> Authorization:
        api = RepoAPI(self.client, target)
        try:
            found = api.get(PERMISSION, username=author)
        except NotFound:
            return Authorization(
                False, f"GitHub knows no user {author} with access to {target.full_name}"
            )
        permission = str(found.get("permission") or "none")
        role = str(found.get("role_name") or permission)
        if permission in SIGNALLING_PERMISSIONS:
            return Authorization(True, f"{author} has {role} access to {target.full_name}")
        log.info("%r has %r access to %r: not enough to signal", author, role, target.full_name)
        return Authorization(
            False,
            f"{author} has {role} access to {target.full_name}; signalling"
            " a run needs write access (write, maintain or admin)",
        )
