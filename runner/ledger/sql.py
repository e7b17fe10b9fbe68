"""The ledger over SQL, shared by the SQLite and PostgreSQL backends.

Every rule of the ledger lives here once: compare-and-set on version and lease epoch, the
gapless per-run event sequence, checkpoints sealed by their hash, content-addressed artifacts,
idempotent effect records. A backend supplies only connections, the write-transaction opener,
the placeholder style, column types and the mapping of its driver's errors.
"""

from __future__ import annotations

import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from runner.canonical import canonical_json, sha256_hex
from runner.errors import (
    CorruptArtifact,
    CorruptCheckpoint,
    EffectConflict,
    IllegalTransition,
    LedgerError,
    StaleWrite,
    UnknownRun,
)
from runner.ledger import schema
from runner.ledger.records import (
    EARLY_SIGNAL_SECONDS,
    Change,
    Checkpoint,
    DeliveryIntake,
    DeliveryOutcome,
    Effect,
    EffectIntent,
    EffectStatus,
    Event,
    Lease,
    NewDelivery,
    NewEvent,
    NewRun,
    NewSignal,
    RecoveryStats,
    Run,
    RunMark,
    Signal,
    SignalDecision,
    SignalFor,
)
from runner.names import EffectKind, EventType, SignalKind, SignalStatus
from runner.origin import Origin, parse_origin
from runner.signal_payloads import read_payload
from runner.workflow import ENDS, WAITS, State, allowed, is_runnable

log = logging.getLogger(__name__)

RUN_COLUMNS = (
    "id, repo, title, body, workflow, issue, pr, state, step, attempt, step_epoch, version,"
    " lease_owner, lease_epoch, lease_expires_at, base_revision, head_revision, ready_at,"
    " deadline, reason, params, last_seq, created_at, updated_at"
)
EVENT_COLUMNS = "run_id, seq, type, at, step, attempt, lease_epoch, revision, key, data"
EFFECT_COLUMNS = (
    "key, run_id, step, kind, payload_hash, payload, status, resource, attempts, created_at,"
    " updated_at, position"
)
SIGNAL_COLUMNS = (
    "id, run_id, kind, author, origin, payload, status, reason, created_at, decided_at"
)
_RUNNABLE = tuple(s.value for s in State if is_runnable(s))
_WAITS = tuple(s.value for s in WAITS)
_ENDS = tuple(s.value for s in ENDS)
# A run with work in its inbox or outbox: a pending signal, or an effect not yet confirmed.
_HAS_WORK = (
    "(EXISTS (SELECT 1 FROM signals s WHERE s.run_id = runs.id AND s.status = 'pending')"
    " OR EXISTS (SELECT 1 FROM effects e WHERE e.run_id = runs.id AND e.status = 'intended'))"
)

Row = dict[str, Any]


class Tx:
    """One open transaction: run statements written with ``?`` placeholders; rows come back
    as dicts keyed by column name, so no reader depends on column positions."""

    def __init__(self, conn: Any, placeholder: str) -> None:
        self._conn = conn
        self._placeholder = placeholder

    def _sql(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self._conn.execute(self._sql(sql), tuple(params)).rowcount)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.cursor().executemany(self._sql(sql), [tuple(r) for r in rows])

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        cursor = self._conn.execute(self._sql(sql), tuple(params))
        row = cursor.fetchone()
        return None if row is None else _named(cursor, row)

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cursor = self._conn.execute(self._sql(sql), tuple(params))
        return [_named(cursor, row) for row in cursor.fetchall()]


def _named(cursor: Any, row: Sequence[Any]) -> Row:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


