"""The ``ratchet`` command line: one parser factory, ``main(argv) -> int``, named exit codes."""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.settings import Settings, SettingsError, load_settings
from app.words import CLI_WORDS, status_text
from github.manifest import app_manifest
from runner.agents.presets import PRESETS, preset
from runner.budget import BadRaise, parse_raise
from runner.errors import LedgerUnavailable, RatchetError, StaleWrite, UnknownRun
from runner.ledger import Store, open_store
from runner.ledger.records import Run, Signal
from runner.names import EventType, SignalKind, SignalStatus, verb_of
from runner.neutralise import escape_controls
from runner.render import render_reply, say_next_action
from runner.rundir import export_run, keep_live
from runner.signal_payloads import (
    Approve,
    ApproveDiff,
    RaiseBudget,
    RequestChanges,
    Retry,
    SignalPayload,
)
from runner.signals import Refusal
from runner.status import read_status
from runner.views import RunStatus
from runner.workflow import is_end, is_stopped

if TYPE_CHECKING:
    from runner.engine import Engine

EXIT_OK = 0  # done, or waiting for a signal
EXIT_RUN_STOPPED = 1  # the run failed or needs a human
EXIT_USAGE = 2  # bad arguments, unknown run, a refused signal
EXIT_LEASE_LOST = 3  # another worker took the run over, or it was cancelled; this one stopped
EXIT_UNAVAILABLE = 4  # the ledger could not be reached
EXIT_CHECK_FAILED = 1  # ratchet doctor: a check failed (a warning does not)

