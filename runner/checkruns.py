"""The check runs a run decides: their names, the ``external_id`` that finds them again, the
verification's payload, and the output every executor renders from a payload.

A check run is upserted by ``external_id`` on a head commit: ``<run>:<name>:<head>``, and the
spec's ``<run>:<name>:<head>:<spec hash prefix>`` (its "Approve spec" button approves exactly
that spec; a verification waiting for its diff's approval carries the diff hash's prefix
there, for its "Approve diff" button). ``CheckRunId`` writes one (``str``) and reads one back
(``parse``): the executors match check runs on it, the webhook router learns from it which run
and spec (or diff) a button names.

Payloads hold data, never forge wording: the verification's carries its evidence
(``verification/evidence.py``'s report). Executors render it where the forge lives
(``render_check_run``): GitHub within its limits and its annotation batches
(``github/checkruns.py``), the local sink the same text into the run's outbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.neutralise import strip_controls
from runner.render import CheckRunText, Vocabulary, render_diff_request, render_spec_check
from verification.evidence import (
    EvidenceReport,
    fit,
    render_failures,
    render_summary,
    render_title,
)

SPEC_CHECK = "ratchet/spec"
VERIFY_CHECK = "ratchet/verify"
# How much of the spec's hash a spec check run's external_id carries.
SPEC_PREFIX = 12


@dataclass(frozen=True)
class CheckRunId:
    """What a check run's ``external_id`` says: the run (or, for the Action's verify mode,
    ``ratchet-action``: one check run per head, whichever job made it), the check run's name,
    its head commit and, on the spec's, the approved spec's hash prefix."""

    run_id: str
    name: str
    head_sha: str
    spec: str = ""

    @classmethod
    def for_spec(cls, run_id: str, head_sha: str, spec_sha256: str) -> CheckRunId:
        return cls(run_id, SPEC_CHECK, head_sha, spec_sha256[:SPEC_PREFIX])

    @classmethod
    def parse(cls, external_id: str) -> CheckRunId | None:
        """The parts of an ``external_id`` Ratchet wrote; None when it names no run."""
        run_id, _, rest = external_id.partition(":")
        if not rest:
            return None
        name, _, rest = rest.partition(":")
        head_sha, _, spec = rest.partition(":")
        return cls(run_id, name, head_sha, spec)

    def __str__(self) -> str:
        parts = (self.run_id, self.name, self.head_sha, *((self.spec,) if self.spec else ()))
        return ":".join(parts)


def verify_check(run_id: str, check_run: CheckRunId, evidence: EvidenceReport) -> dict[str, Any]:
    """The payload of a verification's check run effect: its evidence as data, which each
    executor renders (``render_check_run``)."""
    return {
        "run": run_id, "name": check_run.name, "head_sha": check_run.head_sha,
        "external_id": str(check_run), "conclusion": evidence.conclusion,
        # Without controls before the payload is redacted: a secret a check printed split by
        # an escape sequence is masked whole, never joined when the check run is shown.
        "evidence": _without_controls(evidence.to_dict()),
    }


def diff_request(payload: Mapping[str, Any], diff: Mapping[str, Any], *,
                 awaiting: bool) -> dict[str, Any]:
    """A verification's payload that also shows the diff a writer must approve (its full hash,
    the protected paths it touches); ``awaiting``: it passed and waits for that approval, so it
    concludes ``action_required`` with an "Approve diff" button naming the hash's prefix (in
    its ``external_id``)."""
    shown = {"sha256": diff["sha256"], "paths": list(diff.get("paths") or ()),
             "ref": diff.get("ref")}
    if not awaiting:
        return {**payload, "diff": shown}
    return {**payload, "diff": shown, "conclusion": "action_required",
            "actions": [{"identifier": "approve-diff", "label": "Approve diff",
                         "description": f"Approve diff {diff['sha256'][:12]}"}]}


def render_check_run(payload: Mapping[str, Any], words: Vocabulary, *,
                     limit: int) -> CheckRunText:
    """A check run's output from its effect's payload, the summary and the verification's text
    within ``limit`` UTF-8 bytes (the forge's limit): the spec's asks for approval, the
    verification's shows its evidence (``EvidenceReport``).

    An effect recorded before evidence travelled as data holds its output already rendered
    (title, summary, text, annotations in batches): it is shown as recorded, so an unsent
    effect of an older ledger is still sent.

    What checks printed (log tails, test messages, paths) is shown in code, and without the
    control and bidi characters that would make it read differently from what it holds.
    """
    if "review" in payload:
        return render_spec_check(payload, words)
    if "evidence" in payload:
        report = EvidenceReport.from_dict(payload["evidence"])
        title, summary = render_title(report), render_summary(report)
        if payload.get("diff"):
            asked, request = render_diff_request(payload, words)
            if payload.get("conclusion") == "action_required" or payload["diff"].get(
                    "approved"):
                title = asked
            summary = f"{request}\n\n{summary}"
        shown = CheckRunText(title, fit(summary, limit), render_failures(report, limit=limit),
                             check_run_annotations(payload))
    else:
        output = payload.get("output") or {}
        shown = CheckRunText(str(output.get("title") or payload["name"]),
                             fit(str(output.get("summary") or ""), limit),
                             str(output.get("text") or ""), check_run_annotations(payload))
    return CheckRunText(strip_controls(shown.title), strip_controls(shown.summary),
                        strip_controls(shown.text), shown.annotations)


def _without_controls(value: Any) -> Any:
    if isinstance(value, str):
        return strip_controls(value)
    if isinstance(value, Mapping):
        return {key: _without_controls(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_controls(item) for item in value]
    return value


def check_run_annotations(payload: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The annotations a check run effect adds: its evidence's, or the batches an older
    effect recorded, flattened; their text without control and bidi characters."""
    if "evidence" in payload:
        found = tuple(payload["evidence"].get("annotations") or ())
    else:
        batches = (payload.get("output") or {}).get("annotation_batches") or []
        found = tuple(item for batch in batches for item in batch)
    return tuple({name: strip_controls(value) if isinstance(value, str) else value
                  for name, value in item.items()} for item in found)
