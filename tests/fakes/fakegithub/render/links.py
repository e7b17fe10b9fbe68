"""Where objects live: API URLs on the fake's own address, web URLs on github.com.

API URLs point back at the fake so a client that follows ``url`` fields (or ``Link`` headers)
stays on it; ``html_url`` values are what a person would open, kept on github.com.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from ..state import Repo, User


@dataclass(frozen=True)
class Links:
    api: str  # e.g. http://127.0.0.1:54321, no trailing slash
    web: str = "https://github.com"

    def repo_api(self, repo: Repo, suffix: str = "") -> str:
        return f"{self.api}/repos/{repo.full_name}{suffix}"

    def repo_web(self, repo: Repo, suffix: str = "") -> str:
        return f"{self.web}/{repo.full_name}{suffix}"

    def user_api(self, user: User) -> str:
        return f"{self.api}/users/{quote(user.login, safe='')}"

    def user_web(self, user: User) -> str:
        if user.type == "Bot" and user.login.endswith("[bot]"):
            return f"{self.web}/apps/{user.login.removesuffix('[bot]')}"
        return f"{self.web}/{user.login}"
