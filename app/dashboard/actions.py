"""Actions from a run's page: approve the spec or a verified diff, request changes, retry,
verify again, cancel.

Each is recorded as a signal in the run's inbox, as a command in a comment would be, and the
run is woken; the worker that takes it up answers the signal (and may still refuse it, saying
why on the page). The form must carry the session's CSRF secret and come from this site (the
guard checks the latter); the viewer needs write access to the run's repository. Signals from
someone signed in with GitHub have origin ``github`` and their login as author, so the
worker's authorizer asks GitHub again; after the one-time link they are the local operator's.
"""

from __future__ import annotations

import asyncio
import logging
import re

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from app.dashboard.access import Permission, Viewer, ViewerKind
from app.dashboard.context import Context, PageError, page
from app.dashboard.guard import viewer_of
from app.dashboard.sessions import CSRF_FIELD, csrf_valid
from runner.intake import send_signal
from runner.ledger.records import NewSignal
from runner.names import GITHUB_ORIGIN, LOCAL_ORIGIN, VERBS, SignalKind
from runner.signal_payloads import Approve, ApproveDiff, RequestChanges, SignalPayload

log = logging.getLogger(__name__)

# The kinds a run's page offers, each as a form posted to ``/runs/<run>/<verb>`` (VERBS).
OFFERED = frozenset({SignalKind.APPROVE, SignalKind.APPROVE_DIFF, SignalKind.REQUEST_CHANGES,
                     SignalKind.RETRY, SignalKind.VERIFY_AGAIN, SignalKind.CANCEL})
MAX_MESSAGE = 20_000  # characters of a change request (a comment allows 65,536)
MAX_FORM_BYTES = 64 * 1024
_NONCE = re.compile(r"[0-9a-f]{16,64}")
_HASH = re.compile(r"[0-9a-f]{6,64}")
_DIFF = re.compile(r"[0-9a-f]{64}")


class Actions:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def routes(self) -> list[Route]:
        return [Route("/runs/{run_id}/{action}", page(self.ctx, self.act), methods=["POST"],
                      name="dashboard_action")]

    async def act(self, request: Request) -> Response:
        kind = VERBS.get(request.path_params["action"])
        if kind is None or kind not in OFFERED:
            raise PageError(404, "no such action; a run can be approved, sent back, retried,"
                                 " verified again or cancelled")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
            raise PageError(413, "that form is too large")
        form = await request.form()
        if not csrf_valid(request, form.get(CSRF_FIELD)):
            raise PageError(403, "this form is stale or was not sent from this dashboard;"
                                 " reload the run's page and try again")
        viewer = viewer_of(request)
        run, permission = await self.ctx.visible_run(request, request.path_params["run_id"])
        if permission < Permission.WRITE:
            raise PageError(403, f"acting on run {run.id} needs write access to its"
                                 " repository")
        author, origin = _signer(viewer, operator=self.ctx.config.operator)
        signal = NewSignal(id=f"web:{_nonce(form)}", run_id=run.id, kind=kind, author=author,
                           origin=origin, payload=_payload(kind, form))
        recorded = await asyncio.to_thread(send_signal, self.ctx.store, signal)
        log.info("run %r: %s from %r recorded as signal %r", run.id, kind.value, author,
                 recorded.id)
        try:
            await asyncio.to_thread(self.ctx.wake, run.id)
        except Exception as exc:  # the broker is down: the reaper wakes runs with signals
            log.warning("run %r: could not wake it after signal %r: %s", run.id, recorded.id,
                        exc)
        return RedirectResponse(f"/runs/{run.id}#signals", status_code=303)


def _signer(viewer: Viewer, *, operator: str) -> tuple[str, str]:
    if viewer.kind is ViewerKind.GITHUB:
        return viewer.login, GITHUB_ORIGIN
    return operator, LOCAL_ORIGIN


def _nonce(form: FormData) -> str:
    nonce = str(form.get("nonce") or "")
    if not _NONCE.fullmatch(nonce):
        raise PageError(400, "the form lacks its one-time id; reload the run's page")
    return nonce


def _payload(kind: SignalKind, form: FormData) -> SignalPayload:
    if kind is SignalKind.APPROVE:
        sha = str(form.get("sha256") or "").strip().lower()
        if not _HASH.fullmatch(sha):
            raise PageError(400, "an approval names the spec it approves: its sha256")
        return Approve(hash=sha)
    if kind is SignalKind.APPROVE_DIFF:
        sha = str(form.get("sha256") or "").strip().lower()
        if not _DIFF.fullmatch(sha):
            raise PageError(400, "an approval names the diff it approves: its sha256")
        return ApproveDiff(hash=sha)
    if kind is SignalKind.REQUEST_CHANGES:
        message = str(form.get("message") or "").strip()
        if not message:
            raise PageError(400, "say what to change: the feedback is empty")
        if len(message) > MAX_MESSAGE:
            raise PageError(400, f"the feedback is longer than {MAX_MESSAGE} characters")
        return RequestChanges(message=message)
    return SignalPayload()
