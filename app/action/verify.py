"""Verify mode: the verification plan of a pull request, push, merge group or dispatched head,
with its evidence where a reviewer looks.

The plan and its execution are ``ratchet verify``'s (``verification/pipeline.py``): changed
files from ``base...head``, the repository config at the base (or the ``config`` input's file
in the workspace), checks in the sandbox in a temporary worktree of the head. A change never
chooses the checks that verify it: a fork's pull request on ``pull_request_target`` (where the
token may write) runs the base's checks on its code, and only in the sandbox (unconfined, a
check could read the token from this job's own processes). Before any check runs, the
checkout's git config is rid of the token ``actions/checkout`` may have left there
(``checkout.py``); the job's environment never reaches a check but for what ``verify.env``
asks and ``RATCHET_CHECK_ENV`` allows. The evidence goes to:

- the step summary (plan, per-check status and time, failing checks with their failing tests
  and log tails);
- the bundle folder (plan.json, result.json, logs, summary.md) for ``actions/upload-artifact``;
- one ``ratchet/verify`` check run per head, upserted by ``external_id``, when the token may
  create one: its evidence recorded as an effect and sent through the outbox to the GitHub
  executor, as a run's effects are. A fork's ``pull_request`` gets a read-only token: no check
  run call is made and the summary says why. A token refused by GitHub (no
  ``checks: write``) is said there too;
- each failure annotated once: on the check run when there is one (all of them, in batches of
  50), else as workflow commands, errors first (the runner shows 10 per level and step). Both
  would show every failure twice in the pull request's diff.

Exit status as ``ratchet verify``: 0 verified, 1 a check did not pass, 2 a usage or
configuration error (also an annotation naming the file and line), 3 nothing verifies the
change (conclusion ``neutral``).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.action.channels import SHOWN_PER_LEVEL, Runner, most_important_first
from app.action.checkout import scrub_credentials
from app.action.env import ActionEnv, ActionError
from app.action.trigger import Revisions, read_payload, revisions_for
from app.settings import Settings
from app.verify_cli import (
    EXIT_FAILED,
    EXIT_PASSED,
    EXIT_UNVERIFIED,
    EXIT_USAGE,
    run_checks,
    write_bundle,
)
from github.client import GitHubClient
from github.credentials import TokenCredentials
from github.effects import GitHubExecutor
from github.errors import Forbidden, GitHubFailure, GitHubSettingsError
from github.words import GITHUB_WORDS
from plumbing.files import UnsafePath, read_beneath
from plumbing.git import Git, GitError
from runner.checkruns import VERIFY_CHECK, CheckRunId, verify_check
from runner.config import RepositoryConfig, parse_repository_config, read_repository_config
from runner.effects import Outbox, effect_key
from runner.ledger import open_store
from runner.ledger.records import EffectIntent, NewRun
from runner.names import EffectKind
from runner.neutralise import strip_controls
from runner.sandbox import SandboxUnavailable
from runner.workflow import PULL_REQUEST_WORKFLOW
from runner.worktrees import Worktrees
from verification.config import MAX_CONFIG_BYTES, ConfigError
from verification.evidence import (
    EvidenceBundle,
    EvidenceReport,
    render_markdown,
    render_workflow_commands,
)
from verification.pipeline import Candidate, plan_verification
from verification.revisions import RevisionError, default_base, open_repository, resolve_revision
from verification.tree import TreeError

log = logging.getLogger(__name__)

# Seconds the job's own ledger leases its one run: no other worker ever sees that ledger.
LEASE_TTL = 3600.0
EXIT_BY_CONCLUSION = {"success": EXIT_PASSED, "failure": EXIT_FAILED, "neutral": EXIT_UNVERIFIED}
# The check run's external_id names no run but the head: one check run per head, whichever
# job or attempt made it.
ACTION_RUN = "ratchet-action"
FETCH_HINT = ("the checkout lacks it: check out with `actions/checkout` and `fetch-depth: 0`"
              " (or give the `base` and `head` inputs)")


@dataclass(frozen=True)
class CheckRunNote:
    """What became of the check run: its URL, or why there is none."""

    url: str | None = None
    why_not: str | None = None


def verify_job(env: ActionEnv, settings: Settings, runner: Runner) -> int:
    """Run verify mode (see the module docstring); returns the exit status."""
    runner.set_output("run-id", "")
    runner.set_output("state", "")
    try:
        revisions = revisions_for(env.event_name, read_payload(env.event_path), env.inputs,
                                  sha=env.sha)
        bundle, head = _verify(env, settings, revisions, runner)
    except ConfigError as exc:
        return _usage_error(runner, str(exc), file=exc.path, line=exc.line)
    except (ActionError, RevisionError, TreeError, GitError, SandboxUnavailable, OSError) as exc:
        return _usage_error(runner, " ".join(str(exc).split()))
    report = EvidenceReport.from_bundle(bundle)
    note = _publish_check_run(env, settings, report, head, revisions)
    # The check run carries the annotations when it was written: the job does not repeat them.
    commands = most_important_first(_workflow_commands(report, annotated=note.url is not None))
    shown = _first_per_level(commands)
    for line in shown:
        runner.command(line)
    runner.summary(_summary(report, note, hidden=len(commands) - len(shown)))
    runner.set_output("conclusion", bundle.conclusion)
    runner.set_output("plan-hash", bundle.plan.sha256)
    runner.set_output("bundle", str(_bundle_dir(env)))
    return EXIT_BY_CONCLUSION[bundle.conclusion]


def _verify(env: ActionEnv, settings: Settings, revisions: Revisions,
            runner: Runner) -> tuple[EvidenceBundle, str]:
    repo = open_repository(env.checkout)
    removed = scrub_credentials(repo)
    if removed:
        runner.annotate("notice", "removed the credential actions/checkout left in the"
                        f" checkout's git config ({', '.join(removed)}) before any check ran;"
                        " set `persist-credentials: false` on actions/checkout", title="Ratchet")
    base = _resolve(repo, revisions.base) if revisions.base else default_base(repo)
    head = _resolve(repo, revisions.head or "HEAD")
    candidate = Candidate.between(repo, base, head)
    config = _config(env, repo, candidate.start)
    verification = plan_verification(candidate, config.verify)
    plan = verification.plan
    log.info("verify %s...%s: %d changed files, %d checks (plan %s)", base[:12], head[:12],
             len(candidate.changed), len(plan.checks), plan.sha256[:12])
    sandbox = settings.sandbox_policy()
    if env.event_name == "pull_request_target" and not sandbox.confined:
        # Unconfined, its tests could read the token from this job's own processes.
        raise ActionError("on pull_request_target the pull request's code runs where the"
                          " token may write, and is verified only in the sandbox, but"
                          " RATCHET_SANDBOX=none: remove it from the workflow's env (bubblewrap"
                          " is the default)")
    # On pull_request_target the head is whoever opened the pull request's: the job holds the
    # repository's secrets, and its checks get none of them (verify.env grants nothing).
    bundle = run_checks(verification, sandbox, settings.network_settings(),
                        settings.check_env_names,
                        untrusted=env.event_name == "pull_request_target")
    folder = _bundle_dir(env)
    shutil.rmtree(folder, ignore_errors=True)
    return write_bundle(folder, bundle), head


def _resolve(repo: Git, revision: str) -> str:
    try:
        return resolve_revision(repo, revision)
    except RevisionError as exc:
        raise ActionError(f"{exc}; {FETCH_HINT}") from None


def _config(env: ActionEnv, repo: Git, base: str) -> RepositoryConfig:
    """The ``config`` input's file in the workspace, else ``.github/ratchet.yml`` at the base
    (as ``ratchet verify`` and a run read it: a change cannot choose its own checks)."""
    name = env.inputs.config
    if not name:
        return read_repository_config(repo, base)
    if env.event_name == "pull_request_target":
        raise ActionError("the `config` input names a file in the workspace, which on"
                          " pull_request_target may be the pull request's own: remove the input"
                          " (verify mode reads .github/ratchet.yml at the base)")
    try:
        data = read_beneath(env.checkout, name, limit=MAX_CONFIG_BYTES)
    except UnsafePath as exc:
        raise ActionError(f"the config input names {name!r}, which cannot be read in the"
                          f" workspace ({exc}); give a path relative to the repository root"
                          ) from None
    return parse_repository_config(data, path=name)


def _bundle_dir(env: ActionEnv) -> Path:
    return env.work_dir / "bundle"


def _publish_check_run(env: ActionEnv, settings: Settings, report: EvidenceReport, head: str,
                       revisions: Revisions) -> CheckRunNote:
    """Create or update the head's ``ratchet/verify`` check run, or say why not."""
    token = env.inputs.token
    if revisions.read_only_token:
        return CheckRunNote(why_not=(
            "this pull request comes from a fork, and GitHub gives its workflows a read-only"
            " token: no check run was created. The evidence is this summary, the annotations"
            " and the bundle."))
    if not token:
        return CheckRunNote(why_not="no `github-token` was given: no check run was created.")
    try:
        credentials = TokenCredentials.from_values(token=token, api_url=env.api_url,
                                                   graphql_url=env.graphql_url)
    except GitHubSettingsError as exc:
        return CheckRunNote(why_not=f"no check run was created: {exc}.")
    client = GitHubClient(credentials, mutation_interval=settings.github_mutation_interval)
    run_id, step = f"action-{env.run_id}", f"verify.{env.run_attempt}"
    check = EffectIntent(effect_key(run_id, step, "verify-check"), run_id, step,
                         EffectKind.CHECK_RUN,
                         verify_check(run_id, CheckRunId(ACTION_RUN, VERIFY_CHECK, head), report))
    try:
        found = _send(env, client, check)
    except Forbidden:
        return CheckRunNote(why_not=(
            "the token may not create check runs: give the job `permissions: checks: write`"
            " to get a `ratchet/verify` check run on the head."))
    except GitHubFailure as exc:
        log.warning("the check run could not be written: %s", exc)
        return CheckRunNote(why_not=f"the check run could not be written ({exc}).")
    return CheckRunNote(url=found.get("url"))


