"""The outbox: effects a transition decided, sent after it commits, each at most once.

The runner decides effects; forges execute them. A step (or a signal, or a stop) returns the
effects it decided; the session records them as ``intended`` in the same transaction as the
state change, then flushes the outbox: for each intended effect, in decision order, count a
send (``begin_effect``), call the executor, record the confirmed remote identity. An effect that
was sent before and never confirmed (a crash, a lost acknowledgement) is looked up on the remote
side first (``find``: a marker, a branch, an ``external_id``); only if it is absent is it sent
again. An effect never sent makes no lookup. Keys are ``<run>:<step>:<name>``: a replayed
decision reuses its key, and the ledger refuses the same key with another payload.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from runner.faults import NO_CRASH, CrashPoints
from runner.ledger.records import Effect, EffectIntent, EffectStatus, Lease
from runner.ledger.store import Store
from runner.names import EffectKind

log = logging.getLogger(__name__)


def effect_key(run_id: str, step: str, name: str) -> str:
    return f"{run_id}:{step}:{name}"


@dataclass(frozen=True)
class EffectRequest:
    """One effect: ``payload`` is data (never forge wording); executors render it."""

    key: str
    run_id: str
    step: str
    kind: EffectKind
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
    """Talks to one forge (the local sink, GitHub). ``apply`` must be safe to call again for
    a key whose earlier send was lost, once ``find`` said the effect is absent."""

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        """Perform the effect; return the remote resource's identity. Raises a StepFailure."""
        ...

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        """Look the effect up remotely (marker, branch, external_id); ``None`` if absent."""
        ...


class Outbox:
    """Sends a run's intended effects under its lease; every ledger write is fenced."""

    def __init__(
        self, store: Store, lease: Callable[[], Lease], executor: EffectExecutor, *,
        crash: CrashPoints = NO_CRASH,
    ) -> None:
        self.store = store
        self.lease = lease
        self.executor = executor
        self.crash = crash
        self.failed: Effect | None = None  # the effect the last flush stopped at

    def pending(self, run_id: str) -> list[Effect]:
        return [e for e in self.store.effects(run_id) if e.status is EffectStatus.INTENDED]

    def flush(self, run_id: str) -> list[Effect]:
        """Send every intended effect in decision order; return those confirmed now.

        Stops at the first failure (a ``StepFailure`` from the executor), leaving it and the
        ones after it intended: later effects may depend on it (a check run on a pushed head).
        """
        confirmed = []
        self.failed = None
        for effect in self.pending(run_id):
            self.failed = effect
            request = EffectRequest.from_effect(effect)
            if effect.attempts > 0:
                found = self.executor.find(request)
                if found is not None:
                    log.info("run %r: effect %r found on the remote; recording it", run_id,
                             effect.key)
                    confirmed.append(self.store.confirm_effect(self.lease(), effect.key, found,
                                                               reconciled=True))
                    self._remember(effect.kind, found)
                    continue
            self.store.begin_effect(self.lease(), effect.key)
            self.crash.reached("after_effect_intent", f"{effect.step}:{request.name}")
            resource = self.executor.apply(request)
            self.crash.reached("after_effect_applied", f"{effect.step}:{request.name}")
            confirmed.append(self.store.confirm_effect(self.lease(), effect.key, resource))
            self._remember(effect.kind, resource)
        self.failed = None
        return confirmed

    def _remember(self, kind: EffectKind, resource: dict[str, Any]) -> None:
        """A forge's pull request number becomes the run's: commands on it reach the run."""
        number = resource.get("number")
        if kind is EffectKind.PULL_REQUEST and isinstance(number, int):
            self.store.link_pull_request(self.lease(), number)
