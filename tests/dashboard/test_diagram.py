"""The workflow diagram is drawn from the transition table, with the path a run took."""

from __future__ import annotations

from app.dashboard.diagram import ESCAPES, draw, path_taken
from runner.ledger.records import NewEvent, NewRun
from runner.names import EventType
from runner.workflow import STOPS, TRANSITIONS, State
from tests.dashboard.conftest import T0, Writer

DONE_PATH = [State.QUEUED, State.RESEARCH, State.SPECIFY, State.AWAITING_APPROVAL,
             State.IMPLEMENT, State.VERIFY, State.REPAIR, State.VERIFY, State.PUBLISH,
             State.DONE]


def test_every_forward_edge_of_the_table_is_drawn_and_escapes_only_where_taken():
    diagram = draw(DONE_PATH, State.DONE)
    drawn = {(e.source, e.target) for e in diagram.edges}
    forward = {(s, t) for (s, _), t in TRANSITIONS.items()
               if s is not t and t not in ESCAPES and s not in STOPS}
    assert forward <= drawn
    assert not any(e.escape for e in diagram.edges)  # this run never stopped
    taken = {(e.source, e.target) for e in diagram.edges if e.taken}
    assert (State.REPAIR, State.VERIFY) in taken and (State.VERIFY, State.PUBLISH) in taken
    assert (State.QUEUED, State.VERIFY) not in taken
    nodes = {n.state: n for n in diagram.nodes}
    assert set(nodes) == set(State)  # every state of the table has a place
    assert nodes[State.VERIFY].visits == 2 and nodes[State.DONE].current
    assert nodes[State.FAILED].visits == 0


def test_a_stop_and_its_retry_are_on_the_path(store):
    run = store.create_run(NewRun(id="r-stop", repo="/srv/x", title="x"), now=T0)
    w = Writer(store, run, owner="w1", at=T0)
    steps = [(State.RESEARCH, "research.1", "queued.1"), (State.SPECIFY, "specify.1",
             "research.1"), (State.AWAITING_APPROVAL, "awaiting_approval.1", "specify.1"),
             (State.IMPLEMENT, "implement.1", "awaiting_approval.1"),
             (State.VERIFY, "verify.1", "implement.1")]
    for state, step, done in steps:
        w.move(state, step, checkpoint=(done, {}, {}))
    w.move(State.NEEDS_HUMAN, "verify.1", reason="a branch moved",
           events=(NewEvent(EventType.NEEDS_HUMAN, step="verify.1"),))
    stopped = store.get_run("r-stop")
    assert path_taken(stopped, store.completed_steps("r-stop"), store.events("r-stop"))[-2:] \
        == [State.VERIFY, State.NEEDS_HUMAN]
    w.move(State.VERIFY, "verify.1")  # retried
    w.move(State.PUBLISH, "publish.1", checkpoint=("verify.1", {}, {}))
    run = store.get_run("r-stop")
    path = path_taken(run, store.completed_steps("r-stop"), store.events("r-stop"))
    assert path == [State.QUEUED, State.RESEARCH, State.SPECIFY, State.AWAITING_APPROVAL,
                    State.IMPLEMENT, State.VERIFY, State.NEEDS_HUMAN, State.VERIFY,
                    State.PUBLISH]
    edges = {(e.source, e.target): e for e in draw(path, run.state).edges}
    assert edges[(State.VERIFY, State.NEEDS_HUMAN)].taken
    assert edges[(State.NEEDS_HUMAN, State.VERIFY)].escape
    assert (State.SPECIFY, State.FAILED) not in edges
