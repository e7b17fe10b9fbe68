"""Check runs, upserted by ``external_id`` on a head: created with the first 50 annotations,
then PATCHed with each further 50 (GitHub's limit per request; they accumulate).

``plan_check_run`` decides every request body from the payload (pure): the fields, the output
rendered from the payload's data (``runner.checkruns.render_check_run``: the spec's request for
approval, the verification's evidence; summary and text within 65,535 characters, the text
ending with the effect's hidden key marker), the action buttons within GitHub's limits, and
which annotations this effect adds.
Annotations accumulate across updates and cannot be removed, so an effect that updates a check
run an earlier effect created sends only the annotations that earlier effects did not.

``CheckRuns`` sends them. A new check run costs one POST (plus one PATCH per further batch of
50); an update of a recorded one costs one PATCH per batch, its id read from the ledger. A
lookup (``GET commits/{sha}/check-runs?check_name=``, matched on ``external_id``) tells whether
this effect landed (its key marker and its annotation count), and a retry sends only the
batches that did not land.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.checkruns import check_run_annotations, render_check_run
from runner.effects import EffectRequest
from runner.names import EffectKind
from runner.render import Vocabulary, key_marker
from verification.evidence import fit

from .ledgerview import ConfirmedEffects
from .repository import RepoAPI

log = logging.getLogger(__name__)

CHECK_RUNS = "/repos/{owner}/{repo}/check-runs"
CHECK_RUN = "/repos/{owner}/{repo}/check-runs/{check_run_id}"
RUNS_FOR_REF = "/repos/{owner}/{repo}/commits/{ref}/check-runs{?check_name,filter,per_page}"

# GitHub's limits (https://docs.github.com/rest/checks/runs#create-a-check-run):
TEXT_LIMIT = 65_535  # characters of output.summary and output.text
ANNOTATIONS_PER_REQUEST = 50  # annotations in one create or update
ANNOTATION_TITLE_LIMIT = 255  # characters of an annotation's title
MAX_ACTIONS = 3  # action buttons on one check run
ACTION_LIMITS = {"label": 20, "description": 40, "identifier": 20}  # characters per field


@dataclass(frozen=True)
class CheckRunPlan:
    """Every request body of one check-run effect (see ``plan_check_run``)."""

    head_sha: str
    external_id: str
    fields: dict[str, Any]  # name, external_id, conclusion, details_url, actions
    output: dict[str, Any]  # title, summary, text (the text carries the key marker)
    annotations: list[dict[str, Any]] = field(default_factory=list)  # added by this effect
    before: int = 0  # annotations earlier effects added to the same check run

    @property
    def total(self) -> int:
        """Annotations the check run holds once this effect has landed."""
        return self.before + len(self.annotations)

    def batches(self, landed: int = 0) -> list[list[dict[str, Any]]]:
        """This effect's annotations after the first ``landed``, in request-sized batches;
        always at least one (empty) batch, so there is a request to carry the output."""
        rest = self.annotations[landed:]
        chunks = [
            rest[i : i + ANNOTATIONS_PER_REQUEST]
            for i in range(0, len(rest), ANNOTATIONS_PER_REQUEST)
        ]
        return chunks or [[]]

    def output_with(self, batch: list[dict[str, Any]]) -> dict[str, Any]:
        return {**self.output, "annotations": batch} if batch else dict(self.output)


def plan_check_run(
    request: EffectRequest,
    words: Vocabulary,
    *,
    details_url: str | None,
    earlier: Sequence[Mapping[str, Any]] = (),
) -> CheckRunPlan:
    """The requests for ``request``; ``earlier`` are the payloads of confirmed effects on the
    same ``external_id``, oldest first (their annotations are on GitHub already)."""
    payload = request.payload
    fields: dict[str, Any] = {
        "name": payload["name"],
        "external_id": payload["external_id"],
        "conclusion": payload["conclusion"],
    }
    if details_url:
        fields["details_url"] = details_url
    if payload.get("actions"):
        fields["actions"] = [_action(a) for a in payload["actions"][:MAX_ACTIONS]]
    shown = render_check_run(payload, words, limit=TEXT_LIMIT)
    marker = key_marker(request.key)
    room = TEXT_LIMIT - len(marker) - 2
    output_fields = {
        "title": shown.title,
        "summary": fit(shown.summary, TEXT_LIMIT),
        "text": f"{fit(shown.text, room)}\n\n{marker}" if shown.text else marker,
    }
    sent: set[tuple[Any, ...]] = set()
    for previous in earlier:
        sent.update(_signature(a) for a in _annotations(check_run_annotations(previous)))
    before = len(sent)
    fresh = []
    for annotation in _annotations(shown.annotations):
        if _signature(annotation) not in sent:
            sent.add(_signature(annotation))
            fresh.append(annotation)
    return CheckRunPlan(
        payload["head_sha"], payload["external_id"], fields, output_fields, fresh, before
    )


def _annotations(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Annotations in GitHub's shape (the runner records ``level``)."""
    found = []
    for item in items:
        annotation = {
            "path": item["path"],
            "start_line": item["start_line"],
            "end_line": item["end_line"],
            "annotation_level": item.get("annotation_level") or item.get("level") or "failure",
            "message": item["message"],
        }
        if item.get("title"):
            annotation["title"] = str(item["title"])[:ANNOTATION_TITLE_LIMIT]
        found.append(annotation)
    return found


