"""Signal payloads are typed per kind and stored as the flat JSON Ratchet always wrote; one verb
table names the kinds on every surface."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.cli import build_parser
from app.dashboard.actions import OFFERED
from github.commands import parse_command
from runner.ledger.records import NewSignal, SignalFor
from runner.names import CLI_VERBS, VERBS, SignalKind, verb_of
from runner.signal_payloads import (
    PAYLOADS,
    Approve,
    Cancel,
    CommentRef,
    RaiseBudget,
    SignalPayload,
    read_payload,
)

# Every shape the webhook, the dashboard and the command line have written to the ledger.
STORED = [
    (SignalKind.APPROVE, {"hash": "3f2a9c0b1d2e", "comment": {"id": 555, "issue": 7}}),
    (SignalKind.APPROVE, {"hash": "3f2a9c", "check_run": 41}),
    (SignalKind.APPROVE, {"hash": "3f2a9c"}),
    (SignalKind.REQUEST_CHANGES, {"message": "cover\nzero too", "comment": {"id": 5, "issue": 7}}),
    (SignalKind.REQUEST_CHANGES, {"message": "cover zero", "review": 31}),
    (SignalKind.BUDGET, {"amount": "+30m", "comment": {"id": 5, "issue": 7}}),
    (SignalKind.CANCEL, {"reason": "the issue was closed"}),
    (SignalKind.CANCEL, {}),
    (SignalKind.RETRY, {"comment": {"id": 5, "issue": 7}}),
    (SignalKind.VERIFY_AGAIN, {}),
    (SignalKind.STATUS, {"comment": {"id": 5}}),
]


@pytest.mark.parametrize(("kind", "stored"), STORED)
def test_every_stored_shape_loads_typed_and_is_stored_again_unchanged(kind, stored):
    payload = read_payload(kind, stored)
    assert isinstance(payload, PAYLOADS[kind])
    assert payload.to_stored() == stored


def test_the_typed_fields_say_what_each_kind_carries():
    assert read_payload(SignalKind.APPROVE, {"hash": "abcdef", "check_run": 4}) == Approve(
        hash="abcdef", check_run=4)
    assert read_payload(SignalKind.REQUEST_CHANGES, {"message": "m"}).message == "m"
    assert read_payload(SignalKind.BUDGET, {"amount": "+1"}) == RaiseBudget(amount="+1")
    comment = read_payload(SignalKind.RETRY, {"comment": {"id": 5, "issue": 7}}).comment
    assert comment == CommentRef(id=5, issue=7)


def test_unknown_keys_are_ignored_and_a_missing_argument_is_refused():
    assert read_payload(SignalKind.CANCEL, {"reason": "r", "later": 1}) == Cancel(reason="r")
    with pytest.raises(ValidationError):
        read_payload(SignalKind.APPROVE, {"comment": {"id": 5}})


def test_a_signal_carries_its_kinds_payload():
    NewSignal("s", "r1", SignalKind.CANCEL, "ann", "local")  # a cancel's reason is optional
    SignalFor("repo", 7, SignalKind.RETRY, "ann", "github")
    with pytest.raises(TypeError, match="approve signal carries Approve"):
        NewSignal("s", "r1", SignalKind.APPROVE, "ann", "local")
    with pytest.raises(TypeError, match="carries RequestChanges, not Approve"):
        SignalFor("repo", 7, SignalKind.REQUEST_CHANGES, "ann", "github", Approve(hash="ab"))
    assert set(PAYLOADS) == set(SignalKind)
    assert all(issubclass(t, SignalPayload) for t in PAYLOADS.values())


def test_one_verb_table_names_every_kind_on_every_surface():
    assert sorted(VERBS.values()) == sorted(SignalKind)  # one verb per kind
    for verb, kind in VERBS.items():
        assert verb_of(kind) == verb
        argument = {"approve": " 3f2a9c", "approve-diff": " 3f2a9c0d1e2f", "request-changes":
                    " more", "budget": " +1"}
        command = parse_command(f"/ratchet {verb}{argument.get(verb, '')}")
        assert command is not None and command.kind is kind
    assert all(verb_of(kind) in VERBS for kind in OFFERED)
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for kind in (SignalKind.APPROVE, SignalKind.APPROVE_DIFF, SignalKind.REQUEST_CHANGES,
                 SignalKind.RETRY, SignalKind.VERIFY_AGAIN, SignalKind.BUDGET):
        assert commands[verb_of(kind, cli=True)].get_default("kind") is kind
    assert verb_of(SignalKind.APPROVE, cli=True) == CLI_VERBS[SignalKind.APPROVE] == "approve-spec"
