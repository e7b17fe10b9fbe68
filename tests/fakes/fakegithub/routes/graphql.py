"""``POST /graphql``, serving the one mutation REST lacks: ``markPullRequestReadyForReview``.

GitHub's REST API cannot take a pull request out of draft; this mutation can. The document is
read with a few regular expressions rather than a GraphQL parser: the mutation field (with an
optional alias), its ``input`` given inline (``{pullRequestId: "PR_..."}`` or
``{pullRequestId: $id}``) or as a variable (``input: $input``), and a flat selection of
``pullRequest`` fields plus ``clientMutationId``. Failures come back the GraphQL way: HTTP 200
with an ``errors`` list (``NOT_FOUND`` for an unknown id, ``FORBIDDEN`` without permission).
A document the fake cannot serve is answered with an error and recorded as a validation failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..openapi import Operation
from ..state import PullRequest, Repo
from .base import Reply, Request, Route

GRAPHQL_DOCS = "https://docs.github.com/graphql"

# A stand-in for the OpenAPI operation REST endpoints have: GraphQL has no REST description.
GRAPHQL_OPERATION = Operation(
    operation_id="graphql",
    method="POST",
    template="/graphql",
    docs_url=GRAPHQL_DOCS,
    parameters=[],
    body_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}, "variables": {"type": ["object", "null"]}},
        "required": ["query"],
    },
    body_required=True,
    response_schemas={},
)

_MUTATION = re.compile(
    r"(?:(?P<alias>[A-Za-z_]\w*)\s*:\s*)?markPullRequestReadyForReview\s*"
    r"\(\s*input\s*:\s*(?P<input>\{[^{}]*\}|\$[A-Za-z_]\w*)\s*\)"
)
_STRING_OR_VARIABLE = r"\s*:\s*(?:\"(?P<literal>(?:[^\"\\]|\\.)*)\"|\$(?P<variable>[A-Za-z_]\w*))"
_TOKEN = re.compile(r"[A-Za-z_]\w*|[{}]")

# PullRequest fields the fake can answer, from a pull request and its repository.
_PULL_FIELDS: dict[str, Callable[[Repo, PullRequest], Any]] = {
    "__typename": lambda repo, pull: "PullRequest",
    "id": lambda repo, pull: pull.node_id,
    "databaseId": lambda repo, pull: pull.id,
    "number": lambda repo, pull: pull.number,
    "isDraft": lambda repo, pull: pull.draft,
    "title": lambda repo, pull: pull.title,
    "state": lambda repo, pull: pull.state.upper(),
    "url": lambda repo, pull: f"https://github.com/{repo.full_name}/pull/{pull.number}",
    "headRefName": lambda repo, pull: pull.head_ref,
    "headRefOid": lambda repo, pull: pull.head_sha,
    "baseRefName": lambda repo, pull: pull.base_ref,
}


class _Unsupported(Exception):
    """The document asks for something the fake does not serve."""


def _argument(text: str, name: str, variables: dict[str, Any]) -> Any:
    found = re.search(name + _STRING_OR_VARIABLE, text)
    if found is None:
        return None
    if found.group("variable") is not None:
        return variables.get(found.group("variable"))
    return found.group("literal")


def _selection(query: str, start: int) -> dict[str, Any]:
    """The ``{ ... }`` selection after ``start`` as nested dicts (a leaf maps to None)."""
    tokens = _TOKEN.findall(query[start:])
    if not tokens or tokens[0] != "{":
        return {}
    root: dict[str, Any] = {}
    stack = [root]
    last: str | None = None
    for token in tokens[1:]:
        if token == "{":
            if last is None:
                raise _Unsupported("a selection set without a field")
            child: dict[str, Any] = {}
            stack[-1][last] = child
            stack.append(child)
            last = None
        elif token == "}":
            stack.pop()
            if not stack:
                break
            last = None
        else:
            stack[-1][token] = None
            last = token
    return root


def _find_pull(request: Request, node_id: str) -> tuple[Repo, PullRequest] | None:
    for repo in request.world.repos.values():
        if not request.principal.sees(request.world, repo):
            continue
        for pull in repo.pulls.values():
            if pull.node_id == node_id:
                return repo, pull
    return None


def _error(kind: str, field: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "path": [field],
        "locations": [{"line": 1, "column": 1}],
        "message": message,
    }


def mark_ready_for_review(request: Request) -> Reply:
    query = request.body["query"]
    variables = request.body.get("variables") or {}
    found = _MUTATION.search(query)
    if found is None or not query.lstrip().startswith("mutation"):
        problem = "the fake GitHub serves only the markPullRequestReadyForReview mutation"
        return Reply(200, {"errors": [{"message": problem}]}, problems=[problem])
    field = found.group("alias") or "markPullRequestReadyForReview"
    raw_input = found.group("input")
    if raw_input.startswith("$"):
        given = variables.get(raw_input[1:]) or {}
        node_id, client_id = given.get("pullRequestId"), given.get("clientMutationId")
    else:
        node_id = _argument(raw_input, "pullRequestId", variables)
        client_id = _argument(raw_input, "clientMutationId", variables)
    try:
        selection = _selection(query, found.end())
    except _Unsupported as exc:
        return Reply(200, {"errors": [{"message": str(exc)}]}, problems=[str(exc)])
    wanted = selection.get("pullRequest") or {}
    unknown = [name for name, sub in wanted.items() if name not in _PULL_FIELDS or sub]
    if unknown:
        message = f"Field '{unknown[0]}' doesn't exist on type 'PullRequest'"
        return Reply(200, {"errors": [{"message": message}]}, problems=[message])
    target = _find_pull(request, node_id) if isinstance(node_id, str) else None
    if target is None:
        message = f"Could not resolve to a node with the global id of '{node_id}'."
        return Reply(200, {"data": {field: None}, "errors": [_error("NOT_FOUND", field, message)]})
    repo, pull = target
    if not request.principal.may("pull_requests", "write"):
        message = "Resource not accessible by integration"
        return Reply(200, {"data": {field: None}, "errors": [_error("FORBIDDEN", field, message)]})
    pull.draft = False
    pull.updated_at = request.now
    payload: dict[str, Any] = {}
    if "clientMutationId" in selection:
        payload["clientMutationId"] = client_id
    if "pullRequest" in selection:
        payload["pullRequest"] = {name: _PULL_FIELDS[name](repo, pull) for name in wanted}
    return Reply(200, {"data": {field: payload}})


ROUTES = (
    Route(
        "graphql",
        mark_ready_for_review,
        unauthenticated="This endpoint requires you to be authenticated.",
    ),
)
