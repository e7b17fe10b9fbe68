"""``POST /webhooks/github`` through Starlette's TestClient on a real SQLite ledger.

Signed with HMAC-SHA256 exactly as GitHub signs; every payload GitHub documents (the vendored
``@octokit/webhooks-examples``) is delivered and must never get a server error.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from app.service import create_app
from app.webhooks import MAX_BODY_BYTES, WebhookConfig, WebhookReceiver
from github.routing import Ignore, RouteSettings, route
from github.webhook_payloads import parse_event
from runner.ledger import open_store
from runner.ledger.records import SignalFor
from runner.ledger.store import Store
from runner.names import SignalKind, SignalStatus
from tests.webhook_examples import documented

SECRET = "webhook-secret-for-tests"
APP_ID = 4242
ROUTING = RouteSettings(app_id=APP_ID, bot_login="ratchet[bot]",
                        trigger_labels=frozenset({"ratchet"}))
REPO = {
    "id": 1, "name": "widgets", "full_name": "acme/widgets",
    "owner": {"login": "acme", "id": 9, "type": "Organization"},
    "clone_url": "https://github.com/acme/widgets.git", "default_branch": "main",
}


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def user(login: str = "alice", kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": abs(hash(login)) % 10_000, "type": kind}


def labeled(issue: int = 7, label: str = "ratchet", sender: str = "alice") -> dict[str, Any]:
    return {"action": "labeled", "label": {"name": label}, "repository": REPO,
            "installation": {"id": 77}, "sender": user(sender),
            "issue": {"number": issue, "title": "Add calc", "body": "Add calc.add(a, b).",
                      "user": user(sender)}}


def comment(body: str, *, issue: int = 7, sender: str = "bob", action: str = "created",
            via_app: int | None = None, kind: str = "User") -> dict[str, Any]:
    payload = {"action": action, "repository": REPO, "installation": {"id": 77},
               "sender": user(sender, kind),
               "issue": {"number": issue, "title": "Add calc", "user": user("alice")},
               "comment": {"id": 555, "body": body, "user": user(sender, kind)}}
    if via_app is not None:
        payload["comment"]["performed_via_github_app"] = {"id": via_app, "slug": "ratchet"}
    return payload


class Deliveries:
    def __init__(self, client: TestClient, store: Store, woken: list[str]) -> None:
        self.client = client
        self.store = store
        self.woken = woken

    def post(self, event: str, payload: Any, *, delivery: str | None = None,
             secret: str | None = SECRET, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> Any:
        body = raw if raw is not None else json.dumps(payload).encode()
        sent = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
                "Content-Type": "application/json"}
        if secret is not None:
            sent["X-Hub-Signature-256"] = sign(body, secret)
        sent.update(headers or {})
        return self.client.post("/webhooks/github", content=body, headers=sent)


def receiver_app(store: Store, config: WebhookConfig, woken: list[str]) -> TestClient:
    app = create_app(store, webhooks=WebhookReceiver(store, config, woken.append))
    return TestClient(app)


@pytest.fixture
def deliveries(tmp_path: Path) -> Iterator[Deliveries]:
    store = open_store(str(tmp_path / "ledger.db"))
    woken: list[str] = []
    config = WebhookConfig(secret=SECRET, insecure=False, routing=ROUTING,
                           agent_command="claude -p {prompt}")
    with receiver_app(store, config, woken) as client:
        yield Deliveries(client, store, woken)
    store.close()


def test_a_label_starts_one_run_and_redeliveries_change_nothing(deliveries: Deliveries) -> None:
    first = deliveries.post("issues", labeled(), delivery="d-1")
    assert first.status_code == 202, first.text
    run_id = first.json()["run"]
    for _ in range(4):
        again = deliveries.post("issues", labeled(), delivery="d-1")
        assert again.status_code == 200 and again.json()["duplicate"] is True
    second = deliveries.post("issues", labeled(), delivery="d-2")  # labeled again, run active
    assert second.status_code == 200 and "already active" in second.json()["reason"]
    [run] = deliveries.store.list_runs()
    assert run.id == run_id and run.issue == 7 and run.base_revision is None
    assert run.branch == "ratchet/issue-7" and run.origin.installation == 77
    assert deliveries.woken == [run_id]
    [tracking] = deliveries.store.effects(run_id)
    assert tracking.payload["name"] == "tracking"


def test_commands_become_signals_of_the_active_run(deliveries: Deliveries) -> None:
    run_id = deliveries.post("issues", labeled()).json()["run"]
    approve = deliveries.post("issue_comment", comment("/ratchet approve 3f2a9c0b1d2e"))
    changes = deliveries.post("issue_comment",
                              comment("LGTM mostly.\n/ratchet request-changes cover\nzero too"))
    again = deliveries.post("issue_comment", comment("/ratchet verify-again"))
    assert (approve.status_code, changes.status_code, again.status_code) == (202, 202, 202)
    kinds = [(s.kind, s.payload.to_stored()) for s in deliveries.store.signals(run_id)]
    assert kinds == [
        (SignalKind.APPROVE, {"hash": "3f2a9c0b1d2e", "comment": {"id": 555, "issue": 7}}),
        (SignalKind.REQUEST_CHANGES, {"message": "cover\nzero too",
                                      "comment": {"id": 555, "issue": 7}}),
        (SignalKind.VERIFY_AGAIN, {"comment": {"id": 555, "issue": 7}}),
    ]
    assert all(s.status is SignalStatus.PENDING for s in deliveries.store.signals(run_id))
    closed = deliveries.post("issues", {**labeled(), "action": "closed"})
    assert closed.status_code == 202
    assert deliveries.store.signals(run_id)[-1].kind is SignalKind.CANCEL


@pytest.mark.parametrize(("payload", "reason"), [
    (comment("/ratchet approve 3f2a9c", sender="ratchet[bot]", kind="Bot"), "this App"),
    (comment("/ratchet approve 3f2a9c", via_app=APP_ID), "this App wrote"),
    (comment("/ratchet approve 3f2a9c", sender="dependabot[bot]", kind="Bot"), "another bot"),
    (comment("/ratchet approve 3f2a9c", action="edited"), "only new comments"),
    (comment("just a comment"), "no /ratchet command"),
    (comment("/ratchet dance"), "unknown command"),
])
def test_what_the_app_caused_and_edits_trigger_nothing(deliveries: Deliveries,
                                                       payload: dict[str, Any],
                                                       reason: str) -> None:
    run_id = deliveries.post("issues", labeled()).json()["run"]
    answer = deliveries.post("issue_comment", payload)
    assert answer.status_code == 200 and reason in answer.json()["reason"]
    assert deliveries.store.signals(run_id) == []


def test_the_apps_own_and_other_apps_check_runs_trigger_nothing(deliveries: Deliveries) -> None:
    check = {"action": "completed", "repository": REPO, "installation": {"id": 77},
             "sender": user("ratchet[bot]", "Bot"),
             "check_run": {"id": 1, "name": "ratchet/verify", "head_sha": "a" * 40,
                           "external_id": "r-1:ratchet/verify:" + "a" * 40,
                           "app": {"id": APP_ID}}}
    assert deliveries.post("check_run", check).json()["decision"] == "ignore"
    other = copy.deepcopy(check)
    other.update(action="rerequested", sender=user("carol"))
    other["check_run"]["app"] = {"id": 1}
    assert "another app" in deliveries.post("check_run", other).json()["reason"]
    assert deliveries.store.list_runs() == []


def pull_request(action: str, *, head_ref: str, head_repo: str = "acme/widgets",
                 sender: str = "dana", kind: str = "User") -> dict[str, Any]:
    def ref(name: str, sha: str, full_name: str) -> dict[str, Any]:
        owner, repo = full_name.split("/")
        return {"ref": name, "sha": sha, "repo": {**REPO, "full_name": full_name, "name": repo,
                                                  "owner": {"login": owner, "id": 3}}}
    return {"action": action, "number": 4, "repository": REPO, "installation": {"id": 77},
            "sender": user(sender, kind),
            "pull_request": {"number": 4, "title": "Widgets", "user": user("dana"),
                             "head": ref(head_ref, "h" * 40, head_repo),
                             "base": ref("main", "b" * 40, "acme/widgets")}}


def verify_check(action: str, *, name: str = "ratchet/verify",
                 pulls: bool = True) -> dict[str, Any]:
    linked = [{"number": 4, "head": {"ref": "ratchet/issue-7", "sha": "c" * 40},
               "base": {"ref": "main", "sha": "b" * 40}}] if pulls else []
    return {"action": action, "repository": REPO, "installation": {"id": 77},
            "sender": user("carol"),
            "check_run": {"id": 9, "name": name, "head_sha": "c" * 40,
                          "external_id": f"r-1:{name}:" + "c" * 40, "app": {"id": APP_ID},
                          "pull_requests": linked}}


@pytest.mark.parametrize(("payload", "started"), [
    (pull_request("opened", head_ref="main", head_repo="mallory/widgets"), "the fork"),
    (pull_request("synchronize", head_ref="ratchet/issue-7"), "a push by dana"),
    (pull_request("synchronize", head_ref="feature"), None),
    (pull_request("opened", head_ref="ratchet/issue-7"), None),
    (pull_request("synchronize", head_ref="ratchet/issue-7", sender="ratchet[bot]",
                  kind="Bot"), None),
])
def test_heads_that_are_verified_only(deliveries: Deliveries, payload: dict[str, Any],
                                      started: str | None) -> None:
    """A fork's head, and a person's push to a run's branch (never forced over), are
    verified and reported; the App's own pushes and other branches are left to their CI."""
    answer = deliveries.post("pull_request", payload)
    runs = deliveries.store.list_runs()
    if started is None:
        assert answer.status_code == 200 and runs == []
        return
    assert answer.status_code == 202 and started in answer.json()["reason"]
    [run] = runs
    assert run.workflow == "pull_request" and run.pr == 4 and run.base_revision == "h" * 40
    assert run.origin.diff_base == "b" * 40


