"""The egress proxy: the only way from a sandbox's network namespace to anywhere.

One proxy per agent step or verification runs in the runner (threads, no process), listening
on a Unix socket in a private folder of its own (mode 0700, under the host's ``/tmp``, never
inside Ratchet's home). ``Egress`` says how a sandbox reaches it: the socket is bound
into the sandbox, and ``runner/forwarder.py`` (the sandbox's first process) listens on
127.0.0.1:``PORT`` inside and hands every accepted connection's file descriptor over that
socket; the proxy then serves the connection directly. Inside, ``HTTP(S)_PROXY`` and
``ALL_PROXY`` name that port. It speaks:

- ``CONNECT host:port`` (HTTPS and anything tunnelled) and absolute-form plain HTTP
  (``GET http://host/path``), for hosts the policy (``runner/network.py``) allows, connecting
  to the address it checked;
- ``/_ratchet/<api>/...`` (origin-form): a model API route. The agent's base URL
  (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``) points here and its key is a placeholder; the
  proxy drops the agent's credentials, adds the operator's key and forwards to the upstream
  over HTTPS or HTTP. Responses (server-sent events included) are passed on as they arrive.

A refused connection gets ``403`` with the sentence (header ``X-Ratchet-Blocked`` and body), is
logged, told to the forwarder (printed into the log) and kept in ``blocked`` for the evidence.
Each connection serves one request (``Connection: close``), so every request is checked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import ssl
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

from runner.network import KEY_VARIABLES, PLACEHOLDER_KEY, ROUTE_PREFIX, NetworkPolicy

log = logging.getLogger(__name__)

# The proxy's port inside every sandbox (its namespace is its own: no clash).
PORT = 3128
# Where the proxy's socket appears inside the sandbox (its /tmp is private).
INSIDE_SOCKET = "/tmp/.ratchet-egress.sock"
FORWARDER = Path(__file__).with_name("forwarder.py")
# Bounds: a request head, the connect and head timeouts, blocked sentences kept.
MAX_HEAD_BYTES = 64 * 1024
CONNECT_TIMEOUT_S = 15.0
HEAD_TIMEOUT_S = 60.0
MAX_BLOCKED = 50
# Connections one proxy serves at once (two threads each): more are closed unserved, so an agent
# opening thousands cannot exhaust the runner's threads.
MAX_CONNECTIONS = 256
# Where proxies keep their sockets. Short on purpose: a Unix socket's path holds at most 107
# bytes, whatever TMPDIR says.
_TMP = "/tmp" if os.path.isdir("/tmp") else None
FOLDER_PREFIX = "ratchet-egress-"
# A runner killed outright leaves its proxies' folders behind: one older than this with nothing
# listening on its socket is removed, at most once per SWEEP_INTERVAL_S in a process.
STALE_AFTER_S = 600.0
SWEEP_INTERVAL_S = 60.0
_swept = [0.0]
CHUNK = 64 * 1024
# Request headers never passed upstream (hop-by-hop, the proxy's, the agent's credentials).
_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                  "te", "upgrade", "expect"})
_CREDENTIALS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "host"})


@dataclass(frozen=True)
class Egress:
    """How a sandbox reaches its proxy: what bubblewrap binds and sets, and the wrapper."""

    socket: Path
    routes: tuple[tuple[str, str], ...] = ()  # (base URL variable, route name)
    keys: tuple[str, ...] = ()  # key variables that get the placeholder

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{PORT}"

    def environment(self) -> dict[str, str]:
        """What the sandboxed command's environment gains: the proxy, the routes and a
        placeholder for each routed key."""
        env = {name: self.url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                                           "http_proxy", "https_proxy", "all_proxy")}
        env.update(NO_PROXY="127.0.0.1,localhost,::1", no_proxy="127.0.0.1,localhost,::1")
        env.update({variable: f"{self.url}{ROUTE_PREFIX}{name}" for variable, name in self.routes})
        env.update({variable: PLACEHOLDER_KEY for variable in self.keys})
        return env

    def launcher(self) -> list[str]:
        """What starts bubblewrap: ``env`` without any model API key. bubblewrap's own process
        is the sandbox's PID 1, whose ``/proc/1/environ`` every process inside can read, so
        ``--unsetenv`` would be too late."""
        program = "/usr/bin/env" if os.path.exists("/usr/bin/env") else "env"
        return [program, *(arg for variable in KEY_VARIABLES for arg in ("-u", variable))]

    def bwrap_args(self) -> list[str]:
        """bubblewrap arguments: the socket bound inside, the interpreter and the forwarder
        shown read-only, the proxy's variables set."""
        interpreter = os.path.realpath(sys.executable)
        args = ["--bind", str(self.socket), INSIDE_SOCKET,
                "--ro-bind", interpreter, interpreter,
                "--ro-bind", str(FORWARDER), str(FORWARDER)]
        for variable, value in self.environment().items():
            args += ["--setenv", variable, value]
        return args

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` started by the forwarder, which serves the proxy port inside."""
        return [os.path.realpath(sys.executable), "-I", "-S", str(FORWARDER), INSIDE_SOCKET,
                str(PORT), "--", *argv]


class EgressProxy:
    """The proxy for one agent step or one verification; a context manager.

    ``endpoint`` is what ``Sandbox.command`` takes; ``blocked`` the sentences of the
    connections it refused, in order, each once; ``traffic`` the bytes it has relayed either
    way (a sign of life: a CLI that prints nothing while its model streams one long answer is
    still working).
    """

    def __init__(self, policy: NetworkPolicy, *, label: str = "") -> None:
        self.policy = policy
        self.label = label
        self.blocked: list[str] = []
        self.traffic = 0  # bytes relayed; written by relay threads, read by the idle watch
        self._folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=_TMP))
        _sweep()
        self._lock = threading.Lock()
        self._live: set[socket.socket] = set()
        self._controls: set[socket.socket] = set()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._closed = False
        routes = tuple((route.base_env, route.name) for route in policy.routes)
        keys = tuple(route.key_env for route in policy.routes if route.headers)
        self.endpoint = Egress(self._folder / "egress.sock", routes, keys)

    def __enter__(self) -> EgressProxy:
        self._listener.bind(str(self.endpoint.socket))
        self._listener.listen(64)
        threading.Thread(target=self._accept, daemon=True, name="ratchet-egress").start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening and end every connection (the step is over)."""
        with self._lock:
            self._closed = True
            sockets = [self._listener, *self._controls, *self._live]
            self._live.clear()
            self._controls.clear()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    # --- connections ---------------------------------------------------------------------

    def _count(self, size: int) -> None:
        with self._lock:
            self.traffic += size

    def _track(self, sock: socket.socket, into: set[socket.socket]) -> bool:
        with self._lock:
            if self._closed:
                sock.close()
                return False
            into.add(sock)
            return True

    def _forget(self, *sockets: socket.socket) -> None:
        with self._lock:
            for sock in sockets:
                self._live.discard(sock)
        for sock in sockets:
            sock.close()

    def _accept(self) -> None:
        """Each forwarder connects once: its control connection."""
        while True:
            try:
                control, _ = self._listener.accept()
            except OSError:
                return
            if self._track(control, self._controls):
                threading.Thread(target=self._receive, args=(control,), daemon=True).start()

    def _receive(self, control: socket.socket) -> None:
        """Serve every connection the forwarder hands over (one file descriptor a message)
        until it is gone."""
        try:
            self._serve_all(control)
        finally:
            with self._lock:
                self._controls.discard(control)
            control.close()

    def _serve_all(self, control: socket.socket) -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(control, 16, 4)
            except OSError:
                return
            if not data and not fds:
                return
            for fd in fds:
                try:
                    client = socket.socket(fileno=fd)
                except OSError:
                    os.close(fd)  # not a socket: nothing to serve
                    continue
                crowded = len(self._live) >= MAX_CONNECTIONS
                if (crowded or client.type != socket.SOCK_STREAM
                        or not self._track(client, self._live)):
                    if crowded:
                        log.warning("egress %s: over %d connections at once; closing one",
                                    self.label, MAX_CONNECTIONS)
                    client.close()
                    continue
                threading.Thread(target=self._serve, args=(client, control),
                                 daemon=True).start()

    def _serve(self, client: socket.socket, control: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            client.settimeout(HEAD_TIMEOUT_S)
            head, rest = _read_head(client)
            method, target, headers = _parse_request(head)
            if method == "CONNECT":
                upstream = self._open(*_authority(target, default_port=443))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            elif target.startswith(ROUTE_PREFIX):
                upstream, request = self._route(method, target, headers)
            elif target.lower().startswith("http://"):
                upstream, request = self._plain(method, target, headers)
            else:
                raise _Refused(400, f"the proxy does not serve {target[:200]!r}")
            client.settimeout(None)
            upstream.settimeout(None)
            body = None
            if method != "CONNECT":
                body = _body_length(headers) - len(rest)
                if body > 0 and any(k.lower() == "expect" and v.lower() == "100-continue"
                                    for k, v in headers):
                    client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")  # upstream never sees it
                rest = request + rest
            _relay(client, upstream, rest, body=body, count=self._count)
        except _Refused as refused:
            self._refuse(client, control, refused)
        except (OSError, ValueError) as exc:
            log.debug("egress %s: connection ended: %r", self.label, exc)
        finally:
            self._forget(client, *((upstream,) if upstream is not None else ()))

    def _plain(self, method: str, target: str,
               headers: list[tuple[str, str]]) -> tuple[socket.socket, bytes]:
        """An absolute-form request: the connection and the origin-form head to send."""
        parts = urlsplit(target)
        try:
            host, port = (parts.hostname or ""), parts.port or 80
        except ValueError:
            raise _Refused(400, f"{target[:200]!r} is not a URL") from None
        upstream = self._open(host, port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        kept = [(k, v) for k, v in headers if k.lower() not in _HOP]
        return upstream, _request_head(method, path, kept)

    def _route(self, method: str, target: str,
               headers: list[tuple[str, str]]) -> tuple[socket.socket, bytes]:
        """A model API request: the upstream connection and the head to send, the agent's
        credentials replaced by the operator's key."""
        name, _, rest = target[len(ROUTE_PREFIX):].partition("/")
        route = self.policy.route(name)
        if route is None:
            raise _Refused(404, f"no model API route {name!r}: the operator set no key or base"
                                " URL for it")
        base = urlsplit(route.upstream)
        upstream = self._open(route.host, route.port, explicit=route.explicit)
        if base.scheme == "https":
            context = ssl.create_default_context()
            upstream = context.wrap_socket(upstream, server_hostname=route.host)
            self._track(upstream, self._live)
        host_header = route.host if base.port is None else f"{route.host}:{base.port}"
        kept = [(k, v) for k, v in headers
                if k.lower() not in _HOP and k.lower() not in _CREDENTIALS]
        kept = [("Host", host_header), *kept, *route.headers]
        return upstream, _request_head(method, base.path.rstrip("/") + "/" + rest, kept)

    def _open(self, host: str, port: int, *, explicit: bool = False) -> socket.socket:
        """A connection to ``host`` if the policy allows it, made to the address checked."""
        refusal = None if explicit else self.policy.refusal(host, port)
        if refusal is not None:
            raise _Refused(403, refusal, blocked=True)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise _Refused(502, f"cannot resolve {host}: {exc}") from None
        addresses = [str(info[4][0]) for info in infos]
        refusal = self.policy.address_refusal(host, port, addresses, explicit=explicit)
        if refusal is not None:
            raise _Refused(403, refusal, blocked=True)
        family, kind, proto, _, address = infos[0]
        upstream = socket.socket(family, kind, proto)
        if not self._track(upstream, self._live):
            raise OSError("the proxy is closed")
        upstream.settimeout(CONNECT_TIMEOUT_S)
        try:
            upstream.connect(address)
        except OSError as exc:
            raise _Refused(502, f"cannot connect to {host}:{port}: {exc}") from None
        return upstream

    def _refuse(self, client: socket.socket, control: socket.socket, refused: _Refused) -> None:
        sentence = refused.sentence.replace("\r", " ").replace("\n", " ")
        if refused.blocked:  # logged and kept once each; told into the log of each command
            with self._lock:
                first = sentence not in self.blocked and len(self.blocked) < MAX_BLOCKED
                if first:
                    self.blocked.append(sentence)
            if first:
                log.warning("egress %s: %s", self.label, sentence)
            with contextlib.suppress(OSError):
                control.sendall(sentence.encode() + b"\n")
        body = sentence.encode() + b"\n"
        reason = {400: "Bad Request", 403: "Forbidden", 404: "Not Found",
                  411: "Length Required"}.get(refused.status,
                                                                             "Bad Gateway")
        with contextlib.suppress(OSError):
            client.sendall(
                f"HTTP/1.1 {refused.status} {reason}\r\nContent-Type: text/plain\r\n"
                f"X-Ratchet-Blocked: {sentence if refused.blocked else ''}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


def _sweep() -> None:
    """Remove the folders of proxies that died with their runner (SIGKILL, power loss)."""
    now = time.monotonic()
    if now - _swept[0] < SWEEP_INTERVAL_S:
        return
    _swept[0] = now
    for folder in Path(_TMP or tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*"):
        try:
            if time.time() - folder.lstat().st_mtime < STALE_AFTER_S or folder.is_symlink():
                continue
            if (folder / "egress.sock").exists():
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                    try:
                        probe.connect(str(folder / "egress.sock"))
                        continue  # a live proxy (it sees a control connection end at once)
                    except ConnectionRefusedError:
                        pass
            shutil.rmtree(folder)
        except OSError:
            continue  # another runner's, or gone meanwhile


class _Refused(Exception):
    def __init__(self, status: int, sentence: str, *, blocked: bool = False) -> None:
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence
        self.blocked = blocked


@contextlib.contextmanager
def egress(policy: NetworkPolicy | None, *, label: str = "") -> Iterator[EgressProxy | None]:
    """A running proxy for ``policy``, or None when there is none (an unconfined sandbox)."""
    if policy is None:
        yield None
        return
    with EgressProxy(policy, label=label) as proxy:
        yield proxy


# --- HTTP, as little of it as a proxy needs ---------------------------------------------------


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """The head up to the blank line, and what came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise _Refused(400, "the request head is too large")
        chunk = sock.recv(CHUNK)
        if not chunk:
            raise ValueError("the connection closed before a request")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _parse_request(head: bytes) -> tuple[str, str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, _ = lines[0].split(" ", 2)
    except ValueError:
        raise _Refused(400, "not an HTTP request") from None
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon and name.strip():
            headers.append((name.strip(), value.strip()))
    return method.upper(), target, headers


def _authority(target: str, *, default_port: int) -> tuple[str, int]:
    parts = urlsplit(f"//{target}")
    try:
        port = parts.port or default_port
    except ValueError:
        raise _Refused(400, f"{target[:200]!r} is not host:port") from None
    if not parts.hostname:
        raise _Refused(400, f"{target[:200]!r} is not host:port")
    return parts.hostname, port


def _body_length(headers: list[tuple[str, str]]) -> int:
    """The request body's length (0 without one); a chunked body is refused."""
    for name, _ in headers:
        if name.lower() == "transfer-encoding":
            raise _Refused(411, "the proxy takes request bodies with a Content-Length only")
    for name, value in headers:
        if name.lower() == "content-length":
            try:
                return max(0, int(value))
            except ValueError:
                raise _Refused(400, f"Content-Length {value[:50]!r} is not a number") from None
    return 0


def _request_head(method: str, path: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers),
             "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _relay_response_head(upstream: socket.socket, client: socket.socket) -> None:
    """Pass the response's head on with ``Connection: close`` (the client must not reuse a
    connection the proxy ends), then what followed it."""
    head, rest = _read_head(upstream)
    lines = head.decode("latin-1").split("\r\n")
    kept = [line for line in lines[1:]
            if line.partition(":")[0].strip().lower() not in ("connection", "keep-alive")]
    client.sendall("\r\n".join([lines[0], *kept, "Connection: close"]).encode("latin-1")
                   + b"\r\n\r\n" + rest)


def _pump(source: socket.socket, sink: socket.socket, limit: int | None = None,
          count: Callable[[int], None] = lambda n: None) -> None:
    """Copy ``source`` to ``sink`` as data arrives: ``limit`` bytes, or until it ends;
    ``count`` hears of each chunk's size."""
    left = limit
    with contextlib.suppress(OSError, ValueError):
        while left is None or left > 0:
            chunk = source.recv(CHUNK if left is None else min(CHUNK, left))
            if not chunk:
                break
            sink.sendall(chunk)
            count(len(chunk))
            left = None if left is None else left - len(chunk)


def _relay(client: socket.socket, upstream: socket.socket, first: bytes, *,
           body: int | None, count: Callable[[int], None]) -> None:
    """Tunnel (``body`` None): copy both ways until the upstream is done. HTTP: send the
    request (``first`` and the rest of its ``body`` bytes), then the response back, its head
    rewritten, as it arrives (one thread per socket: a TLS socket is never read and written
    at once)."""
    upstream.sendall(first)
    if body is None:
        def forward() -> None:
            _pump(client, upstream, count=count)
            with contextlib.suppress(OSError):
                upstream.shutdown(socket.SHUT_WR)

        threading.Thread(target=forward, daemon=True).start()
    else:
        _pump(client, upstream, body, count)
        _relay_response_head(upstream, client)
    _pump(upstream, client, count=count)
