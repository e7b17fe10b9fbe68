"""The plan as data: checks, workspaces with their setup, canonical JSON and its sha256.

Pure. The JSON is canonical (sorted keys, no insignificant whitespace, ASCII), so the same plan
always has the same hash. Fields added after the first version (`locations`, `unverified`,
`unverified_steps`, a workspace's `uses`, a check's `needs` and `writes`) appear only when
set: a plan that does not need them keeps the hash it always had.

The checks form a graph: a check's `needs` are the setups (install roots' and its own
workspace's) and the checks (a dependency's build) that must pass before it starts, and its
`writes` the folders its outputs go below, which no other check writing an overlapping folder
may touch at the same time (`execute.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, quote_from_bytes, unquote_to_bytes

from plumbing.files import printable_path


@dataclass(frozen=True)
class PlannedCheck:
    """One check to run: a shell command in a workspace folder, with its timeout.

    `needs` are the keys of the checks that must pass before it starts (a dependency's build);
    `setups` the workspaces whose setup must pass first, in order (its install root's, then its
    own). `writes` are the folders (relative to the root) its outputs go below: two checks
    whose folders overlap never run at once.
    """

    id: str
    workspace: str
    kind: str
    command: str
    timeout: float
    junit: str | None
    needs: tuple[str, ...] = ()
    setups: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Unique within a plan: the id, prefixed by the workspace outside the root."""
        return self.id if self.workspace == "." else f"{self.workspace}:{self.id}"

    @property
    def log_name(self) -> str:
        """The key percent-encoded, for `verification/<log_name>.log`: a root check keeps its
        id (ids are already file-safe), and no two keys share a name (a root `web-test` and a
        `web` workspace's `test` are `web-test` and `web%3Atest`)."""
        return quote(self.key, safe="")


@dataclass(frozen=True)
class PlannedWorkspace:
    """A workspace with planned checks or an install others use, and its setup commands.

    `uses` names install roots (a pnpm or uv workspace root) whose setup must pass before
    this workspace's checks run: one install serves every member, run once.
    """

    path: str
    setup: tuple[str, ...]
    uses: tuple[str, ...] = ()


@dataclass(frozen=True)
class CiStep:
    """A step of the repository's CI the plan does not run as a check, and why; `step` is
    empty for a whole job, `job` too for a workflow file planning could not read."""

    workflow: str
    job: str
    step: str
    reason: str

    @property
    def where(self) -> str:
        """The step as a reader finds it: `file`, `file job`, `file job: step`."""
        return step_where(self.workflow, self.job, self.step)

    def to_dict(self) -> dict[str, str]:
        return {"workflow": self.workflow, "job": self.job, "step": self.step,
                "reason": self.reason}


class UnverifiedStep(CiStep):
    """A CI step that would verify the change but cannot run here (an action, secrets, a
    container, a release...): listed in the plan as unverified."""


class BookkeepingStep(CiStep):
    """A CI step that only does its workflow's bookkeeping (`ci_bookkeeping`: it writes
    `$GITHUB_OUTPUT` and the like): no check, so not planned. Unlike an `UnverifiedStep` it
    leaves nothing unverified: only `--explain` lists it, never the plan."""


def step_where(workflow: str, job: str, step: str) -> str:
    """A CI step as a reader finds it: `file`, `file job`, `file job: step`."""
    return f"{workflow}{f' job {job}' if job else ''}" + (f": {step}" if step else "")


@dataclass(frozen=True)
class Plan:
    """Workspaces and checks to run, how many checks may run at once, and the changed files
    that no check covers (`unverified`, shown names), and the CI steps it leaves out
    (`unverified_steps`)."""

    workspaces: tuple[PlannedWorkspace, ...]
    checks: tuple[PlannedCheck, ...]
    concurrency: int | None  # None: as many as the executing machine has cores
    # Workspaces whose folder names are not UTF-8: (shown name, the name's bytes
    # percent-encoded). Everywhere else the plan holds the shown name (bytes as \xNN).
    locations: tuple[tuple[str, str], ...] = ()
    unverified: tuple[str, ...] = ()
    unverified_steps: tuple[UnverifiedStep, ...] = ()

    def folder(self, workspace: str) -> str:
        """The real folder of a workspace, relative to the root (``os.fsdecode`` form)."""
        for shown, encoded in self.locations:
            if shown == workspace:
                return os.fsdecode(unquote_to_bytes(encoded))
        return workspace

    @property
    def is_empty(self) -> bool:
        return not self.checks

    @property
    def nothing_verifies(self) -> bool:
        """True when the change needs verifying but no check was planned: it is not verified
        (conclusion `neutral`), never a silent success."""
        return self.is_empty and bool(self.unverified)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.locations:
            extra["locations"] = [list(pair) for pair in self.locations]
        if self.unverified:
            extra["unverified"] = list(self.unverified)
        if self.unverified_steps:
            extra["unverified_steps"] = [step.to_dict() for step in self.unverified_steps]
        return {
            **extra,
            "concurrency": self.concurrency,
            "workspaces": [
                {"path": w.path, "setup": list(w.setup), **_optional("uses", list(w.uses))}
                for w in self.workspaces
            ],
            "checks": [
                {
                    "id": c.id,
                    "workspace": c.workspace,
                    "kind": c.kind,
                    "command": c.command,
                    "timeout": float(c.timeout),
                    "junit": c.junit,
                    **_needs(c),
                    **_optional("writes", list(c.writes)),
                }
                for c in self.checks
            ],
        }

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, no insignificant whitespace, ASCII only."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(
            workspaces=tuple(
                PlannedWorkspace(path=w["path"], setup=tuple(w["setup"]),
                                 uses=tuple(w.get("uses", ())))
                for w in data["workspaces"]
            ),
            checks=tuple(
                PlannedCheck(
                    id=c["id"],
                    workspace=c["workspace"],
                    kind=c["kind"],
                    command=c["command"],
                    timeout=float(c["timeout"]),
                    junit=c["junit"],
                    needs=tuple(c.get("needs", {}).get("checks", ())),
                    setups=tuple(c.get("needs", {}).get("setup", ())),
                    writes=tuple(c.get("writes", ())),
                )
                for c in data["checks"]
            ),
            concurrency=None if data["concurrency"] is None else int(data["concurrency"]),
            locations=tuple((shown, encoded) for shown, encoded in data.get("locations", ())),
            unverified=tuple(data.get("unverified", ())),
            unverified_steps=tuple(
                UnverifiedStep(s["workflow"], s["job"], s["step"], s["reason"])
                for s in data.get("unverified_steps", ())),
        )

    @classmethod
    def from_json(cls, text: str) -> Plan:
        return cls.from_dict(json.loads(text))


