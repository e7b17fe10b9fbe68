"""Hostile YAML read fast, for the repository files planning reads many of (CI workflows).

Pure. The same limits as `.github/ratchet.yml` (`config.py`): at most `MAX_CONFIG_BYTES` of
UTF-8, `MAX_NESTING_DEPTH` levels, `MAX_EXPANDED_NODES` nodes once every alias is expanded
(a workflow: GitHub's own larger limits, `workflows.MAX_WORKFLOW_BYTES` and
`MAX_WORKFLOW_NODES`), no alias inside its own anchor; every refusal a `ConfigError` naming
the file (and the line).
What differs is speed: config.py composes PyYAML's node graph in Python to map each field to
its line, about 1 s for the 440 KB of workflows a large repository has. Here libyaml's parser
(PyYAML's C extension, when installed) yields the events and one loop builds the data, with no
recursion and no node graph, about 20 times faster; without libyaml the same loop runs over
PyYAML's Python parser.

Scalars resolve as GitHub's YAML 1.2 core schema does (`on` is a string, `3.10` the number
3.1, `true` a boolean); quoted and tagged scalars stay strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from verification.config import (
    MAX_CONFIG_BYTES,
    MAX_EXPANDED_NODES,
    MAX_NESTING_DEPTH,
    ConfigError,
    decode_config,
)

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_SCALAR, _ALIAS = yaml.ScalarEvent, yaml.AliasEvent
_MAPPING, _MAPPING_END = yaml.MappingStartEvent, yaml.MappingEndEvent
_SEQUENCE, _SEQUENCE_END = yaml.SequenceStartEvent, yaml.SequenceEndEvent

_NULL = re.compile(r"~|null|Null|NULL")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
         "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL = {".inf": float("inf"), ".Inf": float("inf"), ".INF": float("inf"),
            "+.inf": float("inf"), "-.inf": float("-inf"), "-.Inf": float("-inf"),
            ".nan": float("nan"), ".NaN": float("nan"), ".NAN": float("nan")}


@dataclass(slots=True)
class _Open:
    """A mapping or sequence being built, with its expanded size and depth so far."""

    value: dict[Any, Any] | list[Any]
    anchor: str | None
    key: Any = None
    has_key: bool = False
    size: int = 1
    depth: int = 1
    seen: set[Any] = field(default_factory=set)


def load_yaml(source: str | bytes, *, path: str, max_bytes: int = MAX_CONFIG_BYTES,
              max_nodes: int = MAX_EXPANDED_NODES) -> Any:
    """The data of one YAML document (None when empty); raises ConfigError naming `path`
    (and the line) for YAML errors, bytes that are not UTF-8 and values over the limits (a
    source over `max_bytes` is refused before parsing, one expanding to over `max_nodes`
    nodes as soon as it does)."""
    text = decode_config(source, path, limit=max_bytes)
    anchors: dict[str, tuple[Any, int, int]] = {}  # anchor -> (value, size, depth)
    stack: list[_Open] = []
    result: list[Any] = []
    total = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            kind = type(event)  # one dispatch per event: a large workflow has 10,000
            if kind is _SCALAR:
                value, size, depth = _scalar(event), 1, 1
                if event.anchor is not None:
                    anchors[event.anchor] = (value, 1, 1)
            elif kind is _MAPPING or kind is _SEQUENCE:
                if len(stack) >= MAX_NESTING_DEPTH:
                    raise ConfigError(path, _line(event), "",
                                      f"values nest more than {MAX_NESTING_DEPTH} levels deep")
                stack.append(_Open({} if kind is _MAPPING else [], event.anchor))
                continue
            elif kind is _MAPPING_END or kind is _SEQUENCE_END:
                done = stack.pop()
                value, size, depth = done.value, done.size, done.depth
                if done.anchor is not None:
                    anchors[done.anchor] = (value, size, depth)
            elif kind is _ALIAS:
                if event.anchor not in anchors:
                    raise ConfigError(path, _line(event), "", "an alias here repeats a value "
                                      "that contains it, so it never ends; point it at an "
                                      "anchor outside this value")
                value, size, depth = anchors[event.anchor]
            else:
                continue  # stream and document events
            total += size
            if total > max_nodes or len(stack) + depth > MAX_NESTING_DEPTH:
                problem = (f"more than {max_nodes} YAML nodes"
                           if total > max_nodes
                           else f"values nesting more than {MAX_NESTING_DEPTH} levels deep")
                raise ConfigError(path, _line(event), "", f"the file has {problem} once aliases "
                                  "are expanded (each use of an alias counts its whole value)")
            if not stack:
                result.append(value)
                continue
            _add(stack[-1], value, size, depth, path, event)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ConfigError(path, mark.line + 1 if mark is not None else None, "",
                          f"invalid YAML: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, "", f"invalid YAML: {exc}") from exc
    if len(result) > 1:
        raise ConfigError(path, None, "", "the file holds several YAML documents; keep one")
    return result[0] if result else None


def _line(event: yaml.Event) -> int | None:
    return event.start_mark.line + 1 if event.start_mark is not None else None


def _add(parent: _Open, value: Any, size: int, depth: int, path: str, event: yaml.Event) -> None:
    parent.size += size
    parent.depth = max(parent.depth, depth + 1)
    if isinstance(parent.value, list):
        parent.value.append(value)
    elif not parent.has_key:
        if isinstance(value, (dict, list)):
            raise ConfigError(path, _line(event), "", "a mapping key must be a plain value")
        if value in parent.seen:
            raise ConfigError(path, _line(event), str(value), "duplicate key")
        parent.seen.add(value)
        parent.key, parent.has_key = value, True
    else:
        parent.value[parent.key] = value
        parent.has_key = False


def _scalar(event: yaml.ScalarEvent) -> Any:
    """A scalar's value: plain ones resolved by the YAML 1.2 core schema, others strings."""
    text = event.value
    if event.style or not event.implicit[0]:  # libyaml gives a plain scalar the style ""
        return text  # quoted, a block scalar, or tagged
    if text == "" or _NULL.fullmatch(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.fullmatch(text):
        if len(text) > 100:
            return text  # no 5,000-digit numbers: kept as written
        return int(text, 8 if text.startswith("0o") else 16 if text.startswith("0x") else 10)
    if _FLOAT.fullmatch(text) and len(text) <= 100:
        return float(text)
    return _SPECIAL.get(text, text)