@pytest.mark.parametrize(("payload", "reason"), [
    (verify_check("rerequested"), None),
    (verify_check("rerequested", name="ratchet/spec"), "is not re-run"),
    (verify_check("rerequested", pulls=False), "on no open pull request"),
])
def test_a_rerequested_verify_check_verifies_its_head_again(
        deliveries: Deliveries, payload: dict[str, Any], reason: str | None) -> None:
    answer = deliveries.post("check_run", payload)
    if reason is not None:
        assert answer.status_code == 200 and reason in answer.json()["reason"]
        assert deliveries.store.list_runs() == []
        return
    assert answer.status_code == 202
    [run] = deliveries.store.list_runs()
    assert run.workflow == "pull_request" and run.base_revision == "c" * 40
    assert run.pr == 4 and run.origin.diff_base == "b" * 40
    assert "re-run requested by carol" in run.origin.source
    # Asked again while that verification runs: the head is being verified already.
    assert deliveries.post("check_run", payload).json()["decision"] == "ignore"


@pytest.mark.parametrize(("change", "status"), [
    ({"secret": "forged-secret"}, 401),
    ({"secret": None}, 401),
    ({"raw": b"{not json"}, 400),
    ({"headers": {"X-GitHub-Event": ""}}, 400),
])
def test_forged_unsigned_and_malformed_deliveries_are_refused_and_record_nothing(
        deliveries: Deliveries, change: dict[str, Any], status: int) -> None:
    options: dict[str, Any] = {"delivery": "d-bad", **change}
    if "raw" in change:
        options["raw"] = change["raw"]
    answer = deliveries.post("issues", labeled(), **options)
    assert answer.status_code == status, answer.text
    assert deliveries.store.delivery("d-bad") is None and deliveries.store.list_runs() == []