def _optional(name: str, value: list[str]) -> dict[str, list[str]]:
    return {name: value} if value else {}


def _needs(check: PlannedCheck) -> dict[str, Any]:
    """`needs` as the plan shows it: the setups (workspace paths) and the checks (keys)."""
    needs = {**_optional("setup", list(check.setups)), **_optional("checks", list(check.needs))}
    return {"needs": needs} if needs else {}


def overlaps(one: str, other: str) -> bool:
    """True when two folders (relative to the root) are the same or one holds the other."""
    return one == other or one == "." or other == "." or other.startswith(one + "/") \
        or one.startswith(other + "/")


def shown(plan: Plan) -> Plan:
    """Names that are not UTF-8 (surrogate escapes from ``os.fsdecode``) become their shown
    form, ``\\xNN`` for each byte, so the plan can be stored and printed; ``locations`` keeps
    the real bytes for the executor."""
    renamed = {w.path: printable_path(w.path) for w in plan.workspaces
               if printable_path(w.path) != w.path}
    unverified = tuple(printable_path(path) for path in plan.unverified)
    if not renamed:
        return replace(plan, unverified=unverified)
    return Plan(
        tuple(replace(w, path=renamed.get(w.path, w.path),
                      uses=tuple(renamed.get(u, u) for u in w.uses)) for w in plan.workspaces),
        tuple(replace(c, workspace=renamed.get(c.workspace, c.workspace),
                      setups=tuple(renamed.get(u, u) for u in c.setups),
                      needs=tuple(_renamed_key(k, renamed) for k in c.needs),
                      writes=tuple(printable_path(w) for w in c.writes))
              for c in plan.checks),
        plan.concurrency,
        tuple(sorted((shown, quote_from_bytes(os.fsencode(real), safe=""))
                     for real, shown in renamed.items())),
        unverified,
        plan.unverified_steps,
    )


def _renamed_key(key: str, renamed: dict[str, str]) -> str:
    workspace, _, check_id = key.rpartition(":")
    return f"{renamed[workspace]}:{check_id}" if workspace in renamed else key
