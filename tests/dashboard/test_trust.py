"""Approvals come only from people, through the real ``ratchet serve`` on 127.0.0.1 and real HTTP.

- An agent that hashes the spec it is writing and approves it, through the dashboard (it has
  no cookie) and with the CLI as the host's user (``RATCHET_SANDBOX=none``, so it can reach
  both; under bwrap it reaches neither), is refused; the run waits, and reaches done only
  after a person opens the one-time link and approves.
- A reverse proxy on this host that forwards ``Host: 127.0.0.1`` (nginx's default) gets nothing:
  no page, no API, no action, not even with the operator's own cookie or sign-in link.
"""

from __future__ import annotations

import http.server
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from runner.ledger.records import Signal
from runner.ledger.sqlite import SqliteStore
from runner.names import SignalKind, SignalStatus
from tests.dashboard.served import free_port, serve, sign_in_link, stop
from tests.e2e.harness import AGENT, ROOT, Ratchet, make_target_repo

pytestmark = pytest.mark.slow

HOSTILE = ROOT / "tests" / "fixtures" / "hostile_agent.py"
PATIENCE = 120.0  # a backstop for a loaded machine, never a measured duration


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.2)


def _signals(ratchet: Ratchet, run_id: str) -> list[Signal]:
    store = SqliteStore(ratchet.home / "ratchet.db")
    try:
        return store.signals(run_id)
    finally:
        store.close()


def _form(html: str, action: str) -> dict[str, str]:
    found = re.search(rf'<form method="post" action="[^"]*/{action}" class="action">(.*?)</form>',
                      html, re.S)
    assert found, f"no {action} form on the page"
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
                           found.group(1)))


def _signed_in(log: Path, url: str) -> httpx.Client:
    """A browser-like client that opened the newest sign-in link (and so holds the cookie)."""
    client = httpx.Client(base_url=url, timeout=30)
    opened = client.get(sign_in_link(log), follow_redirects=False)
    assert opened.status_code == 303 and opened.headers["location"] == "/"
    assert "ratchet_session" in client.cookies
    return client


def test_an_agent_that_approves_its_own_spec_is_refused_and_the_run_waits_for_a_person(
        tmp_path):
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    report = ratchet.shared / "report"
    report.mkdir(parents=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ratchet.env.update({
        "RATCHET_AGENT_COMMAND": f"{sys.executable} {HOSTILE} {AGENT}",
        "RATCHET_SANDBOX": "none",  # so the agent can reach the dashboard and the ledger
        "HOSTILE": "specify:self_approve",
        "HOSTILE_REPORT": str(report),
        "HOSTILE_DASHBOARD": url,
        "HOSTILE_HOME": str(ratchet.home),
    })
    log = tmp_path / "serve.log"
    server = serve(ratchet, port, log)
    try:
        created = ratchet.create()
        assert created.returncode == 0, created.stderr
        run_id = ratchet.run_id()
        seen = (report / "self_approve").read_text()
        # Without the cookie the dashboard gives the agent nothing: the page sends it to
        # sign in, the API and the approve form are unauthorized.
        assert "page 303" in seen and "api 401" in seen and "approve 401" in seen, seen
        assert "cli 0" in seen, seen  # recorded in the inbox, as the host's user

        # The CLI approval was recorded while the spec was being written: refused, so the run
        # still waits for a person.
        _until(lambda: [s.status for s in _signals(ratchet, run_id)] == [
            SignalStatus.REFUSED], "the early approval's refusal")
        [answered] = _signals(ratchet, run_id)
        assert answered.kind is SignalKind.APPROVE
        assert "before_spec" in (answered.reason or "")
        assert ratchet.status(run_id)["state"] == "awaiting_approval"
        assert not [e for e in ratchet.events(run_id) if e["type"] == "SPEC_APPROVED"]

        # A person opens the link `ratchet serve` printed and approves from the run's page.
        person = _signed_in(log, url)
        page = person.get(f"/runs/{run_id}").text
        assert "before_spec" in page  # the page says why the early approval counted for nothing
        sent = person.post(f"/runs/{run_id}/approve", data=_form(page, "approve"),
                           headers={"Origin": url}, follow_redirects=False)
        assert sent.status_code == 303, sent.text
        _until(lambda: ratchet.status(run_id)["state"] == "done", "the run reaching done")
    finally:
        stop(server)
    approved = [e for e in ratchet.events(run_id) if e["type"] == "SPEC_APPROVED"]
    assert len(approved) == 1
    assert approved[0]["data"]["sha256"] == ratchet.status(run_id)["spec_sha256"]
    ratchet.assert_published_once(run_id, replies=1)
    [reply] = [c for c in ratchet.outbox(run_id).comments if c["name"] is None]
    assert "was sent before the spec it names was ready for review" in reply["text"]


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A reverse proxy as nginx's defaults make one: ``Host`` rewritten to the upstream's
    (``proxy_set_header Host $proxy_host``), ``X-Forwarded-For`` naming the client."""

    upstream = ""

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in {"host",
                                                                              "connection"}}
        headers.update({"Host": "127.0.0.1", "X-Forwarded-For": "203.0.113.50",
                        "X-Forwarded-Proto": "http"})
        answer = httpx.request(self.command, self.upstream + self.path, headers=headers,
                               content=body, timeout=30, follow_redirects=False)
        self.send_response(answer.status_code)
        for name, value in answer.headers.items():
            if name.lower() not in {"transfer-encoding", "connection", "content-length"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    do_GET = do_POST = _forward

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def _proxy_to(upstream: str) -> Iterator[str]:
    handler = type("Proxy", (_Proxy,), {"upstream": upstream})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_proxy_forwarding_host_127_0_0_1_is_refused(tmp_path):
    ratchet = Ratchet(home=tmp_path / "home", repo=make_target_repo(tmp_path / "repo"))
    created = ratchet.create()
    assert created.returncode == 0, created.stderr
    run_id = ratchet.run_id()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    server = serve(ratchet, port, log)
    try:
        operator = _signed_in(log, url)
        cancel = _form(operator.get(f"/runs/{run_id}").text, "cancel")
        with _proxy_to(url) as proxied:
            stranger = httpx.Client(base_url=proxied, timeout=30)
            for path in ("/", f"/runs/{run_id}", "/api/runs", f"/api/runs/{run_id}", "/live"):
                refused = stranger.get(path, follow_redirects=False)
                assert refused.status_code == 403, (path, refused.status_code)
                assert "came through a proxy" in refused.text
            # Not even the operator's own cookie or a fresh sign-in link counts through it.
            carried = httpx.Client(base_url=proxied, cookies=operator.cookies, timeout=30)
            assert carried.get(f"/runs/{run_id}").status_code == 403
            assert carried.post(f"/runs/{run_id}/cancel", data=cancel,
                                headers={"Origin": proxied}).status_code == 403
            link = sign_in_link(log).removeprefix(url)
            assert stranger.get(link, follow_redirects=False).status_code == 403
        # The link was not spent through the proxy; the run was neither read nor cancelled.
        assert httpx.get(url + link, follow_redirects=False).status_code == 303
        assert ratchet.status(run_id)["state"] == "awaiting_approval"
        assert _signals(ratchet, run_id) == []
        # Direct, with the cookie, the operator still acts.
        assert operator.get(f"/api/runs/{run_id}").status_code == 200
    finally:
        stop(server)
