"""GitHub Actions expressions (`${{ ... }}` and `if:`), evaluated with what planning knows.

Pure. Planning knows some contexts (a matrix combination, `env`, `inputs` defaults,
`runner.os`, `github.event_name`) and not others (`secrets`, `vars`, `steps.*.outputs`,
`needs.*.outputs`, most of `github.event`). A value that depends on an unknown is `Unknown`,
naming what it needed, so the caller can say why a step cannot run or why a job's `if:` was
taken as true. `&&` and `||` short-circuit on known operands the way GitHub does: `false &&
secrets.X` is false, `true || steps.x.outputs.y` is true.

The grammar and the coercions follow GitHub's "Evaluate expressions in workflows and
actions": literals (`null`, booleans, numbers, 'strings' with '' for a quote), property access
(`a.b`, `a['b']`, `a.*`), `!`, `<`, `<=`, `>`, `>=`, `==`, `!=`, `&&`, `||`, parentheses, and
the functions `contains`, `startsWith`, `endsWith`, `format`, `join`, `toJSON`, `fromJSON`,
`success`, `always`, `failure`, `cancelled` (`hashFiles` needs the files: unknown). Strings
compare case-insensitively; values of different types compare as numbers.

The text comes from the repository under review: parsing is a linear scan plus a recursive
descent bounded by `MAX_DEPTH`, and a malformed expression is `Unknown`, never an exception.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The deepest nesting of parentheses and operators evaluated; deeper is unknown.
MAX_DEPTH = 50
# The longest expression evaluated; longer is unknown.
MAX_LENGTH = 10_000


@dataclass(frozen=True)
class Unknown:
    """A value planning cannot know: `what` names the context or text it needed."""

    what: str


Value = Any  # None, bool, float, str, list, dict or Unknown


class Partial(dict):  # type: ignore[type-arg]
    """A context planning knows only part of (`github`, `runner`): a property it does not
    hold is unknown, where a missing key of a plain context (`matrix`, `env`) is null."""

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<number>0x[0-9a-fA-F]+|-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
    | (?P<string>'(?:[^']|'')*')
    | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
    | (?P<op>&&|\|\||==|!=|<=|>=|[<>!()\[\].,*])
    )""", re.VERBOSE)


def _tokens(text: str) -> list[tuple[str, str]] | None:
    """(kind, text) pairs, or None when `text` is not an expression."""
    found: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            return None
        kind = match.lastgroup
        assert kind is not None
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


