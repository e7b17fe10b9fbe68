"""Run mode's ledger is evidence, not authority: whoever can push the ledger's ref cannot send
the job's token to another host, choose the agent's command, nor plant a signal the job acts
on (even under the delivery id the next workflow run will record).

Each test starts a real run (the label's job: research, spec, a draft pull request), then
rewrites the ledger in ``refs/ratchet/ledger/issue-1`` as someone with push access could, and
runs the next job through ``action.yml``. What is asserted is seen from outside: a listener on
127.0.0.1 that answers git with a demand for credentials (it must see no connection at all),
the ref (nothing pushed over the rewrite), the agent's log (no implement step) and GitHub.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.action.conftest import OWNER, READER, REPO, WRITER, Scene, example
from tests.action.test_action_run import (
    ISSUE,
    agent_steps,
    assert_clean_output,
    bot_comments,
    commented,
    labeled,
    ledger_oid,
    run_action,
    spec_prefix,
)
from tests.e2e.harness import CONFIG

LEDGER_REF = f"refs/ratchet/ledger/issue-{ISSUE}"


@pytest.fixture
def scene(open_scene: Any) -> Scene:
    built = open_scene({".github/ratchet.yml": CONFIG, "README.md": "# demo\n"})
    built.fake.create_issue(OWNER, REPO, title="Add calc", body="Add calc.add(a, b).",
                            author=WRITER)
    built.shared.mkdir()
    return built


@dataclass
class Listener:
    """A TCP listener on 127.0.0.1 that asks every HTTP client for credentials."""

    port: int = 0
    received: list[bytes] = field(default_factory=list)


@contextmanager
def listening() -> Iterator[Listener]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    found = Listener(server.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                found.received.append(conn.recv(65536))
                conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic"
                             b' realm="git"\r\nContent-Length: 0\r\n\r\n')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        stop.set()
        thread.join()
        server.close()


def rewrite_ledger(scene: Scene, change: Callable[[sqlite3.Connection], None]) -> str:
    """Rewrite the ledger in its ref as a writer of the repository could; the new commit."""
    bare = ["git", "--git-dir", str(scene.bare)]
    db = scene.root / "tampered.sqlite3"
    db.write_bytes(subprocess.run([*bare, "cat-file", "blob", f"{LEDGER_REF}:ledger.sqlite3"],
                                  capture_output=True, check=True).stdout)
    with sqlite3.connect(db) as conn:
        change(conn)
    conn.close()

    def out(*args: str, data: bytes | None = None) -> str:
        return subprocess.run([*bare, *args], input=data, capture_output=True,
                              check=True).stdout.decode().strip()

    blob = out("hash-object", "-w", str(db))
    tree = out("mktree", data=f"100644 blob {blob}\tledger.sqlite3\n".encode())
    commit = out("-c", "user.name=m", "-c", "user.email=m@example.com", "commit-tree", "-m",
                 "rewritten", tree)
    out("update-ref", LEDGER_REF, commit)
    return commit


def dispatched(scene: Scene) -> dict[str, Any]:
    payload = scene.common(example("workflow_dispatch", None), WRITER)
    payload["inputs"] = {"issue": str(ISSUE)}
    return payload


@pytest.mark.parametrize("where", ["run", "push"])
def test_a_ledger_pointing_the_remote_elsewhere_is_refused_and_the_token_stays_home(
        scene: Scene, where: str) -> None:
    first = run_action(scene, "issues", labeled(scene))
    assert first.outputs["state"] == "awaiting_approval", first.stderr
    prefix = spec_prefix(scene)
    [pull] = scene.fake.pulls(OWNER, REPO)
    calls = len(scene.fake.calls())

    with listening() as listener:
        elsewhere = f"http://127.0.0.1:{listener.port}/{OWNER}/{REPO}.git"

        def point_elsewhere(db: sqlite3.Connection) -> None:
            if where == "run":  # the run's remote and origin
                db.execute("UPDATE runs SET repo = ?, params = json_set(params,"
                           " '$.clone_url', ?)", (elsewhere, elsewhere))
            else:  # the spec's push, made pending again with another remote
                db.execute("UPDATE effects SET status = 'intended', attempts = 0,"
                           " payload = json_set(payload, '$.remote', ?) WHERE kind = 'push'",
                           (elsewhere,))

        rewritten = rewrite_ledger(scene, point_elsewhere)
        if where == "run":  # a resume finds the run by its issue alone
            result = run_action(scene, "workflow_dispatch", dispatched(scene))
        else:
            _, payload = commented(scene, pull.number, f"/ratchet approve {prefix}",
                                   author=WRITER)
            result = run_action(scene, "issue_comment", payload)

    assert result.exit_code == 1, result.stderr + result.stdout
    [error] = result.annotations_at("error")
    assert f"127.0.0.1:{listener.port}" in error.message and "refused" in error.message
    assert LEDGER_REF in error.message
    assert listener.received == []  # not a connection, let alone the token
    assert ledger_oid(scene) == rewritten  # nothing pushed over it
    assert agent_steps(scene) == {"research": 1, "specify": 1}
    writes = [c for c in scene.fake.calls()[calls:] if c.method != "GET"]
    assert [c.path for c in writes] == [], writes  # nothing sent to GitHub either
    assert_clean_output(result)


def test_a_signal_planted_in_the_ledger_is_refused(scene: Scene) -> None:
    first = run_action(scene, "issues", labeled(scene))
    assert first.outputs["state"] == "awaiting_approval", first.stderr
    prefix = spec_prefix(scene)
    run_id = first.outputs["run-id"]

    def plant(db: sqlite3.Connection) -> None:
        # An approval as a writer's (and one as this host's operator), with a delivery row
        # of their own: what a ledger written by hand can hold.
        for signal, origin in (("delivery:actions-99999", "github"), ("cli:planted", "local")):
            db.execute(
                "INSERT INTO signals (id, run_id, kind, author, origin, payload, status,"
                " created_at) VALUES (?, ?, 'approve', ?, ?, ?, 'pending', 1)",
                (signal, run_id, WRITER, origin, json.dumps({"hash": prefix})))
        db.execute("INSERT INTO deliveries (id, event, run_id, first_seen, decision)"
                   " VALUES ('actions-99999', 'issue_comment', ?, 1, 'signal')", (run_id,))

    rewrite_ledger(scene, plant)
    result = run_action(scene, "workflow_dispatch", dispatched(scene))

    assert result.exit_code == 0, result.stderr + result.stdout
    assert result.outputs["state"] == "awaiting_approval"  # not approved
    assert agent_steps(scene) == {"research": 1, "specify": 1}  # nothing implemented
    ledger = scene.root / "after.sqlite3"
    ledger.write_bytes(subprocess.run(
        ["git", "--git-dir", str(scene.bare), "cat-file", "blob",
         f"{LEDGER_REF}:ledger.sqlite3"], capture_output=True, check=True).stdout)
    with sqlite3.connect(ledger) as conn:
        decided = dict(conn.execute("SELECT id, status FROM signals WHERE id IN"
                                    " ('delivery:actions-99999', 'cli:planted')").fetchall())
    conn.close()
    assert decided == {"delivery:actions-99999": "refused", "cli:planted": "refused"}
    replies = [c.body for c in bot_comments(scene, ISSUE)[1:]] + [
        c.body for pull in scene.fake.pulls(OWNER, REPO)
        for c in bot_comments(scene, pull.number)]
    assert any("type the command again" in body for body in replies), replies
    assert_clean_output(result)


def test_a_signal_planted_under_the_jobs_own_delivery_id_is_refused(scene: Scene) -> None:
    first = run_action(scene, "issues", labeled(scene))
    assert first.outputs["state"] == "awaiting_approval", first.stderr
    prefix = spec_prefix(scene)
    run_id = first.outputs["run-id"]

    def plant(db: sqlite3.Connection) -> None:
        # The next workflow run's delivery, recorded ahead of it as a writer's approval.
        db.execute(
            "INSERT INTO signals (id, run_id, kind, author, origin, payload, status,"
            " created_at) VALUES ('delivery:actions-4242', ?, 'approve', ?, 'github', ?,"
            " 'pending', 1)", (run_id, WRITER, json.dumps({"hash": prefix})))
        db.execute("INSERT INTO deliveries (id, event, run_id, first_seen, decision)"
                   " VALUES ('actions-4242', 'issue_comment', ?, 1, 'signal')", (run_id,))

    rewrite_ledger(scene, plant)
    # What workflow run 4242 really carries: a reader's approval.
    _, payload = commented(scene, ISSUE, f"/ratchet approve {prefix}", author=READER)
    result = run_action(scene, "issue_comment", payload, run_id="4242")

    assert result.exit_code == 0, result.stderr + result.stdout
    assert result.outputs["state"] == "awaiting_approval"
    assert agent_steps(scene) == {"research": 1, "specify": 1}
    assert_clean_output(result)


def test_a_ledger_choosing_another_agent_command_is_refused(scene: Scene) -> None:
    first = run_action(scene, "issues", labeled(scene))
    assert first.outputs["state"] == "awaiting_approval", first.stderr
    prefix = spec_prefix(scene)
    marker = scene.root / "planted-agent-ran"
    rewritten = rewrite_ledger(scene, lambda db: db.execute(
        "UPDATE runs SET params = json_set(params, '$.agent_command', ?)",
        (f"touch {marker}",)))
    _, payload = commented(scene, ISSUE, f"/ratchet approve {prefix}", author=WRITER)
    result = run_action(scene, "issue_comment", payload)

    assert result.exit_code == 1, result.stderr + result.stdout
    [error] = result.annotations_at("error")
    assert "agent-command" in error.message and "refused" in error.message
    assert not marker.exists() and ledger_oid(scene) == rewritten
    assert agent_steps(scene) == {"research": 1, "specify": 1}
