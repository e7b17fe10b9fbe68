"""The shared ledger: PostgreSQL through psycopg 3 and a small connection pool.

URL: ``postgresql://user:password@host:port/dbname``, with any libpq query parameter
(``sslmode``, ``connect_timeout``, ``application_name``, ...) plus one of ours:
``schema=NAME`` keeps the ledger's tables in schema ``NAME`` (``search_path`` is set to it on
every connection, and ``migrate`` creates it when missing), so several ledgers or test runs can
share one database.

Connections are in autocommit mode and every write opens its transaction explicitly with
``BEGIN`` (READ COMMITTED). That is enough because every write first locks the run row it
changes (``SELECT ... FOR UPDATE``, or a conditional ``UPDATE`` that PostgreSQL re-checks
against the newest row version), so writers of one run are serialised.

An outage (server down or restarting, a terminated backend, no pooled connection within
``wait_timeout``) raises ``LedgerUnavailable`` naming the server, never the password. A broken
connection is discarded, and the pool's idle connections are checked at once, so the call after
the server is back reconnects instead of failing once per dead pooled connection.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import unquote

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolClosed

from runner.errors import LedgerError, LedgerUnavailable
from runner.ledger.sql import SqlStore, Tx

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 8  # per process: a worker's threads plus its heartbeat; the server has ~100
WAIT_TIMEOUT = 5.0  # seconds a call waits for a pooled connection before LedgerUnavailable
CONNECT_TIMEOUT = 5  # libpq connect_timeout unless the URL sets one
# The pool retries a lost connection with doubling delays until this many seconds, then gives up
# and starts afresh on the next call: this bounds the wait after a server comes back.
RECONNECT_TIMEOUT = 5.0
# Key of the transaction-level advisory lock that serialises concurrent migrators.
MIGRATION_LOCK_KEY = 0x5241_5443_4845_5431  # "RATCHET1"
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|[^&\s]*)", re.IGNORECASE)
_USERINFO = re.compile(r"(://[^:@/?#]*):[^@/?#]*@")


class PostgresStore(SqlStore):
    """The ledger in PostgreSQL; several workers on several hosts may share it.

    Raises ``LedgerUnavailable`` at construction when the server cannot be reached, and
    ``ValueError`` for a malformed URL or schema name.
    """

    placeholder = "%s"
    column_types = {"blob": "BYTEA", "real": "DOUBLE PRECISION", "bigint": "BIGINT"}
    lock_clause = " FOR UPDATE"

    def __init__(
        self, url: str, *, max_size: int = MAX_CONNECTIONS, wait_timeout: float = WAIT_TIMEOUT
    ) -> None:
        conninfo, self.schema = _split_schema(url)
        self.url = redact(url)
        if self.schema is not None and not _SCHEMA_NAME.fullmatch(self.schema):
            raise ValueError(
                f"ledger URL {self.url}: schema {self.schema!r} is not a plain identifier"
                " (letters, digits, underscores; at most 63)"
            )
        try:
            params = conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            raise ValueError(f"ledger URL {self.url} is not a PostgreSQL URL: {exc}") from exc
        kwargs: dict[str, object] = {"autocommit": True}
        if "connect_timeout" not in params:
            kwargs["connect_timeout"] = CONNECT_TIMEOUT
        # Fail fast with libpq's own reason (refused, unknown host, authentication) rather than
        # a pool timeout after wait_timeout seconds.
        try:
            psycopg.connect(conninfo, **kwargs).close()  # type: ignore[arg-type]
        except psycopg.OperationalError as exc:
            raise LedgerUnavailable(
                f"PostgreSQL ledger {self.url} is unreachable: {_first_line(exc)}; start the"
                " server or fix the ledger URL"
            ) from exc
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max_size,
            kwargs=kwargs,
            configure=self._configure if self.schema else None,
            timeout=wait_timeout,
            reconnect_timeout=RECONNECT_TIMEOUT,
            name=self.url,
            open=False,
        )
        self._pool.open(wait=False)
        try:
            self.migrate()
        except BaseException:
            self._pool.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

    def _configure(self, conn: psycopg.Connection) -> None:
        assert self.schema is not None  # only installed when the URL names a schema
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        conn: psycopg.Connection | None = None
        try:
            with self._pool.connection() as conn:
                yield conn
        finally:
            if conn is not None and conn.broken:
                # The server went away (restart, failover, terminated backend): the idle
                # connections are most likely dead too. Check them now so that the next call
                # gets a live one or a fresh connection, not the next corpse.
                log.warning("ledger connection to %r lost; checking the pool", self.url)
                self._pool.check()

    def _begin_write(self, conn: psycopg.Connection) -> None:
        conn.execute("BEGIN")

    def _lock_schema(self, tx: Tx) -> None:
        tx.one(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
        if self.schema and not tx.one(
            "SELECT 1 FROM pg_namespace WHERE nspname = ?", (self.schema,)
        ):
            tx.run(f'CREATE SCHEMA "{self.schema}"')

    def _translate_error(self, exc: Exception) -> Exception | None:
        if isinstance(exc, PoolClosed):
            return LedgerError(f"PostgreSQL ledger {self.url} is closed: {exc}")
        if isinstance(exc, psycopg.OperationalError):
            # Outages, shutdowns, terminated backends, pool timeouts, deadlocks: all transient.
            return LedgerUnavailable(
                f"PostgreSQL ledger {self.url} is unavailable: {_first_line(exc)}; retry shortly"
            )
        if isinstance(exc, psycopg.Error):
            return LedgerError(f"PostgreSQL ledger {self.url}: {_first_line(exc)}")
        return None

    def close(self) -> None:
        self._pool.close()


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (safe to log and to show)."""
    return _PASSWORD.sub(r"\1***", _USERINFO.sub(r"\1:***@", url))


def _split_schema(url: str) -> tuple[str, str | None]:
    """Remove our ``schema`` query parameter (libpq would refuse it); keep the rest verbatim."""
    base, sep, query = url.partition("?")
    if not sep:
        return url, None
    schema, keep = None, []
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if key == "schema":
            schema = unquote(value)
        elif part:
            keep.append(part)
    return base + ("?" + "&".join(keep) if keep else ""), schema


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
