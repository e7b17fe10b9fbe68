"""`ratchet verify`: plan and run the checks a change calls for, and report the evidence.

Exit status: 0 when every planned check passed (or nothing was planned), 1 when any did not,
2 for usage or configuration errors (the message goes to stderr). Progress goes to stderr; the
result (human lines, or one JSON object with `--json`) goes to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from verification.changes import (
    ChangesError,
    changed_files,
    checkout,
    default_base,
    diff_stat,
    repository_root,
    resolve_revision,
)
from verification.config import CONFIG_PATH, ConfigError, RepositoryConfig, parse_repository_config
from verification.evidence import EvidenceBundle, build_bundle, render_markdown
from verification.execute import CheckResult, execute_plan
from verification.plan import Plan, Tree, build_plan
from verification.tree import GitRevisionTree, GitTree, TreeError

# Exit statuses of `ratchet verify`.
EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

EXAMPLES = """\
examples:
  ratchet verify                          check the working tree against the default branch
  ratchet verify --plan-only --json       print the plan, run nothing
  ratchet verify --base main --head HEAD  check the commits on this branch
  ratchet verify --bundle out/            also write plan.json, result.json, logs, summary.md
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
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument(
        "--bundle", type=Path, help="write plan.json, result.json, logs and summary.md here"
    )


def run_verify(args: argparse.Namespace) -> int:
    """Run `ratchet verify` with parsed arguments; return the exit status."""
    try:
        repo = repository_root(args.repo)
        base = resolve_revision(repo, args.base) if args.base else default_base(repo)
        head = resolve_revision(repo, args.head) if args.head else None
        changed = changed_files(repo, base, head)
        tree: Tree = GitRevisionTree(repo, head) if head else GitTree(repo)
        config = _read_config(tree)
        plan = build_plan(changed, tree, config.verify)
    except (ChangesError, ConfigError, TreeError) as exc:
        print(f"ratchet verify: {exc}", file=sys.stderr)
        return EXIT_USAGE
    _progress(
        f"{len(changed)} changed files; {len(plan.checks)} checks planned ({plan.sha256[:12]})"
    )

    if args.plan_only:
        if args.json:
            print(json.dumps({"plan": _plan_json(plan)}, sort_keys=True))
        else:
            for check in plan.checks:
                print(f"{check.key}\t{check.kind}\t{check.command}")
        return EXIT_PASSED

    workdir = checkout(repo, head) if head else contextlib.nullcontext(repo)
    with workdir as root:
        results = execute_plan(plan, root, on_result=_Progress(len(plan.checks)))
        bundle = build_bundle(plan, results, diff_stat=diff_stat(repo, base, head), root=str(root))
    if args.bundle is not None:
        bundle = _write_bundle(args.bundle, bundle)
    if args.json:
        print(json.dumps(_result_json(bundle), sort_keys=True))
    else:
        for result in bundle.results:
            print(f"{result.status:<9} {result.key} ({result.duration_s:.1f}s)")
        print(f"conclusion: {bundle.conclusion}")
    return EXIT_PASSED if bundle.conclusion == "success" else EXIT_FAILED


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


def _read_config(tree: Tree) -> RepositoryConfig:
    text = tree.read_text(CONFIG_PATH)
    return parse_repository_config(text) if text else RepositoryConfig()


def _plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "hash": plan.sha256,
        "checks": [
            {"id": c.id, "workspace": c.workspace, "kind": c.kind, "command": c.command}
            for c in plan.checks
        ],
    }


def _result_json(bundle: EvidenceBundle) -> dict[str, Any]:
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
            }
            for r in bundle.results
        ],
        "conclusion": bundle.conclusion,
    }


def _write_bundle(folder: Path, bundle: EvidenceBundle) -> EvidenceBundle:
    """Write the bundle's files; return it with the written logs' hashes as artifacts."""
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
    (folder / "summary.md").write_text(render_markdown(bundle), encoding="utf-8")
    return bundle
