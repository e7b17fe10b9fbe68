"""The network by allowlist, from outside: real bubblewrap, a real egress proxy, real listeners.

A hostile agent and a hostile check try every way out: loopback directly and through the proxy
(by address and by a name that resolves to it), cloud metadata, a host service's Unix socket, a
host nobody allowed. The listeners must see no connection. The operator's model endpoint (a
scripted server on loopback) is reached through the proxy's route, with the key added there:
the agent holds a placeholder and the server receives the key; its events arrive streamed.
"""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.settings import SettingsError, load_settings
from app.verify_cli import run_checks
from runner import egress
from runner.agents.base import AgentTask
from runner.agents.command import CommandAgent
from runner.config import read_repository_config
from runner.egress import EgressProxy
from runner.errors import AgentIdle, DeterministicFailure
from runner.network import PLACEHOLDER_KEY, NetworkPolicy, NetworkSettings, model_routes
from runner.sandbox import Sandbox
from tests.verification.verify_helpers import git, write
from verification.pipeline import Candidate, plan_verification
from verification.revisions import open_repository

SECRET = "sk-ant-test-" + uuid.uuid4().hex


class Listener:
    """A TCP or Unix listener that must never be reached: it never accepts, so any connection
    that got through waits in its backlog."""

    def __init__(self, family: int, address: object) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(16)
        self.sock.setblocking(False)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def reached(self) -> bool:
        try:
            connection, _ = self.sock.accept()
        except BlockingIOError:
            return False
        connection.close()
        return True


@pytest.fixture
def tcp_listener() -> Iterator[Listener]:
    listener = Listener(socket.AF_INET, ("127.0.0.1", 0))
    yield listener
    listener.sock.close()


# A host process's abstract Unix socket (no file: the network namespace is what scopes it).
ABSTRACT = f"ratchet-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def abstract_listener() -> Iterator[Listener]:
    listener = Listener(socket.AF_UNIX, "\0" + ABSTRACT)
    yield listener
    listener.sock.close()


@pytest.fixture
def unix_listener() -> Iterator[Listener]:
    """A host service's socket where services keep them (/run; the test runs as root here)."""
    path = Path(f"/run/ratchet-test-{uuid.uuid4().hex[:8]}.sock")
    try:
        listener = Listener(socket.AF_UNIX, str(path))
    except OSError as exc:
        pytest.skip(f"cannot create a socket in /run: {exc}")
    yield listener
    listener.sock.close()
    path.unlink(missing_ok=True)


