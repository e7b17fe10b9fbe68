"""A real HTTP/1.1 server on 127.0.0.1 that hands each request to the pipeline.

The standard library's threaded server, not an ASGI stack, because one fault needs what ASGI
servers will not do: close the connection after the effect without sending a byte, so the client
sees a lost acknowledgement (EOF) instead of a 500. Keep-alive connections are tracked and cut
on ``stop()`` so no handler thread outlives the test that started it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .pipeline import Outcome, RawRequest

logger = logging.getLogger(__name__)

Handle = Callable[[RawRequest], Outcome]

_IDLE_TIMEOUT = 30  # seconds a keep-alive connection may sit idle before its thread gives up


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handle: Handle) -> None:
        super().__init__(address, _Handler)
        self.handle = handle
        self.crashes: list[BaseException] = []
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as clients use GitHub
    server_version = "GitHub.com"
    sys_version = ""
    timeout = _IDLE_TIMEOUT
    # One write per response and no Nagle delay: headers and body sent separately would wait
    # out the client's delayed ACK (about 40 ms a request on Linux).
    disable_nagle_algorithm = True
    wbufsize = -1
    server: _Server

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        body = self._read_body()
        headers = {key.lower(): value for key, value in self.headers.items()}
        try:
            outcome = self.server.handle(RawRequest(self.command, self.path, headers, body))
        except Exception as exc:  # a bug in the fake: answer 500 and keep it for the test
            logger.exception("fake GitHub failed on %s %s", self.command, self.path)
            self.server.crashes.append(exc)
            outcome = Outcome(
                500, {"content-type": "text/plain"}, f"fake crashed: {exc!r}".encode()
            )
        if outcome.status is None:
            self.close_connection = True  # drop: the effect happened, the answer never leaves
            return
        self.send_response(outcome.status)
        for key, value in outcome.headers.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(outcome.body)))
        self.end_headers()
        try:
            self.wfile.write(outcome.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout beat a delay)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)


class HttpServer:
    """The listening socket and its serving thread."""

    def __init__(self, handle: Handle, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), handle)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def crashes(self) -> list[BaseException]:
        return list(self._server.crashes)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-github-{self.base_url}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.cut_connections()
        self._server.server_close()