def _send(env: ActionEnv, client: GitHubClient, effect: EffectIntent) -> dict[str, Any]:
    """Send ``effect`` as every effect is sent: recorded in a ledger, then through the outbox
    to the GitHub executor; returns the check run's identity.

    The ledger is this job's alone (verify mode keeps none between jobs), so an earlier
    attempt, or another workflow run on the same head, may have made the check run already:
    the effect is recorded as sent once, and the outbox looks it up by ``external_id`` before
    sending (a re-run updates that check run in place).
    """
    env.work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ledger-", dir=env.work_dir) as folder:
        store = open_store(str(Path(folder) / "ledger.sqlite3"))
        try:
            store.create_run(NewRun(effect.run_id, env.repository,
                                    f"{VERIFY_CHECK} of {effect.payload['head_sha']}",
                                    workflow=PULL_REQUEST_WORKFLOW, step=effect.step,
                                    effects=(effect,)))
            lease = store.acquire_lease(effect.run_id, f"action-job-{env.run_id}",
                                        ttl=LEASE_TTL)
            assert lease is not None, "a new run's lease is free"
            store.begin_effect(lease, effect.key)
            executor = GitHubExecutor(
                client, owner=env.owner, repo=env.repo, installation=None, issue=0,
                worktrees=Worktrees(Path(folder) / "work"), worktree=None,
                words=GITHUB_WORDS, ledger=lambda: store.effects(effect.run_id),
                details_url=env.run_url)
            [sent] = Outbox(store, lambda: lease, executor).flush(effect.run_id)
            return dict(sent.resource or {})
        finally:
            store.close()