class _Parser:
    """Recursive descent over the tokens, evaluating as it goes (`_Evaluation` holds the
    contexts)."""

    def __init__(self, tokens: list[tuple[str, str]], contexts: Mapping[str, Value],
                 text: str) -> None:
        self.tokens = tokens
        self.at = 0
        self.contexts = contexts
        self.text = text
        self.depth = 0

    def parse(self) -> Value:
        value = self._or()
        if self.at != len(self.tokens):
            raise _Malformed
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def _take(self, expected: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise _Malformed
        token = self.tokens[self.at]
        if expected is not None and token[1] != expected:
            raise _Malformed
        self.at += 1
        return token

    def _descend(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Malformed

    def _or(self) -> Value:
        self._descend()
        left = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            left = _either(left, right)
        self.depth -= 1
        return left

    def _and(self) -> Value:
        left = self._equality()
        while self._peek() == "&&":
            self._take()
            right = self._equality()
            left = _both(left, right)
        return left

    def _equality(self) -> Value:
        left = self._comparison()
        while self._peek() in ("==", "!="):
            op = self._take()[1]
            right = self._comparison()
            left = _compare(op, left, right)
        return left

    def _comparison(self) -> Value:
        left = self._unary()
        while self._peek() in ("<", "<=", ">", ">="):
            op = self._take()[1]
            right = self._unary()
            left = _compare(op, left, right)
        return left

    def _unary(self) -> Value:
        if self._peek() == "!":
            self._take()
            self._descend()
            value = self._unary()
            self.depth -= 1
            return value if isinstance(value, Unknown) else not truthy(value)
        return self._postfix()

    def _postfix(self) -> Value:
        value, path = self._primary()
        while self._peek() in (".", "["):
            if self._take()[1] == ".":
                kind, name = self._take()
                if name == "*":
                    value, path = _star(value), f"{path}.*"
                elif kind == "name":
                    value, path = _property(value, name, f"{path}.{name}"), f"{path}.{name}"
                else:
                    raise _Malformed
            else:
                index = self._or()
                self._take("]")
                value = _index(value, index, f"{path}[...]")
                path = f"{path}[...]"
        return value

    def _primary(self) -> tuple[Value, str]:
        kind, text = self._take()
        if kind == "number":
            return (float(int(text, 16)) if text.startswith("0x") else float(text)), text
        if kind == "string":
            return text[1:-1].replace("''", "'"), text
        if text == "(":
            value = self._or()
            self._take(")")
            return value, "(...)"
        if kind != "name":
            raise _Malformed
        if text in ("true", "false"):
            return text == "true", text
        if text == "null":
            return None, text
        if self._peek() == "(":
            return self._call(text), f"{text}(...)"
        if text not in self.contexts:
            return Unknown(text), text
        return self.contexts[text], text

    def _call(self, name: str) -> Value:
        self._take("(")
        arguments: list[Value] = []
        while self._peek() != ")":
            arguments.append(self._or())
            if self._peek() == ",":
                self._take()
            elif self._peek() != ")":
                raise _Malformed
        self._take(")")
        return _function(name.lower(), arguments)


class _Malformed(Exception):
    """The expression does not parse."""


def evaluate(text: str, contexts: Mapping[str, Value]) -> Value:
    """The value of expression `text` (without `${{ }}`) under `contexts`; a context absent
    from `contexts` (or marked `Unknown`) makes what depends on it `Unknown`."""
    if len(text) > MAX_LENGTH:
        return Unknown("an expression too long to evaluate")
    tokens = _tokens(text)
    if tokens is None or not tokens:
        return Unknown(f"${{{{ {text.strip()} }}}}")
    try:
        return _Parser(tokens, contexts, text).parse()
    except (_Malformed, RecursionError):
        return Unknown(f"${{{{ {text.strip()} }}}}")


def evaluate_condition(text: str | bool | None, contexts: Mapping[str, Value]) -> Value:
    """An `if:` value: True, False or Unknown. Empty is true; the text may or may not be
    wrapped in `${{ }}` (GitHub evaluates `if:` as an expression either way)."""
    if text is None:
        return True
    if isinstance(text, bool):
        return text
    body = str(text).strip()
    if body.startswith("${{") and body.endswith("}}") and body.count("${{") == 1:
        body = body[3:-2]
    elif "${{" in body:  # text around an expression: a non-empty string is truthy
        value = interpolate(body, contexts)
        return value if isinstance(value, Unknown) else truthy(value)
    if not body.strip():
        return True
    value = evaluate(body, contexts)
    return value if isinstance(value, Unknown) else truthy(value)


def interpolate(text: str, contexts: Mapping[str, Value]) -> str | Unknown:
    """`text` with each `${{ expression }}` replaced by its value as GitHub writes it, or the
    first `Unknown` an expression needed."""
    if "${{" not in text:
        return text
    out: list[str] = []
    position = 0
    while True:
        start = text.find("${{", position)
        if start == -1:
            out.append(text[position:])
            return "".join(out)
        end = _closing(text, start + 3)
        if end == -1:
            return Unknown("an unterminated ${{")
        out.append(text[position:start])
        value = evaluate(text[start + 3:end], contexts)
        if isinstance(value, Unknown):
            return value
        out.append(to_text(value))
        position = end + 2


def _closing(text: str, position: int) -> int:
    """Where the `}}` closing an expression starts, skipping string literals; -1 if none."""
    quoted = False
    while position < len(text):
        char = text[position]
        if char == "'":
            quoted = not quoted
        elif not quoted and text.startswith("}}", position):
            return position
        position += 1
    return -1


def truthy(value: Value) -> bool:
    """GitHub's truthiness: false, 0, -0, "", null and NaN are falsy."""
    if value is None or value is False or value == "":
        return False
    if isinstance(value, float):
        return value != 0 and not math.isnan(value)
    return True


def to_text(value: Value) -> str:
    """A value as GitHub writes it into a string: null as '', booleans in lowercase, whole
    numbers without a fraction, objects and arrays as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2)
    return str(value)


def _number(value: Value) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        try:
            return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
        except ValueError:
            return math.nan
    return math.nan


def _compare(op: str, left: Value, right: Value) -> Value:
    for side in (left, right):
        if isinstance(side, Unknown):
            return side
    if isinstance(left, str) and isinstance(right, str):
        a, b = left.lower(), right.lower()
        result = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}
        return result[op]
    if type(left) is type(right) and isinstance(left, (dict, list)):
        same = left is right
        return same if op == "==" else (not same if op == "!=" else False)
    x, y = _number(left), _number(right)
    if math.isnan(x) or math.isnan(y):
        return op == "!="
    return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def _both(left: Value, right: Value) -> Value:
    """`left && right`: the first falsy operand, else the last; unknown where it decides."""
    if not isinstance(left, Unknown) and not truthy(left):
        return left
    if not isinstance(right, Unknown) and not truthy(right):
        return right
    return left if isinstance(left, Unknown) else right


def _either(left: Value, right: Value) -> Value:
    """`left || right`: the first truthy operand, else the last; unknown where it decides."""
    if not isinstance(left, Unknown) and truthy(left):
        return left
    if not isinstance(right, Unknown) and truthy(right):
        return right
    return left if isinstance(left, Unknown) else right


def _property(value: Value, name: str, path: str) -> Value:
    if isinstance(value, Unknown):
        return Unknown(path) if value.what.isidentifier() else value  # name the property
    if isinstance(value, dict):
        if name in value:
            return value[name]
        lowered = {key.lower(): item for key, item in value.items() if isinstance(key, str)}
        if name.lower() in lowered:
            return lowered[name.lower()]
        return Unknown(path) if isinstance(value, Partial) else None
    if isinstance(value, list):  # `list.*.name` maps the property over the objects
        return [_property(item, name, path) for item in value]
    return None


def _star(value: Value) -> Value:
    if isinstance(value, Unknown):
        return value
    if isinstance(value, dict):
        return list(value.values())
    return value if isinstance(value, list) else []


def _index(value: Value, index: Value, path: str) -> Value:
    if isinstance(value, Unknown):
        return value
    if isinstance(index, Unknown):
        return index
    if isinstance(value, list) and isinstance(index, float) and index.is_integer():
        position = int(index)
        return value[position] if 0 <= position < len(value) else None
    if isinstance(value, dict) and isinstance(index, str):
        return _property(value, index, path)
    return None


def _function(name: str, arguments: list[Value]) -> Value:
    statuses = {"success": True, "always": True, "failure": False, "cancelled": False}
    if name in statuses:
        return statuses[name]  # planned as if every step before passes
    unknown = next((a for a in arguments if isinstance(a, Unknown)), None)
    if name == "hashfiles":
        return Unknown("hashFiles(...)")
    if unknown is not None:
        return unknown
    if name in ("contains", "startswith", "endswith") and len(arguments) == 2:
        haystack, needle = arguments
        if name == "contains" and isinstance(haystack, list):
            return any(_compare("==", item, needle) is True for item in haystack)
        a, b = to_text(haystack).lower(), to_text(needle).lower()
        return {"contains": b in a, "startswith": a.startswith(b), "endswith": a.endswith(b)}[name]
    if name == "format" and arguments:
        return _format(to_text(arguments[0]), [to_text(a) for a in arguments[1:]])
    if name == "join" and arguments:
        items, separator = arguments[0], to_text(arguments[1]) if len(arguments) > 1 else ","
        return separator.join(to_text(i) for i in items) if isinstance(items, list) else (
            to_text(items))
    if name == "tojson" and len(arguments) == 1:
        return to_text(arguments[0]) if isinstance(arguments[0], (dict, list)) else json.dumps(
            arguments[0])
    if name == "fromjson" and len(arguments) == 1:
        try:
            return _from_json(json.loads(to_text(arguments[0])))
        except (ValueError, RecursionError):
            return Unknown("fromJSON of text that is not JSON")
    return Unknown(f"{name}(...)")


def _from_json(value: Any) -> Value:
    """JSON with numbers as floats, like every number of an expression."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return {str(k): _from_json(v) for k, v in value.items()}


def _format(template: str, values: list[str]) -> str:
    out = re.sub(r"\{\{|\}\}|\{(\d+)\}",
                 lambda m: m[0][0] if m[1] is None else (
                     values[int(m[1])] if int(m[1]) < len(values) else m[0]), template)
    return out