def test_a_missing_github_header_is_a_bad_request(deliveries: Deliveries) -> None:
    body = json.dumps(labeled()).encode()
    answer = deliveries.client.post("/webhooks/github", content=body, headers={
        "X-Hub-Signature-256": sign(body), "Content-Type": "application/json",
        "X-GitHub-Event": "issues"})
    assert answer.status_code == 400 and "x-github-delivery" in answer.json()["error"]


def test_a_body_above_25_mb_is_refused_unread(deliveries: Deliveries) -> None:
    body = b" " * (MAX_BODY_BYTES + 1)
    answer = deliveries.post("issues", None, raw=body)
    assert answer.status_code == 413 and deliveries.store.list_runs() == []


def test_without_a_secret_every_delivery_is_refused_unless_insecure(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "ledger.db"))
    refused = WebhookConfig(secret=None, insecure=False, routing=ROUTING, agent_command=None)
    with receiver_app(store, refused, []) as client:
        answer = Deliveries(client, store, []).post("issues", labeled(), secret=None)
    assert answer.status_code == 503 and "RATCHET_WEBHOOK_SECRET" in answer.json()["error"]
    assert store.list_runs() == []
    insecure = WebhookConfig(secret=None, insecure=True, routing=ROUTING, agent_command=None)
    with receiver_app(store, insecure, []) as client:
        answer = Deliveries(client, store, []).post("issues", labeled(), secret=None)
    assert answer.status_code == 202
    store.close()


