"""GitHub API calls per effect, on the happy path and after a lost acknowledgement.

Each scenario records one run's effects in a real SQLite ledger and sends them with the real
outbox and ``GitHubExecutor`` to the fake GitHub over HTTP (``tests/fakes``); the fake records
every request, and the calls of the measured flush are counted. Token mints are left out (one
per installation per hour, shared by every run). Baseline, per the design: a create is one
write and no lookup; an update is one write (its id from the ledger); a retry after a lost
acknowledgement is one lookup and at most one write.

    .venv/bin/python bench/github_calls.py
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.effects import EffectRequest  # noqa: E402
from runner.errors import StepFailure  # noqa: E402
from runner.names import EffectKind  # noqa: E402
from tests.fakes.conftest import Origin  # noqa: E402
from tests.fakes.fakegithub import faults  # noqa: E402
from tests.github.harness import (  # noqa: E402
    Cost,
    Scene,
    build_origin,
    case_for,
    new_app_key,
    pull_request,
    push,
    standalone_scene,
    tracking,
    verify_check,
)

COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}"
GRAPHQL = "/graphql"
RUN_BRANCH = "ratchet/run-1"

# (scene) -> the request to measure, after sending whatever must exist before it.
Prepare = Callable[[Scene], EffectRequest]


@dataclass(frozen=True)
class Target:
    """The most calls a scenario may cost."""

    lookups: int
    writes: int

    def met(self, cost: Cost) -> bool:
        return len(cost.lookups) <= self.lookups and len(cost.writes) <= self.writes

    def __str__(self) -> str:
        return f"<= {self.lookups} lookup(s) + {self.writes} write(s)"


@dataclass(frozen=True)
class Scenario:
    name: str
    prepare: Prepare
    target: Target  # the happy path's cost, or the retry's after a lost acknowledgement
    lose: tuple[str, str] | None = None  # the write whose answer is lost (None: happy path)
    lose_push: bool = False  # the push lands and git's answer is lost


@dataclass(frozen=True)
class Row:
    scenario: Scenario
    first: Cost  # the first flush (the whole happy path, or the send whose answer was lost)
    retry: Cost | None  # the flush after a lost acknowledgement
    git_pushes: int

    @property
    def measured(self) -> Cost:
        return self.retry if self.retry is not None else self.first

    @property
    def ok(self) -> bool:
        return self.scenario.target.met(self.measured)


def _sent(scene: Scene, *requests: EffectRequest) -> None:
    scene.record(*requests)
    scene.flush()


def _first(kind: EffectKind) -> Prepare:
    return lambda scene: case_for(kind, scene).request


def _tracking_edit(scene: Scene) -> EffectRequest:
    _sent(scene, tracking(scene, 1))
    return tracking(scene, 2)


def _fast_forward(scene: Scene) -> EffectRequest:
    first, commit = push(scene, branch=RUN_BRANCH, expect=None)
    _sent(scene, first)
    return push(scene, branch=RUN_BRANCH, expect=commit, step="verify.1", message="next\n")[0]


def _pull_update(scene: Scene) -> EffectRequest:
    _sent(scene, pull_request(scene, draft=True))
    return pull_request(scene, draft=True, step="specify.2", spec="# Spec\n\nRevised.\n")


def _pull_ready(scene: Scene) -> EffectRequest:
    _sent(scene, pull_request(scene, draft=True))
    return pull_request(scene, draft=False, step="publish.1", summary="Done.")


def _check_update(scene: Scene) -> EffectRequest:
    _sent(scene, verify_check(scene, annotations=3))
    return verify_check(scene, annotations=4, step="verify.2")


ONE_WRITE = Target(0, 1)
RETRY = Target(1, 1)
COMMENTS = ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
SCENARIOS = (
    Scenario("comment: post the tracking comment", _first(EffectKind.COMMENT), ONE_WRITE),
    Scenario("comment: edit it", _tracking_edit, ONE_WRITE),
    Scenario("reply: post", _first(EffectKind.REPLY), ONE_WRITE),
    Scenario("reaction: add", _first(EffectKind.REACTION), ONE_WRITE),
    Scenario("push: create the branch (git push)", _first(EffectKind.PUSH), Target(0, 0)),
    Scenario("push: fast-forward (git push)", _fast_forward, Target(0, 0)),
    Scenario("pull_request: open as draft", _first(EffectKind.PULL_REQUEST), ONE_WRITE),
    Scenario("pull_request: update", _pull_update, ONE_WRITE),
    Scenario("pull_request: update and mark ready", _pull_ready, Target(0, 2)),
    Scenario("check_run: create (3 annotations)", _first(EffectKind.CHECK_RUN), ONE_WRITE),
    Scenario(
        "check_run: create (120 annotations)",
        lambda scene: verify_check(scene, annotations=120),
        Target(0, 3),
    ),
    Scenario("check_run: update (1 new annotation)", _check_update, ONE_WRITE),
    Scenario("comment: post, answer lost", _first(EffectKind.COMMENT), RETRY, lose=COMMENTS),
    Scenario("comment: edit, answer lost", _tracking_edit, RETRY, lose=("PATCH", COMMENT)),
    Scenario("reply: post, answer lost", _first(EffectKind.REPLY), RETRY, lose=COMMENTS),
    Scenario(
        "reaction: add, answer lost",
        _first(EffectKind.REACTION),
        RETRY,
        lose=("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ),
    Scenario("push: git's answer lost", _first(EffectKind.PUSH), RETRY, lose_push=True),
    Scenario(
        "pull_request: open, answer lost",
        _first(EffectKind.PULL_REQUEST),
        RETRY,
        lose=("POST", "/repos/{owner}/{repo}/pulls"),
    ),
    Scenario("pull_request: mark ready, answer lost", _pull_ready, RETRY, lose=("POST", GRAPHQL)),
    Scenario(
        "check_run: create, answer lost",
        _first(EffectKind.CHECK_RUN),
        RETRY,
        lose=("POST", "/repos/{owner}/{repo}/check-runs"),
    ),
)


def run_scenario(scenario: Scenario, root: Path, *, key: bytes, template: Origin) -> Row:
    with standalone_scene(root, key=key, template=template) as scene:
        scene.client.installation_token(77)  # mint up front: credentials are not an effect
        request = scenario.prepare(scene)
        pushes_before = scene.worktrees.pushes
        if scenario.lose is not None:
            scene.fake.inject(*scenario.lose, faults.drop_after_apply())
        if scenario.lose_push:
            scene.worktrees.drop_pushes = 1
        scene.record(request)
        since = scene.mark()
        retry = None
        try:
            scene.flush()
        except StepFailure:
            first = scene.cost(since)
            since = scene.mark()
            scene.flush()
            retry = scene.cost(since)
        else:
            first = scene.cost(since)
        assert not scene.pending(), f"{scenario.name}: the effect was not confirmed"
        return Row(scenario, first, retry, scene.worktrees.pushes - pushes_before)


def measure(root: Path) -> list[Row]:
    """Every scenario, each in a fresh world under ``root``."""
    key = new_app_key()
    (root / "template").mkdir(parents=True)
    template = build_origin(root / "template")
    rows = []
    for n, scenario in enumerate(SCENARIOS):
        world = root / f"scenario-{n}"
        world.mkdir()
        rows.append(run_scenario(scenario, world, key=key, template=template))
    return rows


def _calls(cost: Cost) -> str:
    return f"{len(cost.lookups)} lookup + {len(cost.writes)} write"


def report(rows: list[Row]) -> str:
    lines = ["GitHub API calls per effect (fake GitHub over HTTP; token mints not counted)", ""]
    lines.append(f"{'happy path':44} {'calls':20} {'git':5} {'target':34} ok")
    for row in rows:
        if row.retry is None:
            lines.append(
                f"{row.scenario.name:44} {_calls(row.first):20} "
                f"{row.git_pushes:<5} {row.scenario.target!s:34} "
                f"{'yes' if row.ok else 'NO'}"
            )
    lines += [
        "",
        f"{'after a lost acknowledgement':44} {'first send':20} {'retry':20} "
        f"{'target (retry)':34} ok",
    ]
    for row in rows:
        if row.retry is not None:
            lines.append(
                f"{row.scenario.name:44} {_calls(row.first):20} {_calls(row.retry):20} "
                f"{row.scenario.target!s:34} {'yes' if row.ok else 'NO'}"
            )
    met = sum(row.ok for row in rows)
    lines += ["", f"{met}/{len(rows)} scenarios within target"]
    return "\n".join(lines)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ratchet-github-calls-") as scratch:
        rows = measure(Path(scratch))
    print(report(rows))
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