def _signature(annotation: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted(annotation.items()))


def _action(action: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(action[name])[:limit] for name, limit in ACTION_LIMITS.items()}


def _identity(check_run: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "check_run_id": check_run["id"],
        "external_id": check_run.get("external_id"),
        "head_sha": check_run["head_sha"],
        "url": check_run.get("html_url"),
    }


class CheckRuns:
    """Check runs of one repository, upserted by ``external_id``."""

    def __init__(
        self, api: RepoAPI, words: Vocabulary, *, history: ConfirmedEffects, details_url: str | None
    ) -> None:
        self.api = api
        self.words = words
        self.history = history
        self.details_url = details_url
        # external_id -> (check run id, annotations it holds), as a lookup saw it.
        self._seen: dict[str, tuple[int, int]] = {}

    def apply(self, request: EffectRequest) -> dict[str, Any]:
        plan = self._plan(request)
        seen = self._seen.pop(plan.external_id, None)
        recorded = self.history.latest(EffectKind.CHECK_RUN, external_id=plan.external_id)
        if seen is not None:
            check_id, landed = seen[0], max(seen[1] - plan.before, 0)
        elif recorded is not None:
            check_id, landed = int(recorded["check_run_id"]), 0
        else:
            batches = plan.batches()
            current = self.api.post(
                CHECK_RUNS,
                {**plan.fields, "head_sha": plan.head_sha, "output": plan.output_with(batches[0])},
            )
            return self._send_rest(plan, current, batches[1:])
        batches = plan.batches(landed)
        current = self.api.patch(
            CHECK_RUN,
            {**plan.fields, "output": plan.output_with(batches[0])},
            check_run_id=check_id,
        )
        return self._send_rest(plan, current, batches[1:])

    def find(self, request: EffectRequest) -> dict[str, Any] | None:
        plan = self._plan(request)
        runs = self.api.getiter(
            RUNS_FOR_REF,
            iterable_key="check_runs",
            ref=plan.head_sha,
            check_name=plan.fields["name"],
            filter="all",
        )
        mine = [run for run in runs if run.get("external_id") == plan.external_id]
        if not mine:
            return None
        check_run = max(mine, key=lambda run: run["id"])
        output = check_run.get("output") or {}
        count = int(output.get("annotations_count") or 0)
        if key_marker(request.key) in (output.get("text") or "") and count >= plan.total:
            return _identity(check_run)
        self._seen[plan.external_id] = (check_run["id"], count)  # the apply that follows resumes
        return None

    def _send_rest(
        self, plan: CheckRunPlan, current: dict[str, Any], batches: list[list[dict[str, Any]]]
    ) -> dict[str, Any]:
        """PATCH each further batch of annotations onto the check run (they accumulate)."""
        for batch in batches:
            current = self.api.patch(
                CHECK_RUN, {"output": plan.output_with(batch)}, check_run_id=current["id"]
            )
        return _identity(current)

    def _plan(self, request: EffectRequest) -> CheckRunPlan:
        earlier = [
            e.payload
            for e in self.history.of(
                EffectKind.CHECK_RUN, external_id=request.payload["external_id"]
            )
            if e.key != request.key
        ]
        return plan_check_run(request, self.words, details_url=self.details_url, earlier=earlier)
