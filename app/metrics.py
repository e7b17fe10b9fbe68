"""Recovery and agent usage metrics in Prometheus text format, computed from the ledger on
each scrape (usage from the ``AGENT_USAGE`` events steps record, so nothing counts twice)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from runner.ledger.store import Store
from runner.names import EventType
from runner.usage import TOKEN_KINDS, agent_runs, total
from runner.workflow import State

RESUME_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600)
ATTEMPT_BUCKETS = (1, 2, 3, 5, 10)


class LedgerCollector(Collector):
    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        stats = self.store.recovery_stats()
        runs = GaugeMetricFamily("ratchet_runs", "Runs by state.", labels=["state"])
        for state in State:
            runs.add_metric([state.value], stats.runs_by_state.get(state.value, 0))
        yield runs
        yield CounterMetricFamily("ratchet_lease_expirations", "Leases that expired unreleased "
                                  "(a worker died or stalled).", value=stats.lease_expirations)
        yield CounterMetricFamily("ratchet_effect_reconciliations", "Effects confirmed by "
                                  "asking the remote after a lost response.",
                                  value=stats.effect_reconciliations)
        yield _histogram("ratchet_resume_seconds", "Time from a lease's expiry to the next "
                         "lease on the same run.", stats.resume_seconds, RESUME_BUCKETS)
        yield _histogram("ratchet_step_attempts", "Attempts each completed step needed.",
                         [float(a) for a in stats.step_attempts], ATTEMPT_BUCKETS)
        yield GaugeMetricFamily("ratchet_checkpoint_age_seconds_max", "Age of the oldest last "
                                "checkpoint among runnable runs.",
                                value=max(stats.checkpoint_ages, default=0.0))


class UsageCollector(Collector):
    """What every run's agents spent: cost, tokens by kind, agent time."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        totals = total(agent_runs(self.store.events_of_type(EventType.AGENT_USAGE)))
        yield CounterMetricFamily("ratchet_agent_cost_usd", "Dollars agents reported spending.",
                                  value=totals.cost_usd)
        tokens = CounterMetricFamily("ratchet_agent_tokens", "Tokens agents reported, by kind.",
                                     labels=["kind"])
        for kind, field in TOKEN_KINDS.items():
            tokens.add_metric([kind], getattr(totals, field))
        yield tokens
        yield CounterMetricFamily("ratchet_agent_seconds", "Agent wall time the runner measured.",
                                  value=totals.agent_seconds)


def _histogram(name: str, doc: str, values: Iterable[float],
               buckets: tuple[float, ...]) -> HistogramMetricFamily:
    values = sorted(values)
    cumulative = [(str(b), bisect.bisect_right(values, b)) for b in buckets]
    cumulative.append(("+Inf", len(values)))
    return HistogramMetricFamily(name, doc, buckets=cumulative, sum_value=sum(values))


def registry_for(store: Store) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LedgerCollector(store))
    registry.register(UsageCollector(store))
    return registry
