"""What the ledger already knows a run's effects made on GitHub: ids for updates, read-only.

An update of the tracking comment, the pull request or a check run needs the object's id. The
ledger recorded it when the effect that created the object was confirmed, so the executor
reads it here instead of asking GitHub: an update is one call and no lookup. Only ``find``
(after an ambiguous outcome) asks GitHub what exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from runner.ledger.records import Effect, EffectStatus
from runner.names import EffectKind

# The run's recorded effects, e.g. ``lambda: store.effects(run_id)``; called at each apply.
LedgerView = Callable[[], Iterable[Effect]]


class ConfirmedEffects:
    """The run's confirmed effects with a remote identity, in decision order."""

    def __init__(self, effects: LedgerView) -> None:
        self._effects = effects

    def of(self, kind: EffectKind, **payload: Any) -> list[Effect]:
        """Confirmed effects of ``kind`` whose payload has every given ``key=value``."""
        return [
            effect
            for effect in self._effects()
            if effect.kind is kind
            and effect.status is EffectStatus.CONFIRMED
            and effect.resource
            and all(effect.payload.get(k) == v for k, v in payload.items())
        ]

    def latest(self, kind: EffectKind, **payload: Any) -> dict[str, Any] | None:
        """The remote identity the newest matching confirmed effect recorded, if any."""
        found = self.of(kind, **payload)
        return dict(found[-1].resource or {}) if found else None