def _workflow_commands(report: EvidenceReport, *, annotated: bool) -> list[str]:
    """The job's workflow commands: the failures' annotations unless the check run carries
    them (``annotated``), and the warning that nothing verifies the change."""
    commands = [] if annotated else [
        strip_controls(command) for command in render_workflow_commands(report)]
    if report.conclusion == "neutral":
        commands.append(f"::warning title=Ratchet::{report.reason}: add a check that covers the"
                        " changed files, or list them in verify.ignore")
    return commands


def _first_per_level(commands: list[str]) -> list[str]:
    """The commands the runner will show: the first ``SHOWN_PER_LEVEL`` of each level."""
    seen: dict[str, int] = {}
    shown = []
    for line in commands:
        level = line.split(" ", 1)[0].split("::")[1]
        seen[level] = seen.get(level, 0) + 1
        if seen[level] <= SHOWN_PER_LEVEL:
            shown.append(line)
    return shown


def _summary(report: EvidenceReport, note: CheckRunNote, *, hidden: int) -> str:
    # What checks printed, without the controls and bidi characters that would change its reading.
    lines = [strip_controls(render_markdown(report)).rstrip(), ""]
    if note.url:
        lines.append(f"Check run: [{VERIFY_CHECK}]({note.url}).")
        if report.annotations:
            lines.append(f"\nThe {len(report.annotations)} annotations are on the check run"
                         " (shown in the pull request's diff), not repeated by this job.")
    elif note.why_not:
        lines.append(f"**No check run:** {note.why_not}")
    if hidden:
        lines.append(f"\n{hidden} more annotations are in the check run and the bundle's"
                     " result.json (the runner shows 10 per level).")
    return "\n".join(lines) + "\n"


def _usage_error(runner: Runner, message: str, *, file: str | None = None,
                 line: int | None = None) -> int:
    runner.annotate("error", message, file=file, line=line, title="Ratchet")
    runner.summary(f"## Ratchet verification: not run\n\n{message}\n")
    runner.set_output("conclusion", "error")
    runner.set_output("plan-hash", "")
    runner.set_output("bundle", "")
    return EXIT_USAGE
