"""Run mode: a durable Ratchet run carried out across Actions jobs.

A job (``issues`` labeled, ``issue_comment`` created, ``workflow_dispatch`` with an ``issue``
input) does, in order:

1. decides from the payload alone what the event means (``github.routing.route``, the App's
   router): a run to start, a signal for a run, or nothing (a comment without a command ends
   the job here, before any git or API call);
2. fetches the issue's ledger from its ref (``ledgerref.py``) on the job's own remote
   (``GITHUB_SERVER_URL``/``GITHUB_REPOSITORY``); a pull request's comment finds its issue
   from the pull request's head branch, ``ratchet/issue-<n>``;
3. records the event in the ledger exactly as the App's webhook does
   (``WebhookReceiver``): the delivery id is the workflow run's id, the same for every attempt,
   so "Re-run failed jobs" never records a label or a command twice. A label whose sender
   lacks ``RATCHET_TRIGGER_PERMISSION`` (write by default) starts nothing and gets one reply
   (``github/triggers.py``), and the job ends without pushing the ledger;
4. refuses a run the ledger records for another repository, remote or agent command
   (``evidence.py``: the ledger is evidence, not authority), then claims the ledger: pushes
   it, compare-and-swapped. A job that loses this race (another job for the same issue wrote
   the ledger first) exits 0 with a notice;
5. drives the run (``Engine.drive``) until it waits or ends, pushing the ledger after every
   change and before the change's effects are sent, so a killed job loses at most the step in
   progress and a resumed one repeats no effect; a push that loses the race stops the job
   (exit 0 with a notice: the other job owns the run now);
6. pushes the ledger once more (the confirmations of the last effects), writes the run's
   status to the step summary, its run directory as the ``bundle`` output, and outputs.

Exit status: 0 when the run waits, is done or was cancelled (or another job owns it), 1 when
it failed or needs a human, 2 for a usage error.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gidgethub.sansio import Event
from pydantic import BaseModel, ConfigDict, ValidationError

from app.action.channels import Runner
from app.action.engine import JobGitHub, job_bot_login, job_engine
from app.action.env import ActionEnv, ActionError
from app.action.evidence import JobIdentity, delivery_id, foreign
from app.action.ledgerref import LedgerRef, LedgerRefMoved, LedgerRefUnavailable, ledger_ref
from app.action.trigger import read_payload
from app.settings import Settings
from app.webhooks import WebhookConfig, WebhookReceiver
from github.client import GitHubClient
from github.permissions import Permissions
from github.repository import RepoAPI
from github.routing import Ignore, RouteSettings, StartRun, route
from github.triggers import TriggerGate
from github.webhook_payloads import IssueCommentEvent, parse_event
from github.words import GITHUB_WORDS
from runner.errors import StaleWrite
from runner.ledger import open_store
from runner.ledger.records import Run, SignalFor
from runner.ledger.store import Store
from runner.origin import issue_of_branch
from runner.render import say_next_action
from runner.rundir import export_run
from runner.status import read_status
from runner.workflow import State, is_end, is_stopped

log = logging.getLogger(__name__)

RUN_EVENTS = ("issues", "issue_comment", "workflow_dispatch")
CONCLUSIONS = {State.DONE: "success", State.AWAITING_APPROVAL: "action_required",
               State.FAILED: "failure", State.NEEDS_HUMAN: "failure",
               State.CANCELLED: "cancelled"}
EXIT_OK, EXIT_STOPPED, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class JobPlan:
    """What this job's event asks for: the ledger of ``issue`` (or of the issue behind pull
    request ``pull``), and whether it carries a delivery to record (else: resume the run)."""

    issue: int | None
    pull: int | None = None
    record: bool = True
    why: str = ""
    signal: SignalFor | None = None  # what the event asks of a run, if it is a command


@dataclass(frozen=True)
class Skip:
    """Nothing for Ratchet in this event; ``reason`` says why (shown as a notice)."""

    reason: str


class _Dispatch(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    inputs: dict[str, Any] = {}


def plan_job(event_name: str, payload: dict[str, Any], routing: RouteSettings) -> JobPlan | Skip:
    """Decide from the event alone (pure); ``ActionError`` for an event run mode ignores."""
    if event_name == "workflow_dispatch":
        issue = _Dispatch.model_validate(payload).inputs.get("issue")
        if issue is None or not str(issue).strip().isdigit():
            raise ActionError("workflow_dispatch in run mode needs an `issue` input (the issue"
                              " number whose run to resume); add it to the workflow's inputs")
        return JobPlan(int(str(issue).strip()), record=False, why="resume requested")
    if event_name not in RUN_EVENTS:
        raise ActionError(f"run mode runs on {', '.join(RUN_EVENTS)}; this job's event is"
                          f" {event_name!r}: change the workflow's `on:`")
    try:
        event = parse_event(event_name, payload)
    except ValidationError as exc:
        return Skip(f"the {event_name} payload lacks what Ratchet reads"
                    f" ({exc.error_count()} problems)")
    intent = route(event_name, event, routing)
    if isinstance(intent, Ignore):
        return Skip(intent.reason)
    if isinstance(intent, StartRun):
        return JobPlan(intent.issue, why=f"issue #{intent.issue} labeled {intent.label}")
    assert isinstance(intent, SignalFor)
    kind = intent.kind.value
    if isinstance(event, IssueCommentEvent) and event.issue.is_pull_request:
        return JobPlan(None, pull=intent.number, why=f"{kind} from {intent.author}",
                       signal=intent)
    return JobPlan(intent.number, why=f"{kind} from {intent.author}", signal=intent)


def run_job(env: ActionEnv, settings: Settings, runner: Runner, *, secrets: list[str]) -> int:
    """Run mode (see the module docstring); returns the exit status."""
    for name in ("run-id", "state", "conclusion", "plan-hash", "bundle"):
        runner.set_output(name, "")
    if env.inputs.config:
        runner.annotate("warning", "the `config` input applies to verify mode; a run reads"
                        " .github/ratchet.yml at its base", title="Ratchet")
    payload = read_payload(env.event_path)
    routing = RouteSettings(app_id=None, bot_login=job_bot_login(settings),
                            trigger_labels=env.inputs.trigger_labels,
                            allowed_bots=settings.allowed_bot_logins)
    plan = plan_job(env.event_name, payload, routing)
    if isinstance(plan, Skip):
        runner.annotate("notice", f"nothing to do: {plan.reason}", title="Ratchet")
        return EXIT_OK
    token = env.inputs.token
    if not token:
        raise ActionError("run mode needs the `github-token` input (the default is the job's"
                          " GITHUB_TOKEN): it comments, pushes and opens the pull request")
    github = JobGitHub(env.owner, env.repo, env.clone_url, token, env.api_url,
                       env.graphql_url, env.run_url)
    client = github.client(settings)
    issue = plan.issue if plan.issue is not None else _issue_of_pull(client, github, plan.pull)
    if issue is None:
        runner.annotate("notice", f"nothing to do: pull request #{plan.pull} is not one of"
                        " Ratchet's (its head is not a ratchet/issue-<n> branch)",
                        title="Ratchet")
        return EXIT_OK
    job = _Job(env, settings.model_copy(update=_job_settings(env, issue)), runner, github,
               client, issue, secrets, routing)
    return job.carry_out(payload, plan)


def _issue_of_pull(client: GitHubClient, github: JobGitHub, pull: int | None) -> int | None:
    assert pull is not None
    found = RepoAPI(client, github.target).get("/repos/{owner}/{repo}/pulls/{pull_number}",
                                               pull_number=pull)
    return issue_of_branch(str((found.get("head") or {}).get("ref") or ""))


def _job_settings(env: ActionEnv, issue: int) -> dict[str, Any]:
    home = env.work_dir / "home"
    return {"home": home, "store_url": str(home / "ledger" / f"issue-{issue}.sqlite3")}


class _Job:
    """One run-mode job on one issue's ledger."""

    def __init__(self, env: ActionEnv, settings: Settings, runner: Runner, github: JobGitHub,
                 client: GitHubClient, issue: int, secrets: list[str],
                 routing: RouteSettings) -> None:
        self.env = env
        self.routing = routing
        self.settings = settings
        self.runner = runner
        self.github = github
        self.client = client
        self.issue = issue
        self.secrets = secrets
        self.db = Path(settings.ledger_url)
        # Under Ratchet's home, which the sandbox hides from agents and checks.
        self.ledger = LedgerRef(github.clone_url, ledger_ref(issue),
                                settings.home / "ledger.git", github.access())
        self.identity = JobIdentity(
            env.repository, github.clone_url,
            env.inputs.agent_command or settings.agent_command, self.ledger.ref)

    def carry_out(self, payload: dict[str, Any], plan: JobPlan) -> int:
        self.ledger.fetch(self.db)  # LedgerRefUnavailable: the job fails, a re-run retries
        store = open_store(str(self.db))
        try:
            return self._carry_out(store, payload, plan)
        except LedgerRefMoved as exc:
            self.runner.annotate("notice", f"another job owns this run now; this one stopped"
                                 f" without sending anything more ({exc})", title="Ratchet")
            return EXIT_OK
        except LedgerRefUnavailable as exc:
            self.runner.annotate("error", f"the ledger could not be saved: {exc}. Re-run this"
                                 " job: the run resumes from the last saved step",
                                 title="Ratchet")
            return EXIT_STOPPED
        finally:
            store.close()

    def _carry_out(self, store: Store, payload: dict[str, Any], plan: JobPlan) -> int:
        run_id, reason = self._record(store, payload) if plan.record else (
            self._active_run(store), "no active run for this issue")
        if run_id is None:
            self.runner.annotate("notice", f"nothing to do for #{self.issue}: {reason}",
                                 title="Ratchet")
            return EXIT_OK
        refused = foreign(store.get_run(run_id), store.effects(run_id), self.identity)
        if refused is not None:
            self.runner.annotate("error", refused, title="Ratchet")
            return EXIT_STOPPED
        try:
            self.ledger.push(self.db, message=f"{run_id}: taken up by workflow run"
                             f" {self.env.run_id} (attempt {self.env.run_attempt}): {plan.why}")
        except LedgerRefMoved:
            self.runner.annotate("notice", f"another job for #{self.issue} wrote the run's"
                                 " ledger first; this job leaves the run to it", title="Ratchet")
            return EXIT_OK
        log.info("run %r: claimed the ledger of issue #%d", run_id, self.issue)

        def on_change(old: Run, new: Run) -> None:
            self.ledger.push(self.db, message=f"{new.id}: {old.state.value} -> "
                             f"{new.state.value} ({new.step})")

        engine = job_engine(store, self.settings, self.github, self.client,
                            secrets=self.secrets, on_change=on_change,
                            delivery=delivery_id(self.env.run_id),
                            asked=plan.signal if plan.record else None)
        try:
            run = engine.drive(run_id)
        except StaleWrite as exc:
            self.runner.annotate("notice", f"run {run_id} stopped: {exc}", title="Ratchet")
            run = store.get_run(run_id)
        self.ledger.push(self.db, message=f"{run.id}: {run.state.value} at the end of"
                         f" workflow run {self.env.run_id}")
        self._report(store, run)
        return EXIT_STOPPED if is_stopped(run.state) else EXIT_OK

    def _record(self, store: Store, payload: dict[str, Any]) -> tuple[str | None, str]:
        """Record the event as the App's webhook would; the run it starts or signals."""
        # The payload's authenticity is the runner's word: no signature to check.
        # The label's sender is asked of GitHub, as the App's webhook asks (github/triggers.py).
        triggers = TriggerGate(self.client, Permissions(self.client), store,
                               role=self.settings.trigger_permission,
                               allowed_bots=self.settings.allowed_bot_logins,
                               per_installation=False)
        config = WebhookConfig(secret=None, insecure=True, routing=self.routing,
                               agent_command=self.identity.agent_command, triggers=triggers)
        receiver = WebhookReceiver(store, config, wake=lambda run_id: None)
        delivery = delivery_id(self.env.run_id)
        outcome = receiver.record(Event(payload, event=self.env.event_name,
                                         delivery_id=delivery))
        log.info("delivery %r: %s: %s run=%r", delivery, outcome.decision, outcome.reason,
                 outcome.run_id)
        if outcome.decision == "ignore":
            return None, outcome.reason
        return outcome.run_id, outcome.reason

    def _active_run(self, store: Store) -> str | None:
        runs = [r for r in store.list_runs(limit=1000)
                if r.issue == self.issue and not is_end(r.state)]
        return runs[0].id if runs else None

    def _report(self, store: Store, run: Run) -> None:
        status = read_status(store, run.id, now=time.time())
        folder = export_run(store, run.id, self.env.work_dir / "bundle")
        self.runner.set_output("run-id", run.id)
        self.runner.set_output("state", run.state.value)
        self.runner.set_output("conclusion", CONCLUSIONS.get(run.state, "in_progress"))
        self.runner.set_output("plan-hash", _plan_hash(store, run.id))
        self.runner.set_output("bundle", str(folder))
        next_action = say_next_action(status.next_action.to_dict(), run.id, GITHUB_WORDS)
        lines = [
            f"## Ratchet run `{run.id}`: {run.state.value}",
            "",
            f"Issue #{self.issue}: {run.title}",
            "",
            f"- step: `{run.step}` (attempt {run.attempt})",
            f"- completed: {', '.join(f'`{s}`' for s in status.completed_steps) or 'nothing'}",
            f"- next: {next_action}",
        ]
        if run.reason:
            lines.append(f"- reason: {run.reason}")
        if status.spec_sha256 and run.state is State.AWAITING_APPROVAL:
            command = GITHUB_WORDS.approve(run.id, status.spec_sha256[:12])
            lines.append(f"- approve with a comment: `{command}`")
        lines += ["", f"The ledger is kept in `{self.ledger.ref}`: this job pushed it"
                  f" {self.ledger.pushes} times ({self.ledger.pushed_bytes} bytes in all)."]
        self.runner.summary("\n".join(lines) + "\n")
        if is_stopped(run.state):
            self.runner.annotate("error", f"run {run.id} stopped at {run.step}: {run.reason};"
                                 f" next: {next_action}", title="Ratchet")


def _plan_hash(store: Store, run_id: str) -> str:
    """The last verification's plan hash, if the run verified anything yet."""
    for checkpoint in reversed(store.checkpoints(run_id)):
        plan = checkpoint.result.get("plan")
        if isinstance(plan, str):
            return plan
    return ""