EXAMPLES = """\
examples:
  ratchet run --repo . --title "Add --json to export" --agent-command 'claude -p {prompt}'
  ratchet run --repo . --title "Add --json to export" --agent claude
  ratchet status r-20261130-1a2b3c4d
  ratchet approve-spec r-20261130-1a2b3c4d --hash 3f2a9c0d1e7b
  ratchet request-changes r-20261130-1a2b3c4d --message "Cover the empty input case"
  ratchet resume r-20261130-1a2b3c4d
  ratchet retry r-20261130-1a2b3c4d
  ratchet budget r-20261130-1a2b3c4d --add 1
  ratchet cancel r-20261130-1a2b3c4d --reason "superseded by #42"
  ratchet export r-20261130-1a2b3c4d ./runs
  ratchet verify --base main --json
  ratchet agent try --agent gemini
  ratchet doctor --json
  ratchet github-app create --org acme
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ratchet", description="Durable coding-agent runs: ledger, leases, checkpoints.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="create a run for a local repository and execute it")
    run.add_argument("--repo", type=Path, required=True, help="path of a local git repository")
    run.add_argument("--title", required=True, help="the task, like an issue title")
    body = run.add_mutually_exclusive_group()
    body.add_argument("--body", default="", help="the task's description")
    body.add_argument("--body-file", type=Path, help="read the description from a file")
    agent = run.add_mutually_exclusive_group()
    agent.add_argument("--agent-command", help="agent command template (RATCHET_AGENT_COMMAND)")
    agent.add_argument("--agent", choices=sorted(PRESETS),
                       help="a preset for a real agent CLI (RATCHET_AGENT)")
    run.add_argument("--json", action="store_true", help="end with a JSON line")
    run.add_argument("--detach", action="store_true",
                     help="enqueue for a worker instead of executing here")
    run.set_defaults(handler=cmd_run)

    status = sub.add_parser("status", help="what was done, the state, effects, next action")
    status.add_argument("run_id", metavar="RUN")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=cmd_status)

    resume = sub.add_parser("resume", help="reconcile and continue a run in the foreground")
    resume.add_argument("run_id", metavar="RUN")
    resume.add_argument("--json", action="store_true")
    resume.set_defaults(handler=cmd_resume)

    approve = _signal_parser(sub, SignalKind.APPROVE, what="approval",
                             help="approve the current spec and continue")
    approve.add_argument("--hash", dest="hash_prefix", required=True, metavar="SHA256",
                         help="the spec's sha256 or its first 6+ characters (`ratchet status`"
                         " shows it): an approval names what it approves")

    approve_diff = _signal_parser(sub, SignalKind.APPROVE_DIFF, what="approval",
                                  help="approve the verified diff a protected-path change (or"
                                  " publish.review_before_push) waits on, and publish it")
    approve_diff.add_argument("diff_hash", metavar="HASH",
                              help="the diff's sha256 or its first 12+ characters (`ratchet"
                              " status` shows it): an approval holds for that exact diff")

    feedback = _signal_parser(sub, SignalKind.REQUEST_CHANGES, what="request",
                              help="send the spec back with feedback")
    feedback.add_argument("--message", required=True)

    retry = _signal_parser(sub, SignalKind.RETRY, what="retry",
                           help="take a failed or stopped run's step up again")
    retry_agent = retry.add_mutually_exclusive_group()
    retry_agent.add_argument("--agent-command",
                             help="take the step up with this agent command template instead"
                                  " (a run whose agent could not start)")
    retry_agent.add_argument("--agent", choices=sorted(PRESETS),
                             help="take the step up with this preset's agent instead")

    _signal_parser(
        sub, SignalKind.VERIFY_AGAIN, what="request",
        help="verify a stopped run's checkpointed tree again, without an agent",
        description="Run the verification plan again on the tree the run checkpointed last"
                    " (after a check's outside cause is fixed, or when a repair or publish"
                    " stopped); the run goes on from the result as after any verification.")

    budget = _signal_parser(
        sub, SignalKind.BUDGET, what="raise",
        help="raise a run's budget; a run its budget stopped continues",
        epilog="AMOUNT: 1 or $1 (dollars; a bare number raises the limit the run reached),"
               " 30m (agent minutes), 2h (run hours), 3runs (agent runs)")
    budget.add_argument("--add", required=True, metavar="AMOUNT", help="what to add")

    cancel = sub.add_parser("cancel", help="end a run now, whoever is working on it")
    cancel.add_argument("run_id", metavar="RUN")
    cancel.add_argument("--reason", default="cancelled by a user")
    cancel.add_argument("--json", action="store_true")
    cancel.set_defaults(handler=cmd_cancel)

    export = sub.add_parser("export", help="write the run directory to DIR/<run-id>/")
    export.add_argument("run_id", metavar="RUN")
    export.add_argument("dest", metavar="DIR", type=Path)
    export.set_defaults(handler=cmd_export)

    runs = sub.add_parser("runs", help="list runs, newest first")
    runs.add_argument("--json", action="store_true")
    runs.add_argument("--limit", type=int, default=50)
    runs.set_defaults(handler=cmd_runs)

    from app.verify_cli import VERIFY_HELP, configure_parser, run_verify

    verify = sub.add_parser("verify", help=VERIFY_HELP)
    configure_parser(verify)
    verify.set_defaults(
        handler=lambda args, settings: run_verify(args, settings.sandbox_policy(),
                                                  settings.network_settings(),
                                                  settings.check_env_names),
        needs_ledger=False,
    )

    from app.action.cli import configure_parser as configure_action
    from app.action.cli import run_action

    action = sub.add_parser("action", help="inside a GitHub Actions job (action.yml runs it)")
    configure_action(action)
    action.set_defaults(handler=run_action)

    worker = sub.add_parser("worker", help="a Dramatiq worker on RATCHET_BROKER_URL")
    worker.add_argument("--processes", type=int, default=1)
    worker.add_argument("--threads", type=int, default=4)
    worker.set_defaults(handler=cmd_worker)

    app_cmd = sub.add_parser("github-app", help="register Ratchet as a GitHub App")
    app_sub = app_cmd.add_subparsers(dest="github_command", required=True, metavar="ACTION")
    manifest = app_sub.add_parser(
        "manifest", help="print the App manifest for GitHub's manifest flow",
        epilog="POST it as the `manifest` field of a form to"
               " https://github.com/settings/apps/new (README: 'Run it as a GitHub App')")
    manifest.add_argument("--url", help="the service's public URL (RATCHET_PUBLIC_URL)")
    manifest.add_argument("--name", default="Ratchet", help="the App's name on GitHub")
    manifest.set_defaults(handler=cmd_github_app_manifest)
    create = app_sub.add_parser(
        "create", help="register the App on GitHub from a page on 127.0.0.1 and save its"
                       " credentials for `ratchet serve`",
        description="Serve a page on 127.0.0.1 that posts the App's manifest (webhook and"
                    " sign-in under RATCHET_PUBLIC_URL, the least permissions) to GitHub; once"
                    " you click 'Create GitHub App' there, GitHub sends the browser back here,"
                    " and the App's id, slug, private key, webhook secret and OAuth client are"
                    " written to the credentials file (mode 0600) that serve, worker and"
                    " doctor read. Then it prints the App's install link.",
        epilog="example: RATCHET_PUBLIC_URL=https://ratchet.example.com ratchet github-app"
               " create --org acme")
    create.add_argument("--org", help="register the App for this organization (default: your"
                                      " own account)")
    create.add_argument("--name", default="Ratchet",
                        help="the App's name on GitHub (unique across GitHub)")
    create.add_argument("--port", type=int, default=0,
                        help="the page's port on 127.0.0.1 (default: a free one)")
    create.add_argument("--credentials", type=Path, metavar="PATH",
                        help="where to write the credentials (default: RATCHET_GITHUB_CREDENTIALS"
                             " or ~/.config/ratchet/github-app.json)")
    create.add_argument("--force", action="store_true",
                        help="replace an existing credentials file")
    create.set_defaults(handler=cmd_github_app_create)

    agent_cmd = sub.add_parser("agent", help="check an agent preset's setup")
    agent_sub = agent_cmd.add_subparsers(dest="agent_command", required=True, metavar="ACTION")
    trial = agent_sub.add_parser(
        "try", help="report what the preset still needs, then run its CLI once against a"
                    " trial model on 127.0.0.1 (sandbox and proxy as in a run; nothing billed)")
    trial.add_argument("--agent", choices=sorted(PRESETS),
                       help="the preset (default: RATCHET_AGENT)")
    trial.set_defaults(handler=cmd_agent_try)

    doctor = sub.add_parser(
        "doctor", help="check this host's setup, one line per check (ok, warn, FAIL or skip)"
                       " with what to do: agent CLI, credentials, sandbox, ledger, broker,"
                       " GitHub App, public URL; exit 1 when a check fails")
    doctor.add_argument("--json", action="store_true", help="one JSON object instead")
    doctor.set_defaults(handler=cmd_doctor)

    serve = sub.add_parser("serve", help="the HTTP service (webhooks, API) under uvicorn")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.set_defaults(handler=cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr,
    )
    try:
        settings = load_settings()
        return int(args.handler(args, settings))
    except SettingsError as exc:
        return _error(str(exc), EXIT_USAGE)
    except UnknownRun as exc:
        return _error(str(exc), EXIT_USAGE)
    except StaleWrite as exc:
        return _error(f"stopped: {exc}", EXIT_LEASE_LOST)
    except LedgerUnavailable as exc:
        return _error(f"ledger unavailable: {exc} (the ledger URL is RATCHET_STORE_URL)",
                      EXIT_UNAVAILABLE)
    except RatchetError as exc:
        return _error(str(exc), EXIT_USAGE)


# --- commands ------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    body = args.body_file.read_text() if args.body_file else args.body
    if not (args.repo / ".git").exists():
        return _error(f"--repo {args.repo}: not a git repository (no .git there)", EXIT_USAGE)
    if not args.detach:
        settings.sandbox_policy().check()  # before a run exists that could not take a step
    store = _store(settings)
    engine = _engine(store, settings, json_output=args.json)
    run = engine.create_local_run(args.repo, title=args.title, body=body,
                                  agent_command=args.agent_command, agent=args.agent)
    _announce(f"{run.id}: created (base {run.base_revision})", args.json)
    _project(store, settings, run)
    if args.detach:
        _announce(_enqueue(settings, store, run.id), args.json)
        return _finish(store, settings, run, args.json, announce=False)
    return _finish(store, settings, engine.drive(run.id), args.json)


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    store = _store(settings)
    status = _status(store, args.run_id)
    print(json.dumps(_status_json(status), sort_keys=True) if args.json
          else status_text(status))
    return EXIT_OK


def cmd_resume(args: argparse.Namespace, settings: Settings) -> int:
    store = _store(settings)
    moves = _Moves()
    engine = _engine(store, settings, json_output=args.json, moves=moves)
    before = store.get_run(args.run_id)
    # An ended run may still have effects to send; driving it sends them and returns.
    run = _drive(engine, before, moves, args.json)
    if is_end(before.state):
        _announce(f"{run.id}: had already ended ({run.state.value}"
                  + (f": {run.reason}" if run.reason else "") + "); resume changed nothing",
                  args.json)
        return _finish(store, settings, run, args.json, announce=False)
    return _finish(store, settings, run, args.json)


def cmd_signal(args: argparse.Namespace, settings: Settings) -> int:
    """approve-spec, approve-diff, request-changes, retry, verify-again, budget: ``args.kind``'s
    signal."""
    kind: SignalKind = args.kind
    payload: SignalPayload = SignalPayload()
    if kind is SignalKind.APPROVE:
        payload = Approve(hash=args.hash_prefix)
    elif kind is SignalKind.APPROVE_DIFF:
        payload = ApproveDiff(hash=args.diff_hash)
    elif kind is SignalKind.REQUEST_CHANGES:
        payload = RequestChanges(message=args.message)
    elif kind is SignalKind.BUDGET:
        try:
            parse_raise(args.add)  # a usage error here, not a refusal from the worker
        except BadRaise as exc:
            return _error(f"--add {args.add}: {exc}", EXIT_USAGE)
        payload = RaiseBudget(amount=args.add)
    elif kind is SignalKind.RETRY and (args.agent_command or args.agent):
        # Checked here as `run` checks it: a template that parses, a preset installed.
        from runner.intake import check_agent

        agent = check_agent(args.agent_command, args.agent,
                            path=settings.engine_settings().environ.get("PATH"))
        payload = Retry(agent_command=agent.command, agent=agent.preset)
    return _signal(args, settings, kind, payload)


def cmd_cancel(args: argparse.Namespace, settings: Settings) -> int:
    store = _store(settings)
    before = store.get_run(args.run_id)
    if is_end(before.state):
        return _error(_ended(before, "cancel"), EXIT_USAGE)
    engine = _engine(store, settings, json_output=args.json)
    run = engine.cancel(args.run_id, reason=args.reason, by=_who())
    _announce(f"{run.id}: cancelled ({args.reason})", args.json)
    # The cancellation's own effects (the tracking comment's last edit) are sent here, as
    # resume sends an ended run's: none is left for a worker that may never come.
    return _finish(store, settings, engine.drive(run.id), args.json, announce=False)


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    if args.dest.exists() and not args.dest.is_dir():
        return _error(f"{args.dest} is a file; export writes DIR/<run-id>/: name a folder",
                      EXIT_USAGE)
    try:
        folder = export_run(_store(settings), args.run_id, args.dest)
    except OSError as exc:
        return _error(f"cannot write the run directory under {args.dest}: {exc}", EXIT_USAGE)
    print(folder)
    return EXIT_OK


def cmd_runs(args: argparse.Namespace, settings: Settings) -> int:
    runs = _store(settings).list_runs(limit=args.limit)
    if args.json:
        print(json.dumps([_run_summary(r) for r in runs], sort_keys=True))
        return EXIT_OK
    for run in runs:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.created_at))
        # A title is anyone's text: its controls are shown, never sent to the terminal.
        print(f"{run.id}  {run.state.value:<18} {run.step:<22} {created}"
              f"  {escape_controls(run.title)}")
    return EXIT_OK


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from app.worker import run_worker

    settings.sandbox_policy().check()  # a worker that cannot sandbox would fail every run
    return run_worker(settings, processes=args.processes, threads=args.threads)


def cmd_github_app_manifest(args: argparse.Namespace, settings: Settings) -> int:
    url = args.url or settings.public_url
    if not url:
        return _error("give the service's public URL: --url https://ratchet.example.com (or"
                      " RATCHET_PUBLIC_URL)", EXIT_USAGE)
    try:
        print(json.dumps(app_manifest(url, name=args.name), indent=2, sort_keys=True))
    except ValueError as exc:
        return _error(str(exc), EXIT_USAGE)
    return EXIT_OK


def cmd_github_app_create(args: argparse.Namespace, settings: Settings) -> int:
    from app.credentials_file import CredentialsFileError, write_credentials
    from app.dashboard.config import web_url_for
    from app.registration import (
        CreatedApp,
        Registration,
        RegistrationFailed,
        local_server,
        local_url,
        serve_registration,
    )

    if not settings.public_url:
        return _error("set RATCHET_PUBLIC_URL to where GitHub will reach this service (e.g."
                      " https://ratchet.example.com, or a tunnel's URL): the App's webhook and"
                      " sign-in callback are registered under it", EXIT_USAGE)
    path = (args.credentials.expanduser().absolute() if args.credentials
            else settings.credentials_path)
    if path.exists() and not args.force:
        return _error(f"{path} already holds an App's credentials: pass --force to replace"
                      " them, or --credentials PATH to write another file", EXIT_USAGE)
    api_url = settings.github_api_url.rstrip("/")
    web_url = (settings.github_web_url or web_url_for(api_url)).rstrip("/")
    try:
        server = local_server(args.port)
    except OSError as exc:
        return _error(f"cannot serve the page on 127.0.0.1:{args.port} ({exc.strerror or exc}):"
                      " choose another --port", EXIT_USAGE)
    try:
        registration = Registration.start(api_url=api_url, web_url=web_url,
                                          public_url=settings.public_url,
                                          local_url=local_url(server), name=args.name,
                                          org=args.org)
    except ValueError as exc:
        server.server_close()
        return _error(f"RATCHET_PUBLIC_URL: {exc}", EXIT_USAGE)

    def keep(app: CreatedApp) -> None:
        credentials = app.credentials(api_url=api_url, web_url=web_url,
                                      public_url=registration.public_url)
        try:
            write_credentials(path, credentials, overwrite=args.force)
        except CredentialsFileError as exc:
            raise RegistrationFailed(f"App {app.slug!r} was created but its credentials were"
                                     f" not saved: {exc}; then delete the App on GitHub"
                                     f" ({app.html_url}) and run this again") from None

    owner = f"organization {args.org}" if args.org else "your account"
    print(f"Open {local_url(server)}/ in a browser signed in to GitHub ({web_url}) and press"
          f" 'Create the App on GitHub' to register it for {owner}; waiting (Ctrl-C stops).",
          flush=True)
    try:
        outcome = serve_registration(registration, server, keep)
    except KeyboardInterrupt:
        return _error("stopped: no App was registered from this page", EXIT_USAGE)
    if outcome.app is None:
        return _error(outcome.failure or "no App was registered", EXIT_RUN_STOPPED)
    app = outcome.app
    print(f"App {app.slug!r} (id {app.id}) is registered; its id, key, webhook secret and OAuth"
          f" client are in {path} (mode 0600), which serve, worker and doctor read.")
    print(f"Install it on the repositories it may work on: {app.install_url}")
    print("Then check the setup with `ratchet doctor` and start `ratchet serve`.")
    return EXIT_OK


def cmd_agent_try(args: argparse.Namespace, settings: Settings) -> int:
    from app.agent_try import run_trial, setup_findings
    from app.doctor.findings import Check, all_hold, skip

    name = args.agent or settings.agent
    if not name:
        return _error("name a preset: --agent " + "|".join(sorted(PRESETS))
                      + " (or set RATCHET_AGENT)", EXIT_USAGE)
    chosen = preset(name)
    engine = settings.engine_settings()
    findings = setup_findings(chosen, engine)
    for finding in findings:
        print(finding.line(), flush=True)
    if all_hold(findings):
        verdict = run_trial(chosen, engine)
        print(verdict.line())
        findings.append(verdict)
    else:
        print(skip(Check.TRIAL, "fix what failed first").line())
    return EXIT_OK if all_hold(findings) else EXIT_USAGE


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from app.doctor.checks import all_findings
    from app.doctor.findings import all_hold

    findings = []
    for finding in all_findings(settings):
        findings.append(finding)
        if not args.json:
            print(finding.line(), flush=True)
    if args.json:
        print(json.dumps({"ok": all_hold(findings),
                          "checks": [finding.to_dict() for finding in findings]}))
    return EXIT_OK if all_hold(findings) else EXIT_CHECK_FAILED


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from app.service import serve

    settings.sandbox_policy().check()  # it runs an in-process worker
    serve(settings, host=args.host, port=args.port)
    return EXIT_OK


# --- helpers -------------------------------------------------------------------------------


def _signal_parser(sub: Any, kind: SignalKind, *, what: str,
                   **options: str) -> argparse.ArgumentParser:
    """The command that puts a ``kind`` signal in a run's inbox (named by its verb): RUN,
    ``--detach``, ``--json``."""
    parser: argparse.ArgumentParser = sub.add_parser(verb_of(kind, cli=True), **options)
    parser.add_argument("run_id", metavar="RUN")
    parser.add_argument("--detach", action="store_true",
                        help=f"record the {what} and enqueue the run for a worker")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=cmd_signal, kind=kind)
    return parser


def _signal(args: argparse.Namespace, settings: Settings, kind: SignalKind,
            payload: SignalPayload) -> int:
    """Put the local user's signal in the run's inbox; unless detached, answer it here and
    continue the run. A refused signal is a usage error saying why (exit 2)."""
    store = _store(settings)
    moves = _Moves()
    engine = _engine(store, settings, json_output=args.json, moves=moves)
    before = store.get_run(args.run_id)
    if is_end(before.state):
        return _error(_ended(before, verb_of(kind, cli=True)), EXIT_USAGE)
    signal = engine.signal(args.run_id, kind, author=_who(), payload=payload)
    if args.detach:
        _announce(_enqueue(settings, store, args.run_id), args.json)
        # Recorded and queued is this command's success, whatever the run still says until
        # its worker answers the signal (a failed run being retried is still failed here).
        _finish(store, settings, store.get_run(args.run_id), args.json, announce=False)
        return EXIT_OK
    run = _drive(engine, before, moves, args.json)
    answered = store.get_signal(signal.id)
    stopped_now = is_stopped(run.state) and not is_stopped(before.state)
    if answered is not None and answered.status is SignalStatus.REFUSED and not stopped_now:
        _project(store, settings, run)
        refusal, says_state = _refusal(store, answered)
        if says_state:  # what the run is in, then what it waits for instead
            refusal += " Next: " + say_next_action(
                _status(store, run.id).next_action.to_dict(), run.id, CLI_WORDS) + "."
        return _error(refusal, EXIT_USAGE)
    return _finish(store, settings, run, args.json)


def _ended(run: Run, verb: str) -> str:
    """Why ``ratchet VERB`` changes nothing on an ended run, and what would."""
    return (f"run {run.id} has already ended ({run.state.value}), so `ratchet {verb}` changes"
            " nothing; `ratchet run` starts a new run")


# Refusals that say only which state the run is in: the command line adds its next action.
_STATE_REFUSALS = frozenset({
    Refusal.NOT_WAITING_FOR_APPROVAL, Refusal.NOT_WAITING_FOR_DIFF_APPROVAL,
    Refusal.NOTHING_TO_RETRY, Refusal.NOTHING_TO_VERIFY, Refusal.NO_SPEC,
})


def _refusal(store: Store, signal: Signal) -> tuple[str, bool]:
    """Why a signal was refused, as its reply says it, and whether that names only the run's
    state (no command that would work)."""
    for event in reversed(store.events(signal.run_id)):
        if event.type == EventType.SIGNAL_REFUSED and event.data.get("signal") == signal.id:
            text = render_reply({"run": signal.run_id, "refusal": event.data["refusal"],
                                 "params": event.data.get("params", {})}, CLI_WORDS).strip()
            return text, event.data["refusal"] in _STATE_REFUSALS
    return f"signal {signal.id} was refused: {signal.reason}", False


def _enqueue(settings: Settings, store: Store, run_id: str) -> str:
    # The queue's client (Dramatiq, Redis) loads only for --detach: every command pays for
    # what it imports, and most never enqueue.
    from app.worker import enqueue_run

    return enqueue_run(settings, run_id, store=store)


def _store(settings: Settings) -> Store:
    return open_store(settings.ledger_url)


@dataclass
class _Moves:
    """The run as this command's own sessions last committed it (None: they committed
    nothing)."""

    last: Run | None = None


def _drive(engine: Engine, before: Run, moves: _Moves, json_output: bool) -> Run:
    """Drive the run here; when another worker held it meanwhile and moved it on, say so (the
    command waited, it did not do that work)."""
    run = engine.drive(before.id)
    mine = moves.last or before
    if run.state is not mine.state:
        _announce(f"{run.id}: {mine.state.value} -> {run.state.value} by another worker, which"
                  " held the run while this command waited", json_output)
    return run


def _engine(store: Store, settings: Settings, *, json_output: bool,
            moves: _Moves | None = None) -> Engine:
    # The engine (steps, verification, agents) loads here: status, runs and export read the
    # ledger without it, and each command is a new process.
    from app.compose import build_engine

    def on_change(old: Run, new: Run) -> None:
        if moves is not None:
            moves.last = new
        if old.state is new.state and new.ready_at is None:
            return  # a refusal or recorded events: nothing moved
        arrow = (f"{old.state.value} -> {new.state.value}" if old.state is not new.state
                 else f"{new.state.value} (retry scheduled)")
        _announce(f"{new.id}: {arrow} ({new.step})"
                  + (f": {new.reason}" if new.reason and old.state is not new.state else ""),
                  json_output)

    # The engine keeps a local run's directory live; `_project` writes the one of a run
    # this command touched whatever its origin.
    return build_engine(store, settings, on_change=on_change)


def _project(store: Store, settings: Settings, run: Run) -> None:
    """Write the run directory of a run this command touched (a projection; failures here
    never stop a run)."""
    keep_live(store, run, settings.home / "runs")


def _finish(store: Store, settings: Settings, run: Run, json_output: bool, *,
            announce: bool = True) -> int:
    _project(store, settings, run)
    status = _status(store, run.id)
    if json_output:
        print(json.dumps(_status_json(status), sort_keys=True))
    elif announce:
        next_action = say_next_action(status.next_action.to_dict(), run.id, CLI_WORDS)
        print(f"{run.id}: {run.state.value}; next: {next_action}")
    return EXIT_RUN_STOPPED if is_stopped(run.state) else EXIT_OK


def _status(store: Store, run_id: str) -> RunStatus:
    return read_status(store, run_id, now=time.time())


def _status_json(status: RunStatus) -> dict[str, object]:
    """The status as data, with the next action also said in the command line's words."""
    data = status.to_dict()
    data["next_action"] = {**data["next_action"], "text": say_next_action(
        status.next_action.to_dict(), status.run_id, CLI_WORDS)}
    return data


def _run_summary(run: Run) -> dict[str, object]:
    return {"run_id": run.id, "state": run.state.value, "step": run.step, "title": run.title,
            "repo": run.repo, "created_at": run.created_at, "updated_at": run.updated_at}


def _announce(line: str, json_output: bool) -> None:
    # With --json, stdout ends with exactly one JSON line; progress goes to stderr.
    print(line, file=sys.stderr if json_output else sys.stdout, flush=True)


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


def _error(message: str, code: int) -> int:
    print(f"ratchet: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
