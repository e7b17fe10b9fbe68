"""One verification of a change: changed files -> plan -> checks run -> evidence bundle.

The verify step, ``ratchet verify`` and the Action's verify mode all verify through here. They
differ only in where the change comes from (a run's rebuilt worktree; a repository and two
revisions, ``Candidate.between``) and in what they do around it (persist each result, print
progress, write the bundle's files).

``plan_verification`` plans the checks from the tree the candidate starts at (its layout, its
manifests, the config read there: a change cannot choose its own checks), plus those the
candidate's own manifests add; a changed lockfile selects only the packages whose versions
moved.
``Verification.run`` runs them in the caller's sandbox (a change's code is untrusted), in the
work tree or in a temporary worktree of the head commit, and bundles the evidence. Nothing to
run means no sandbox and no worktree at all.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from plumbing.git import Git
from verification.config import VerifyConfig
from verification.model import Plan, PlannedCheck
from verification.plan import PlanResult, plan_change
from verification.revisions import change, checkout, diff_stat, merge_base
from verification.tree import GitRevisionTree, GitTree, Tree

# Running and bundling load with `Verification.run`: `ratchet verify --plan-only` and
# `--explain` plan without them.
if TYPE_CHECKING:
    from verification.evidence import EvidenceBundle
    from verification.execute import CheckResult


class Sandbox(Protocol):
    """Confines checks (``runner.sandbox.Sandbox``)."""

    def check(self) -> None:
        """Raise when the sandbox cannot start processes here."""
        ...

    def command(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path] = (),
                readable: Sequence[Path] = (), network: Any = None) -> list[str]:
        """The argv that runs ``argv`` confined; ``network`` is the way out the caller runs
        for it (the runner's egress proxy for ``verify.network``), None for no network."""
        ...


@dataclass(frozen=True)
class Candidate:
    """What is verified: ``repo``'s tree at commit ``head`` (None: its work tree as it is,
    uncommitted and untracked files too), changed from commit ``start`` in ``changed``.

    ``start`` decides the checks: its manifests lay the workspaces out, and the config passed
    to ``plan_verification`` is the one read there (``read_verify_config(repo, start)``);
    the change's own manifests can only add checks.

    ``diff_stat`` is what the evidence shows of the change; None asks git for it
    (``git diff --stat``) once the checks have run.
    """

    repo: Git
    start: str
    head: str | None
    changed: tuple[str, ...]
    diff_stat: str | None = None
    # The work tree's paths as git listed them with the change (None: listed when planned).
    listing: list[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def between(cls, repo: Git, base: str, head: str | None) -> Candidate:
        """The change from the merge base of ``base`` and ``head`` (HEAD for None) to ``head``;
        raises RevisionError when git cannot answer."""
        start = merge_base(repo, base, head)
        changed, listing = change(repo, start, head)
        return cls(repo, start, head, tuple(changed), listing=listing)

    def tree(self) -> Tree:
        if self.head:
            return GitRevisionTree(self.repo, self.head)
        return GitTree(self.repo, listing=self.listing)


def plan_verification(candidate: Candidate, config: VerifyConfig) -> Verification:
    """Plan the checks ``candidate`` calls for under ``config`` (the repository's, read at the
    base: a change can add checks, never displace them). Raises TreeError or GitError when the
    trees cannot be read."""
    planned = plan_change(candidate.changed, candidate.tree(), config,
                          base=GitRevisionTree(candidate.repo, candidate.start))
    return Verification(candidate, config, planned)


@dataclass(frozen=True)
class Verification:
    """A planned verification (``plan_verification``), run by ``run``."""

    candidate: Candidate
    config: VerifyConfig
    planned: PlanResult  # the plan, with the explanation ``ratchet verify --explain`` prints

    @property
    def plan(self) -> Plan:
        return self.planned.plan

    def run(
        self,
        sandbox: Sandbox,
        *,
        host_env: Mapping[str, str],
        allowed_env: Collection[str] = (),
        readable: Sequence[Path] = (),
        on_result: Callable[[CheckResult], None] | None = None,
        reuse: Callable[[PlannedCheck], CheckResult | None] | None = None,
        redact: Callable[[str], str] | None = None,
        artifacts: Mapping[str, str] | None = None,
        max_log_bytes: int | None = None,
        network: Any = None,
        untrusted: bool = False,
    ) -> EvidenceBundle:
        """Run the plan's checks confined by ``sandbox`` and bundle the evidence.

        Checks see ``readable`` paths too (a run's repository objects), and reach the network
        only through ``network`` (``Sandbox.command``'s: the caller's egress proxy, which
        applies ``verify.network``). Their environment is ``check_environment``'s: of the
        runner's ``host_env``, only what the config's ``verify.env`` asks for and
        ``allowed_env`` (the operator's RATCHET_CHECK_ENV) allows, nothing of it when the
        change is ``untrusted`` (a pull request's head). ``on_result``, ``reuse``,
        ``redact`` and ``max_log_bytes`` are ``execute_plan``'s. ``artifacts`` (path -> sha256)
        are listed in the evidence. Raises ``SandboxUnavailable`` (from ``sandbox.check``) and
        RevisionError (a worktree of the head, the diff stat).
        """
        from verification.evidence import build_bundle
        from verification.execute import check_environment, execute_plan

        plan = self.plan
        repo = self.candidate.repo
        if plan.is_empty:
            results: list[CheckResult] = []
            root = str(repo.work_tree)
        else:
            sandbox.check()
            confine = functools.partial(sandbox.command, readable=tuple(readable),
                                        network=network)
            env, withheld = check_environment(host_env, self.config.env, allowed_env,
                                               untrusted=untrusted)
            with self._checked_out() as folder:
                results = execute_plan(plan, folder, on_result=on_result, reuse=reuse,
                                       redact=redact, env=env, confine=confine,
                                       max_log_bytes=max_log_bytes, notes=withheld)
                root = str(folder)
        stat = self.candidate.diff_stat
        if stat is None:
            stat = diff_stat(repo, self.candidate.start, self.candidate.head)
        return build_bundle(plan, results, diff_stat=stat, artifacts=artifacts, root=root)

    @contextlib.contextmanager
    def _checked_out(self) -> Iterator[Path]:
        """Where the checks run: the work tree, or a temporary worktree of the head."""
        if self.candidate.head is None:
            assert self.candidate.repo.work_tree is not None, "a work tree to verify"
            yield self.candidate.repo.work_tree
            return
        with checkout(self.candidate.repo, self.candidate.head) as checked_out:
            assert checked_out.work_tree is not None
            yield checked_out.work_tree
