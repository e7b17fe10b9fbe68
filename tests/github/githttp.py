"""A git smart-HTTP server on 127.0.0.1 for tests: ``git http-backend`` behind Basic auth.

It serves the bare repositories under ``root`` and answers 401 (asking for Basic credentials)
to every request whose credentials are not exactly ``username:password`` (or that ``accepts``
refuses: a live installation token of the fake GitHub), as GitHub does for an installation
token. ``seen`` records each request's method, path and whether it was
authorised, so a test can show that git asked without credentials first.
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, credentials: str,
                 accepts: Callable[[str, str], bool] | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.expected = "Basic " + base64.b64encode(credentials.encode()).decode()
        self.user = credentials.partition(":")[0]
        self.accepts = accepts
        self.seen: list[tuple[str, str, bool]] = []

    def authorised(self, header: str | None) -> bool:
        if self.accepts is None or not header or not header.startswith("Basic "):
            return header == self.expected
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return user == self.user and self.accepts(user, password)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _serve(self) -> None:
        body = self._body()
        authorised = self.server.authorised(self.headers.get("authorization"))
        self.server.seen.append((self.command, self.path, authorised))
        if not authorised:
            self.send_response(401)
            self.send_header("www-authenticate", 'Basic realm="git"')
            self.send_header("content-length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ["PATH"],
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": self.server.user,  # http-backend allows pushes by a known user
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_CONTENT_ENCODING": self.headers.get("content-encoding", ""),
            "HTTP_GIT_PROTOCOL": self.headers.get("git-protocol", ""),
        }
        result = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        # CGI headers end at the first blank line (CRLF or LF); the body is binary, untouched.
        crlf, lf = result.stdout.find(b"\r\n\r\n"), result.stdout.find(b"\n\n")
        if crlf != -1 and (lf == -1 or crlf < lf):
            head, payload = result.stdout[:crlf].replace(b"\r\n", b"\n"), result.stdout[crlf + 4:]
        else:
            head, _, payload = result.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode().splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            else:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass


class GitHttpServer:
    """Serve ``root``'s bare repositories at ``base_url`` to ``username:password`` only, or to
    ``username`` with any password ``accepts(username, password)`` admits."""

    def __init__(self, root: Path, *, username: str, password: str = "",
                 accepts: Callable[[str, str], bool] | None = None) -> None:
        self._server = _Server(root, f"{username}:{password}", accepts)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def seen(self) -> list[tuple[str, str, bool]]:
        return list(self._server.seen)

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._thread.join(5)
        self._server.server_close()