class SqlStore(ABC):
    """Implements ``runner.ledger.store.Store``; subclasses connect to a database."""

    placeholder = "?"
    column_types: dict[str, str] = {"blob": "BLOB", "real": "REAL", "bigint": "INTEGER"}
    lock_clause = ""  # appended to the SELECT that reads a run before writing it

    # --- backend hooks -------------------------------------------------------------------

    @abstractmethod
    def _connection(self) -> AbstractContextManager[Any]:
        """A connection for the duration of one transaction (the backend's pool or thread)."""

    @abstractmethod
    def _begin_write(self, conn: Any) -> None:
        """Open a transaction that holds the write lock from its first statement."""

    def _lock_schema(self, tx: Tx) -> None:  # noqa: B027 - a hook with a sensible default
        """Serialise concurrent migrators (SQLite's write lock already does)."""

    def _translate_error(self, exc: Exception) -> Exception | None:
        """Map a driver error to a ``LedgerError`` (``LedgerUnavailable`` for outages)."""
        return None

    # --- transactions --------------------------------------------------------------------

    @contextmanager
    def _driver_errors(self) -> Iterator[None]:
        """Turn the driver's errors into ``LedgerError``s (``LedgerUnavailable`` for outages)."""
        try:
            yield
        except LedgerError:
            raise
        except Exception as exc:
            mapped = self._translate_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _writer(self) -> AbstractContextManager[Any]:
        """Held around each write transaction (a process-wide mutex where waiting on the
        database's own lock is slow); nothing by default."""
        return nullcontext()

    @contextmanager
    def _write(self) -> Iterator[Tx]:
        with self._driver_errors(), self._writer(), self._connection() as conn:
            self._begin_write(conn)
            try:
                yield Tx(conn, self.placeholder)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[Tx]:
        # Reads run in autocommit mode: each statement sees one consistent snapshot.
        with self._driver_errors(), self._connection() as conn:
            yield Tx(conn, self.placeholder)

    def migrate(self) -> None:
        """Bring the schema to ``schema.LATEST``; refuse a database written by newer code."""
        with self._write() as tx:
            self._lock_schema(tx)
            tx.run("CREATE TABLE IF NOT EXISTS ledger_schema (version INTEGER NOT NULL)")
            row = tx.one("SELECT MAX(version) AS version FROM ledger_schema")
            current = row["version"] if row and row["version"] is not None else 0
            if current > schema.LATEST:
                raise LedgerError(
                    f"the ledger has schema version {current}, newer than this Ratchet "
                    f"understands ({schema.LATEST}): upgrade ratchet-runner before using it"
                )
            for version, ddl in schema.MIGRATIONS:
                if version <= current:
                    continue
                for statement in schema.statements(ddl, self.column_types):
                    tx.run(statement)
                tx.run("INSERT INTO ledger_schema (version) VALUES (?)", (version,))
                log.info("ledger schema migrated to version %r", version)

    def schema_version(self) -> int:
        with self._read() as tx:
            row = tx.one("SELECT MAX(version) AS version FROM ledger_schema")
        return int(row["version"]) if row and row["version"] is not None else 0

    def ping(self) -> None:
        with self._read() as tx:
            tx.one("SELECT 1")

    # --- runs ----------------------------------------------------------------------------

    def create_run(self, new: NewRun, *, now: float | None = None) -> Run:
        at = _now(now)
        with self._write() as tx:
            self._insert_run(tx, new, at)
            row = self._select_run(tx, new.id)
        return _run_from_row(row)

    def _insert_run(self, tx: Tx, new: NewRun, at: float) -> None:
        if tx.one("SELECT 1 AS x FROM runs WHERE id = ?", (new.id,)):
            raise LedgerError(f"a run with id {new.id!r} already exists")
        tx.run(
            f"INSERT INTO runs ({RUN_COLUMNS}) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, NULL, 1, NULL, 0, NULL, ?, NULL, NULL, NULL,"
            " NULL, ?, 1, ?, ?)",
            (
                new.id, new.repo, new.title, new.body, new.workflow, new.issue, new.pr,
                State.QUEUED.value, new.step, new.base_revision,
                json.dumps(new.origin.to_params()), at, at,
            ),
        )
        self._insert_events(
            tx, new.id, 1, 0, at,
            [NewEvent(EventType.RUN_CREATED, step=new.step, attempt=1,
                      revision=new.base_revision, data=dict(new.event_data))],
        )
        self._record_effects(tx, new.id, 0, at, new.effects)

    def get_run(self, run_id: str) -> Run:
        with self._read() as tx:
            row = tx.one(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        if row is None:
            raise UnknownRun(run_id)
        return _run_from_row(row)

    def list_runs(
        self, *, limit: int = 100, states: Collection[State] | None = None
    ) -> list[Run]:
        where, params = "", []
        if states:
            where = f" WHERE state IN ({', '.join('?' for _ in states)})"
            params = [State(s).value for s in states]
        with self._read() as tx:
            rows = tx.all(
                f"SELECT {RUN_COLUMNS} FROM runs{where} ORDER BY created_at DESC, id DESC LIMIT ?",
                (*params, limit),
            )
        return [_run_from_row(r) for r in rows]

    def wake_due(
        self, *, now: float | None = None, rewake_after: float = 30.0, limit: int = 1000
    ) -> list[Run]:
        at = _now(now)
        runnable = ", ".join("?" for _ in _RUNNABLE)
        waits = ", ".join("?" for _ in _WAITS)
        free = "(lease_owner IS NULL AND (woken_at IS NULL OR woken_at <= ?))"
        with self._write() as tx:
            rows = tx.all(
                f"SELECT {RUN_COLUMNS} FROM runs WHERE"
                f" (state IN ({runnable}) AND (ready_at IS NULL OR ready_at <= ?) AND ("
                f"   (lease_owner IS NOT NULL AND lease_expires_at <= ?) OR {free}))"
                f" OR (state IN ({waits}) AND deadline IS NOT NULL AND deadline <= ? AND {free})"
                f" OR ((ready_at IS NULL OR ready_at <= ?) AND {_HAS_WORK} AND ("
                f"   (lease_owner IS NOT NULL AND lease_expires_at <= ?) OR {free}))"
                f" ORDER BY updated_at LIMIT ?{self.lock_clause}",
                (*_RUNNABLE, at, at, at - rewake_after, *_WAITS, at, at - rewake_after,
                 at, at, at - rewake_after, limit),
            )
            runs = [_run_from_row(r) for r in rows]
            woken = []
            for run in runs:
                if run.lease_owner is not None:
                    seq = self._allocate(tx, run.id, 1)
                    self._insert_events(tx, run.id, seq, run.lease_epoch, at, [NewEvent(
                        EventType.LEASE_EXPIRED, step=run.step, attempt=run.attempt,
                        data={"owner": run.lease_owner, "epoch": run.lease_epoch,
                              "expired_at": run.lease_expires_at, "by": "reaper"},
                    )])
                    run = replace(run, lease_owner=None, lease_expires_at=None)
                tx.run(
                    "UPDATE runs SET woken_at = ?, lease_owner = NULL, lease_expires_at = NULL"
                    " WHERE id = ?",
                    (at, run.id),
                )
                woken.append(run)
        return woken

    def request_pickup(self, run_id: str, *, now: float | None = None) -> None:
        with self._write() as tx:
            tx.run("INSERT INTO pickups (run_id, at) VALUES (?, ?)"
                   " ON CONFLICT (run_id) DO UPDATE SET at = excluded.at", (run_id, _now(now)))

    def take_pickups(self) -> list[str]:
        with self._read() as tx:
            if tx.one("SELECT run_id FROM pickups LIMIT 1") is None:
                return []
        with self._write() as tx:
            rows = tx.all(f"SELECT run_id FROM pickups ORDER BY at, run_id{self.lock_clause}")
            taken = [row["run_id"] for row in rows]
            if taken:
                marks = ", ".join("?" for _ in taken)
                tx.run(f"DELETE FROM pickups WHERE run_id IN ({marks})", taken)
        return taken

    def recovery_stats(self, *, now: float | None = None) -> RecoveryStats:
        at = _now(now)
        with self._read() as tx:
            by_state = {r["state"]: int(r["n"]) for r in
                        tx.all("SELECT state, COUNT(*) AS n FROM runs GROUP BY state")}
            counts = {r["type"]: int(r["n"]) for r in tx.all(
                "SELECT type, COUNT(*) AS n FROM events WHERE type IN (?, ?) GROUP BY type",
                (EventType.LEASE_EXPIRED.value, EventType.EFFECT_RECONCILED.value),
            )}
            lease_events = tx.all(
                "SELECT run_id, type, at, data FROM events WHERE type IN (?, ?)"
                " ORDER BY run_id, seq",
                (EventType.LEASE_EXPIRED.value, EventType.LEASE_ACQUIRED.value),
            )
            runnable = ", ".join("?" for _ in _RUNNABLE)
            last_checkpoints = tx.all(
                "SELECT MAX(c.created_at) AS at FROM runs r JOIN checkpoints c ON"
                f" c.run_id = r.id WHERE r.state IN ({runnable}) GROUP BY r.id",
                _RUNNABLE,
            )
            attempts = [int(r["attempt"]) for r in tx.all("SELECT attempt FROM checkpoints")]
        resume: list[float] = []
        expired: dict[str, float] = {}
        for event in lease_events:
            if event["type"] == EventType.LEASE_EXPIRED:
                expired[event["run_id"]] = json.loads(event["data"]).get("expired_at") or (
                    event["at"])
            elif event["run_id"] in expired:
                resume.append(max(0.0, event["at"] - expired.pop(event["run_id"])))
        return RecoveryStats(
            runs_by_state=by_state,
            lease_expirations=counts.get(EventType.LEASE_EXPIRED, 0),
            effect_reconciliations=counts.get(EventType.EFFECT_RECONCILED, 0),
            resume_seconds=resume,
            checkpoint_ages=[at - r["at"] for r in last_checkpoints],
            step_attempts=attempts,
        )

    # --- leases --------------------------------------------------------------------------

    def acquire_lease(
        self, run_id: str, owner: str, *, ttl: float, now: float | None = None
    ) -> Lease | None:
        at = _now(now)
        with self._write() as tx:
            row = self._select_run(tx, run_id)
            run = _run_from_row(row)
            if run.lease_live(at):
                if run.lease_owner != owner:
                    return None
                # Re-entrant: the holder asks again; extend rather than fence itself out.
                tx.run("UPDATE runs SET lease_expires_at = ? WHERE id = ?", (at + ttl, run_id))
                return Lease(run_id, owner, run.lease_epoch, at + ttl)
            events: list[NewEvent] = []
            if run.lease_owner is not None and run.lease_owner != owner:
                events.append(
                    NewEvent(
                        EventType.LEASE_EXPIRED, step=run.step, attempt=run.attempt,
                        data={"owner": run.lease_owner, "epoch": run.lease_epoch,
                              "expired_at": run.lease_expires_at},
                    )
                )
            epoch = run.lease_epoch + 1
            attempt, step_epoch = run.attempt, row["step_epoch"]
            if is_runnable(run.state):
                # A step already held under an earlier lease is being taken up again.
                if step_epoch is not None:
                    attempt += 1
                step_epoch = epoch
            events.append(
                NewEvent(EventType.LEASE_ACQUIRED, step=run.step, attempt=attempt,
                         data={"owner": owner, "ttl": ttl, "state": run.state.value})
            )
            seq = self._allocate(tx, run_id, len(events))
            tx.run(
                "UPDATE runs SET lease_owner = ?, lease_epoch = ?, lease_expires_at = ?,"
                " attempt = ?, step_epoch = ?, version = version + 1, updated_at = ?"
                " WHERE id = ? AND lease_epoch = ?",
                (owner, epoch, at + ttl, attempt, step_epoch, at, run_id, run.lease_epoch),
            )
            self._insert_events(tx, run_id, seq, epoch, at, events)
        return Lease(run_id, owner, epoch, at + ttl)

    def renew_lease(self, lease: Lease, *, ttl: float, now: float | None = None) -> Lease:
        at = _now(now)
        with self._write() as tx:
            changed = tx.run(
                "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND lease_epoch = ?"
                " AND lease_owner = ?",
                (at + ttl, lease.run_id, lease.epoch, lease.owner),
            )
            if changed != 1:
                raise self._stale(tx, lease, "renew the lease")
        return replace(lease, expires_at=at + ttl)

    def release_lease(self, lease: Lease) -> None:
        with self._write() as tx:
            tx.run(
                "UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL"
                " WHERE id = ? AND lease_epoch = ? AND lease_owner = ?",
                (lease.run_id, lease.epoch, lease.owner),
            )

    # --- fenced writes -------------------------------------------------------------------

    def apply(self, lease: Lease, change: Change, *, now: float | None = None) -> Run:
        at = _now(now)
        with self._write() as tx:
            row = self._select_run(tx, lease.run_id)
            run = _run_from_row(row)
            if run.lease_epoch != lease.epoch or run.lease_owner != lease.owner:
                raise self._stale(tx, lease, f"move to {change.state.value}")
            return self._change(tx, run, change, lease.epoch, at, step_epoch=lease.epoch,
                                last_seq=row["last_seq"])

    def cancel(
        self, run_id: str, *, reason: str, signal: NewSignal,
        effects: Sequence[EffectIntent] = (), now: float | None = None,
    ) -> Run:
        at = _now(now)
        with self._write() as tx:
            run = _run_from_row(self._select_run(tx, run_id))
            if run.state in ENDS:
                raise IllegalTransition(f"run {run_id} has already ended ({run.state.value})")
            if not allowed(run.state, State.CANCELLED):  # pragma: no cover - table invariant
                raise IllegalTransition(f"run {run_id} cannot be cancelled from {run.state}")
            epoch = run.lease_epoch + 1  # fences out whoever holds the run now
            self._insert_signal(tx, signal, at, status=SignalStatus.ACCEPTED, reason=reason)
            seq = self._allocate(tx, run_id, 2)
            tx.run(
                "UPDATE runs SET state = ?, version = version + 1, lease_owner = NULL,"
                " lease_expires_at = NULL, lease_epoch = ?, reason = ?, ready_at = NULL,"
                " deadline = NULL, updated_at = ? WHERE id = ?",
                (State.CANCELLED.value, epoch, reason, at, run_id),
            )
            self._insert_events(tx, run_id, seq, epoch, at, [
                NewEvent(EventType.SIGNAL_ACCEPTED, step=run.step,
                         data={"signal": signal.id, "kind": signal.kind.value,
                               "author": signal.author}),
                NewEvent(EventType.RUN_CANCELLED, step=run.step, attempt=run.attempt,
                         data={"reason": reason, "by": signal.author, "was": run.state.value,
                               "fenced_owner": run.lease_owner}),
            ])
            self._record_effects(tx, run_id, epoch, at, effects)
            return _run_from_row(self._select_run(tx, run_id))

    def append(
        self,
        lease: Lease,
        *,
        events: Sequence[NewEvent] = (),
        artifacts: Mapping[str, bytes] | None = None,
        now: float | None = None,
    ) -> None:
        at = _now(now)
        with self._write() as tx:
            self._fence(tx, lease, "record events")
            if events:
                seq = self._allocate(tx, lease.run_id, len(events))
                self._insert_events(tx, lease.run_id, seq, lease.epoch, at, events)
            self._link_artifacts(tx, lease.run_id, artifacts or {})

    def _change(
        self, tx: Tx, run: Run, change: Change, epoch: int, at: float, *,
        step_epoch: int | None, last_seq: int,
    ) -> Run:
        """The hot path: one UPDATE of the run (the row is already locked by the caller's read),
        the events in one batch, the checkpoint, the artifacts."""
        if change.version != run.version:
            raise StaleWrite(
                f"run {run.id} moved to version {run.version} (you acted on {change.version}):"
                " reload it and decide again"
            )
        if run.state in ENDS and change.state is not run.state:
            raise IllegalTransition(f"run {run.id} has ended ({run.state.value})")
        if change.state is not run.state and not allowed(run.state, change.state):
            raise IllegalTransition(
                f"run {run.id}: {run.state.value} -> {change.state.value} is not in the"
                " workflow table"
            )
        tx.run(
            "UPDATE runs SET state = ?, step = ?, attempt = ?, step_epoch = ?,"
            " version = version + 1, ready_at = ?, deadline = ?, reason = ?,"
            " head_revision = COALESCE(?, head_revision),"
            " base_revision = COALESCE(base_revision, ?), params = COALESCE(?, params),"
            " updated_at = ?, last_seq = ? WHERE id = ? AND version = ?",
            (
                change.state.value, change.step, change.attempt, step_epoch, change.ready_at,
                change.deadline, change.reason, change.head_revision, change.base_revision,
                None if change.origin is None else json.dumps(change.origin.to_params()), at,
                last_seq + len(change.events), run.id, run.version,
            ),
        )
        if change.events:
            self._insert_events(tx, run.id, last_seq + 1, epoch, at, change.events)
        if change.checkpoint is not None:
            body = change.checkpoint.body()
            tx.run(
                "INSERT INTO checkpoints (run_id, step, position, attempt, body, sha256,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run.id, change.checkpoint.step, run.version, change.checkpoint.attempt, body,
                 sha256_hex(body), at),
            )
        self._link_artifacts(tx, run.id, change.artifacts)
        self._record_effects(tx, run.id, epoch, at, change.effects)
        if change.signal is not None:
            self._decide_signal(tx, run.id, change.signal, at)
        return replace(
            run,
            state=change.state,
            step=change.step,
            attempt=change.attempt,
            version=run.version + 1,
            ready_at=change.ready_at,
            deadline=change.deadline,
            reason=change.reason,
            head_revision=change.head_revision or run.head_revision,
            base_revision=run.base_revision or change.base_revision,
            origin=change.origin or run.origin,
            updated_at=at,
        )

    # --- history -------------------------------------------------------------------------

    def events(self, run_id: str, *, after: int = 0) -> list[Event]:
        with self._read() as tx:
            rows = tx.all(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE run_id = ? AND seq > ? ORDER BY seq",
                (run_id, after),
            )
        return [_event_from_row(r) for r in rows]

    def events_of_type(self, event_type: EventType, *,
                       runs: Collection[str] | None = None) -> list[Event]:
        where, params = "type = ?", [event_type.value]
        if runs is not None:
            if not runs:
                return []  # an empty filter matches nothing (never "everything")
            where += f" AND run_id IN ({', '.join('?' for _ in runs)})"
            params += list(runs)
        with self._read() as tx:
            rows = tx.all(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY run_id, seq",
                tuple(params),
            )
        return [_event_from_row(r) for r in rows]

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        with self._read() as tx:
            rows = tx.all(
                "SELECT body, sha256, step FROM checkpoints WHERE run_id = ? ORDER BY position",
                (run_id,),
            )
        return [_checkpoint(run_id, r["step"], r["body"], r["sha256"]) for r in rows]

    def checkpoint(self, run_id: str, step: str) -> Checkpoint | None:
        with self._read() as tx:
            row = tx.one(
                "SELECT body, sha256 FROM checkpoints WHERE run_id = ? AND step = ?",
                (run_id, step),
            )
        return None if row is None else _checkpoint(run_id, step, row["body"], row["sha256"])

    def completed_steps(self, run_id: str) -> list[str]:
        """Steps with a checkpoint, in order (names only: no hash check, for reporting)."""
        with self._read() as tx:
            rows = tx.all(
                "SELECT step FROM checkpoints WHERE run_id = ? ORDER BY position", (run_id,)
            )
        return [r["step"] for r in rows]

    # --- effects -------------------------------------------------------------------------

    def begin_effect(self, lease: Lease, key: str, *, now: float | None = None) -> Effect:
        at = _now(now)
        with self._write() as tx:
            self._fence(tx, lease, f"send effect {key}")
            changed = tx.run(
                "UPDATE effects SET attempts = attempts + 1, updated_at = ? WHERE key = ?"
                " AND status = ?",
                (at, key, EffectStatus.INTENDED.value),
            )
            row = tx.one(f"SELECT {EFFECT_COLUMNS} FROM effects WHERE key = ?", (key,))
            if row is None or changed != 1:
                raise LedgerError(f"effect {key} is not waiting to be sent; reload the outbox")
            effect = _effect_from_row(row)
            seq = self._allocate(tx, lease.run_id, 1)
            self._insert_events(tx, lease.run_id, seq, lease.epoch, at, [NewEvent(
                EventType.EFFECT_ATTEMPTED, step=effect.step, key=key,
                data={"kind": effect.kind.value, "attempt": effect.attempts},
            )])
        return effect

    def confirm_effect(
        self,
        lease: Lease,
        key: str,
        resource: Mapping[str, Any],
        *,
        reconciled: bool = False,
        now: float | None = None,
    ) -> Effect:
        at = _now(now)
        with self._write() as tx:
            self._fence(tx, lease, f"confirm effect {key}")
            changed = tx.run(
                "UPDATE effects SET status = ?, resource = ?, updated_at = ? WHERE key = ?",
                (EffectStatus.CONFIRMED.value, json.dumps(dict(resource), sort_keys=True), at,
                 key),
            )
            if changed != 1:
                raise LedgerError(f"no intent recorded for effect {key}; record intent first")
            row = tx.one(f"SELECT {EFFECT_COLUMNS} FROM effects WHERE key = ?", (key,))
            assert row is not None
            effect = _effect_from_row(row)
            seq = self._allocate(tx, lease.run_id, 1)
            self._insert_events(
                tx, lease.run_id, seq, lease.epoch, at,
                [NewEvent(EventType.EFFECT_RECONCILED if reconciled
                          else EventType.EFFECT_CONFIRMED, step=effect.step, key=key,
                          data={"kind": effect.kind.value, "resource": dict(resource)})],
            )
        return effect

    def fail_effect(self, lease: Lease, key: str, reason: str, *,
                    now: float | None = None) -> Effect:
        at = _now(now)
        with self._write() as tx:
            self._fence(tx, lease, f"give up effect {key}")
            changed = tx.run(
                "UPDATE effects SET status = ?, resource = ?, updated_at = ? WHERE key = ?"
                " AND status = ?",
                (EffectStatus.FAILED.value, json.dumps({"error": reason}), at, key,
                 EffectStatus.INTENDED.value),
            )
            row = tx.one(f"SELECT {EFFECT_COLUMNS} FROM effects WHERE key = ?", (key,))
            if row is None or changed != 1:
                raise LedgerError(f"effect {key} is not waiting to be sent; reload the outbox")
            effect = _effect_from_row(row)
            seq = self._allocate(tx, lease.run_id, 1)
            self._insert_events(tx, lease.run_id, seq, lease.epoch, at, [NewEvent(
                EventType.EFFECT_FAILED, step=effect.step, key=key,
                data={"kind": effect.kind.value, "error": reason})])
        return effect

    def get_effect(self, key: str) -> Effect | None:
        with self._read() as tx:
            row = tx.one(f"SELECT {EFFECT_COLUMNS} FROM effects WHERE key = ?", (key,))
        return None if row is None else _effect_from_row(row)

    def effects(self, run_id: str) -> list[Effect]:
        with self._read() as tx:
            rows = tx.all(
                f"SELECT {EFFECT_COLUMNS} FROM effects WHERE run_id = ?"
                " ORDER BY position, created_at, key",
                (run_id,),
            )
        return [_effect_from_row(r) for r in rows]

    # --- signals -------------------------------------------------------------------------

    def add_signal(self, signal: NewSignal, *, now: float | None = None) -> tuple[Signal, bool]:
        at = _now(now)
        with self._write() as tx:
            self._select_run(tx, signal.run_id)  # UnknownRun; and the run row is locked
            row = tx.one(f"SELECT {SIGNAL_COLUMNS} FROM signals WHERE id = ?", (signal.id,))
            if row is not None:
                return _signal_from_row(row), False
            self._insert_signal(tx, signal, at, status=SignalStatus.PENDING, reason=None)
            run = _run_from_row(self._select_run(tx, signal.run_id))
            seq = self._allocate(tx, signal.run_id, 1)
            self._insert_events(tx, signal.run_id, seq, run.lease_epoch, at, [NewEvent(
                EventType.SIGNAL_RECEIVED, step=run.step,
                data={"signal": signal.id, "kind": signal.kind.value, "author": signal.author,
                      "origin": signal.origin},
            )])
            row = tx.one(f"SELECT {SIGNAL_COLUMNS} FROM signals WHERE id = ?", (signal.id,))
        assert row is not None
        return _signal_from_row(row), True

    def signals(self, run_id: str, *, status: SignalStatus | None = None) -> list[Signal]:
        where, params = "run_id = ?", [run_id]
        if status is not None:
            where += " AND status = ?"
            params.append(status.value)
        with self._read() as tx:
            rows = tx.all(
                f"SELECT {SIGNAL_COLUMNS} FROM signals WHERE {where} ORDER BY created_at, id",
                params,
            )
        return [_signal_from_row(r) for r in rows]

    def get_signal(self, signal_id: str) -> Signal | None:
        with self._read() as tx:
            row = tx.one(f"SELECT {SIGNAL_COLUMNS} FROM signals WHERE id = ?", (signal_id,))
        return None if row is None else _signal_from_row(row)

    # --- artifacts -----------------------------------------------------------------------

    def put_artifact(self, data: bytes) -> str:
        with self._write() as tx:
            return self._put_blob(tx, data)

    def get_artifact(self, sha256: str) -> bytes:
        with self._read() as tx:
            row = tx.one("SELECT data FROM blobs WHERE sha256 = ?", (sha256,))
        if row is None:
            raise LedgerError(f"no artifact with sha256 {sha256}")
        data = bytes(row["data"])
        actual = sha256_hex(data)
        if actual != sha256:
            raise CorruptArtifact(sha256=sha256, actual=actual)
        return data

    def artifacts(self, run_id: str) -> dict[str, str]:
        with self._read() as tx:
            rows = tx.all(
                "SELECT path, sha256 FROM artifacts WHERE run_id = ? ORDER BY path", (run_id,)
            )
        return {r["path"]: r["sha256"] for r in rows}

    def read_artifact(self, run_id: str, path: str) -> bytes | None:
        with self._read() as tx:
            row = tx.one(
                "SELECT sha256 FROM artifacts WHERE run_id = ? AND path = ?", (run_id, path)
            )
        if row is None:
            return None
        try:
            return self.get_artifact(row["sha256"])
        except CorruptArtifact as exc:
            raise exc.about(run_id, path) from None

    # --- deliveries ----------------------------------------------------------------------

    def accept_delivery(
        self, delivery: NewDelivery, *, start: NewRun | None = None,
        signal: SignalFor | None = None, now: float | None = None,
    ) -> DeliveryOutcome:
        [outcome] = self.accept_deliveries([DeliveryIntake(delivery, start, signal)], now=now)
        return outcome

    def accept_deliveries(self, intakes: Sequence[DeliveryIntake], *,
                          now: float | None = None) -> list[DeliveryOutcome]:
        at = _now(now)
        with self._write() as tx:
            return [self._accept(tx, intake, at) for intake in intakes]

    def _accept(self, tx: Tx, intake: DeliveryIntake, at: float) -> DeliveryOutcome:
        delivery, start, signal = intake.delivery, intake.start, intake.signal
        seen = tx.one("SELECT decision, reason, run_id FROM deliveries WHERE id = ?",
                      (delivery.id,))
        if seen is not None:
            return DeliveryOutcome(False, seen["decision"] or "ignore",
                                   seen["reason"] or "seen before", seen["run_id"])
        decision, reason, run_id = delivery.decision, delivery.reason, None
        if start is not None:
            active = (self._active_run(tx, start.repo, start.issue, by="issue")
                      if start.issue is not None
                      else self._active_verification(tx, start))
            if active is not None:
                decision = "ignore"
                reason = (f"run {active} is already active for"
                          f" #{start.issue or start.pr}")
            else:
                self._insert_run(tx, start, at)
                run_id = start.id
        elif signal is not None:
            active = (self._named_run(tx, signal.repo, signal.run_id) if signal.run_id
                      else self._active_run(tx, signal.repo, signal.number, by="either"))
            # A command for an issue whose run has ended is answered at the edge with that
            # run's final state; the run moves no more, so nothing is recorded on it. (On a
            # pull request only a status request: another command may be for a run that has
            # not linked it yet.)
            ended = (self._last_run(tx, signal.repo, signal.number)
                     if active is None and signal.run_id is None
                     and (signal.kind is SignalKind.STATUS or not signal.pull_request)
                     else None)
            if ended is not None:
                decision, reason, run_id = "ignore", f"run {ended} has ended", ended
            elif active is None and signal.pull_request and signal.run_id is None:
                self._keep_early(tx, f"delivery:{delivery.id}", signal, at)
                decision, reason = "wait", (
                    f"no run has linked #{signal.number} yet: the signal waits for one")
            elif active is None:
                target = signal.run_id or f"#{signal.number}"
                decision, reason = "ignore", f"no active run for {target}"
            else:
                run_id = active
                new = NewSignal(f"delivery:{delivery.id}", active, signal.kind,
                                signal.author, signal.origin, signal.payload)
                self._insert_signal(tx, new, at, status=SignalStatus.PENDING, reason=None)
                run = _run_from_row(self._select_run(tx, active))
                seq = self._allocate(tx, active, 1)
                self._insert_events(tx, active, seq, run.lease_epoch, at, [NewEvent(
                    EventType.SIGNAL_RECEIVED, step=run.step,
                    data={"signal": new.id, "kind": new.kind.value, "author": new.author,
                          "origin": new.origin, "delivery": delivery.id})])
        tx.run(
            "INSERT INTO deliveries (id, event, run_id, first_seen, action, decision, reason)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (delivery.id, delivery.event, run_id, at, delivery.action, decision, reason),
        )
        return DeliveryOutcome(True, decision, reason, run_id)

    def delivery(self, delivery_id: str) -> DeliveryOutcome | None:
        with self._read() as tx:
            row = tx.one("SELECT decision, reason, run_id FROM deliveries WHERE id = ?",
                         (delivery_id,))
        if row is None:
            return None
        return DeliveryOutcome(True, row["decision"] or "ignore", row["reason"] or "",
                               row["run_id"])

    def link_pull_request(self, lease: Lease, number: int, *,
                          now: float | None = None) -> None:
        at = _now(now)
        with self._write() as tx:
            self._fence(tx, lease, "link its pull request")
            tx.run("UPDATE runs SET pr = ?, updated_at = ? WHERE id = ?",
                   (number, at, lease.run_id))
            run = _run_from_row(self._select_run(tx, lease.run_id))
            since = at - EARLY_SIGNAL_SECONDS
            early = tx.all(
                "SELECT * FROM early_signals WHERE repo = ? AND number = ? AND created_at > ?"
                " ORDER BY created_at, id", (run.repo, number, since))
            # This pull request's waiting signals join the run; any that waited longer than
            # a day are left for ``expire_early_signals`` (their authors are told to repeat).
            tx.run("DELETE FROM early_signals WHERE repo = ? AND number = ? AND created_at > ?",
                   (run.repo, number, since))
            if not early:
                return
            seq = self._allocate(tx, run.id, len(early))
            events = []
            for row in early:
                kind = SignalKind(row["kind"])
                new = NewSignal(row["id"], run.id, kind, row["author"], row["origin"],
                                read_payload(kind, json.loads(row["payload"])))
                self._insert_signal(tx, new, row["created_at"], status=SignalStatus.PENDING,
                                    reason=None)
                events.append(NewEvent(EventType.SIGNAL_RECEIVED, step=run.step, data={
                    "signal": new.id, "kind": kind.value, "author": new.author,
                    "origin": new.origin, "early": True}))
            self._insert_events(tx, run.id, seq, run.lease_epoch, at, events)

    def expire_early_signals(self, *, now: float | None = None) -> list[SignalFor]:
        since = _now(now) - EARLY_SIGNAL_SECONDS
        with self._write() as tx:
            rows = tx.all("DELETE FROM early_signals WHERE created_at <= ?"
                          " RETURNING repo, number, kind, author, origin, payload, created_at",
                          (since,))
        rows.sort(key=lambda row: row["created_at"])
        return [SignalFor(row["repo"], int(row["number"]), SignalKind(row["kind"]),
                          row["author"], row["origin"],
                          read_payload(SignalKind(row["kind"]), json.loads(row["payload"])),
                          pull_request=True)
                for row in rows]

    def _keep_early(self, tx: Tx, signal_id: str, signal: SignalFor, at: float) -> None:
        """Keep a signal for a pull request no run has linked yet (``link_pull_request``
        adopts it)."""
        tx.run(
            "INSERT INTO early_signals (id, repo, number, kind, author, origin, payload,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (signal_id, signal.repo, signal.number, signal.kind.value, signal.author,
             signal.origin, json.dumps(signal.payload.to_stored(), sort_keys=True), at))

    def count_deliveries(self, events: Collection[str]) -> int:
        if not events:
            return 0
        marks = ", ".join("?" for _ in events)
        with self._read() as tx:
            row = tx.one(f"SELECT COUNT(*) AS n FROM deliveries WHERE event IN ({marks})",
                         tuple(events))
        return 0 if row is None else int(row["n"])

    def claim_reply(self, repo: str, number: int, login: str, *, interval: float,
                    now: float | None = None) -> bool:
        at = _now(now)
        with self._write() as tx:
            row = tx.one(
                "INSERT INTO replies (repo, number, login, at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (repo, number, login) DO UPDATE SET at = excluded.at"
                " WHERE replies.at <= ? RETURNING at",
                (repo, number, login.lower(), at, at - interval),
            )
        return row is not None

    def _active_verification(self, tx: Tx, start: NewRun) -> str | None:
        """The run verifying the same pull request head, if one has not ended."""
        ends = ", ".join("?" for _ in _ENDS)
        row = tx.one(
            f"SELECT id FROM runs WHERE repo = ? AND pr = ? AND base_revision = ?"
            f" AND state NOT IN ({ends}) LIMIT 1{self.lock_clause}",
            (start.repo, start.pr, start.base_revision, *_ENDS),
        )
        return None if row is None else row["id"]

    def _named_run(self, tx: Tx, repo: str, run_id: str) -> str | None:
        """``run_id`` if it is a run of ``repo`` (ended ones too: they answer a refusal)."""
        row = tx.one(f"SELECT id FROM runs WHERE id = ? AND repo = ?{self.lock_clause}",
                     (run_id, repo))
        return None if row is None else row["id"]

    def _last_run(self, tx: Tx, repo: str, number: int) -> str | None:
        """The newest run of ``repo`` for issue or pull request ``number``, ended or not."""
        row = tx.one("SELECT id FROM runs WHERE repo = ? AND (issue = ? OR pr = ?)"
                     " ORDER BY created_at DESC LIMIT 1", (repo, number, number))
        return None if row is None else row["id"]

    def _active_run(self, tx: Tx, repo: str, number: int | None, *, by: str) -> str | None:
        """The run of ``repo`` for issue (or pull request) ``number`` that has not ended."""
        if number is None:
            return None
        ends = ", ".join("?" for _ in _ENDS)
        column = "issue = ?" if by == "issue" else "(issue = ? OR pr = ?)"
        params = (number,) if by == "issue" else (number, number)
        row = tx.one(
            f"SELECT id FROM runs WHERE repo = ? AND {column} AND state NOT IN ({ends})"
            f" ORDER BY created_at DESC LIMIT 1{self.lock_clause}",
            (repo, *params, *_ENDS),
        )
        return None if row is None else row["id"]

    # --- reads for people (the dashboard) ----------------------------------------------

    def runs_page(
        self, *, limit: int = 50, states: Collection[State] | None = None,
        repos: Collection[str] | None = None, before: str | None = None,
        after: str | None = None,
    ) -> list[Run]:
        where: list[str] = []
        params: list[Any] = []
        for column, values in (("state", None if states is None else
                                [State(s).value for s in states]),
                               ("repo", None if repos is None else list(repos))):
            if values is None:
                continue
            if not values:
                return []  # an empty filter matches nothing (never "everything")
            where.append(f"{column} IN ({', '.join('?' for _ in values)})")
            params += values
        cursor, newer = (after, True) if after is not None else (before, False)
        with self._read() as tx:
            if cursor is not None:
                if tx.one("SELECT 1 AS x FROM runs WHERE id = ?", (cursor,)) is None:
                    raise UnknownRun(cursor)
                # Keyset paging on (created_at, id): stable while new runs arrive on top.
                where.append(f"(created_at, id) {'>' if newer else '<'}"
                             " (SELECT created_at, id FROM runs WHERE id = ?)")
                params.append(cursor)
            clause = f" WHERE {' AND '.join(where)}" if where else ""
            order = "ASC" if newer else "DESC"
            rows = tx.all(
                f"SELECT {RUN_COLUMNS} FROM runs{clause}"
                f" ORDER BY created_at {order}, id {order} LIMIT ?",
                (*params, limit),
            )
        runs = [_run_from_row(r) for r in rows]
        return runs[::-1] if newer else runs

    def repositories(self) -> dict[str, int]:
        with self._read() as tx:
            rows = tx.all("SELECT repo, COUNT(*) AS n FROM runs GROUP BY repo ORDER BY repo")
        return {r["repo"]: int(r["n"]) for r in rows}

    def run_marks(self) -> dict[str, RunMark]:
        with self._read() as tx:
            rows = tx.all("SELECT id, repo, last_seq, lease_owner FROM runs")
        return {r["id"]: RunMark(r["repo"], int(r["last_seq"]), r["lease_owner"]) for r in rows}

    # --- internals -----------------------------------------------------------------------

    def _select_run(self, tx: Tx, run_id: str) -> Row:
        row = tx.one(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?{self.lock_clause}", (run_id,))
        if row is None:
            raise UnknownRun(run_id)
        return row

    def _fence(self, tx: Tx, lease: Lease, doing: str) -> None:
        row = tx.one(
            f"SELECT lease_epoch, lease_owner FROM runs WHERE id = ?{self.lock_clause}",
            (lease.run_id,),
        )
        if row is None:
            raise UnknownRun(lease.run_id)
        if row["lease_epoch"] != lease.epoch or row["lease_owner"] != lease.owner:
            raise self._stale(tx, lease, doing)

    def _stale(self, tx: Tx, lease: Lease, doing: str) -> StaleWrite:
        row = tx.one("SELECT lease_epoch, lease_owner FROM runs WHERE id = ?", (lease.run_id,))
        epoch, owner = (row["lease_epoch"], row["lease_owner"]) if row else (None, None)
        return StaleWrite(
            f"run {lease.run_id}: refused to {doing}: lease epoch {lease.epoch} held by"
            f" {lease.owner} is no longer current (epoch {epoch}, holder {owner or 'none'});"
            " this worker must stop working on the run"
        )

    def _allocate(self, tx: Tx, run_id: str, count: int) -> int:
        """Reserve ``count`` event sequence numbers; returns the first. Gapless: same tx."""
        row = tx.one(
            "UPDATE runs SET last_seq = last_seq + ? WHERE id = ? RETURNING last_seq",
            (count, run_id),
        )
        assert row is not None
        return int(row["last_seq"]) - count + 1

    def _insert_events(
        self, tx: Tx, run_id: str, first_seq: int, epoch: int, at: float,
        events: Sequence[NewEvent],
    ) -> None:
        tx.many(
            f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(run_id, first_seq + offset, str(event.type), at, event.step, event.attempt, epoch,
              event.revision, event.key, json.dumps(dict(event.data), sort_keys=True))
             for offset, event in enumerate(events)],
        )

    def _record_effects(
        self, tx: Tx, run_id: str, epoch: int, at: float, effects: Sequence[EffectIntent]
    ) -> None:
        """Record a transition's outbox: each effect intended, never sent (``attempts`` 0).

        A key recorded before with the same payload is kept as it is (a replayed decision);
        with another payload it is refused: a changed effect needs a new key.
        """
        if not effects:
            return
        events = []
        for intent in effects:
            row = tx.one("SELECT payload_hash FROM effects WHERE key = ?", (intent.key,))
            if row is not None:
                if row["payload_hash"] != intent.payload_hash:
                    raise EffectConflict(
                        f"effect {intent.key} was recorded with payload"
                        f" {row['payload_hash'][:12]} and decided again with"
                        f" {intent.payload_hash[:12]}: refused; a changed effect needs a new key"
                    )
                continue
            # The order decisions were made in is the order effects are sent in.
            position = tx.one("SELECT COUNT(*) AS n FROM effects WHERE run_id = ?", (run_id,))
            tx.run(
                f"INSERT INTO effects ({EFFECT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 0,"
                " ?, ?, ?)",
                (intent.key, intent.run_id, intent.step, intent.kind.value, intent.payload_hash,
                 canonical_json(dict(intent.payload)), EffectStatus.INTENDED.value, at, at,
                 int(position["n"]) if position else 0),
            )
            events.append(NewEvent(EventType.EFFECT_INTENDED, step=intent.step, key=intent.key,
                                   data={"kind": intent.kind.value,
                                         "payload": intent.payload_hash}))
        if events:
            seq = self._allocate(tx, run_id, len(events))
            self._insert_events(tx, run_id, seq, epoch, at, events)

    def _insert_signal(
        self, tx: Tx, signal: NewSignal, at: float, *, status: SignalStatus, reason: str | None
    ) -> None:
        decided = None if status is SignalStatus.PENDING else at
        tx.run(
            f"INSERT INTO signals ({SIGNAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING",
            (signal.id, signal.run_id, signal.kind.value, signal.author, signal.origin,
             json.dumps(signal.payload.to_stored(), sort_keys=True), status.value, reason, at,
             decided),
        )

    def _decide_signal(self, tx: Tx, run_id: str, decision: SignalDecision, at: float) -> None:
        changed = tx.run(
            "UPDATE signals SET status = ?, reason = ?, decided_at = ? WHERE id = ?"
            " AND run_id = ? AND status = ?",
            (decision.status.value, decision.reason, at, decision.id, run_id,
             SignalStatus.PENDING.value),
        )
        if changed != 1:
            raise StaleWrite(
                f"signal {decision.id} of run {run_id} was already decided; reload the inbox"
            )

    def _put_blob(self, tx: Tx, data: bytes, sha: str | None = None) -> str:
        sha = sha or sha256_hex(data)
        tx.run(
            "INSERT INTO blobs (sha256, size, data) VALUES (?, ?, ?)"
            " ON CONFLICT (sha256) DO NOTHING",
            (sha, len(data), data),
        )
        return sha

    def _link_artifacts(self, tx: Tx, run_id: str, artifacts: Mapping[str, bytes]) -> None:
        # Shared blobs are locked in hash order, so two runs never wait on each other in a cycle.
        for sha, path, data in sorted((sha256_hex(d), p, d) for p, d in artifacts.items()):
            self._put_blob(tx, data, sha)
            tx.run(
                "INSERT INTO artifacts (run_id, path, sha256) VALUES (?, ?, ?)"
                " ON CONFLICT (run_id, path) DO UPDATE SET sha256 = excluded.sha256",
                (run_id, path, sha),
            )


