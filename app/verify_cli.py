"""`ratchet verify`: plan and run the checks a change calls for, and report the evidence.

Exit statuses (named below): 0 when every planned check passed, or only documentation and
paths in `verify.ignore` changed; 1 when a check did not pass; 2 for a usage, configuration or
execution error (one line on stderr, nothing left behind); 3 when nothing verifies the change
(conclusion `neutral`: a change that needs verifying and no check covers it). `--plan-only` and
`--explain` run nothing and exit 0, 2 or 3 the same way. Progress goes to stderr; the result
(human lines, or one JSON object with `--json`) goes to stdout. A check that did not pass is
shown with its failing tests (from its JUnit report, else read from its output:
`verification/test_failures.py`) and the tail of its log.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plumbing.git import Git, GitError
from verification.config import CONFIG_PATH, ConfigError, read_verify_config
from verification.revisions import (
    RevisionError,
    WorkTreeListing,
    default_base,
    merge_base,
    open_repository,
    resolve_revision,
    start_change,
)
from verification.tree import TreeError

# Running checks (the sandbox, the egress proxy, the evidence) loads only when checks run:
# `--plan-only` and `--explain` start in a fraction of the time (`main`). The planner itself
# loads while git lists the tree (`_plan`).
if TYPE_CHECKING:
    from runner.network import NetworkSettings
    from runner.sandbox import Sandbox
    from verification.evidence import CheckEvidence, EvidenceBundle
    from verification.execute import CheckResult
    from verification.pipeline import Verification
    from verification.plan import Plan, PlanResult

# Exit statuses of `ratchet verify`.
EXIT_PASSED = 0  # every planned check passed, or nothing needed checking
EXIT_FAILED = 1  # a check failed, timed out, or could not run (its setup failed)
EXIT_USAGE = 2  # usage, configuration or execution error: nothing was verified
EXIT_UNVERIFIED = 3  # nothing verifies this change (conclusion neutral)

VERIFY_HELP = "run the deterministic verification plan"
# What the text output shows of a failing check: its first failing tests, its log's last lines.
TEXT_TESTS_SHOWN = 10
TEXT_TAIL_LINES = 20

EXAMPLES = """\
examples:
  ratchet verify                          check the working tree against the default branch
  ratchet verify --plan-only --json       print the plan, run nothing
  ratchet verify --explain                why each check is planned, what covers each file
  ratchet verify --base main --head HEAD  check the commits on this branch
  ratchet verify --bundle out/            also write plan.json, result.json, logs, summary.md

exit status:
  0  verified: every planned check passed (or only docs / verify.ignore paths changed)
  1  a check did not pass
  2  usage, configuration or execution error
  3  nothing verifies this change: add a check or list the paths in verify.ignore
"""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the `ratchet verify` options to `parser`."""
    parser.description = parser.description or __doc__.splitlines()[0]
    parser.epilog = parser.epilog or EXAMPLES
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--repo", type=Path, default=Path("."), help="repository (default: .)")
    parser.add_argument(
        "--base", help="base revision (default: merge base with origin/HEAD, main or master)"
    )
    parser.add_argument("--head", help="head revision (default: the working tree, uncommitted too)")
    parser.add_argument("--plan-only", action="store_true", help="print the plan, run nothing")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="print why each check is planned and which checks cover each changed file; "
        "run nothing",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument(
        "--bundle", type=Path, help="write plan.json, result.json, logs and summary.md here"
    )


def main(argv: Sequence[str]) -> int:
    """``ratchet [-v] verify ...`` on its own (``app.entry``): the operator's settings (the
    sandbox, the network, RATCHET_CHECK_ENV) load only once there are checks to run, so
    planning never pays for them."""
    parser = argparse.ArgumentParser(prog="ratchet")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    configure_parser(sub.add_parser("verify", help=VERIFY_HELP))
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr,
    )
    planned = _plan(args)
    if isinstance(planned, int):
        return planned
    from app.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"ratchet: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _run(args, planned, settings.sandbox_policy(), settings.network_settings(),
                settings.check_env_names)


def run_verify(args: argparse.Namespace, sandbox: Sandbox, network: NetworkSettings,
               allowed_env: Collection[str] = ()) -> int:
    """Run `ratchet verify` with parsed arguments; return the exit status.

    Checks run in ``sandbox`` (the repository's code is untrusted: a pull request's, in CI),
    reaching what ``verify.network`` lists within the operator's ``network`` settings.
    An empty plan creates no worktree; every error is one line on stderr and status 2.
    """
    planned = _plan(args)
    if isinstance(planned, int):
        return planned
    return _run(args, planned, sandbox, network, allowed_env)


