"""The effect protocol: record intent, execute, record the confirmed remote identity.

Every remote effect has a deterministic key ``<run>:<step>:<name>`` (no attempt number: a
retried step reuses its keys). An effect left ``intended`` by a dead worker is reconciled by
asking the remote side before anything is sent again, so a replay returns the first result
instead of a duplicate. This module holds the port; executors live with their remote
(``runner/sink.py`` for local runs, ``github/effects.py`` for GitHub).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from runner.faults import NO_CRASH, CrashPoints
from runner.ledger.records import Effect, EffectIntent, EffectStatus, Lease
from runner.ledger.store import Store

log = logging.getLogger(__name__)


def effect_key(run_id: str, step: str, name: str) -> str:
    return f"{run_id}:{step}:{name}"


@dataclass(frozen=True)
class EffectRequest:
    """One remote effect: ``payload`` must be host-independent (it is hashed and compared)."""

    key: str
    run_id: str
    step: str
    kind: str  # comment | push | pull_request | check_run
    payload: Mapping[str, Any]

    @classmethod
    def from_effect(cls, effect: Effect) -> EffectRequest:
        return cls(effect.key, effect.run_id, effect.step, effect.kind, effect.payload)

    def intent(self) -> EffectIntent:
        return EffectIntent(self.key, self.run_id, self.step, self.kind, self.payload)

    @property
    def name(self) -> str:
        return self.key.rsplit(":", 1)[-1]


class EffectExecutor(Protocol):
    """Talks to one remote. ``apply`` must be safe to call again for a key whose first call's
    response was lost only after ``find`` said the effect is absent."""

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        """Perform the effect; return the remote resource's identity. Raises a StepFailure."""
        ...

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        """Look the effect up remotely (marker, branch, external_id); ``None`` if absent."""
        ...


class Effects:
    """Performs a run's effects under its lease; every ledger write is fenced by the lease."""

    def __init__(
        self, store: Store, lease: Lease, executor: EffectExecutor, *,
        crash: CrashPoints = NO_CRASH,
    ) -> None:
        self.store = store
        self.lease = lease
        self.executor = executor
        self.crash = crash

    def perform(self, request: EffectRequest) -> dict[str, Any]:
        """Apply ``request`` at most once; a replay returns the recorded resource.

        Raises ``EffectConflict`` when the key was recorded with another payload, and
        ``StaleWrite`` when this worker's lease is gone (then nothing is sent).
        """
        effect = self.store.intend_effect(self.lease, request.intent())
        if effect.status is EffectStatus.CONFIRMED:
            assert effect.resource is not None
            return effect.resource
        if effect.attempts > 1:
            found = self.executor.find(request)
            if found is not None:
                log.info("effect %r found on the remote; recording it", request.key)
                self.store.confirm_effect(self.lease, request.key, found, reconciled=True)
                return found
        self.crash.reached("after_effect_intent", f"{request.step}:{request.name}")
        resource = self.executor.apply(request)
        self.crash.reached("after_effect_applied", f"{request.step}:{request.name}")
        self.store.confirm_effect(self.lease, request.key, resource)
        return resource

    def reconcile(self, run_id: str) -> list[Effect]:
        """Ask the remote about every effect left ``intended``; confirm those it has.

        The rest stay ``intended``: their step runs again and applies them.
        """
        reconciled = []
        for effect in self.store.effects(run_id):
            if effect.status is not EffectStatus.INTENDED:
                continue
            found = self.executor.find(EffectRequest.from_effect(effect))
            if found is not None:
                reconciled.append(
                    self.store.confirm_effect(self.lease, effect.key, found, reconciled=True)
                )
        return reconciled
