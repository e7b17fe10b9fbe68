"""The throwaway servers behave like a real outage: down means refused, back means same port.

Outage tests rely on exactly these properties, so they are proved here once, against real
``postgres`` and ``redis-server`` processes, never the machine's own servers on 5432 and 6379.
"""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
import redis

from tests.services import pid_alive, throwaway_postgres, throwaway_redis

MACHINE_PORTS = {5432, 6379}  # the shared servers other tests use: never ours to stop


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_postgres_keeps_its_data_and_port_across_a_restart(tmp_path: Path) -> None:
    with throwaway_postgres(tmp_path) as server:
        port, root = server.port, server.root
        assert port not in MACHINE_PORTS
        assert server.url == f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE marks (id int PRIMARY KEY, note text)")
            conn.execute("INSERT INTO marks VALUES (1, 'before the outage')")
        held = psycopg.connect(server.url, autocommit=True)

        server.stop()
        assert server.pid is None
        assert not _port_open(port)
        with pytest.raises(psycopg.OperationalError):
            held.execute("SELECT 1")  # an open session is cut, as in a real outage
        held.close()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(server.url, connect_timeout=1)

        server.start()
        assert server.port == port
        with psycopg.connect(server.url) as conn:
            rows = conn.execute("SELECT id, note FROM marks").fetchall()
        assert rows == [(1, "before the outage")]
        pid = server.pid
        assert pid is not None

    assert not pid_alive(pid)
    assert not _port_open(port)
    assert not root.exists()


def test_redis_comes_back_empty_on_the_same_port(tmp_path: Path) -> None:
    with throwaway_redis(tmp_path) as server:
        port, root = server.port, server.root
        assert port not in MACHINE_PORTS
        assert server.url == f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(server.url, socket_timeout=1, socket_connect_timeout=1)
        client.set("mark", "before the outage")

        server.stop()
        assert server.pid is None
        with pytest.raises(redis.ConnectionError):
            client.ping()

        server.start()
        assert server.port == port
        assert client.get("mark") is None  # no persistence: an outage loses the queue
        client.close()
        pid = server.pid
        assert pid is not None

    assert not pid_alive(pid)
    assert not _port_open(port)
    assert not root.exists()


def test_clean_up_stops_the_server_when_the_test_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="the test failed"), throwaway_redis(tmp_path) as server:
        pid = server.pid
        raise RuntimeError("the test failed")
    assert pid is not None and not pid_alive(pid)
