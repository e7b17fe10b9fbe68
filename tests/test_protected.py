"""Protected paths and diff approvals, pure: which changed paths are protected, the hash an
approval names, who may approve what, and the change that records the approval."""

from __future__ import annotations

from pathlib import Path

import pytest

from github.commands import CommandError, parse_command
from plumbing.git import GitError
from runner import inbox
from runner.config import parse_repository_config
from runner.effects import EffectRequest
from runner.errors import AuthorityFailure
from runner.ledger.records import Checkpoint, Run, Signal
from runner.names import EffectKind, EventType, SignalKind, SignalStatus
from runner.origin import LocalOrigin
from runner.protected import diff_sha256, matches_diff, protected_paths, review_ref
from runner.push import classify_push_failure
from runner.results import approved_diff, diff_to_approve, pushed_head
from runner.signal_payloads import ApproveDiff, read_payload
from runner.signals import Authorization, Refusal, decide_signal
from runner.workflow import Outcome, State
from runner.worktrees import GitCommandFailed
from verification.config import ConfigError

NOW = 1_000_000.0
DIFF = diff_sha256("a" * 40, "b" * 40)
ALLOWED = Authorization(True, "write")


@pytest.mark.parametrize("path", [
    ".github/workflows/ci.yml", ".github/workflows/nested/deploy.yaml", ".github/ratchet.yml",
    ".github/actions/setup/action.yml", "CODEOWNERS", ".github/CODEOWNERS",
    "docs/CODEOWNERS", "CLAUDE.md", "pkg/sub/CLAUDE.md", "AGENTS.md", "lib/AGENTS.md",
    "GEMINI.md", ".claude/settings.json", ".claude/commands/x.md", ".codex/config.toml",
    ".cursor/rules/a.mdc", ".cursorrules", ".github/copilot-instructions.md", ".mcp.json",
    "claude.md", ".GitHub/Workflows/ci.yml",  # case does not unprotect
])
def test_the_default_protected_paths(path: str) -> None:
    assert protected_paths([path, "src/app.py"]) == (path,)


@pytest.mark.parametrize("path", [
    "src/app.py", "README.md", "docs/index.md", ".github/ISSUE_TEMPLATE/bug.md",
    "CLAUDE.md.txt", "notes/AGENTS.mdx", "workflows/ci.yml", "src/.claude",
])
def test_ordinary_paths_are_not_protected(path: str) -> None:
    assert protected_paths([path]) == ()


def test_a_repository_adds_globs_and_cannot_remove_the_defaults() -> None:
    config = parse_repository_config(
        "publish:\n  protected_paths: ['deploy/**', 'Makefile']\n")
    extra = config.publish.protected_paths
    changed = ["deploy/prod.tf", "Makefile", "src/Makefile", ".github/workflows/ci.yml"]
    assert protected_paths(changed, extra) == (
        ".github/workflows/ci.yml", "Makefile", "deploy/prod.tf")
    assert config.publish.review_before_push is False
    with pytest.raises(ConfigError, match="protected_paths"):
        parse_repository_config("publish:\n  protected_paths: ['']\n")
    with pytest.raises(ConfigError, match="unprotect"):
        parse_repository_config("publish:\n  unprotect: ['.github/**']\n")


def test_the_diff_hash_names_one_tree_pair_and_a_prefix_of_twelve_or_more() -> None:
    assert diff_sha256("a" * 40, "b" * 40) == DIFF and len(DIFF) == 64
    assert diff_sha256("a" * 40, "c" * 40) != DIFF  # a later change is another diff
    assert diff_sha256("b" * 40, "a" * 40) != DIFF  # the pair is ordered
    assert matches_diff(DIFF, DIFF) and matches_diff(f" {DIFF[:12].upper()} ", DIFF)
    assert not matches_diff(DIFF[:11], DIFF) and not matches_diff("", DIFF)
    assert not matches_diff("0" * 64, DIFF)
    assert review_ref("r-1") == "refs/ratchet/review/r-1"


def run_in(state: State, step: str = "awaiting_diff_approval.1") -> Run:
    return Run(id="r1", repo="/repo", title="t", body="", workflow="issue", issue=None,
               pr=None, state=state, step=step, attempt=1, version=3, lease_owner=None,
               lease_epoch=2, lease_expires_at=None, base_revision="base", head_revision=None,
               ready_at=None, deadline=None, reason=None, origin=LocalOrigin(),
               created_at=NOW, updated_at=NOW)


def approve(text: str) -> Signal:
    return Signal("cli:1", "r1", SignalKind.APPROVE_DIFF, "ann", "local",
                  read_payload(SignalKind.APPROVE_DIFF, {"hash": text}),
                  SignalStatus.PENDING, None, NOW, None)


