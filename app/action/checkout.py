"""The job's checkout holds no credential when verify mode's checks run.

``actions/checkout`` keeps the job's token in the checkout unless told not to
(``persist-credentials: false``): v4 as an ``http.<url>.extraheader`` in ``.git/config``, later
versions in a file under ``RUNNER_TEMP`` that ``.git/config`` includes. A check that reads the
repository's git directory (any check, with ``RATCHET_SANDBOX=none``) would find it, and on
``pull_request_target`` that token may write to the repository. Verify mode needs no git
credential after the checkout (its check run goes through the API), so before any check runs
``scrub_credentials`` removes from the repository's own config every entry that can carry one:
extra HTTP headers, credential helpers and settings, included files, and URLs with a user or
password (a remote's URL keeps its host and path).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from plumbing.git import Git

# Config names (git lower-cases the section and key) that carry a credential or name a file
# that may: dropped whatever their value.
_CREDENTIAL_NAMES = re.compile(
    r"^(http\..*extraheader|credential\..*|include\.path|includeif\..*\.path)$")
# A URL with a user (and maybe a password) before its host.
_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.IGNORECASE)
_URL_NAMES = re.compile(r"^remote\..*\.(url|pushurl)$")


def scrub_credentials(repo: Git) -> list[str]:
    """Remove what can carry a credential from ``repo``'s config file (see the module
    docstring); the names removed or rewritten, for the job's log (a user in a name hidden)."""
    config = _config_file(repo)
    if not config.is_file():
        return []
    editor = Git(git_dir=None, cwd=config.parent)
    listing = editor("config", "--file", str(config), "--null", "--list")
    values: dict[str, list[str]] = {}
    for entry in listing.decode("utf-8", "surrogateescape").split("\0"):
        name, _, value = entry.partition("\n")
        if name:
            values.setdefault(name, []).append(value)
    changed = []
    for name, given in values.items():
        drop = bool(_CREDENTIAL_NAMES.match(name) or _USERINFO.search(name))
        if not drop and not (_URL_NAMES.match(name) and any(map(_USERINFO.search, given))):
            continue
        editor("config", "--file", str(config), "--unset-all", name)
        for value in () if drop else given:  # a remote keeps its URLs, without the user
            editor("config", "--file", str(config), "--add", name, _without_userinfo(value))
        changed.append(_USERINFO.sub(r"\g<scheme>***@", name))
    return changed


def _config_file(repo: Git) -> Path:
    """The repository's own config (shared by its linked worktrees)."""
    common = repo.text("rev-parse", "--path-format=absolute", "--git-common-dir")
    return Path(common) / "config"


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=host))