def _now(now: float | None) -> float:
    return time.time() if now is None else now


def _event_from_row(r: Row) -> Event:
    return Event(r["run_id"], r["seq"], r["type"], r["at"], r["step"], r["attempt"],
                 r["lease_epoch"], r["revision"], r["key"], json.loads(r["data"]))


def _run_from_row(row: Row) -> Run:
    return Run(
        id=row["id"], repo=row["repo"], title=row["title"], body=row["body"],
        workflow=row["workflow"], issue=row["issue"], pr=row["pr"], state=State(row["state"]),
        step=row["step"], attempt=row["attempt"], version=row["version"],
        lease_owner=row["lease_owner"], lease_epoch=row["lease_epoch"],
        lease_expires_at=row["lease_expires_at"], base_revision=row["base_revision"],
        head_revision=row["head_revision"], ready_at=row["ready_at"], deadline=row["deadline"],
        reason=row["reason"], origin=_origin_from_row(row), created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _origin_from_row(row: Row) -> Origin:
    try:
        return parse_origin(json.loads(row["params"]))
    except ValidationError as exc:
        problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise _not_an_origin(row["id"], problem) from exc
    except (ValueError, TypeError, AttributeError) as exc:  # not JSON, or not an object
        raise _not_an_origin(row["id"], str(exc)) from exc


def _not_an_origin(run_id: str, problem: str) -> LedgerError:
    return LedgerError(
        f"run {run_id}'s params are not a run origin ({problem}): the row was changed outside"
        " Ratchet; restore it from a backup of the ledger"
    )


def _effect_from_row(row: Row) -> Effect:
    return Effect(
        key=row["key"], run_id=row["run_id"], step=row["step"], kind=EffectKind(row["kind"]),
        payload_hash=row["payload_hash"], payload=json.loads(row["payload"]),
        status=EffectStatus(row["status"]),
        resource=json.loads(row["resource"]) if row["resource"] else None,
        attempts=row["attempts"], created_at=row["created_at"], updated_at=row["updated_at"],
    )


def _signal_from_row(row: Row) -> Signal:
    kind = SignalKind(row["kind"])
    return Signal(
        id=row["id"], run_id=row["run_id"], kind=kind, author=row["author"],
        origin=row["origin"], payload=read_payload(kind, json.loads(row["payload"])),
        status=SignalStatus(row["status"]), reason=row["reason"],
        created_at=row["created_at"], decided_at=row["decided_at"],
    )


def _checkpoint(run_id: str, step: str, body: str, sha: str) -> Checkpoint:
    try:
        return Checkpoint.from_stored(body, sha)
    except CorruptCheckpoint as exc:
        raise CorruptCheckpoint(f"run {run_id}: checkpoint of step {step}: {exc}") from exc
