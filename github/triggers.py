"""Who may start a run with the trigger label, and the one reply to someone who may not; the
answer to a command that reaches no run.

GitHub lets anyone with triage access add a label; a run spends the operator's money and
writes to the repository, so the label starts one only when its sender holds
``RATCHET_TRIGGER_PERMISSION`` (write by default) or is a bot the operator allows. Anyone else
gets one reply on the issue saying who may, at most once a minute per person and issue
(``Store.claim_reply``, so every process agrees), and no run is recorded.

A ``/ratchet`` command that names no verb Ratchet knows (or lacks its argument) is answered
with what would work: every time for someone with write access, at most once a minute per
issue for anyone else (a reader's burst costs one reply, as a run's refusals do). So is a
command on a pull request no run linked within a day (``answer_expired``): it waited for the
run that opened the pull request to confirm it, none did, and its author is asked to repeat it.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from urllib.parse import urlparse

from runner.ledger.records import EARLY_SIGNAL_SECONDS, SignalFor
from runner.ledger.store import Store
from runner.names import verb_of
from runner.origin import GitHubOrigin
from runner.signals import Authorization

from .client import GitHubClient
from .comments import ISSUE_COMMENTS
from .permissions import BOT_SUFFIX, NO_ACCESS, ROLES, Permissions
from .repository import RepoAPI, RepoTarget
from .routing import Reply

log = logging.getLogger(__name__)

TRIGGER_ROLES = ROLES[2:]  # triage, write, maintain, admin
REPLY_INTERVAL = 60.0  # seconds between two replies to one person on one issue


class TriggerGate:
    """``check`` a label's sender against the required ``role``; ``refuse`` with one reply."""

    def __init__(self, client: GitHubClient, permissions: Permissions, store: Store, *,
                 role: str = "write", allowed_bots: Collection[str] = (),
                 per_installation: bool = True) -> None:
        if role not in TRIGGER_ROLES:
            raise ValueError(f"RATCHET_TRIGGER_PERMISSION={role!r}: use one of"
                             f" {', '.join(TRIGGER_ROLES)}")
        self.client = client
        self.permissions = permissions
        self.store = store
        self.role = role
        self.allowed_bots = frozenset(b.lower() for b in allowed_bots)
        self.per_installation = per_installation

    def _target(self, origin: GitHubOrigin) -> RepoTarget:
        return RepoTarget(origin.owner, origin.repo,
                          origin.installation if self.per_installation else None)

    def check(self, origin: GitHubOrigin) -> Authorization:
        """Whether the label's sender (``origin.started_by``) may start a run; GitHub's
        failures are raised."""
        login = origin.started_by or ""
        if login.lower().endswith(BOT_SUFFIX):
            allowed = login.lower() in self.allowed_bots
            return Authorization(allowed, f"{login} is {'an allowed' if allowed else 'a'} bot")
        target = self._target(origin)
        role = self.permissions.role(target, login)
        if role.at_least(self.role):
            return Authorization(True, f"{login} has {role.name} access")
        has = ("no access" if role is NO_ACCESS else f"{role.name} access")
        return Authorization(False, f"{login} has {has} to {target.full_name}")

    def refuse(self, origin: GitHubOrigin, issue: int, why: Authorization) -> bool:
        """Post the one reply saying who may start a run (False: one was sent lately)."""
        login = origin.started_by or ""
        if not self.store.claim_reply(origin.clone_url, issue, login, interval=REPLY_INTERVAL):
            return False
        roles = ", ".join(TRIGGER_ROLES[TRIGGER_ROLES.index(self.role):])
        body = (f"@{login}: the `{origin.label}` label starts a Ratchet run only when someone"
                f" with {self.role} access or more ({roles}) adds it; {why.detail}. Ask a"
                " maintainer to add it.\n")
        RepoAPI(self.client, self._target(origin)).post(ISSUE_COMMENTS, {"body": body},
                                                        issue_number=issue)
        return True

    def answer(self, reply: Reply) -> bool:
        """Post the reply to a command that reaches no run (False: its author is not a
        writer and was answered lately); GitHub's failures are raised."""
        target = RepoTarget(reply.owner, reply.repo,
                            reply.installation if self.per_installation else None)
        writer = self.permissions.role(target, reply.author).at_least("write")
        if not writer and not self.store.claim_reply(reply.clone_url, reply.number,
                                                     reply.author, interval=REPLY_INTERVAL):
            return False
        RepoAPI(self.client, target).post(ISSUE_COMMENTS,
                                          {"body": f"@{reply.author}: {reply.text}\n"},
                                          issue_number=reply.number)
        return True

    def answer_expired(self, *, now: float | None = None) -> int:
        """Ask the author of each signal that waited ``EARLY_SIGNAL_SECONDS`` for a run to
        link its pull request, in vain, to repeat it: one reply on that pull request (as
        ``answer``: a reader at most once a minute). The ledger hands each signal out once,
        whichever process asks; a reply GitHub refuses is logged. Returns the replies sent."""
        sent = 0
        for signal in self.store.expire_early_signals(now=now):
            try:
                sent += self.answer(self._repeat(signal))
            except Exception as exc:  # one refused reply must not keep the others unsent
                log.warning("the reply to %r's %s on %s#%d was not sent: %s", signal.author,
                            signal.kind.value, signal.repo, signal.number, exc)
        return sent

    def _repeat(self, signal: SignalFor) -> Reply:
        owner, repo = _slug(signal.repo)
        what = ("your review requesting changes" if getattr(signal.payload, "review", None)
                else f"`/ratchet {verb_of(signal.kind)}`")
        hours = int(EARLY_SIGNAL_SECONDS // 3600)
        text = (f"{what} was not applied: it waited for a Ratchet run to link this pull"
                f" request, and none has in {hours} hours. If this pull request belongs to a"
                " run, please repeat it here once the run's tracking comment links it.")
        installation = self.client.installation_id(owner, repo) if self.per_installation \
            else None
        return Reply(owner=owner, repo=repo, installation=installation, clone_url=signal.repo,
                     number=signal.number, author=signal.author, text=text)


def _slug(clone_url: str) -> tuple[str, str]:
    """``owner`` and ``repo`` of a clone URL (``https://github.com/owner/repo.git``)."""
    owner, _, repo = urlparse(clone_url).path.strip("/").removesuffix(".git").rpartition("/")
    return owner.rpartition("/")[2], repo
