"""The check runs a run decides: their names, and the ``external_id`` that finds them again.

A check run is upserted by ``external_id`` on a head commit: ``<run>:<name>:<head>``, and the
spec's ``<run>:<name>:<head>:<spec hash prefix>`` (its "Approve spec" button approves exactly
that spec). ``CheckRunId`` writes one (``str``) and reads one back (``parse``): the executors
match check runs on it, the webhook router learns from it which run and spec a button names.
"""

from __future__ import annotations

from dataclasses import dataclass

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

