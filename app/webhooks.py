"""``POST /webhooks/github``: check the signature, parse once, decide, record, wake, answer.

The request only records: no GitHub API call happens in it, so the answer is fast and a crash
loses nothing GitHub was told was received. One exception: a trigger label's sender is asked of
GitHub first (``TriggerCheck``, cached), since a label from someone without the required role
must record no run; the refusal's one reply is posted after the answer, as is the answer to a
command that reaches no run (a mistyped verb). gidgethub's sans-I/O
``Event.from_http`` checks the ``X-Hub-Signature-256`` HMAC (constant time);
``github/routing.py`` decides from the payload alone; one ledger transaction
(``Store.accept_deliveries``) stores the delivery with what it caused (a new run, a pending
signal, or the reason it was ignored); then the run is woken. Deliveries that arrive together
share that transaction (``DeliveryWriter``: one commit, one disk flush for a burst), and each
is answered once its transaction has committed.

Answers: 401 for a missing or wrong signature (nothing recorded), 400 for malformed JSON or
missing GitHub headers, 413 above 25 MB, 503 when no secret is configured (unless insecure
development deliveries are allowed) or GitHub could not say who added a label (nothing
recorded: redeliver it), 202 for a delivery that started or signalled a run, 200
for one ignored or seen before.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Protocol

from gidgethub import BadRequest, ValidationFailure
from gidgethub.sansio import Event
from pydantic import ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from github.routing import (
    Ignore,
    Reply,
    RouteSettings,
    StartRun,
    VerifyPullRequest,
    reply_to,
    route,
)
from github.webhook_payloads import IssueCommentEvent, parse_event
from github.words import GitHubWords
from runner.errors import LedgerUnavailable, StepFailure
from runner.inbox import status_said
from runner.intake import new_run
from runner.ledger.records import DeliveryIntake, DeliveryOutcome, NewDelivery, NewRun, SignalFor
from runner.ledger.store import Store
from runner.names import SignalKind, verb_of
from runner.origin import AgentChoice, GitHubOrigin
from runner.render import render_status_reply
from runner.signals import Authorization
from runner.status import read_status
from runner.tracking import with_first_edit
from runner.workflow import PULL_REQUEST_WORKFLOW

log = logging.getLogger(__name__)

# GitHub does not deliver payloads over 25 MB; anything larger is not GitHub.
MAX_BODY_BYTES = 25 * 1024 * 1024
_REQUIRED_HEADERS = ("x-github-event", "x-github-delivery", "content-type")


class TriggerCheck(Protocol):
    """Who may start a run with the trigger label (``github/triggers.py``): asks GitHub."""

    def check(self, origin: GitHubOrigin) -> Authorization: ...

    def refuse(self, origin: GitHubOrigin, issue: int, why: Authorization) -> bool: ...

    def answer(self, reply: Reply) -> bool: ...

    def answer_expired(self) -> int: ...


# Seconds between two looks for signals that waited a day for a run to link their pull
# request (each is answered once, asking to repeat it: ``TriggerCheck.answer_expired``).
EXPIRED_SIGNALS_INTERVAL = 60.0

# A refused label: the run it would have started, its issue, and why not.
_Refusal = tuple[GitHubOrigin, int, Authorization]


@dataclass(frozen=True)
class WebhookConfig:
    secret: str | None
    insecure: bool  # accept unsigned deliveries (local development)
    routing: RouteSettings
    agent_command: str | None  # the agent of runs started by a label
    # Who may start a run with the label; None only where no App is configured (such a run
    # cannot be carried out anyway: it stops naming the missing App).
    triggers: TriggerCheck | None = None


class WebhookReceiver:
    """The endpoint; ``wake`` enqueues a run for a worker (its failures are logged: the
    reaper wakes runs with work in their inbox anyway)."""

    def __init__(self, store: Store, config: WebhookConfig, wake: Callable[[str], None]) -> None:
        self.store = store
        self.config = config
        self.wake = wake
        self.writer = DeliveryWriter(store)

    async def receive(self, request: Request) -> JSONResponse:
        config = self.config
        if not config.secret and not config.insecure:
            return _answer(503, "no webhook secret is configured (RATCHET_WEBHOOK_SECRET):"
                                " every delivery is refused until one is set")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return _answer(413, f"payloads above {MAX_BODY_BYTES} bytes are not GitHub's")
        try:
            body = await _read(request)
        except _TooLarge:
            return _answer(413, f"payloads above {MAX_BODY_BYTES} bytes are not GitHub's")
        except ClientDisconnect:
            return _answer(400, "the client went away mid-request")
        headers = {k.lower(): v for k, v in request.headers.items()}
        headers.pop("x-hub-signature", None)  # SHA-1 signatures are not accepted
        if config.secret is None:
            headers.pop("x-hub-signature-256", None)
        elif "x-hub-signature-256" not in headers:
            return _answer(401, "X-Hub-Signature-256 is missing")
        missing = [h for h in _REQUIRED_HEADERS if not headers.get(h, "").strip()]
        if missing:
            return _answer(400, f"missing GitHub headers: {', '.join(missing)}")
        try:
            event = Event.from_http(headers, body, secret=config.secret)
        except ValidationFailure:
            return _answer(401, "the signature does not match the configured secret")
        except (BadRequest, ValueError) as exc:
            return _answer(400, f"the body is not a JSON delivery: {exc}")
        intake, reply = self._intake(event)
        refused: _Refusal | None = None
        if _label_start(intake) is not None and self.config.triggers is not None:
            try:
                intake, refused = await asyncio.to_thread(self._gate, intake)
            except StepFailure as exc:
                log.warning("delivery %r: the label's sender is unknown: %s",
                            event.delivery_id, exc)
                return _answer(503, f"GitHub could not say who may start runs ({exc});"
                                    " redeliver this delivery")
        try:
            outcome = await asyncio.wrap_future(self.writer.record(intake))
        except LedgerUnavailable as exc:
            log.warning("delivery %r: ledger unavailable: %s", event.delivery_id, exc)
            return _answer(503, "the ledger is unavailable; GitHub may redeliver")
        if refused is not None and outcome.recorded:
            threading.Thread(target=self._refuse, args=(intake.delivery.id, refused),
                             daemon=True, name="ratchet-trigger-reply").start()
        reply = _owed(intake, outcome, reply)
        if reply is not None:
            threading.Thread(target=self._answer, args=(intake.delivery.id, reply),
                             daemon=True, name="ratchet-command-reply").start()
        if _asks_ended_run(intake, outcome):
            threading.Thread(target=self._answer_ended, args=(intake, outcome),
                             daemon=True, name="ratchet-status-reply").start()
        log.info("delivery %r (%s): %s: %s run=%r", event.delivery_id, event.event,
                 outcome.decision, outcome.reason, outcome.run_id)
        acted = outcome.recorded and outcome.decision in {"start", "signal"}
        if acted and outcome.run_id is not None:
            try:
                await asyncio.to_thread(self.wake, outcome.run_id)
            except Exception as exc:  # the broker is down: the reaper wakes it later
                log.warning("run %r: could not enqueue: %s", outcome.run_id, exc)
        return JSONResponse(
            {"delivery": event.delivery_id, "decision": outcome.decision,
             "reason": outcome.reason, "run": outcome.run_id,
             **({} if outcome.recorded else {"duplicate": True})},
            status_code=202 if acted else 200,
        )

    def record(self, event: Event) -> DeliveryOutcome:
        """Record one delivery now, in its own transaction (a caller with one event, such as
        an Actions job, whose payload the runner vouches for)."""
        intake, reply = self._intake(event)
        intake, refused = self._gate(intake)
        [outcome] = self.store.accept_deliveries([intake])
        if refused is not None and outcome.recorded:
            self._refuse(intake.delivery.id, refused)
        reply = _owed(intake, outcome, reply)
        if reply is not None:
            self._answer(intake.delivery.id, reply)
        if _asks_ended_run(intake, outcome):
            self._answer_ended(intake, outcome)
        return outcome

    def _gate(self, intake: DeliveryIntake) -> tuple[DeliveryIntake, _Refusal | None]:
        """A label's start as it stands when its sender may start runs; otherwise ignored,
        with the refusal to reply (GitHub's failures are raised: nothing is recorded)."""
        origin = _label_start(intake)
        if origin is None or self.config.triggers is None or intake.start is None:
            return intake, None
        why = self.config.triggers.check(origin)
        if why.allowed:
            return intake, None
        reason = f"not started: {why.detail}, less than a run's starter needs"
        return (DeliveryIntake(replace(intake.delivery, decision="ignore", reason=reason)),
                (origin, intake.start.issue or 0, why))

    def _refuse(self, delivery: str, refused: _Refusal) -> None:
        """The refused label's one reply; a failure is logged (the refusal is recorded)."""
        assert self.config.triggers is not None
        try:
            self.config.triggers.refuse(*refused)
        except Exception as exc:
            log.warning("delivery %r: the refusal's reply was not sent: %s", delivery, exc)

    def _answer(self, delivery: str, reply: Reply) -> None:
        """The answer to a command that reaches no run; a failure is logged (the delivery is
        recorded, with why it was ignored)."""
        if self.config.triggers is None:
            return
        try:
            self.config.triggers.answer(reply)
        except Exception as exc:
            log.warning("delivery %r: the command's reply was not sent: %s", delivery, exc)

    def _answer_ended(self, intake: DeliveryIntake, outcome: DeliveryOutcome) -> None:
        """A command in a comment on an ended run: a status request is answered with the
        run's status, any other command with the state it ended in."""
        assert intake.signal is not None and outcome.run_id is not None
        try:
            run = self.store.get_run(outcome.run_id)
            status = read_status(self.store, run.id, now=time.time())
        except Exception as exc:
            log.warning("delivery %r: the status of run %r was not read: %s",
                        intake.delivery.id, outcome.run_id, exc)
            return
        if not isinstance(run.origin, GitHubOrigin):
            return
        origin = run.origin
        if intake.signal.kind is SignalKind.STATUS:
            text = render_status_reply({"run": run.id, "status": status_said(status)},
                                       GitHubWords()).strip()
        else:
            text = (f"run `{run.id}` has ended ({status.state.replace('_', ' ')}), so"
                    f" `/ratchet {verb_of(intake.signal.kind)}` changes nothing; a new run"
                    " starts when the issue is labeled again.")
        self._answer(intake.delivery.id, Reply(
            owner=origin.owner, repo=origin.repo, installation=origin.installation,
            clone_url=origin.clone_url, number=intake.signal.number,
            author=intake.signal.author, text=text))

    def intake(self, event: Event) -> DeliveryIntake:
        """Decide (pure) what the delivery would cause; the ledger has the last word."""
        return self._intake(event)[0]

    def _intake(self, event: Event) -> tuple[DeliveryIntake, Reply | None]:
        """``intake``, with the reply its author is owed when the delivery reaches no run."""
        data = event.data if isinstance(event.data, dict) else {}
        action = data.get("action") if isinstance(data.get("action"), str) else None
        try:
            model = parse_event(event.event, event.data)
            intent = route(event.event, model, self.config.routing)
        except ValidationError as exc:
            intent = Ignore(f"the payload lacks what Ratchet reads ({exc.error_count()} errors)")
        delivery = NewDelivery(event.delivery_id, event.event, action, _decision(intent),
                               _describe(intent))
        if isinstance(intent, StartRun):
            return DeliveryIntake(delivery, start=self._new_run(intent)), None
        if isinstance(intent, VerifyPullRequest):
            return DeliveryIntake(delivery, start=self._verification(intent)), None
        if isinstance(intent, SignalFor):
            # The answer owed when the ledger finds no run for the command (``_owed``).
            none = (reply_to(model, f"there is no Ratchet run for #{intent.number}; adding the"
                                   " trigger label to the issue starts one.")
                    if isinstance(model, IssueCommentEvent) else None)
            return DeliveryIntake(delivery, signal=intent), none
        return DeliveryIntake(delivery), intent.reply

    def _new_run(self, start: StartRun) -> NewRun:
        origin = GitHubOrigin(
            owner=start.owner, repo=start.repo, installation=start.installation,
            clone_url=start.clone_url, base_branch=start.default_branch,
            agent=AgentChoice(command=self.config.agent_command), label=start.label,
            started_by=start.author,
        )
        new = new_run(origin, repo=start.clone_url, title=start.title, body=start.body,
                      issue=start.issue,
                      event_data={"title": start.title, "issue": start.issue,
                                  "by": start.author})
        return with_first_edit(new, at=time.time())

    def _verification(self, pull: VerifyPullRequest) -> NewRun:
        """A run that verifies a pull request head: no agent, no push, no comment."""
        origin = GitHubOrigin(
            owner=pull.owner, repo=pull.repo, installation=pull.installation,
            clone_url=pull.clone_url, diff_base=pull.base_sha, source=pull.source,
            started_by=pull.author,
        )
        return new_run(origin, repo=pull.clone_url, title=pull.title,
                       workflow=PULL_REQUEST_WORKFLOW, pr=pull.number,
                       base_revision=pull.head_sha,
                       event_data={"title": pull.title, "pr": pull.number, "by": pull.author})


def answer_expired_signals(triggers: TriggerCheck, stop: threading.Event, *,
                           interval: float = EXPIRED_SIGNALS_INTERVAL) -> None:
    """Until ``stop`` is set: every ``interval`` seconds, answer the signals that waited in
    vain for a run (``serve`` runs it on a thread beside the reaper)."""
    while not stop.wait(interval):
        try:
            triggers.answer_expired()
        except Exception:  # the ledger or GitHub is down: the next look answers them
            log.exception("the signals that waited in vain were not answered; retrying")


class DeliveryWriter:
    """Records deliveries on one thread, all those waiting at once in one transaction (group
    commit): a burst costs one disk flush, not one each, and request threads never queue on
    the database's write lock. Each caller's future resolves when its batch committed (or
    with the batch's error: nothing of a failed batch was recorded)."""

    MAX_BATCH = 64

    def __init__(self, store: Store) -> None:
        self.store = store
        self._queue: queue.SimpleQueue[tuple[DeliveryIntake, Future[DeliveryOutcome]]] = (
            queue.SimpleQueue())
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def record(self, intake: DeliveryIntake) -> Future[DeliveryOutcome]:
        answer: Future[DeliveryOutcome] = Future()
        self._queue.put((intake, answer))
        with self._start:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="ratchet-deliveries",
                                                daemon=True)
                self._thread.start()
        return answer

    def _serve(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < self.MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                outcomes = self.store.accept_deliveries([intake for intake, _ in batch])
            except Exception as exc:  # every waiting request answers with it
                for _, answer in batch:
                    answer.set_exception(exc)
                continue
            for (_, answer), outcome in zip(batch, outcomes, strict=True):
                answer.set_result(outcome)


def _label_start(intake: DeliveryIntake) -> GitHubOrigin | None:
    """The origin of the run a trigger label would start (a verification is not one)."""
    start = intake.start
    origin = start.origin if start is not None else None
    if isinstance(origin, GitHubOrigin) and origin.label is not None:
        return origin
    return None


def _owed(intake: DeliveryIntake, outcome: DeliveryOutcome, reply: Reply | None
          ) -> Reply | None:
    """The reply to post for a recorded delivery: a command that reached no run (a mistyped
    verb, or a command for an issue that never had a run)."""
    if not outcome.recorded or reply is None:
        return None
    if intake.signal is None:
        return reply
    return reply if outcome.decision == "ignore" and outcome.run_id is None else None


def _asks_ended_run(intake: DeliveryIntake, outcome: DeliveryOutcome) -> bool:
    """Whether the delivery is a command in a comment the ledger found only an ended run
    for (a close or an unlabel carries no comment: it is not answered)."""
    return (outcome.recorded and outcome.decision == "ignore" and outcome.run_id is not None
            and intake.signal is not None and intake.signal.payload.comment is not None)


def _decision(intent: object) -> str:
    if isinstance(intent, StartRun | VerifyPullRequest):
        return "start"
    return "signal" if isinstance(intent, SignalFor) else "ignore"


def _describe(intent: object) -> str:
    if isinstance(intent, StartRun):
        return f"issue #{intent.issue} labeled {intent.label} by {intent.author}"
    if isinstance(intent, VerifyPullRequest):
        return f"pull request #{intent.number} at {intent.head_sha[:12]}: {intent.source}"
    if isinstance(intent, SignalFor):
        target = intent.run_id or f"#{intent.number}"
        kind = intent.kind.value if isinstance(intent.kind, SignalKind) else intent.kind
        return f"{kind} from {intent.author} for {target}"
    assert isinstance(intent, Ignore)
    return intent.reason


class _TooLarge(Exception):
    pass


async def _read(request: Request) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
