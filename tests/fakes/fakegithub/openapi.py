"""GitHub's own OpenAPI description of the operations the fake serves: routing and validation.

The document is the vendored subset in ``tests/data/github-openapi-subset.json`` (see that
folder's README for its origin). It is the routing table (an operation exists in the fake only if
it is in the document and has a handler), and every request is checked against it: path and
query parameters against their schemas, the JSON body against ``requestBody``. Responses are
checked against the documented response schema too, which keeps the fake's shapes honest.

OpenAPI 3.0 is JSON Schema draft 4 plus ``nullable``; ``nullable`` is rewritten into draft-4
``type`` lists once at load, then ``jsonschema.Draft4Validator`` does the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator
from jsonschema.exceptions import ValidationError

from .paths import compile_template, match_template

SUBSET_PATH = Path(__file__).resolve().parents[2] / "data" / "github-openapi-subset.json"

_MAX_SHOWN_ERRORS = 3  # GitHub lists a few problems, not every one
_MAX_VALUE_CHARS = 60


def _with_null(schema: dict[str, Any]) -> dict[str, Any]:
    """Translate OpenAPI 3.0 ``nullable: true`` into draft 4 (``type`` lists, a null branch)."""
    rest = {k: v for k, v in schema.items() if k != "nullable"}
    if "type" in rest:
        rest["type"] = [rest["type"], "null"]
        if "enum" in rest:
            rest["enum"] = [*rest["enum"], None]
        return rest
    for combinator in ("oneOf", "anyOf"):
        if combinator in rest:
            rest[combinator] = [*rest[combinator], {"type": "null"}]
            return rest
    if "allOf" in rest or "$ref" in rest:
        return {"anyOf": [{"type": "null"}, rest]}
    return rest  # nullable without a type: anything goes already


def _draft4(node: Any) -> Any:
    if isinstance(node, dict):
        converted = {k: _draft4(v) for k, v in node.items()}
        return _with_null(converted) if converted.get("nullable") is True else converted
    if isinstance(node, list):
        return [_draft4(item) for item in node]
    return node


@dataclass(frozen=True)
class Parameter:
    name: str
    location: str  # path or query
    schema: dict[str, Any]
    required: bool


@dataclass
class Operation:
    """One documented operation: its route, parameters and schemas."""

    operation_id: str
    method: str  # upper case
    template: str
    docs_url: str
    parameters: list[Parameter]
    body_schema: dict[str, Any] | None
    body_required: bool
    response_schemas: dict[int, dict[str, Any]]
    regex: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.regex = compile_template(self.template)

    @property
    def specificity(self) -> int:
        """Literal characters in the template: literal routes win over parameters."""
        return len(re.sub(r"\{[a-z_]+\}", "", self.template))


class Spec:
    """The vendored operations, with validators built once per schema."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = _draft4(document)
        self.version = str(document["info"].get("x-extracted-from", document["info"]["version"]))
        self._components = self.document["components"]
        self.operations = sorted(self._read_operations(), key=lambda op: -op.specificity)
        self._validators: dict[int, Draft4Validator] = {}

    @classmethod
    def from_file(cls, path: Path = SUBSET_PATH) -> Spec:
        return cls(json.loads(path.read_text()))

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node and node["$ref"].startswith("#/components/"):
            _, _, kind, name = node["$ref"].split("/", 3)
            node = self._components[kind][name]
        return node

    def _read_operations(self) -> Iterator[Operation]:
        for template, methods in self.document["paths"].items():
            for method, raw in methods.items():
                parameters = [
                    Parameter(p["name"], p["in"], p.get("schema", {}), bool(p.get("required")))
                    for p in (self._resolve(item) for item in raw.get("parameters", []))
                ]
                body = raw.get("requestBody")
                body_schema = None
                if body is not None:
                    body = self._resolve(body)
                    body_schema = body["content"]["application/json"]["schema"]
                responses: dict[int, dict[str, Any]] = {}
                for status, response in raw.get("responses", {}).items():
                    content = self._resolve(response).get("content", {})
                    if status.isdigit() and "application/json" in content:
                        responses[int(status)] = content["application/json"]["schema"]
                yield Operation(
                    operation_id=raw["operationId"],
                    method=method.upper(),
                    template=template,
                    docs_url=raw.get("externalDocs", {}).get("url", "https://docs.github.com/rest"),
                    parameters=parameters,
                    body_schema=body_schema,
                    body_required=bool(body and body.get("required")),
                    response_schemas=responses,
                )

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        """The operation serving ``method path`` and its decoded path parameters."""
        for operation in self.operations:
            if operation.method != method:
                continue
            params = match_template(operation.regex, path)
            if params is not None:
                return operation, params
        return None

    def _validator(self, schema: dict[str, Any]) -> Draft4Validator:
        # The schema becomes the root of a document that also holds the components, so the
        # description's own "#/components/..." references resolve unchanged.
        key = id(schema)
        if key not in self._validators:
            self._validators[key] = Draft4Validator({**schema, "components": self._components})
        return self._validators[key]

    def check_parameters(
        self, operation: Operation, path_params: dict[str, str], query: dict[str, str]
    ) -> tuple[dict[str, Any], list[str], list[str]]:
        """Coerce parameters by their schemas.

        Returns ``(values, path_problems, query_problems)``: GitHub answers a malformed path
        parameter (``/issues/abc``) with 404 and a malformed query parameter with 422.
        """
        values: dict[str, Any] = {}
        path_problems: list[str] = []
        query_problems: list[str] = []
        for parameter in operation.parameters:
            source = path_params if parameter.location == "path" else query
            problems = path_problems if parameter.location == "path" else query_problems
            if parameter.name not in source:
                if "default" in parameter.schema:
                    values[parameter.name] = parameter.schema["default"]
                continue
            value, problem = _coerce(parameter.name, source[parameter.name], parameter.schema)
            if problem:
                problems.append(problem)
            else:
                values[parameter.name] = value
        return values, path_problems, query_problems

    def check_body(self, operation: Operation, body: Any) -> list[str]:
        """GitHub-style descriptions of how ``body`` breaks the operation's request schema."""
        if operation.body_schema is None:
            return []
        errors = sorted(
            self._validator(operation.body_schema).iter_errors(body),
            key=lambda error: ([str(p) for p in error.absolute_path], error.message),
        )
        return [_describe(error) for error in errors[:_MAX_SHOWN_ERRORS]]

    def check_response(self, operation: Operation, status: int, body: Any) -> list[str]:
        """Where a response the fake produced departs from the documented schema."""
        schema = operation.response_schemas.get(status)
        if schema is None:
            return []
        errors = self._validator(schema).iter_errors(body)
        return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


