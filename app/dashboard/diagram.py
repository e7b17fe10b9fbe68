"""The workflow drawn from ``runner.workflow.TRANSITIONS``, with a run's path through it. Pure.

Every edge comes from the table: the forward edges are always drawn; the escapes (any state to
failed, needs_human or cancelled, and a stopped run's retry) are drawn only where this run took
them, and a note says the rest. A state the layout does not know (one added to the table later)
still appears, in a row of its own, so the drawing never hides part of the table.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runner.ledger.records import Event, Run
from runner.names import EventType, StepId
from runner.workflow import RESUMES, STOPS, TRANSITIONS, State

NODE_W, NODE_H = 126, 36  # a state's box, in SVG units
COL_STEP, ROW_STEP = 140, 84  # distance between columns and between rows
MARGIN_X, MARGIN_TOP, MARGIN_BOTTOM = 12, 46, 14  # the top margin holds the arcs going back
# Where each state sits: (column, row). The main line, repair under verify, the diff's approval
# under publish, the stops below.
LAYOUT: dict[State, tuple[int, int]] = {
    State.QUEUED: (0, 0), State.RESEARCH: (1, 0), State.SPECIFY: (2, 0),
    State.AWAITING_APPROVAL: (3, 0), State.IMPLEMENT: (4, 0), State.VERIFY: (5, 0),
    State.PUBLISH: (6, 0), State.DONE: (7, 0), State.REPAIR: (5, 1),
    State.AWAITING_DIFF_APPROVAL: (6, 1),
    State.FAILED: (2, 2), State.NEEDS_HUMAN: (4, 2), State.CANCELLED: (6, 2),
}
ESCAPES = frozenset({State.FAILED, State.NEEDS_HUMAN, State.CANCELLED})
NOTE = ("Any state before done may also stop as failed or needs human, or be cancelled; a"
        " stopped run is retried, or cancelled. Those edges are drawn where this run took them.")
# Events that say a run stopped (their step is the step it stopped in).
_STOP_EVENTS: dict[str, State] = {
    EventType.RUN_FAILED: State.FAILED, EventType.NEEDS_HUMAN: State.NEEDS_HUMAN,
    EventType.RUN_CANCELLED: State.CANCELLED,
}


@dataclass(frozen=True)
class Node:
    state: State
    label: str
    x: int
    y: int
    visits: int  # how many times the run entered this state
    current: bool

    @property
    def cx(self) -> int:
        return self.x + NODE_W // 2


@dataclass(frozen=True)
class Edge:
    source: State
    target: State
    d: str  # the SVG path
    taken: bool
    escape: bool


@dataclass(frozen=True)
class Diagram:
    width: int
    height: int
    nodes: list[Node]
    edges: list[Edge]
    note: str
    node_w: int = NODE_W
    node_h: int = NODE_H


def path_taken(run: Run, completed: Sequence[str], events: Iterable[Event]) -> list[State]:
    """The states the run went through, in order: its completed steps (in commit order) and
    its step now, with each stop its events record (failed, needs human, cancelled) after the
    step it stopped in, and that step again when the run was taken up after the stop."""
    steps = list(completed)
    if run.step not in steps:
        steps.append(run.step)
    stops: dict[str, list[State]] = {}
    for event in events:
        stop = _STOP_EVENTS.get(event.type)
        if stop is not None and event.step is not None:
            stops.setdefault(event.step, []).append(stop)
    path: list[State] = []
    for index, step in enumerate(steps):
        state = _state_of(step)
        if state is None:
            continue
        path.append(state)
        for stop in stops.get(step, []):
            path.append(stop)
            if index < len(steps) - 1 or step in completed:
                path.append(state)  # taken up again after the stop
    if not path or path[-1] is not run.state:
        path.append(run.state)
    return [s for i, s in enumerate(path) if i == 0 or s is not path[i - 1]]


def draw(path: Sequence[State], current: State) -> Diagram:
    """The diagram with ``path`` highlighted and ``current`` marked."""
    visits = Counter(path)
    places = dict(LAYOUT)
    extra_row = max(row for _, row in places.values()) + 1
    for index, state in enumerate(s for s in State if s not in places):
        places[state] = (index, extra_row)  # a state the layout predates
    nodes = {state: Node(state, state.value.replace("_", " "),
                         MARGIN_X + col * COL_STEP, MARGIN_TOP + row * ROW_STEP,
                         visits.get(state, 0), state is current)
             for state, (col, row) in places.items()}
    taken = {(a, b) for a, b in itertools.pairwise(path) if a is not b}
    pairs = dict.fromkeys([(s, t) for (s, _), t in TRANSITIONS.items() if s is not t]
                          + sorted(RESUMES))
    edges = []
    for source, target in pairs:
        escape = target in ESCAPES or source in STOPS
        on_path = (source, target) in taken
        if escape and not on_path:
            continue
        edges.append(Edge(source, target, _route(nodes[source], nodes[target],
                                                 places[source], places[target]),
                          on_path, escape))
    rows = max(row for _, row in places.values())
    cols = max(col for col, _ in places.values())
    return Diagram(width=2 * MARGIN_X + cols * COL_STEP + NODE_W,
                   height=MARGIN_TOP + rows * ROW_STEP + NODE_H + MARGIN_BOTTOM,
                   nodes=list(nodes.values()), edges=edges, note=NOTE)


def _state_of(step: str) -> State | None:
    try:
        return State(StepId.parse(step).state)
    except ValueError:
        return None


def _route(a: Node, b: Node, at: tuple[int, int], to: tuple[int, int]) -> str:
    """An SVG path from box ``a`` to box ``b``: straight to the next box on a row, an arc
    over the row otherwise, and a line between rows (offset so a pair of opposite edges, such
    as verify and repair, do not overlap)."""
    (col_a, row_a), (col_b, row_b) = at, to
    if row_a == row_b:
        if col_b == col_a + 1:
            y = a.y + NODE_H // 2
            return f"M{a.x + NODE_W},{y} L{b.x},{y}"
        lift = 22 + 6 * abs(col_b - col_a)
        top = min(a.y, b.y) - lift
        return f"M{a.cx},{a.y} Q{(a.cx + b.cx) // 2},{top} {b.cx},{b.y}"
    if row_b > row_a:
        return f"M{a.cx - 8},{a.y + NODE_H} L{b.cx - 8},{b.y}"
    return f"M{a.cx + 8},{a.y} L{b.cx + 8},{b.y + NODE_H}"
