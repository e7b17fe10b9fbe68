"""GitHub's error responses, raised by handlers and rendered once by the pipeline.

GitHub answers every REST error with ``{"message", "documentation_url", "status"}`` (the last as
a string) and, for 422 "Validation Failed", an ``errors`` list of ``{"resource", "field",
"code"}`` or ``{"code": "custom", "message"}`` entries; gidgethub turns these into
``BadRequest`` / ``InvalidField`` / ``ValidationError``, so the shapes matter to clients.
"""

from __future__ import annotations

from typing import Any

# Where GitHub points errors that belong to no single operation (bad credentials, unknown paths).
REST_DOCS = "https://docs.github.com/rest"


class ApiError(Exception):
    """An HTTP error GitHub would return; ``documentation_url`` defaults to the operation's."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
        documentation_url: str | None = None,
    ) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.errors = errors
        self.headers = headers or {}
        self.documentation_url = documentation_url

    def body(self, *, default_docs: str) -> dict[str, Any]:
        """The JSON body GitHub sends for this error."""
        payload: dict[str, Any] = {"message": self.message}
        if self.errors is not None:
            payload["errors"] = self.errors
        payload["documentation_url"] = self.documentation_url or default_docs
        payload["status"] = str(self.status)
        return payload


def not_found(message: str = "Not Found") -> ApiError:
    """404: also what GitHub answers for private resources the caller may not see."""
    return ApiError(404, message)


def forbidden_for_integration(*, accepted: str | None = None) -> ApiError:
    """403 for a token whose App permissions do not cover the request."""
    headers = {"x-accepted-github-permissions": accepted} if accepted else None
    return ApiError(403, "Resource not accessible by integration", headers=headers)


def validation_failed(*errors: dict[str, Any]) -> ApiError:
    """422 "Validation Failed" with GitHub's ``errors`` entries."""
    return ApiError(422, "Validation Failed", errors=list(errors))


def invalid_field(resource: str, field: str, code: str = "invalid") -> dict[str, Any]:
    """One ``errors`` entry naming a field (codes: missing, missing_field, invalid, ...)."""
    return {"resource": resource, "field": field, "code": code}


def custom_error(resource: str, message: str) -> dict[str, Any]:
    """One ``errors`` entry with GitHub's free-text ``custom`` code."""
    return {"resource": resource, "code": "custom", "message": message}


class InvalidRequest(ApiError):
    """422 "Invalid request." for a request that breaks GitHub's documented rules.

    The pipeline records it as a validation failure, like a body that breaks the schema.
    """

    def __init__(self, problems: list[str]) -> None:
        super().__init__(422, "Invalid request.\n\n" + "\n".join(problems))
        self.problems = problems