_TYPE_ARTICLES = {"integer": "an integer", "object": "an object", "array": "an array"}


def _describe(error: ValidationError) -> str:
    """One line in the style of GitHub's "Invalid request." messages."""
    where = "/".join(["properties", *map(str, error.absolute_path)])
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f'"{missing}" wasn\'t supplied.'
    if error.validator == "type":
        expected = error.validator_value
        names = expected if isinstance(expected, list) else [expected]
        wanted = " or ".join(_TYPE_ARTICLES.get(str(n), f"a {n}") for n in names)
        return f"For '{where}', {_show(error.instance)} is not {wanted}."
    if error.validator == "enum":
        return f"For '{where}', {_show(error.instance)} is not one of {error.validator_value}."
    if error.validator == "maxItems":
        return f"For '{where}', the array has more than {error.validator_value} items."
    if error.validator == "maxLength":
        return f"For '{where}', the string is longer than {error.validator_value} characters."
    return f"For '{where}', {error.message[:200]}"


def _coerce(name: str, raw: str, schema: dict[str, Any]) -> tuple[Any, str | None]:
    kinds = schema.get("type", "string")
    kind = next((k for k in kinds if k != "null"), "string") if isinstance(kinds, list) else kinds
    value: Any = raw
    if kind == "integer":
        try:
            value = int(raw)
        except ValueError:
            return None, f"For '{name}', {_show(raw)} is not an integer."
    elif kind == "boolean":
        if raw not in {"true", "false"}:
            return None, f"For '{name}', {_show(raw)} is not a boolean."
        value = raw == "true"
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        return None, f"For '{name}', {_show(raw)} is not one of {enum}."
    return value, None


@cache
def load_spec() -> Spec:
    """The vendored subset, parsed once per process."""
    return Spec.from_file()
