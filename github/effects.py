"""``GitHubExecutor``: the runner's effects carried out on GitHub for one run, each safe to repeat.

The runner decides forge-neutral effects and its outbox sends them (``runner/effects.py``):
``apply`` on a first send, ``find`` first when an earlier send was never confirmed. This
executor gives each kind the meaning the local sink gives it (``runner/sink.py``) on GitHub:

| kind         | apply (happy path)                              | find (after an ambiguous send) |
|--------------|-------------------------------------------------|--------------------------------|
| comment      | POST the tracking comment once, then PATCH it   | GET it (else list the issue's) |
| reply        | POST a comment where the signal was typed       | list that conversation         |
| reaction     | POST it (GitHub answers 200 when it exists)     | list the comment's reactions   |
| push         | ``git push --force-with-lease`` from ``expect`` | GET git/ref/heads/<branch>     |
| pull_request | POST (draft), then PATCH; GraphQL: ready        | GET pulls?head=OWNER:BRANCH    |
| check_run    | POST with 50 annotations, PATCH per 50 more     | GET commits/{sha}/check-runs   |

Updates take the object's id from the ledger (``ledger``, the run's recorded effects), so a
first send makes no lookup at all. Text is rendered from the payload with ``words``; bodies
carry hidden markers (``runner/render.py``) that lookups match. Failures are the client's
classes (transient, ambiguous, deterministic, authority); a branch someone else moved is an
``AuthorityFailure``, never a force push.

One module per family does the work: ``comments``, ``pulls``, ``checkruns``, ``push``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.effects import EffectExecutor, EffectRequest
from runner.errors import DeterministicFailure
from runner.names import EffectKind
from runner.render import Vocabulary
from runner.worktrees import Worktrees

from .checkruns import CheckRuns
from .client import GitHubClient
from .comments import Reactions, Replies, TrackingComments
from .ledgerview import ConfirmedEffects, LedgerView
from .pulls import PullRequests
from .push import BranchPushes
from .repository import RepoAPI, RepoTarget


class GitHubExecutor:
    """``EffectExecutor`` for one run on ``owner/repo`` (see the module docstring).

    ``installation`` is the App installation whose token every call (and git) uses, ``None``
    with a plain token; ``issue`` is the run's issue (or pull request) number, where the
    tracking comment lives; ``worktrees`` and ``worktree`` are the run's git dir, pushed from;
    ``ledger`` returns the run's recorded effects (``lambda: store.effects(run_id)``);
    ``details_url`` links check runs to the run's page (and the tracking comment to its
    artifacts); ``bot_login`` is the App's bot user
    (``<slug>[bot]``), the only author whose comments and reactions a lookup trusts (any bot
    when None).
    """

    def __init__(
        self,
        client: GitHubClient,
        *,
        owner: str,
        repo: str,
        installation: int | None,
        issue: int,
        worktrees: Worktrees,
        worktree: Path | None,
        words: Vocabulary,
        ledger: LedgerView,
        details_url: str | None = None,
        artifacts_url: str | None = None,
        bot_login: str | None = None,
    ) -> None:
        api = RepoAPI(client, RepoTarget(owner, repo, installation))
        history = ConfirmedEffects(ledger)
        self.target = api.target
        self._kinds: dict[EffectKind, EffectExecutor] = {
            EffectKind.COMMENT: TrackingComments(
                api, words, issue=issue, history=history, bot_login=bot_login,
                artifacts_url=artifacts_url,
            ),
            EffectKind.REPLY: Replies(api, words, issue=issue, bot_login=bot_login),
            EffectKind.REACTION: Reactions(api, bot_login=bot_login),
            EffectKind.PUSH: BranchPushes(api, worktrees, worktree),
            EffectKind.PULL_REQUEST: PullRequests(
                api, words, history=history, artifacts_url=artifacts_url,
            ),
            EffectKind.CHECK_RUN: CheckRuns(api, words, history=history, details_url=details_url),
        }

    def __repr__(self) -> str:
        return f"GitHubExecutor({self.target.full_name!r})"

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        return self._executor(request).apply(request)

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        return self._executor(request).find(request)

    def _executor(self, request: EffectRequest) -> EffectExecutor:
        executor = self._kinds.get(request.kind)
        if executor is None:
            raise DeterministicFailure(
                f"effect {request.key}: GitHub has no executor for {request.kind!r}; this"
                " Ratchet is older than the runner that decided it: upgrade the worker"
            )
        return executor
