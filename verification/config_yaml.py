"""The hostile-YAML loader of `.github/ratchet.yml`: PyYAML, capped and line-mapped.

The file comes from the repository under review. Before anything walks it, it must nest at most
`MAX_NESTING_DEPTH` levels and expand (every use of an alias counting its whole value) to at
most `MAX_EXPANDED_NODES` nodes with no alias inside its own anchor; each refusal is a
`ConfigError` naming the file and line. Every field path is mapped to the line of its key (or
list item) from PyYAML's node marks, so a reader's error names the line.

Its own module: PyYAML loads only when a repository has the file (``verification/config.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from verification.config import (
    MAX_EXPANDED_NODES,
    MAX_NESTING_DEPTH,
    ConfigError,
    format_field,
)


def load_yaml(text: str, path: str) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """Compose, check, line-map and construct the YAML of the file at ``path`` (None for an
    empty document).

    Returns the data and the line of every field path. Raises ConfigError for YAML errors and
    for graphs `_check_expansion` refuses.
    """
    try:
        loader = _Loader(text, path)  # the reader refuses control characters right away
        try:
            node = loader.get_single_node()
            if node is None:
                return None, {}
            _check_expansion(node, path)
            # Before construction: constructing merge keys (`<<`) rewrites the node graph.
            lines: dict[tuple[Any, ...], int] = {}
            _map_lines(node, (), lines, path)
            return loader.construct_document(node), lines
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(path, line, "", f"invalid YAML: {exc.problem or exc}") from exc
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        character = f"U+{exc.character:04X}" if isinstance(exc.character, int) else "?"
        raise ConfigError(
            path, line, "", f"the character {character} is not allowed in YAML; remove it"
        ) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, "", f"invalid YAML: {exc}") from exc


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with a nesting cap, and value errors reported as ConfigErrors.

    PyYAML's composer recurses once per nesting level, so 10,000 `[` would end in a
    RecursionError; here the node past `MAX_NESTING_DEPTH` is a ConfigError with its line.
    Scalar constructors raise ValueError for values like `2001-02-30` or an int of 5,000
    digits; they become ConfigErrors at the value's line.
    """

    def __init__(self, stream: str, path: str) -> None:
        super().__init__(stream)
        self._path = path
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self._depth >= MAX_NESTING_DEPTH:
            line = self.peek_event().start_mark.line + 1
            raise ConfigError(
                self._path, line, "", f"values nest more than {MAX_NESTING_DEPTH} levels deep"
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            line = node.start_mark.line + 1
            raise ConfigError(self._path, line, "", f"cannot read this value: {exc}") from exc


@dataclass(slots=True)
class _Frame:
    """A node on the path of `_check_expansion`'s walk, with what its children added so far."""

    node: yaml.Node
    loc: tuple[Any, ...]
    children: Iterator[tuple[Any, yaml.Node]]
    size: int = 1  # expanded nodes: itself plus its children's
    depth: int = 0  # the deepest child's expanded depth


def _check_expansion(root: yaml.Node, path: str) -> None:
    """Refuse a node graph whose expansion is too large, too deep, or infinite.

    PyYAML composes an alias as another reference to its anchor's node: the graph stays as
    small as the file, but its expansion (what validation and `_map_lines` walk) can grow
    exponentially, or never end when an alias sits inside its own anchor. One iterative walk in
    document order computes each node's expanded size and depth once (memoised); meeting a node
    that is still on the current path is a cycle. Raises ConfigError with the line and field.
    """
    finished: dict[yaml.Node, tuple[int, int]] = {}  # node -> (expanded size, expanded depth)
    on_path: set[yaml.Node] = {root}
    stack = [_Frame(root, (), _children(root))]
    while stack:
        frame = stack[-1]
        step = next(frame.children, None)
        if step is not None:
            part, child = step
            if child in on_path:
                raise ConfigError(
                    path,
                    frame.node.start_mark.line + 1,
                    format_field((*frame.loc, part)),
                    "an alias here repeats a value that contains it, so it never ends; "
                    "point it at an anchor outside this value",
                )
            if child in finished:
                size, depth = finished[child]
                frame.size += size
                frame.depth = max(frame.depth, depth)
            else:
                on_path.add(child)
                stack.append(_Frame(child, (*frame.loc, part), _children(child)))
            continue
        stack.pop()
        on_path.discard(frame.node)
        depth = frame.depth + 1
        if frame.size > MAX_EXPANDED_NODES or depth > MAX_NESTING_DEPTH:
            problem = (
                f"this value has more than {MAX_EXPANDED_NODES} YAML nodes"
                if frame.size > MAX_EXPANDED_NODES
                else f"this value nests more than {MAX_NESTING_DEPTH} levels deep"
            )
            raise ConfigError(
                path,
                frame.node.start_mark.line + 1,
                format_field(frame.loc),
                f"{problem} once aliases are expanded (each use of an alias counts its whole "
                "value); repeat less through aliases, or write a smaller config",
            )
        finished[frame.node] = (frame.size, depth)
        if stack:
            stack[-1].size += frame.size
            stack[-1].depth = max(stack[-1].depth, depth)


def _children(node: yaml.Node) -> Iterator[tuple[Any, yaml.Node]]:
    """A node's children with their location part: list index, or the key's text."""
    if isinstance(node, yaml.SequenceNode):
        yield from enumerate(node.value)
    elif isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            yield key, key_node
            yield key, value_node


def _map_lines(
    node: yaml.Node, loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int], path: str
) -> None:
    # Recursion is bounded: `_check_expansion` has capped the expanded depth and size.
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # a list or mapping as a key: construction refuses it with its line
            key = key_node.value
            if key in seen:
                field = format_field((*loc, key))
                raise ConfigError(path, key_node.start_mark.line + 1, field, "duplicate key")
            seen.add(key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _map_lines(value_node, (*loc, key), lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*loc, index)] = item.start_mark.line + 1
            _map_lines(item, (*loc, index), lines, path)
