"""Git references, commits and branches, from what ``gitdata`` read."""

from __future__ import annotations

import zlib
from typing import Any
from urllib.parse import quote

from ..clock import iso8601, parse_iso8601
from ..gitdata import CommitInfo, GitRef
from ..state import Repo, make_node_id
from .links import Links


def render_ref(repo: Repo, ref: GitRef, links: Links) -> dict[str, Any]:
    """``git-ref``: ``GET /git/ref/...`` and each entry of ``GET /git/matching-refs/...``."""
    short = ref.name.removeprefix("refs/")
    return {
        "ref": ref.name,
        "node_id": make_node_id("REF", zlib.crc32(f"{repo.id}:{ref.name}".encode())),
        "url": links.repo_api(repo, f"/git/refs/{short}"),
        "object": {
            "type": ref.type,
            "sha": ref.sha,
            "url": links.repo_api(repo, f"/git/{ref.type}s/{ref.sha}"),
        },
    }


def _git_user(name: str, email: str, date: str) -> dict[str, Any]:
    parsed = parse_iso8601(date)
    return {"name": name, "email": email, "date": iso8601(parsed) if parsed is not None else date}


def render_commit(repo: Repo, commit: CommitInfo, links: Links) -> dict[str, Any]:
    """``commit``; ``author``/``committer`` are null as for emails no GitHub account claims."""
    return {
        "sha": commit.sha,
        "node_id": make_node_id("C", int(commit.sha[:15], 16)),
        "commit": {
            "author": _git_user(commit.author_name, commit.author_email, commit.author_date),
            "committer": _git_user(
                commit.committer_name, commit.committer_email, commit.committer_date
            ),
            "message": commit.message,
            "tree": {"sha": commit.tree, "url": links.repo_api(repo, f"/git/trees/{commit.tree}")},
            "url": links.repo_api(repo, f"/git/commits/{commit.sha}"),
            "comment_count": 0,
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        },
        "url": links.repo_api(repo, f"/commits/{commit.sha}"),
        "html_url": links.repo_web(repo, f"/commit/{commit.sha}"),
        "comments_url": links.repo_api(repo, f"/commits/{commit.sha}/comments"),
        "author": None,
        "committer": None,
        "parents": [
            {
                "sha": parent,
                "url": links.repo_api(repo, f"/commits/{parent}"),
                "html_url": links.repo_web(repo, f"/commit/{parent}"),
            }
            for parent in commit.parents
        ],
    }


def render_branch(repo: Repo, name: str, commit: CommitInfo, links: Links) -> dict[str, Any]:
    """``branch-with-protection`` for an unprotected branch."""
    api = links.repo_api(repo, f"/branches/{quote(name, safe='/')}")
    return {
        "name": name,
        "commit": render_commit(repo, commit, links),
        "_links": {"self": api, "html": links.repo_web(repo, f"/tree/{name}")},
        "protected": False,
        "protection": {
            "enabled": False,
            "required_status_checks": {"enforcement_level": "off", "contexts": [], "checks": []},
        },
        "protection_url": f"{api}/protection",
    }
