"""GitHub Actions expressions (``${{ ... }}``), evaluated as the runner does, for tests.

The subset action.yml and its composite steps use: literals, context property access (``a.b``,
``a['b']``, names with ``-``), ``!``, ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``&&``,
``||``, parentheses, and the functions ``success``, ``failure``, ``always``, ``cancelled``,
``contains``, ``startsWith``, ``endsWith``, ``format`` and ``toJSON``. Semantics follow
https://docs.github.com/en/actions/reference/evaluate-expressions-in-workflows-and-actions:
``&&`` and ``||`` return an operand, string comparisons ignore case, a missing property is
null, and a value is rendered into text as the runner renders it (null as '', booleans as
``true``/``false``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

_TOKEN = re.compile(
    r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)"
    r"|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.])|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)
_TEMPLATE = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
STATUS_FUNCTIONS = ("success(", "failure(", "always(", "cancelled(")


class ExpressionError(ValueError):
    pass


def tokenize(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise ExpressionError(f"cannot read {text[position:]!r} in {text!r}")
        kind = match.lastgroup or ""
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str, contexts: Mapping[str, Any],
                 functions: Mapping[str, Callable[..., Any]]) -> None:
        self.tokens = tokenize(text)
        self.index = 0
        self.contexts = contexts
        self.functions = functions
        self.text = text

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (value is not None and token[1] != value):
            raise ExpressionError(f"expected {value!r} in {self.text!r}, found {token}")
        self.index += 1
        return token

    def parse(self) -> Any:
        value = self.or_()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek()} in {self.text!r}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.compare()
        while self.peek() == ("op", "&&"):
            self.take()
            right = self.compare()
            value = right if truthy(value) else value
        return value

    def compare(self) -> Any:
        value = self.unary()
        while (token := self.peek()) and token[1] in {"==", "!=", "<", "<=", ">", ">="}:
            self.take()
            value = _compare(token[1], value, self.unary())
        return value

    def unary(self) -> Any:
        if self.peek() == ("op", "!"):
            self.take()
            return not truthy(self.unary())
        return self.primary()

    def primary(self) -> Any:
        kind, text = self.take()
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "number":
            return float(text) if "." in text else int(text)
        if text == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r} in {self.text!r}")
        if text in {"true", "false", "null"}:
            return {"true": True, "false": False, "null": None}[text]
        if self.peek() == ("op", "("):
            return self.call(text)
        value = _lookup(self.contexts, text)
        while (token := self.peek()) and token[1] in {".", "["}:
            self.take()
            if token[1] == ".":
                value = _lookup(value, self.take()[1])
            else:
                key = self.or_()
                self.take("]")
                value = _lookup(value, str(key))
        return value

    def call(self, name: str) -> Any:
        self.take("(")
        arguments = []
        while self.peek() != ("op", ")"):
            arguments.append(self.or_())
            if self.peek() == ("op", ","):
                self.take()
        self.take(")")
        function = self.functions.get(name) or _FUNCTIONS.get(name.lower())
        if function is None:
            raise ExpressionError(f"unknown function {name}() in {self.text!r}")
        return function(*arguments)


def _lookup(value: Any, key: str) -> Any:
    if isinstance(value, Mapping):
        for candidate, found in value.items():
            if str(candidate).lower() == key.lower():
                return found
    return None


def _compare(op: str, left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        left, right = left.lower(), right.lower()
    elif type(left) is not type(right):
        left, right = _number(left), _number(right)
    return {"==": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[op]


def _number(value: Any) -> float:
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    try:
        return float(value) if value != "" else 0.0
    except (TypeError, ValueError):
        return float("nan")


def truthy(value: Any) -> bool:
    return value not in (None, False, 0, "", 0.0) and value == value  # NaN is falsy


def render(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2)
    return str(value)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "contains": lambda haystack, needle: (
        any(render(i).lower() == render(needle).lower() for i in haystack)
        if isinstance(haystack, list) else render(needle).lower() in render(haystack).lower()),
    "startswith": lambda text, prefix: render(text).lower().startswith(render(prefix).lower()),
    "endswith": lambda text, suffix: render(text).lower().endswith(render(suffix).lower()),
    "format": lambda template, *args: re.sub(
        r"\{(\d+)\}", lambda m: render(args[int(m.group(1))]), render(template)),
    "tojson": lambda value: json.dumps(value, indent=2),
}


def evaluate(text: str, contexts: Mapping[str, Any],
             functions: Mapping[str, Callable[..., Any]] | None = None) -> Any:
    return _Parser(text, contexts, functions or {}).parse()


def substitute(text: str, contexts: Mapping[str, Any],
               functions: Mapping[str, Callable[..., Any]] | None = None) -> str:
    """``text`` with every ``${{ expr }}`` replaced by its rendered value."""
    return _TEMPLATE.sub(lambda m: render(evaluate(m.group(1), contexts, functions)), text)


def condition(text: str | bool | None, contexts: Mapping[str, Any],
              functions: Mapping[str, Callable[..., Any]]) -> bool:
    """A step's ``if:``: ``success()`` is implied unless a status function is used."""
    if text is None:
        text = "success()"
    if isinstance(text, bool):
        return text and truthy(functions["success"]())
    source = str(text).strip()
    match = _TEMPLATE.fullmatch(source)
    if match:
        source = match.group(1).strip()
    if not any(f in source.replace(" ", "") for f in STATUS_FUNCTIONS):
        source = f"success() && ({source})"
    return truthy(evaluate(source, contexts, functions))
