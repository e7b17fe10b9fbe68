"""Who is looking, and what they may see and do: the viewer and the repository gate.

A viewer is this host's operator (signed in by the one-time link of a loopback dashboard
without GitHub sign-in: everything, every action; being on loopback alone is nothing),
a bearer of the API token (reads everything, acts on nothing), or someone signed in with
GitHub, who sees the runs of repositories they can read and acts on those they can write.
GitHub answers that from the App's installation (``GET /repos/{owner}/{repo}/collaborators/
{username}/permission``), cached for ``PERMISSION_TTL`` seconds. Runs of repositories that are
not on GitHub (local runs) are shown only to the operator and to the API token.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Protocol

from github.client import GitHubClient
from github.errors import GitHubFailure, NotFound

log = logging.getLogger(__name__)

# Seconds a permission answer is reused: a revoked reader keeps seeing runs at most this long.
PERMISSION_TTL = 60.0
PERMISSION = "/repos/{owner}/{repo}/collaborators/{username}/permission"
LOOKUPS_AT_ONCE = 8  # permission questions in flight for one page (GitHub allows many more)
# GitHub's base permissions ("maintain" is reported as write, "triage" as read).
_LEVELS = {"admin": 2, "write": 2, "read": 1}


class ViewerKind(StrEnum):
    OPERATOR = "operator"  # signed in by the one-time link ``ratchet serve`` printed
    TOKEN = "token"  # a bearer of RATCHET_API_TOKEN
    GITHUB = "github"  # signed in with GitHub


@dataclass(frozen=True)
class Viewer:
    kind: ViewerKind
    login: str


class Permission(IntEnum):
    NONE = 0
    READ = 1
    WRITE = 2


class AccessUnknown(Exception):
    """GitHub could not say what a viewer may do (unavailable, rate limited): try later."""


class PermissionLookup(Protocol):
    def permission(self, login: str, slug: str) -> Permission:
        """``login``'s permission on GitHub repository ``slug`` (``owner/name``)."""
        ...


def repo_slug(repo: str, *, web_url: str) -> str | None:
    """``owner/name`` of a run's repository when it is a GitHub URL under ``web_url``
    (``https://github.com/acme/widgets.git``); None for anything else (a local path)."""
    prefix = web_url.rstrip("/") + "/"
    if not repo.startswith(prefix):
        return None
    parts = repo[len(prefix):].removesuffix(".git").strip("/").split("/")
    if len(parts) != 2 or not all(parts):
        return None
    return "/".join(parts)


class GitHubPermissions:
    """``PermissionLookup`` through the App's installation token, cached per (login, repo).

    An unknown user or a repository the App is not installed on reads as no permission;
    any other failure raises ``AccessUnknown`` (the page answers 503, nothing is cached).
    """

    def __init__(self, client: GitHubClient, *, ttl: float = PERMISSION_TTL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.ttl = ttl
        self.clock = clock
        self._cache: dict[tuple[str, str], tuple[float, Permission]] = {}
        self._lock = threading.Lock()

    def permission(self, login: str, slug: str) -> Permission:
        key = (login.lower(), slug.lower())
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        answer = self._ask(login, slug)
        with self._lock:
            self._cache[key] = (now + self.ttl, answer)
        return answer

    def _ask(self, login: str, slug: str) -> Permission:
        owner, name = slug.split("/", 1)
        try:
            installation = self.client.installation_id(owner, name)
            found = self.client.get(PERMISSION, {"owner": owner, "repo": name,
                                                 "username": login}, installation=installation)
        except NotFound:  # no such user, or the App is not installed there
            return Permission.NONE
        except GitHubFailure as exc:
            log.warning("could not ask GitHub for %r's access to %r: %s", login, slug, exc)
            raise AccessUnknown(f"GitHub could not say what {login} may do on {slug}: {exc}"
                                ) from exc
        return Permission(_LEVELS.get(str(found.get("permission") or "none"), 0))


class Gate:
    """What a viewer may see and do with the runs of a repository (``Run.repo``)."""

    def __init__(self, lookup: PermissionLookup | None, *, web_url: str) -> None:
        self.lookup = lookup
        self.web_url = web_url

    def permission(self, viewer: Viewer, repo: str) -> Permission:
        """Blocking (it may ask GitHub); ``AccessUnknown`` when GitHub cannot say."""
        if viewer.kind is ViewerKind.OPERATOR:
            return Permission.WRITE
        if viewer.kind is ViewerKind.TOKEN:
            return Permission.READ
        slug = repo_slug(repo, web_url=self.web_url)
        if slug is None or self.lookup is None:
            return Permission.NONE
        return self.lookup.permission(viewer.login, slug)

    def sees_all(self, viewer: Viewer) -> bool:
        """Whether ``viewer`` reads every run (the operator, the API token)."""
        return viewer.kind is not ViewerKind.GITHUB

    def readable(self, viewer: Viewer, repos: Iterable[str]) -> list[str] | None:
        """The repositories among ``repos`` the viewer may read; None means every one."""
        if self.sees_all(viewer):
            return None
        wanted = list(repos)
        if len(wanted) <= 1:
            return [repo for repo in wanted if self.permission(viewer, repo) >= Permission.READ]
        # Unknown answers are asked of GitHub side by side (the client is thread-safe).
        with ThreadPoolExecutor(max_workers=LOOKUPS_AT_ONCE) as pool:
            answers = list(pool.map(lambda repo: self.permission(viewer, repo), wanted))
        return [repo for repo, answer in zip(wanted, answers, strict=True)
                if answer >= Permission.READ]