def _plan(args: argparse.Namespace) -> Verification | int:
    """The verification `args` ask for, or the exit status when that is all they ask for
    (`--plan-only`, `--explain`) or planning failed."""
    try:
        repo = open_repository(args.repo)
        head = resolve_revision(repo, args.head) if args.head else None
        # git lists the work tree and diffs it while the base is found, the config read and
        # the planner loaded: on a large tree those two walks are most of the time.
        with contextlib.ExitStack() as started:
            listing = None if head else started.enter_context(WorkTreeListing(repo))
            start = _start(repo, args.base, head)
            pending = started.enter_context(start_change(repo, start, head, listing=listing))
            # At the base, like a run's: a change cannot choose the checks that verify it.
            # Only the verify section: the rest of the file is the runner's, read by a run.
            config = read_verify_config(repo, start)
            from verification.pipeline import Candidate, plan_verification

            changed, paths = pending.result()
        candidate = Candidate(repo, start, head, tuple(changed), listing=paths)
        verification = plan_verification(candidate, config)
    except (RevisionError, ConfigError, TreeError, GitError) as exc:
        return _error(exc)
    plan = verification.plan
    if CONFIG_PATH in candidate.changed:
        _progress(f"this change edits {CONFIG_PATH}; the checks come from the base's "
                  f"({candidate.start[:12]}): the change's applies once it is on the base branch")
    _progress(
        f"{len(candidate.changed)} changed files; {len(plan.checks)} checks planned"
        f" ({plan.sha256[:12]})"
    )
    planned_status = EXIT_UNVERIFIED if plan.nothing_verifies else EXIT_PASSED
    if args.explain:
        _print_explanation(verification.planned, as_json=args.json)
        return planned_status
    if args.plan_only:
        if args.json:
            print(json.dumps({"plan": _plan_json(plan)}, sort_keys=True))
        else:
            for check in plan.checks:
                print(f"{check.key}\t{check.kind}\t{check.command}")
        _note_unverified(plan)
        return planned_status
    return verification


def _start(repo: Git, base: str | None, head: str | None) -> str:
    """The commit the change starts from: the merge base of the base and the head."""
    if base is None and head is None:
        return default_base(repo)  # the merge base with HEAD already
    return merge_base(repo, resolve_revision(repo, base) if base else default_base(repo), head)


def _run(args: argparse.Namespace, verification: Verification, sandbox: Sandbox,
         network: NetworkSettings, allowed_env: Collection[str]) -> int:
    from runner.sandbox import SandboxUnavailable

    plan = verification.plan
    try:
        bundle = run_checks(verification, sandbox, network, allowed_env)
        if args.bundle is not None:
            bundle = write_bundle(args.bundle, bundle)
    except (RevisionError, GitError, SandboxUnavailable, OSError) as exc:
        return _error(exc)
    failing = _failing_evidence(bundle)
    if args.json:
        print(json.dumps(_result_json(bundle, failing), sort_keys=True))
    else:
        for check_result in bundle.results:
            print(f"{check_result.status:<9} {check_result.key} ({check_result.duration_s:.1f}s)")
            if check_result.key in failing:
                sys.stdout.write(_failure_text(failing[check_result.key]))
        print(f"conclusion: {bundle.conclusion}")
    _note_unverified(plan)
    if bundle.conclusion == "neutral":
        return EXIT_UNVERIFIED
    return EXIT_PASSED if bundle.conclusion == "success" else EXIT_FAILED


def run_checks(verification: Verification, sandbox: Sandbox,
               network: NetworkSettings, allowed_env: Collection[str] = (), *,
               untrusted: bool = False) -> EvidenceBundle:
    """Run a planned verification as `ratchet verify` does: checks get PATH and the locale of
    this process's environment, and of what the repository's verify.env asks for, what
    ``allowed_env`` (RATCHET_CHECK_ENV) allows; one progress line on stderr per finished check;
    the network through an egress proxy (a blocked connection is a line in its check's log).
    ``untrusted`` code (a pull request's head on ``pull_request_target``) gets no
    ``verify.env`` variable at all."""
    from runner.egress import egress

    policy = network.for_checks(verification.config.network) if sandbox.confined else None
    with egress(policy, label="verify") as proxy:
        return verification.run(sandbox, host_env=os.environ, allowed_env=allowed_env,
                                on_result=_Progress(len(verification.plan.checks)),
                                network=proxy.endpoint if proxy else None,
                                untrusted=untrusted)


def _error(exc: BaseException) -> int:
    """Report an error as one line on stderr (git's messages span lines) and return 2."""
    message = " ".join(str(exc).split())
    print(f"ratchet verify: {message}", file=sys.stderr)
    return EXIT_USAGE


def _note_unverified(plan: Plan) -> None:
    if plan.nothing_verifies:
        shown = ", ".join(plan.unverified[:10]) + (" ..." if len(plan.unverified) > 10 else "")
        _progress(
            f"nothing verifies this change ({shown}); add a check in {CONFIG_PATH} or list "
            "the paths in verify.ignore"
        )


def _print_explanation(result: PlanResult, *, as_json: bool) -> None:
    from verification.explain import render_text

    if as_json:
        print(json.dumps(result.explanation.to_dict(), sort_keys=True))
    else:
        sys.stdout.write(render_text(result.explanation))


