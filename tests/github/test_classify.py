"""The pure decisions: which answer is which failure, which is a rate limit, what is scrubbed."""

from __future__ import annotations

import json

import pytest

from github.classify import Attempt, failure_for_response, failure_for_transport
from github.errors import (
    BadCredentials,
    Forbidden,
    GitHubFailure,
    GitHubRejected,
    GitHubUnavailable,
    InvalidRequest,
    NotFound,
    OutcomeUnknown,
)
from github.ratelimit import RESET_SLACK, SECONDARY_DEFAULT_WAIT, RateLimitHit, rate_limit_hit
from github.transport import is_mutation

TOKEN = "ghs_" + "S3cr3t" * 6
POST = Attempt(
    "POST", "https://api.github.com/repos/o/r/pulls", True, "installation 7", secrets=(TOKEN,)
)
GET = Attempt("GET", "https://api.github.com/repos/o/r", False, "installation 7", secrets=(TOKEN,))
NOW = 1_700_000_000.0


def body(message: str, **extra: object) -> bytes:
    return json.dumps({"message": message, **extra}).encode()


@pytest.mark.parametrize(
    ("status", "kind", "failure_class"),
    [
        (500, GitHubUnavailable, "transient"),
        (502, GitHubUnavailable, "transient"),
        (400, InvalidRequest, "deterministic"),
        (422, InvalidRequest, "deterministic"),
        (401, BadCredentials, "deterministic"),
        (403, Forbidden, "authority"),
        (404, NotFound, "deterministic"),
        (410, NotFound, "deterministic"),
        (409, GitHubRejected, "deterministic"),
        (301, GitHubRejected, "deterministic"),
    ],
)
def test_statuses_map_to_failure_classes(
    status: int, kind: type[GitHubFailure], failure_class: str
) -> None:
    failure = failure_for_response(POST, status, {}, body("nope"))
    assert type(failure) is kind
    assert failure.failure_class == failure_class
    assert failure.status == status and failure.evidence["path"] == "/repos/o/r/pulls"


def test_successes_are_not_failures() -> None:
    assert failure_for_response(GET, 200, {}, b"{}") is None
    assert failure_for_response(POST, 201, {}, b"{}") is None
    assert failure_for_response(GET, 304, {}, b"") is None


def test_422_names_githubs_reasons() -> None:
    errors = [{"resource": "PullRequest", "field": "head", "code": "invalid"}]
    failure = failure_for_response(POST, 422, {}, body("Validation Failed", errors=errors))
    assert "Validation Failed: PullRequest.head invalid" in str(failure)


def test_graphql_errors_in_a_200() -> None:
    mutation = Attempt(
        "POST", "https://api.github.com/graphql", True, "installation 7", graphql=True
    )

    def answer(kind: str) -> GitHubFailure | None:
        errors = [{"type": kind, "message": f"{kind} happened"}]
        return failure_for_response(mutation, 200, {}, json.dumps({"errors": errors}).encode())

    assert isinstance(answer("NOT_FOUND"), NotFound)
    assert isinstance(answer("FORBIDDEN"), Forbidden)
    assert isinstance(answer("UNPROCESSABLE"), InvalidRequest)
    assert failure_for_response(mutation, 200, {}, b'{"data": {"x": 1}}') is None


def test_a_lost_answer_is_ambiguous_only_for_a_sent_write() -> None:
    lost = ConnectionResetError("reset by peer")
    assert isinstance(failure_for_transport(POST, lost, sent=True), OutcomeUnknown)
    assert isinstance(failure_for_transport(POST, lost, sent=False), GitHubUnavailable)
    assert isinstance(failure_for_transport(GET, lost, sent=True), GitHubUnavailable)


def test_secrets_and_token_shapes_are_scrubbed_from_messages_and_evidence() -> None:
    other = "ghp_" + "x" * 36  # a token this attempt never used, recognised by its shape
    echoed = body(f"bad token {TOKEN}", errors=[{"message": f"also {other}"}])
    failure = failure_for_response(POST, 422, {}, echoed)
    assert failure is not None
    for text in (str(failure), repr(failure.evidence)):
        assert TOKEN not in text and other not in text and "***" in text
    assert TOKEN not in repr(POST)


def test_rate_limit_answers() -> None:
    primary = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 30)}
    assert rate_limit_hit(403, primary, b"{}", now=NOW) == RateLimitHit(
        "primary", NOW + 30 + RESET_SLACK
    )
    assert rate_limit_hit(429, {"retry-after": "7"}, b"{}", now=NOW) == RateLimitHit(
        "secondary", NOW + 7
    )
    message = body("You have exceeded a secondary rate limit. Please wait.")
    assert rate_limit_hit(403, {}, message, now=NOW) == RateLimitHit(
        "secondary", NOW + SECONDARY_DEFAULT_WAIT
    )
    assert rate_limit_hit(403, {"x-ratelimit-remaining": "12"}, body("Forbidden"), now=NOW) is None
    assert rate_limit_hit(404, {"retry-after": "7"}, b"{}", now=NOW) is None
    graphql = json.dumps({"errors": [{"type": "RATE_LIMITED", "message": "spent"}]}).encode()
    assert rate_limit_hit(200, primary, graphql, now=NOW) == RateLimitHit(
        "primary", NOW + 30 + RESET_SLACK
    )
    assert rate_limit_hit(200, primary, b'{"data": {}}', now=NOW) is None


def test_mutations_are_told_from_queries() -> None:
    assert is_mutation("mutation { x }")
    assert is_mutation("  # why\n  mutation($id: ID!) { x }")
    assert not is_mutation("query { viewer { login } }")
    assert not is_mutation("{ viewer { login } }")
