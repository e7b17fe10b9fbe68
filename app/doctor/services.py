"""The ledger and the broker: reachable, writable, and on a schema this Ratchet knows.

Neither check prints a URL's password: the ledger's URL is shown as its store redacts it, the
broker's as scheme, host and port only.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from app.doctor.findings import Check, Finding, fail, ok
from runner.errors import LedgerError, LedgerUnavailable
from runner.ledger import open_store, sqlite_path

# Seconds to connect to the broker and for its answer: a broker that slow serves no one.
BROKER_TIMEOUT_S = 5.0


def ledger_finding(url: str) -> Finding:
    """Open the ledger as every process does (creating or migrating its schema, which needs
    write access) and read its schema version."""
    path = sqlite_path(url)
    what = f"SQLite {path}" if path is not None else "PostgreSQL"
    try:
        store = open_store(url)
    except (LedgerError, OSError) as exc:
        # The store's own messages say what to do, except where the file cannot be opened.
        opening = isinstance(exc, OSError | LedgerUnavailable) and path is not None
        remedy = "; make its folder writable by this user or set RATCHET_STORE_URL"
        return fail(Check.LEDGER, f"{what} cannot be used: {exc}{remedy if opening else ''}")
    try:
        version = store.schema_version()
        where = str(path) if path is not None else getattr(store, "url", "")
    finally:
        store.close()
    if path is None:
        what = f"PostgreSQL {where}"
    return ok(Check.LEDGER, f"{what} is writable (schema version {version})")


def broker_finding(url: str | None) -> Finding:
    """Whether RATCHET_BROKER_URL answers (Redis PING, an AMQP connection); none set is the
    in-process broker of ``ratchet serve``."""
    if not url:
        return ok(Check.BROKER, "embedded (no RATCHET_BROKER_URL: `ratchet serve` runs the"
                                " in-process worker)")
    where = _where(url)
    try:
        _ping(url)
    except Exception as exc:  # each client has its own error tree; all of them mean "no"
        said = _first_line(exc)
        password = urlsplit(url).password
        if password:  # a client's message may quote the URL it was given
            said = said.replace(password, "***")
        name = type(exc).__name__
        said = said if said.startswith(name) else f"{name}: {said}"
        return fail(Check.BROKER, f"{where} does not answer ({said}): start it or fix"
                                  " RATCHET_BROKER_URL")
    return ok(Check.BROKER, f"{where} answers")


def _ping(url: str) -> None:
    """Raises when the broker at ``url`` does not answer within ``BROKER_TIMEOUT_S``."""
    if url.startswith(("amqp://", "amqps://")):
        import pika

        parameters = pika.URLParameters(url)
        parameters.socket_timeout = BROKER_TIMEOUT_S
        parameters.connection_attempts = 1
        parameters.blocked_connection_timeout = BROKER_TIMEOUT_S
        # pika logs each failed attempt with a traceback; the finding says it in one line.
        quiet = logging.getLogger("pika")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)
        try:
            pika.BlockingConnection(parameters).close()
        finally:
            quiet.setLevel(level)
        return
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError("unsupported scheme: use redis://, amqp://, or leave it unset")
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=BROKER_TIMEOUT_S,
                                  socket_timeout=BROKER_TIMEOUT_S)
    try:
        client.ping()
    finally:
        client.close()


def _where(url: str) -> str:
    """The broker's scheme, host and port: never its user or password."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    path = parts.path if parts.scheme == "unix" else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{path}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or repr(exc)
    return text.splitlines()[0][:300]
