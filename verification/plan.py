"""The verification plan: which checks to run for a change, as canonical, hashable data.

Pure: `build_plan` reads the repository only through the `Tree` protocol, so the same changed
files, tree and config always give the same plan and the same sha256.

Rules, in order:
1. A change to a file that shapes every build (CI workflows, `.github/ratchet.yml`, root
   manifests and lockfiles, toolchain files) plans every workspace.
2. Documentation files plan nothing.
3. Any other file plans the nearest workspace containing it (a folder with a manifest, or one the
   config names); a file outside every workspace plans nothing.
A workspace the config names (the root through `verify.checks`, others through
`verify.workspaces`) runs its configured checks; other workspaces run detected ones.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from posixpath import basename, normpath, splitext
from typing import Any
from urllib.parse import quote, quote_from_bytes, unquote_to_bytes

from verification.config import CONFIG_PATH, CheckConfig, VerifyConfig, WorkspaceConfig
from verification.detect import MANIFESTS, detect_checks, find_manifests, find_workspaces, owner
from verification.files import printable_path
from verification.tree import Tree

# Folders whose files configure CI for the whole repository.
GLOBAL_FOLDERS = (".github/workflows/", ".github/actions/", ".circleci/", ".ci/", ".buildkite/")

# Files at the repository root that change how every workspace builds: manifests, lockfiles,
# toolchain pins and shared build or lint configuration.
GLOBAL_ROOT_FILES = MANIFESTS | {
    "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "pnpm-workspace.yaml",
    "yarn.lock", ".yarnrc.yml", ".npmrc", "go.sum", "go.work", "go.work.sum", "Cargo.lock",
    "uv.lock", "poetry.lock", "Pipfile", "Pipfile.lock", "requirements.txt",
    "requirements-dev.txt", "constraints.txt", ".python-version", ".nvmrc", ".node-version",
    ".tool-versions", "rust-toolchain", "rust-toolchain.toml", ".go-version", "Makefile",
    "tox.ini", "noxfile.py", "ruff.toml", ".ruff.toml", "mypy.ini", "tsconfig.json",
    "tsconfig.base.json", ".gitlab-ci.yml", ".pre-commit-config.yaml",
}  # fmt: skip

# Documentation: a change to these alone plans nothing.
DOC_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".adoc"})
DOC_NAMES = frozenset({"LICENSE", "LICENSE.txt", "COPYING", "NOTICE", "AUTHORS", "CODEOWNERS"})

# Order of detected checks inside a workspace: fast feedback first.
_KIND_ORDER = {"lint": 0, "format": 1, "typecheck": 2, "test": 3, "build": 4, "custom": 5}


@dataclass(frozen=True)
class PlannedCheck:
    """One check to run: a shell command in a workspace folder, with its timeout."""

    id: str
    workspace: str
    kind: str
    command: str
    timeout: float
    junit: str | None

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
    """A workspace with at least one planned check, and the setup commands run before them."""

    path: str
    setup: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """Workspaces and checks to run, and how many checks may run at once."""

    workspaces: tuple[PlannedWorkspace, ...]
    checks: tuple[PlannedCheck, ...]
    concurrency: int | None  # None: as many as the executing machine has cores
    # Workspaces whose folder names are not UTF-8: (shown name, the name's bytes
    # percent-encoded). Everywhere else the plan holds the shown name (bytes as \xNN).
    locations: tuple[tuple[str, str], ...] = ()

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
    def sha256(self) -> str:
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        locations = {"locations": [list(pair) for pair in self.locations]} if self.locations else {}
        return {
            **locations,
            "concurrency": self.concurrency,
            "workspaces": [{"path": w.path, "setup": list(w.setup)} for w in self.workspaces],
            "checks": [
                {
                    "id": c.id,
                    "workspace": c.workspace,
                    "kind": c.kind,
                    "command": c.command,
                    "timeout": float(c.timeout),
                    "junit": c.junit,
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
                PlannedWorkspace(path=w["path"], setup=tuple(w["setup"]))
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
                )
                for c in data["checks"]
            ),
            concurrency=None if data["concurrency"] is None else int(data["concurrency"]),
            locations=tuple((shown, encoded) for shown, encoded in data.get("locations", ())),
        )

    @classmethod
    def from_json(cls, text: str) -> Plan:
        return cls.from_dict(json.loads(text))


def build_plan(changed_files: Iterable[str], tree: Tree, config: VerifyConfig) -> Plan:
    """Plan the checks that `changed_files` call for (see the module docstring for the rules).

    `concurrency` is the config's value; unset, it stays None so the plan (and its hash) does
    not depend on the machine, and the executor uses the cores of the one it runs on.
    """
    all_paths = sorted(set(tree.paths()))
    changed = sorted({normpath(path.strip()) for path in changed_files if path.strip()})
    manifests = find_manifests(all_paths)
    configured = _configured_workspaces(config)
    workspaces = find_workspaces(manifests, tree) | set(configured)

    if any(is_global_file(path) for path in changed):
        selected = set(workspaces)
    else:
        owners = (owner(path, workspaces) for path in changed if not is_documentation(path))
        selected = {folder for folder in owners if folder is not None}

    members: dict[str, list[str]] = {}
    for path in all_paths:
        folder = owner(path, workspaces)
        if folder in selected:
            members.setdefault(folder, []).append(path)

    planned_workspaces: list[PlannedWorkspace] = []
    checks: list[PlannedCheck] = []
    for folder in sorted(s for s in selected if s is not None):
        if folder in configured:
            entry = configured[folder]
            workspace_checks = [_configured_check(folder, c, config) for c in entry.checks]
            setup = tuple(entry.setup)
        else:
            detected = detect_checks(
                folder,
                manifests.get(folder, set()),
                members.get(folder, []),
                tree,
                all_paths=frozenset(all_paths),
                nested=_nested(folder, workspaces),
            )
            detected.sort(key=lambda c: _KIND_ORDER.get(c.kind, len(_KIND_ORDER)))
            workspace_checks = [
                PlannedCheck(d.id, folder, d.kind, d.command, float(config.timeout), None)
                for d in detected
            ]
            setup = ()
        if workspace_checks:
            planned_workspaces.append(PlannedWorkspace(folder, setup))
            checks.extend(workspace_checks)
    return _shown(Plan(tuple(planned_workspaces), tuple(checks), config.concurrency))


def _shown(plan: Plan) -> Plan:
    """Names that are not UTF-8 (surrogate escapes from ``os.fsdecode``) become their shown
    form, ``\\xNN`` for each byte, so the plan can be stored and printed; ``locations`` keeps
    the real bytes for the executor."""
    renamed = {w.path: printable_path(w.path) for w in plan.workspaces
               if printable_path(w.path) != w.path}
    if not renamed:
        return plan
    return Plan(
        tuple(replace(w, path=renamed.get(w.path, w.path)) for w in plan.workspaces),
        tuple(replace(c, workspace=renamed.get(c.workspace, c.workspace)) for c in plan.checks),
        plan.concurrency,
        tuple(sorted((shown, quote_from_bytes(os.fsencode(real), safe=""))
                     for real, shown in renamed.items())),
    )


def is_global_file(path: str) -> bool:
    """True for files whose change may affect how every workspace builds or is verified."""
    if path == CONFIG_PATH or path.startswith(GLOBAL_FOLDERS):
        return True
    return "/" not in path and path in GLOBAL_ROOT_FILES


def is_documentation(path: str) -> bool:
    """True for documentation files, which never call for a check on their own."""
    name = basename(path)
    return splitext(name)[1].lower() in DOC_SUFFIXES or name in DOC_NAMES


def _nested(folder: str, workspaces: set[str]) -> list[str]:
    """Workspaces inside `folder`, relative to it, sorted."""
    prefix = "" if folder == "." else folder + "/"
    return sorted(w[len(prefix) :] for w in workspaces if w != folder and w.startswith(prefix))


def _configured_workspaces(config: VerifyConfig) -> dict[str, WorkspaceConfig]:
    configured = {workspace.path: workspace for workspace in config.workspaces}
    if config.checks:
        configured["."] = WorkspaceConfig(path=".", checks=list(config.checks))
    return configured


def _configured_check(folder: str, check: CheckConfig, config: VerifyConfig) -> PlannedCheck:
    timeout = check.timeout if check.timeout is not None else config.timeout
    return PlannedCheck(check.id, folder, check.kind, check.run, float(timeout), check.junit)
