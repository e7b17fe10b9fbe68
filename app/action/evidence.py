"""Run mode's ledger is evidence, not authority.

The ledger travels in a ref of the repository (``ledgerref.py``), and whoever can push that
ref (any token with ``contents: write``, another workflow's among them) can write anything in
it. So a job takes what it acts with from its own environment, never from the ledger:

- where git and the API go, and as whom: the remote is ``GITHUB_SERVER_URL`` and
  ``GITHUB_REPOSITORY``, the token is the job's. A run whose recorded repository, remote,
  pushes or agent command are not this job's is refused (``foreign``) before anything is
  fetched, pushed or sent: the token never follows a ledger to another host;
- who asked for what: a signal counts only when this job's own delivery (the event in
  ``GITHUB_EVENT_PATH``, recorded by Ratchet as the delivery ``actions-<run id>``) recorded it,
  with the kind, author and payload that event carries (``DeliveredOnly``). A signal planted in
  the ledger, or one an earlier workflow run left unanswered, is refused with a reply asking
  to type the command again. "Re-run failed jobs" keeps the run id, so a re-run still answers
  its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from runner.ledger.records import Effect, Run, Signal, SignalFor
from runner.names import EffectKind
from runner.origin import AgentChoice, GitHubOrigin
from runner.signals import Authorization, Authorizer


@dataclass(frozen=True)
class JobIdentity:
    """What this job acts on and with, from its own environment."""

    repository: str  # GITHUB_REPOSITORY, owner/name
    clone_url: str  # GITHUB_SERVER_URL/GITHUB_REPOSITORY.git
    agent_command: str | None  # the agent-command input, else RATCHET_AGENT_COMMAND
    ledger: str  # the ledger's ref, for the sentence that refuses


def delivery_id(run_id: str) -> str:
    """The delivery id a job records its event under: the same for every attempt."""
    return f"actions-{run_id}"


def foreign(run: Run, effects: Sequence[Effect], job: JobIdentity) -> str | None:
    """Why this job must not carry out ``run`` (with its recorded ``effects``) as the ledger
    records it, or None."""
    origin = run.origin
    recorded = (f"{origin.owner}/{origin.repo}" if isinstance(origin, GitHubOrigin)
                else "a run started on a host")
    where = _host(run.repo)
    advice = (f"nothing was fetched, pushed or sent for it. If no one here wrote that, delete"
              f" the ref (git push origin :{job.ledger}) and start the run again")
    if (not isinstance(origin, GitHubOrigin) or recorded.lower() != job.repository.lower()
            or origin.installation is not None
            or not _same_url(run.repo, job.clone_url)
            or not _same_url(origin.clone_url, job.clone_url)):
        return (f"the ledger in {job.ledger} says run {run.id} belongs to {recorded} at"
                f" {where}, but this job is for {job.repository} at {_host(job.clone_url)}"
                f" (GITHUB_REPOSITORY, GITHUB_SERVER_URL): refused, {advice}")
    for effect in effects:
        remote = effect.payload.get("remote") if effect.kind is EffectKind.PUSH else None
        if remote is not None and not _same_url(str(remote), job.clone_url):
            return (f"the ledger in {job.ledger} holds a push of run {run.id} to"
                    f" {_host(str(remote))} ({effect.key}), but this job's repository is at"
                    f" {_host(job.clone_url)} (GITHUB_SERVER_URL): refused, {advice}")
    if origin.agent != AgentChoice(command=job.agent_command):
        return (f"the ledger in {job.ledger} says run {run.id} runs the agent"
                f" {origin.agent.command or origin.agent.preset!r}, but this job's"
                f" `agent-command` input is {job.agent_command!r}: refused, {advice}, or give"
                " the input back the run's command")
    return None


def _same_url(recorded: str, own: str) -> bool:
    return recorded.rstrip("/").lower() == own.rstrip("/").lower()


def _host(url: str) -> str:
    """The scheme and host of ``url``, never a user or password it holds."""
    parts = urlsplit(url)
    if not parts.scheme:
        return "an unknown remote"
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}" if host else f"{parts.scheme}://{parts.path}"


@dataclass(frozen=True)
class DeliveredOnly:
    """The job's ``Authorizer``: a signal this job's delivery did not record is refused
    before ``inner`` (GitHub's permission check) is asked (see the module docstring)."""

    inner: Authorizer
    delivery: str  # this job's delivery id
    asked: SignalFor | None  # what this job's event asks (None: it carries no signal)

    def authorize(self, run: Run, signal: Signal) -> Authorization:
        asked = self.asked
        if asked is None or signal.id != f"delivery:{self.delivery}":
            return Authorization(False, (
                "it is in the run's ledger, but no event of this workflow run recorded it"
                " (a command from an earlier job that ended before answering, or not from"
                " GitHub at all); type the command again"))
        if (signal.kind, signal.author, signal.origin, signal.payload.to_stored()) != (
                asked.kind, asked.author, asked.origin, asked.payload.to_stored()):
            return Authorization(False, (
                "the run's ledger holds it differently from the event this workflow run"
                " received; type the command again"))
        return self.inner.authorize(run, signal)