class ModelServer:
    """A scripted model API on loopback: records what it received; ``/v1/messages`` streams two
    events and sends the second only once the client acknowledged the first (``/ack``): a
    proxy that buffered the stream would never let the agent acknowledge."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        self.acknowledged = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests.append({"path": self.path, "body": body.decode(),
                                        "x-api-key": self.headers.get("x-api-key") or "",
                                        "authorization": self.headers.get("authorization") or ""})
                if self.path.endswith("/ack"):
                    server.acknowledged.set()
                    self.send_response(204)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(b"event: one\ndata: first\n\n")
                self.wfile.flush()
                streamed = server.acknowledged.wait(timeout=30)
                self.wfile.write(b"event: two\ndata: %s\n\n" % (b"streamed" if streamed
                                                                 else b"buffered"))
                self.wfile.flush()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def model() -> Iterator[ModelServer]:
    server = ModelServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


# What the hostile agent (or check) tries; it prints one JSON object.
PROBE = r'''
import glob, json, os, socket, sys, urllib.request
TCP_PORT, UNIX_PATH, SECRET, OUT = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
found = {}

def attempt(name, action):
    try:
        found[name] = action()
    except Exception as exc:
        found[name] = f"{type(exc).__name__}: {exc}"

def through_proxy(request):
    port = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request.encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data.decode(errors="replace").split("\r\n")[0]

attempt("direct", lambda: socket.create_connection(("127.0.0.1", TCP_PORT), timeout=3).close())
attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect(UNIX_PATH))
attempt("abstract", lambda: socket.socket(socket.AF_UNIX).connect("\0" + sys.argv[5]))
for host in ("127.0.0.1", "localhost", "169.254.169.254", "pypi.org"):
    attempt(f"connect {host}",
            lambda: through_proxy(f"CONNECT {host}:{TCP_PORT} HTTP/1.1\r\nHost: x\r\n\r\n"))
attempt("plain", lambda: through_proxy(f"GET http://127.0.0.1:{TCP_PORT}/ HTTP/1.1\r\n\r\n"))
found["key_env"] = os.environ.get("ANTHROPIC_API_KEY")
found["key_visible"] = any(
    SECRET.encode() in open(p, "rb").read() for p in glob.glob("/proc/[0-9]*/environ")
    if os.access(p, os.R_OK))
base = os.environ.get("ANTHROPIC_BASE_URL")
if base:
    def stream():
        request = urllib.request.Request(base + "/v1/messages", data=b'{"stream":true}',
            headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"]})
        response = urllib.request.urlopen(request, timeout=60)
        events = [response.readline(), response.readline(), response.readline()]
        urllib.request.urlopen(urllib.request.Request(base + "/ack", data=b"ack"),
                               timeout=30).read()
        events.append(response.read())
        return b"".join(events).decode()
    attempt("stream", stream)
text = json.dumps(found)
print(text)
if OUT != "-":
    open(OUT, "w").write(text)
'''


def network_settings(model: ModelServer) -> NetworkSettings:
    """The operator: a scripted model endpoint named explicitly, its key, and lists that name
    loopback (which must not matter)."""
    routes = model_routes({"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": SECRET})
    return NetworkSettings(agent_allow=("localhost", "127.0.0.1"), repository_allow=("*",),
                           routes=routes)


def agent_task(tmp_path: Path) -> AgentTask:
    worktree, out = tmp_path / "worktree", tmp_path / "out"
    worktree.mkdir()
    out.mkdir()
    prompt = tmp_path / "prompt.md"
    prompt.write_text("probe")
    return AgentTask(
        run_id="run-net", phase="implement", step="implement.1", worktree=worktree,
        prompt="probe", prompt_file=prompt, output_dir=out, output=out / "result.json",
        log_file=tmp_path / "agent.log", timeout=120,
        network_allow=("169.254.169.254",),
    )


def assert_nothing_got_out(found: dict[str, object], *listeners: Listener) -> None:
    assert not any(listener.reached() for listener in listeners), found
    assert str(found["direct"]).startswith("ConnectionRefusedError"), found
    assert str(found["unix"]).startswith(("FileNotFoundError", "ConnectionRefusedError")), found
    assert str(found["abstract"]).startswith("ConnectionRefusedError"), found
    for attempt in ("connect 127.0.0.1", "connect localhost", "connect 169.254.169.254",
                    "plain", "connect pypi.org"):
        assert str(found[attempt]).startswith("HTTP/1.1 403"), (attempt, found)


def test_an_agent_reaches_only_its_model_api_and_never_holds_the_key(
        tmp_path: Path, model: ModelServer, tcp_listener: Listener,
        unix_listener: Listener, abstract_listener: Listener) -> None:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    task = agent_task(tmp_path)
    agent = CommandAgent(
        f"{sys.executable} {script} {tcp_listener.port} {unix_listener.sock.getsockname()}"
        f" {SECRET} {{output}} {ABSTRACT}",
        sandbox=Sandbox(), env={**os.environ, "ANTHROPIC_API_KEY": SECRET},
        network=network_settings(model))

    result = agent.run(task)

    found = json.loads(task.output.read_text())
    assert_nothing_got_out(found, tcp_listener, unix_listener, abstract_listener)
    assert found["key_env"] == PLACEHOLDER_KEY and found["key_visible"] is False
    assert "data: first" in found["stream"] and "data: streamed" in found["stream"], found
    messages = [r for r in model.requests if r["path"] == "/v1/messages"]
    assert messages and messages[0]["x-api-key"] == SECRET  # added by the proxy
    assert messages[0]["body"] == '{"stream":true}'
    blocked = "\n".join(result.network_blocked)
    assert (f"blocked a connection to pypi.org:{tcp_listener.port}: add it to"
            " agent.network.allow in .github/ratchet.yml") in blocked
    assert f"blocked a connection to localhost (it resolves to 127.0.0.1):{tcp_listener.port}"\
        in blocked
    assert "169.254.169.254" in blocked and "link-local" in blocked
    assert "ratchet: blocked a connection to pypi.org" in task.log_file.read_text()
    assert SECRET not in task.log_file.read_text()


def test_a_failing_agent_says_which_host_was_blocked_and_where_to_allow_it(
        tmp_path: Path) -> None:
    script = tmp_path / "fetch.py"
    script.write_text(
        "import os, socket, sys\n"
        "port = int(os.environ['HTTPS_PROXY'].rsplit(':', 1)[1])\n"
        "s = socket.create_connection(('127.0.0.1', port))\n"
        "s.sendall(b'CONNECT files.pythonhosted.org:443 HTTP/1.1\\r\\n\\r\\n')\n"
        "sys.exit(0 if s.recv(100).startswith(b'HTTP/1.1 200') else 1)\n")
    agent = CommandAgent(f"{sys.executable} {script}", sandbox=Sandbox(),
                         network=NetworkSettings(repository_allow=("pypi.org",)))
    task = agent_task(tmp_path)
    task = AgentTask(**{**task.__dict__, "network_allow": ("files.pythonhosted.org",)})

    with pytest.raises(DeterministicFailure) as failure:
        agent.run(task)

    assert ("the sandbox blocked a connection to files.pythonhosted.org:443:"
            " .github/ratchet.yml lists it in agent.network.allow, but the operator's"
            " RATCHET_REPOSITORY_NETWORK_ALLOW does not include it") in str(failure.value)
    assert failure.value.evidence["network_blocked"] == [str(failure.value).split(
        "; the sandbox ", 1)[1]]


@pytest.mark.parametrize("network", ["false", "[pypi.org]"])
def test_a_check_reaches_nothing_of_the_host(
        tmp_path: Path, model: ModelServer, tcp_listener: Listener, unix_listener: Listener,
        abstract_listener: Listener, network: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    write(repo, {".github/ratchet.yml": (
        f"verify:\n  network: {network}\n  checks:\n    - id: probe\n"
        f"      run: python3 probe.py {tcp_listener.port} {unix_listener.sock.getsockname()}"
        f" {SECRET} - {ABSTRACT}\n"), "README.md": "x\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    write(repo, {"probe.py": PROBE})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    git_repo = open_repository(repo)
    candidate = Candidate.between(git_repo, "HEAD~1", "HEAD")
    verification = plan_verification(candidate, read_repository_config(git_repo, "HEAD").verify)

    bundle = run_checks(verification, Sandbox(), network_settings(model))

    (result,) = bundle.results
    log = result.log
    found = json.loads(next(line for line in log.splitlines() if line.startswith("{")))
    assert_nothing_got_out(found, tcp_listener, unix_listener, abstract_listener)
    assert "stream" not in found  # checks get no model API route
    assert not model.requests
    assert (f"ratchet: blocked a connection to pypi.org:{tcp_listener.port}" in log) is (
        network == "false")
    if network == "false":
        assert ("add it to verify.network in .github/ratchet.yml (within the operator's"
                " RATCHET_REPOSITORY_NETWORK_ALLOW)") in log


def test_the_policy_checks_names_then_resolved_addresses() -> None:
    policy = NetworkPolicy("agents", "agent.network.allow", allowed=("api.anthropic.com",),
                           requested=("*.pythonhosted.org", "evil.example"),
                           bound=("*.pythonhosted.org",))
    assert policy.refusal("api.anthropic.com", 443) is None
    assert policy.refusal("files.pythonhosted.org", 443) is None
    assert policy.refusal("pythonhosted.org", 443) is not None  # *. is subdomains only
    assert "RATCHET_REPOSITORY_NETWORK_ALLOW does not include it" in str(
        policy.refusal("evil.example", 443))
    for address in ("127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "fe80::1",
                    "::ffff:127.0.0.1", "100.64.0.1", "0.0.0.0", "64:ff9b::a00:1",
                    "2002:7f00:1::1"):
        assert policy.address_refusal("h", 443, ["93.184.216.34", address]) is not None
    assert policy.address_refusal("h", 443, ["93.184.216.34", "2606:4700::1"]) is None
    assert policy.address_refusal("h", 443, ["127.0.0.1"], explicit=True) is None
    # Never reachable whatever the lists say, so the sentence says that, not which list to edit;
    # a name no list allows is refused before it is resolved (no DNS query leaves).
    for host in ("127.0.0.1", "localhost", "api.localhost", "169.254.169.254", "::1"):
        assert "never reach" in str(policy.refusal(host, 80)), host


def test_the_operator_settings_name_a_host_that_is_not_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATCHET_AGENT_NETWORK_ALLOW", "pypi.org, https://evil.example")
    with pytest.raises(SettingsError, match="RATCHET_AGENT_NETWORK_ALLOW: 'https://evil"):
        load_settings()
    monkeypatch.setenv("RATCHET_AGENT_NETWORK_ALLOW", "pypi.org, *.npmjs.org")
    monkeypatch.setenv("RATCHET_REPOSITORY_NETWORK_ALLOW", "*")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    network = load_settings().engine_settings().network
    assert (network.agent_allow, network.repository_allow) == (("pypi.org", "*.npmjs.org"), ("*",))
    assert [route.name for route in network.routes] == ["anthropic"]


def test_a_model_api_with_a_key_in_the_runner_is_reached_only_through_its_route() -> None:
    preset = ("api.anthropic.com", "api.openai.com")
    login = NetworkSettings().for_agents(preset, ())  # CLIs that hold their own login
    assert login.refusal("api.anthropic.com", 443) is None
    keyed = NetworkSettings(routes=model_routes({"ANTHROPIC_API_KEY": "k"})).for_agents(preset, ())
    assert "blocked a connection to api.anthropic.com:443" in str(
        keyed.refusal("api.anthropic.com", 443))
    assert keyed.refusal("api.openai.com", 443) is None
    assert keyed.route("anthropic") is not None


def test_model_routes_come_from_the_operator_environment() -> None:
    assert model_routes({}) == ()
    (anthropic,) = model_routes({"ANTHROPIC_API_KEY": "k"})
    assert (anthropic.upstream, anthropic.headers, anthropic.explicit) == (
        "https://api.anthropic.com", (("x-api-key", "k"),), False)
    (openai,) = model_routes({"OPENAI_API_KEY": "o", "OPENAI_BASE_URL": "http://gw:8080/v1/"})
    assert (openai.upstream, openai.headers, openai.explicit, openai.port) == (
        "http://gw:8080/v1", (("authorization", "Bearer o"),), True, 8080)
    with pytest.raises(ValueError, match="ANTHROPIC_BASE_URL"):
        model_routes({"ANTHROPIC_BASE_URL": "file:///etc/passwd"})


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def test_an_openai_route_over_https_adds_the_bearer_key_and_streams(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert_file, key_file = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # the runner trusts the test's server
    server = ModelServer()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    port = server.httpd.server_address[1]
    secret = "sk-openai-" + uuid.uuid4().hex
    routes = model_routes({"OPENAI_BASE_URL": f"https://127.0.0.1:{port}/v1",
                           "OPENAI_API_KEY": secret})
    client = r'''
import os, urllib.request
base = os.environ["OPENAI_BASE_URL"]
request = urllib.request.Request(base + "/chat/completions", data=b'{"stream":true}',
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
response = urllib.request.urlopen(request, timeout=60)
first = response.readline() + response.readline() + response.readline()
urllib.request.urlopen(urllib.request.Request(base + "/ack", data=b"ack"), timeout=30)
print(os.environ["OPENAI_API_KEY"], (first + response.read()).decode().replace("\n", "|"))
'''
    try:
        with EgressProxy(NetworkSettings(routes=routes).for_agents((), ())) as proxy:
            argv = Sandbox().command([sys.executable, "-c", client], cwd=Path("/"),
                                     network=proxy.endpoint)
            done = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                                  env={**os.environ, "OPENAI_API_KEY": secret})
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(PLACEHOLDER_KEY + " ") and secret not in done.stdout
    assert "data: first" in done.stdout and "data: streamed" in done.stdout
    (message,) = [r for r in server.requests if r["path"] == "/v1/chat/completions"]
    assert message["authorization"] == f"Bearer {secret}" and message["x-api-key"] == ""


def test_folders_of_proxies_that_died_with_their_runner_are_removed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    policy = NetworkPolicy("agents", "agent.network.allow")
    dead = Path(tempfile.mkdtemp(prefix=egress.FOLDER_PREFIX, dir=egress._TMP))
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(dead / "egress.sock"))  # bound, then its runner was killed
    empty = Path(tempfile.mkdtemp(prefix=egress.FOLDER_PREFIX, dir=egress._TMP))
    old = time.time() - egress.STALE_AFTER_S - 60
    with EgressProxy(policy) as live:
        live_folder = live.endpoint.socket.parent
        for folder in (dead, empty, live_folder):
            os.utime(folder, (old, old))
        monkeypatch.setattr(egress, "_swept", [float("-inf")])
        with EgressProxy(policy):
            pass
        assert not dead.exists() and not empty.exists()
        assert live.endpoint.socket.exists()  # a live proxy's folder stays, however old
    assert not live_folder.exists()


class SlowModel:
    """A model API on loopback whose one answer streams an event every 0.05 s for ``events``
    events (``hung``: the head, then nothing)."""

    def __init__(self, *, events: int, hung: bool = False) -> None:
        release = self.release = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.flush()
                if hung:
                    release.wait(timeout=60)
                    return
                for n in range(events):
                    self.wfile.write(b"event: delta\ndata: %d\n\n" % n)
                    self.wfile.flush()
                    time.sleep(0.05)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


# A CLI that prints nothing until its model's answer is whole (opencode's `--format json`).
SILENT_READER = r'''
import os, urllib.request
request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
                                 data=b'{"stream":true}',
                                 headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"]})
events = urllib.request.urlopen(request, timeout=120).read().count(b"event: delta")
open(os.environ["RATCHET_OUTPUT"], "w").write(f"{events} events")
'''


@pytest.mark.parametrize("hung", [False, True])
def test_model_traffic_through_the_proxy_is_a_sign_of_life_and_a_hung_stream_is_not(
        tmp_path: Path, hung: bool) -> None:
    # The agent prints nothing and changes nothing while its model streams for 2.5 s, past an
    # idle timeout of 1 s (an event every twentieth of it): alive. A stream that sends nothing
    # after its head is ended as idle.
    model = SlowModel(events=50, hung=hung)
    script = tmp_path / "reader.py"
    script.write_text(SILENT_READER)
    task = replace(agent_task(tmp_path), idle_timeout=1.0)
    agent = CommandAgent(
        f"{sys.executable} {script}", sandbox=Sandbox(),
        env={**os.environ, "ANTHROPIC_API_KEY": SECRET},
        network=NetworkSettings(routes=model_routes({"ANTHROPIC_BASE_URL": model.url,
                                                     "ANTHROPIC_API_KEY": SECRET})))
    try:
        if hung:
            with pytest.raises(AgentIdle):
                agent.run(task)
            assert not task.output.exists()
        else:
            result = agent.run(task)
            assert result.exit_code == 0 and task.output.read_text() == "50 events"
    finally:
        model.close()
