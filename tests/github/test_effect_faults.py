"""Every effect kind through every fault: it ends confirmed, once, with its identity recorded.

Each test records one effect in a real SQLite ledger and lets the real ``Outbox`` send it to the
fake GitHub over HTTP, with a fault injected on the effect's write: a lost acknowledgement (the
write applied, the connection dropped), a 502 (nothing applied), a secondary rate limit, a
timeout (GitHub applies the write after the client gave up). The outbox is flushed again as the
engine's retries would; the effect must end confirmed with exactly one remote object, and the
ledger must hold that object's identity. A push is git, not HTTP: its lost acknowledgement is
a push that landed but whose answer never came back, and the HTTP faults hit the installation
token it needs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from github.errors import GitHubUnavailable, OutcomeUnknown
from runner.errors import AmbiguousFailure, StepFailure
from runner.ledger.records import EffectStatus
from runner.names import EffectKind, EventType
from tests.fakes.fakegithub import faults
from tests.github.harness import Scene, case_for

# A client that gives up on a request after this many seconds...
SHORT_TIMEOUT = 0.5
# ...and a GitHub that takes this long (applying the write after the client gave up).
SLOW = 1.0

FAULTS: dict[str, Callable[[], faults.Fault]] = {
    "lost_ack": faults.drop_after_apply,
    "http_502": faults.http_502,
    # retry-after 0: the client waits it out at once (waiting is shown in test_ratelimits).
    "secondary_rate_limit": lambda: faults.secondary_rate_limit(retry_after=0),
    "timeout": lambda: faults.delay(SLOW),
}


def assert_no_token_leaks(
    scene: Scene, caplog: pytest.LogCaptureFixture, failures: list[StepFailure]
) -> None:
    tokens = scene.tokens()
    assert tokens, "the executor should have used an installation token"
    for token in tokens:
        assert token not in caplog.text
        for failure in failures:
            assert token not in str(failure)
            assert token not in repr(failure.evidence)


def expected_failures(kind: EffectKind, fault: str) -> list[type[StepFailure]]:
    """What the first send raises: nothing for a rate limit waited out; a lost answer to a
    write is ambiguous; a 502, or a timeout of the push's token request, is transient."""
    if fault == "secondary_rate_limit":
        return []
    if fault == "http_502" or (kind is EffectKind.PUSH and fault == "timeout"):
        return [GitHubUnavailable]
    if kind is EffectKind.PUSH:
        return [AmbiguousFailure]
    return [OutcomeUnknown]


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("kind", list(EffectKind))
def test_an_effect_lands_exactly_once_through_a_fault(
    new_scene: Callable[..., Scene],
    kind: EffectKind,
    fault: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    scene = new_scene(request_timeout=SHORT_TIMEOUT if fault == "timeout" else 5.0)
    case = case_for(kind, scene)
    if kind is EffectKind.PUSH and fault == "lost_ack":
        scene.worktrees.drop_pushes = 1
    else:
        scene.fake.inject(*case.write, FAULTS[fault]())

    scene.record(case.request)
    failures = scene.settle()

    assert [type(f) for f in failures] == expected_failures(kind, fault)
    effect = scene.effect(case.request.key)
    assert effect.status is EffectStatus.CONFIRMED
    found = case.objects()
    assert len(found) == 1, f"{kind} made {len(found)} remote objects: {found}"
    expected = case.identity(found)
    recorded = scene.resource(case.request.key)
    assert {k: recorded.get(k) for k in expected} == expected
    reconciled = [
        e
        for e in scene.store.events(scene.run_id)
        if e.type == EventType.EFFECT_RECONCILED and e.key == effect.key
    ]
    # A write that landed is found, not sent again; one that did not is sent once more.
    landed_first = (
        fault in {"lost_ack", "timeout"}
        and failures
        and not (kind is EffectKind.PUSH and fault == "timeout")
    )
    assert bool(reconciled) == bool(landed_first)
    assert effect.attempts == (1 if landed_first or not failures else 2)
    assert_no_token_leaks(scene, caplog, failures)
