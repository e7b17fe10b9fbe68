"""The one-time sign-in link of a dashboard without GitHub sign-in (as Jupyter's token).

``ratchet serve`` announces ``http://127.0.0.1:8000/?token=...`` on its log (stderr); whoever
opens it gets the operator's session cookie, and the token is spent: the next link is
announced at once. Reaching the port is therefore not enough to read or act, and an agent
that can reach it (the sandbox cannot) holds no cookie. The token lives in this process
only: a restart announces a new link and, with a per-process session key, ends old sessions.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

TOKEN_PARAM = "token"


def announce_in_log(url: str) -> None:
    log.warning("open the dashboard (this link signs you in once): %s", url)


class SignInLink:
    """The current one-time token; ``redeem`` spends it and announces the next link."""

    def __init__(self, base_url: str, *,
                 announce: Callable[[str], None] = announce_in_log) -> None:
        self.base_url = base_url.rstrip("/")
        self.announce = announce
        self._lock = threading.Lock()
        self._token = secrets.token_urlsafe(32)

    @property
    def url(self) -> str:
        with self._lock:
            return f"{self.base_url}/?{TOKEN_PARAM}={self._token}"

    def redeem(self, offered: str) -> bool:
        """Whether ``offered`` is the current token; if so it is spent and the next link
        announced (two tabs racing for one link: one wins)."""
        with self._lock:
            if not hmac.compare_digest(self._token.encode(), offered.encode()):
                return False
            self._token = secrets.token_urlsafe(32)
            url = f"{self.base_url}/?{TOKEN_PARAM}={self._token}"
        self.announce(url)
        return True
