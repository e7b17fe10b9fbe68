"""One repository's view of the GitHub client: every call names its owner, name and credentials.

Effect executors and the authorizer act on one repository through one installation (``None``
in token mode, where the configured token is used). ``RepoAPI`` fills ``{owner}`` and
``{repo}`` into each URL template and passes the installation, so a handler writes
``api.post("/repos/{owner}/{repo}/pulls", data=...)`` and cannot mix repositories up.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .client import ITEMS, GitHubClient

# Items per page when listing: GitHub's maximum, so a lookup is one call for up to 100 items.
PER_PAGE = 100


class RepoTarget(NamedTuple):
    """Where a run lives on GitHub: ``owner/repo``, through ``installation`` (None: a token)."""

    owner: str
    repo: str
    installation: int | None

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"


class RepoAPI:
    """``GitHubClient`` calls on one repository (``{owner}``/``{repo}`` filled in)."""

    def __init__(self, client: GitHubClient, target: RepoTarget) -> None:
        self.client = client
        self.target = target

    def __repr__(self) -> str:
        return f"RepoAPI({self.target.full_name!r}, installation={self.target.installation!r})"

    def _vars(self, url_vars: dict[str, Any]) -> dict[str, Any]:
        return {"owner": self.target.owner, "repo": self.target.repo, **url_vars}

    def get(self, url: str, **url_vars: Any) -> Any:
        return self.client.get(url, self._vars(url_vars), installation=self.target.installation)

    def getiter(self, url: str, *, iterable_key: str = ITEMS, **url_vars: Any) -> list[Any]:
        """Every item of a list, ``PER_PAGE`` at a time (the URL template takes ``per_page``)."""
        variables = self._vars({"per_page": PER_PAGE, **url_vars})
        return self.client.getiter(
            url, variables, installation=self.target.installation, iterable_key=iterable_key
        )

    def post(self, url: str, data: Any, **url_vars: Any) -> Any:
        return self.client.post(
            url, self._vars(url_vars), data=data, installation=self.target.installation
        )

    def patch(self, url: str, data: Any, **url_vars: Any) -> Any:
        return self.client.patch(
            url, self._vars(url_vars), data=data, installation=self.target.installation
        )

    def graphql(self, query: str, **variables: Any) -> Any:
        return self.client.graphql(
            query, installation=self.target.installation, variables=variables
        )

    def token(self) -> str:
        """The credential git uses for this repository (see ``github.gitauth``); never log it."""
        return self.client.installation_token(self.target.installation)