def test_every_documented_payload_gets_200_or_202_never_a_server_error(
        deliveries: Deliveries) -> None:
    payloads = documented()
    assert len(payloads) > 300
    answers = {}
    for index, (event, example) in enumerate(payloads):
        answer = deliveries.post(event, example, delivery=f"doc-{index}")
        answers[f"{event}.{example.get('action')}#{index}"] = answer.status_code
    assert set(answers.values()) <= {200, 202}, {k: v for k, v in answers.items()
                                                 if v not in {200, 202}}


def review(state: str, body: str | None, *, action: str = "submitted") -> dict[str, Any]:
    pull = pull_request("opened", head_ref="ratchet/issue-7")
    return {**pull, "action": action, "sender": user("bob"),
            "review": {"id": 31, "body": body, "state": state, "user": user("bob"),
                       "commit_id": "h" * 40}}


@pytest.mark.parametrize(("payload", "expected"), [
    (review("changes_requested", "Cover zero too."), "Cover zero too."),
    (review("commented", "Nice."), "(commented) is not used"),
    (review("approved", None), "(approved) is not used"),
    (review("changes_requested", "  "), "without text"),
    (review("changes_requested", "x", action="edited"), "is not used"),
    (review("changes_requested", "x" * 70_000), "longer than GitHub allows"),
])
def test_a_review_requesting_changes_sends_the_spec_back(payload: dict[str, Any],
                                                         expected: str) -> None:
    """GitHub's own "Request changes" review works as ``/ratchet request-changes``."""
    intent = route("pull_request_review", parse_event("pull_request_review", payload), ROUTING)
    if isinstance(intent, Ignore):
        assert expected in intent.reason
        return
    assert isinstance(intent, SignalFor)
    assert (intent.number, intent.kind, intent.author) == (4, SignalKind.REQUEST_CHANGES, "bob")
    assert intent.payload.to_stored() == {"message": expected, "review": 31}


def test_a_mistyped_verb_is_ignored_with_the_reply_listing_the_commands() -> None:
    intent = route("issue_comment", parse_event("issue_comment", comment("/ratchet aprove 3f")),
                   ROUTING)
    assert isinstance(intent, Ignore) and intent.reply is not None
    reply = intent.reply
    assert (reply.owner, reply.repo, reply.number, reply.author) == ("acme", "widgets", 7, "bob")
    assert reply.text.startswith("unknown command '/ratchet aprove 3f'; the commands are")
    assert "`/ratchet status`" in reply.text and "`/ratchet approve <spec hash>`" in reply.text
    quiet = route("issue_comment", parse_event("issue_comment", comment("just a comment")),
                  ROUTING)
    assert isinstance(quiet, Ignore) and quiet.reply is None