@pytest.mark.parametrize(("state", "given", "current", "outcome", "refusal"), [
    (State.AWAITING_DIFF_APPROVAL, DIFF, DIFF, Outcome.DIFF_APPROVED, None),
    (State.AWAITING_DIFF_APPROVAL, DIFF[:12], DIFF, Outcome.DIFF_APPROVED, None),
    (State.AWAITING_DIFF_APPROVAL, DIFF[:11], DIFF, None, Refusal.STALE_DIFF),
    (State.AWAITING_DIFF_APPROVAL, "0" * 64, DIFF, None, Refusal.STALE_DIFF),
    # An approval of the diff before the last change: stale.
    (State.AWAITING_DIFF_APPROVAL, diff_sha256("a" * 40, "c" * 40), DIFF, None,
     Refusal.STALE_DIFF),
    # Only a run waiting for its diff's approval takes one; the spec's wait is another.
    (State.AWAITING_APPROVAL, DIFF, DIFF, None, Refusal.NOT_WAITING_FOR_DIFF_APPROVAL),
    (State.REPAIR, DIFF, DIFF, None, Refusal.NOT_WAITING_FOR_DIFF_APPROVAL),
    (State.AWAITING_DIFF_APPROVAL, DIFF, None, None, Refusal.NOT_WAITING_FOR_DIFF_APPROVAL),
])
def test_decide_approve_diff(state, given, current, outcome, refusal) -> None:
    verdict = decide_signal(run_in(state), approve(given), authorization=ALLOWED,
                            spec_sha256="ab" * 32, has_tree=True, diff_sha256=current)
    assert (verdict.outcome, verdict.refusal) == (outcome, refusal)


def test_an_accepted_diff_approval_is_checkpointed_with_its_hash_and_leads_to_publish() -> None:
    waiting = run_in(State.AWAITING_DIFF_APPROVAL)
    history = [Checkpoint("r1", "verify.1", 1, {}, {
        "tree": "b" * 40, "commit": "c1", "outcome": "diff_approval_needed",
        "diff": {"sha256": DIFF, "base_tree": "a" * 40, "tree": "b" * 40,
                 "paths": [".github/workflows/ci.yml"], "ref": None}})]
    assert diff_to_approve(history).sha256 == DIFF and approved_diff(history) is None
    change, _ = inbox.acceptance(waiting, approve(DIFF[:12]), Outcome.DIFF_APPROVED,
                                 spec_sha256=None, history=history, effects=(),
                                 diff_sha256=DIFF)
    assert (change.state, change.step) == (State.PUBLISH, "publish.1")
    assert change.checkpoint is not None
    assert approved_diff([*history, change.checkpoint]) == DIFF  # the full hash, not the prefix
    assert [e.type for e in change.events] == [
        EventType.SIGNAL_ACCEPTED, EventType.DIFF_APPROVED, EventType.PUBLISH_STARTED]


def test_pushes_lease_against_the_ref_they_move() -> None:
    history = [Checkpoint("r1", "specify.1", 1, {}, {"commit": "spec"}),
               Checkpoint("r1", "verify.1", 1, {}, {"commit": "c1", "ref": "refs/ratchet/x"}),
               Checkpoint("r1", "verify.2", 1, {}, {"commit": "c2", "ref": "refs/ratchet/x"})]
    assert pushed_head(history, None) == "spec"
    assert pushed_head(history, "refs/ratchet/x") == "c2"


def test_approve_diff_is_a_command_with_its_hash() -> None:
    command = parse_command(f"/ratchet approve-diff {DIFF}")
    assert command is not None and command.kind is SignalKind.APPROVE_DIFF
    assert command.payload() == ApproveDiff(hash=DIFF)
    with pytest.raises(CommandError, match="diff's hash"):
        parse_command("/ratchet approve-diff")


def test_a_workflow_push_github_refuses_for_the_apps_permission_says_which() -> None:
    refused = b" ! [remote rejected] c1 -> refs/ratchet/review/r1 (refusing to allow a GitHub" \
              b" App to create or update workflow `.github/workflows/ci.yml` without" \
              b" `workflows` permission)\n"
    request = EffectRequest("r1:verify.1:push", "r1", "verify.1", EffectKind.PUSH,
                            {"branch": "refs/ratchet/review/r1"})
    failure = classify_push_failure(request, GitCommandFailed(
        GitError(("push",), Path("."), 1, stdout=refused)))
    assert isinstance(failure, AuthorityFailure)
    assert "Workflows: write" in str(failure) and "refs/ratchet/review/r1" in str(failure)
