"""One request through the fake, from bytes in to bytes out (or a dropped connection).

The order is GitHub's where it shows: route (unknown: 404), fault, credentials (401), rate
limit, parameters and body against the OpenAPI description (404 for a malformed path
parameter, 400 for malformed JSON, 422 otherwise), repository visibility (404), then token
permissions (403), then the handler under the world's lock. Every step is recorded on the call.
Responses carry GitHub's headers: JSON content type, ``x-github-request-id``, the
``x-ratelimit-*`` set, an ``etag`` on reads (``If-None-Match`` gets 304).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .auth import Principal, authenticate
from .errors import (
    REST_DOCS,
    ApiError,
    InvalidRequest,
    forbidden_for_integration,
    not_found,
)
from .faults import (
    Delay,
    DropAfterApply,
    Fault,
    FaultTable,
    Http502,
    PrimaryRateLimit,
    SecondaryRateLimit,
)
from .openapi import Operation, Spec
from .ratelimit import Budget, RateLimits, primary_limit_error, secondary_limit_error
from .recording import Call, Recorder
from .render.links import Links
from .routes import Reply, Request, Route
from .routes.graphql import GRAPHQL_OPERATION
from .state import AuthKind, World

logger = logging.getLogger(__name__)

_REPOSITORIES = re.compile(r"^/repositories/(\d+)(/.*)?$")
_API_VERSION = "2022-11-28"


@dataclass(frozen=True)
class RawRequest:
    method: str
    target: str  # path and query as sent
    headers: Mapping[str, str]  # case-insensitive lookups (lower-case keys are asked for)
    body: bytes


@dataclass(frozen=True)
class Outcome:
    status: int | None  # None: close the connection without answering
    headers: dict[str, str]
    body: bytes


def _parse_body(raw: bytes) -> tuple[Any, str | None]:
    if not raw.strip():
        return None, None
    try:
        return json.loads(raw), None
    except (UnicodeDecodeError, json.JSONDecodeError):
        return raw.decode(errors="replace"), "Problems parsing JSON"


class Pipeline:
    """Routes, faults, authentication, validation and handlers for one fake server."""

    def __init__(
        self,
        *,
        world: World,
        spec: Spec,
        routes: Mapping[str, Route],
        faults: FaultTable,
        recorder: Recorder,
        limits: RateLimits,
        links: Links,
    ) -> None:
        self.world = world
        self.spec = spec
        self.routes = routes
        self.faults = faults
        self.recorder = recorder
        self.limits = limits
        self.links = links
        documented = {op.operation_id for op in spec.operations}
        documented.add(GRAPHQL_OPERATION.operation_id)
        if documented != set(routes):
            missing, extra = sorted(documented - set(routes)), sorted(set(routes) - documented)
            raise AssertionError(
                f"routes and the OpenAPI subset disagree: without a handler {missing}, "
                f"undocumented {extra}; rerun tests/fakes/extract_openapi.py after changing "
                "its OPERATIONS"
            )

    def handle(self, raw: RawRequest) -> Outcome:
        split = urlsplit(raw.target)
        pairs = parse_qsl(split.query, keep_blank_values=True)
        body, json_problem = _parse_body(raw.body)
        call = self.recorder.start(raw.method, split.path, dict(pairs), body)
        path = self._canonical(split.path)
        matched = self._match(raw.method, path)
        if matched is None:
            error = ApiError(404, "Not Found", documentation_url=REST_DOCS)
            reply = Reply(error.status, error.body(default_docs=REST_DOCS))
            return self._respond(raw, call, reply, None)
        operation, path_params = matched
        route = self.routes[operation.operation_id]
        call.template, call.operation_id = operation.template, operation.operation_id
        fault = self.faults.take(raw.method, template=operation.template, path=path)
        call.fault = fault.name if fault is not None else None
        budget: Budget | None = None
        try:
            self._fault_before(fault, raw, route)
            principal = self._authenticate(call, raw, route)
            resource = "graphql" if operation is GRAPHQL_OPERATION else "core"
            budget = self.limits.spend(principal.rate_key, resource, now=self.world.clock.now())
            values = self._validate(call, operation, path_params, dict(pairs), body, json_problem)
            request = self._authorize(raw, route, principal, values, path, pairs, body)
            with self.world.lock:
                reply = route.handler(request)
        except ApiError as error:
            if isinstance(error, InvalidRequest):
                self.recorder.fail_validation(call, error.problems)
            reply = Reply(error.status, error.body(default_docs=operation.docs_url), error.headers)
        if reply.problems:
            self.recorder.fail_validation(call, reply.problems)
        if isinstance(fault, Delay) and fault.after_apply:
            time.sleep(fault.seconds)
        if 200 <= reply.status < 300:
            mismatches = self.spec.check_response(operation, reply.status, reply.body)
            if mismatches:
                logger.warning("%s answered off-schema: %r", operation.operation_id, mismatches)
                self.recorder.mismatch(call, mismatches)
        if isinstance(fault, DropAfterApply):
            call.response = reply.body
            return Outcome(None, {}, b"")
        return self._respond(raw, call, reply, budget)

    def _canonical(self, path: str) -> str:
        """``/repositories/{id}/...`` (where GitHub's Link headers point) as ``/repos/o/r/...``."""
        found = _REPOSITORIES.match(path)
        if found is None:
            return path
        with self.world.lock:
            repo = self.world.repo_by_id(int(found.group(1)))
        return path if repo is None else f"/repos/{repo.full_name}{found.group(2) or ''}"

    def _match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        if method == "POST" and path == GRAPHQL_OPERATION.template:
            return GRAPHQL_OPERATION, {}
        return self.spec.match(method, path)

    def _fault_before(self, fault: Fault | None, raw: RawRequest, route: Route) -> None:
        if isinstance(fault, Http502):
            raise ApiError(502, "Server Error")
        if isinstance(fault, PrimaryRateLimit):
            try:
                principal = authenticate(self.world, raw.headers, app_endpoint=route.app_endpoint)
            except ApiError:
                principal = Principal(AuthKind.ANONYMOUS)
            now = self.world.clock.now()
            budget = self.limits.peek(principal.rate_key, "core", now=now)
            budget.reset = int(now) + fault.reset_in
            raise primary_limit_error(budget, caller=principal.rate_key, status=fault.status)
        if isinstance(fault, SecondaryRateLimit):
            raise secondary_limit_error(retry_after=fault.retry_after, status=fault.status)
        if isinstance(fault, Delay) and not fault.after_apply:
            time.sleep(fault.seconds)

    def _authenticate(self, call: Call, raw: RawRequest, route: Route) -> Principal:
        try:
            principal = authenticate(self.world, raw.headers, app_endpoint=route.app_endpoint)
        except ApiError:
            call.auth = AuthKind.INVALID
            raise
        call.auth, call.actor = principal.kind, principal.label
        return principal

    def _validate(
        self,
        call: Call,
        operation: Operation,
        path_params: dict[str, str],
        query: dict[str, str],
        body: Any,
        json_problem: str | None,
    ) -> dict[str, Any]:
        values, path_problems, query_problems = self.spec.check_parameters(
            operation, path_params, query
        )
        if path_problems:
            self.recorder.fail_validation(call, path_problems)
            raise not_found()
        if json_problem is not None:
            self.recorder.fail_validation(call, [json_problem])
            raise ApiError(400, json_problem)
        problems = list(query_problems)
        if body is not None or operation.body_required:
            problems += self.spec.check_body(operation, body if body is not None else {})
        if problems:
            raise InvalidRequest(problems)
        return values

    def _authorize(
        self,
        raw: RawRequest,
        route: Route,
        principal: Principal,
        values: dict[str, Any],
        path: str,
        pairs: list[tuple[str, str]],
        body: Any,
    ) -> Request:
        """Who may do what: App endpoints want the JWT, the rest a token that sees the repo."""
        world = self.world
        if route.app_endpoint and principal.kind is not AuthKind.JWT:
            raise ApiError(
                401, "A JSON web token could not be decoded", documentation_url=REST_DOCS
            )
        if not route.app_endpoint and principal.kind is AuthKind.JWT:
            raise forbidden_for_integration()
        repo = None
        link_path = path
        if "owner" in values and "repo" in values and not route.app_endpoint:
            with world.lock:
                repo = world.repo(values["owner"], values["repo"])
                if repo is None or not principal.sees(world, repo):
                    raise not_found()
            rest = path.split("/", 4)[4] if path.count("/") >= 4 else ""
            link_path = f"/repositories/{repo.id}" + (f"/{rest}" if rest else "")
        writes = raw.method != "GET" or route.operation_id == "graphql"
        if principal.kind is AuthKind.ANONYMOUS and writes and not route.anonymous:
            raise ApiError(401, route.unauthenticated, documentation_url=REST_DOCS)
        granted = any(principal.may(resource, level) for resource, level in route.permissions)
        if route.permissions and principal.token is not None and not granted:
            accepted = "; ".join(f"{r}={level}" for r, level in route.permissions)
            raise forbidden_for_integration(accepted=accepted)
        return Request(
            world=world,
            principal=principal,
            params=values,
            query=pairs,
            body=body,
            links=self.links,
            now=world.clock.now(),
            repo=repo,
            link_path=link_path,
        )

    def _respond(
        self,
        raw: RawRequest,
        call: Call,
        reply: Reply,
        budget: Budget | None,
    ) -> Outcome:
        now = self.world.clock.now()
        if budget is None:
            budget = self.limits.peek("anonymous", "core", now=now)
        headers = {
            "content-type": "application/json; charset=utf-8",
            "x-github-media-type": "github.v3; format=json",
            "x-github-api-version-selected": _API_VERSION,
            "x-github-request-id": f"FA4E:{call.seq:06X}:{secrets.token_hex(4).upper()}",
            **budget.headers(),
            **reply.headers,
        }
        payload = json.dumps(reply.body).encode()
        status = reply.status
        if raw.method == "GET" and status == 200:
            etag = f'W/"{hashlib.sha256(payload).hexdigest()}"'
            headers["etag"] = etag
            if raw.headers.get("if-none-match") == etag:
                status, payload = 304, b""
        call.status, call.response = status, reply.body
        return Outcome(status, headers, payload)
