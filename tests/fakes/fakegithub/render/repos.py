"""Repositories: ``full-repository`` for ``GET /repos/{owner}/{repo}``, ``repository`` inside
pull requests and installation tokens (the same fields serve both)."""

from __future__ import annotations

from typing import Any

from ..clock import iso8601
from ..state import Repo
from .accounts import render_user
from .links import Links

# The templated API URLs every repository object carries, relative to its API URL.
_URL_FIELDS = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}


def render_repo(
    repo: Repo,
    links: Links,
    *,
    default_branch: str,
    open_issues: int,
    pushed_at: float | None = None,
) -> dict[str, Any]:
    """A repository object.

    ``clone_url`` is the bare repository's ``file://`` URL (or the git server the test put in
    front of it) rather than github.com: a client that clones or pushes where the API tells it
    reaches the repository the test controls.
    """
    api = links.repo_api(repo)
    visibility = "private" if repo.private else "public"
    return {
        "id": repo.id,
        "node_id": repo.node_id,
        "name": repo.name,
        "full_name": repo.full_name,
        "owner": render_user(repo.owner, links),
        "private": repo.private,
        "html_url": links.repo_web(repo),
        "description": repo.description,
        "fork": False,
        "url": api,
        **{name: api + suffix for name, suffix in _URL_FIELDS.items()},
        "git_url": f"git://github.com/{repo.full_name}.git",
        "ssh_url": f"git@github.com:{repo.full_name}.git",
        "clone_url": repo.clone_url or repo.git_dir.resolve().as_uri(),
        "svn_url": links.repo_web(repo),
        "mirror_url": None,
        "homepage": None,
        "language": None,
        "forks_count": 0,
        "forks": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "size": 0,
        "default_branch": default_branch,
        "open_issues_count": open_issues,
        "open_issues": open_issues,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": True,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": visibility,
        "pushed_at": iso8601(pushed_at if pushed_at is not None else repo.created_at),
        "created_at": iso8601(repo.created_at),
        "updated_at": iso8601(repo.created_at),
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "license": None,
        "network_count": 0,
        "subscribers_count": 0,
    }