class _Progress:
    """Prints one stderr line per finished check."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0

    def __call__(self, result: CheckResult) -> None:
        self.done += 1
        reused = ", reused" if result.reused else ""
        _progress(
            f"[{self.done}/{self.total}] {result.status} {result.key} "
            f"({result.duration_s:.1f}s{reused})"
        )


def _progress(message: str) -> None:
    print(f"ratchet verify: {message}", file=sys.stderr, flush=True)


def _plan_json(plan: Plan) -> dict[str, Any]:
    """The plan as `--plan-only --json` prints it: the checks, the setups they wait for, the
    order they run in (stages; anything within one may run at once), the changed files
    nothing verifies and the CI steps not run here."""
    from verification.explain import run_order, setup_json

    return {
        "hash": plan.sha256,
        "checks": [
            {"id": c.id, "workspace": c.workspace, "kind": c.kind, "command": c.command,
             # The graph: the setups and checks that pass before it starts.
             "needs": {"setup": list(c.setups), "checks": list(c.needs)}}
            for c in plan.checks
        ],
        "setup": setup_json(plan),
        "order": run_order(plan),
        "unverified": list(plan.unverified),
        "unverified_steps": [step.to_dict() for step in plan.unverified_steps],
    }


def _failing_evidence(bundle: EvidenceBundle) -> dict[str, CheckEvidence]:
    """What is shown of each check that did not pass (its failing tests, its log's tail),
    by key; the evidence module loads only when one did not."""
    if all(result.passed for result in bundle.results):
        return {}
    from verification.evidence import CheckEvidence

    return {result.key: CheckEvidence.from_result(result, root=bundle.root)
            for result in bundle.results if not result.passed}


def _failure_text(shown: CheckEvidence) -> str:
    """A failing check's tests (name, where, the message's first line) and its log's last
    ``TEXT_TAIL_LINES`` lines, indented under its result line, without what would act on a
    terminal."""
    from verification.evidence import failed_test_name

    lines = []
    for case in shown.failed_tests[:TEXT_TESTS_SHOWN]:
        where = f" ({case.file}:{case.line})" if case.file and case.line else (
            f" ({case.file})" if case.file else "")
        first = case.message.splitlines()[0] if case.message else ""
        lines.append(f"  FAILED {failed_test_name(case)}{where}{f': {first}' if first else ''}")
    if (more := shown.failing_count - min(len(shown.failed_tests), TEXT_TESTS_SHOWN)) > 0:
        lines.append(f"  ... and {more} more failing tests (--json, or the bundle's summary.md)")
    tail = shown.log_tail.splitlines()[-TEXT_TAIL_LINES:]
    if tail:
        lines.append(f"  last {len(tail)} lines of its log:")
        lines += [f"  | {line}" for line in tail]
    return "".join(f"{_printable(line)}\n" for line in lines)


def _printable(line: str) -> str:
    from runner.neutralise import escape_controls, strip_controls

    return escape_controls(strip_controls(line))


def _result_json(bundle: EvidenceBundle, failing: dict[str, CheckEvidence]) -> dict[str, Any]:
    return {
        "plan": _plan_json(bundle.plan),
        "results": [
            {
                "id": r.id,
                "workspace": r.workspace,
                "status": r.status,
                "exit_code": r.exit_code,
                "duration_s": r.duration_s,
                "log_sha256": r.log_sha256,
                **({"reason": r.reason} if r.reason else {}),
                **(_failure_json(failing[r.key]) if r.key in failing else {}),
            }
            for r in bundle.results
        ],
        "conclusion": bundle.conclusion,
        **({"reason": bundle.reason, "unverified": list(bundle.plan.unverified)}
           if bundle.reason else {}),
    }


def _failure_json(shown: CheckEvidence) -> dict[str, Any]:
    from verification.evidence import failed_test_name

    return {"failed_tests": [{"name": failed_test_name(case), "file": case.file,
                              "line": case.line, "message": case.message}
                             for case in shown.failed_tests],
            "log_tail": shown.log_tail}


def write_bundle(folder: Path, bundle: EvidenceBundle) -> EvidenceBundle:
    """Write the bundle's files; return it with the written logs' hashes as artifacts."""
    import hashlib

    from verification.evidence import EvidenceReport, build_bundle, render_markdown

    folder.mkdir(parents=True, exist_ok=True)
    artifacts: dict[str, str] = {}
    by_key = {check.key: check for check in bundle.plan.checks}
    for result in bundle.results:
        name = f"{by_key[result.key].log_name}.log"
        data = result.log.encode("utf-8")
        (folder / name).write_bytes(data)
        artifacts[name] = hashlib.sha256(data).hexdigest()
    bundle = build_bundle(
        bundle.plan,
        bundle.results,
        diff_stat=bundle.diff_stat,
        artifacts=artifacts,
        root=bundle.root,
    )
    (folder / "plan.json").write_text(bundle.plan.to_json() + "\n", encoding="utf-8")
    (folder / "result.json").write_text(bundle.to_json() + "\n", encoding="utf-8")
    (folder / "summary.md").write_text(render_markdown(EvidenceReport.from_bundle(bundle)),
                                       encoding="utf-8")
    return bundle
