"""A check that a workspace's own files imply, before the plan gives it a timeout."""

from __future__ import annotations

from dataclasses import dataclass

from verification.workspaces import Ecosystem

# Order of detected checks inside a workspace: fast feedback first.
KIND_ORDER = {"lint": 0, "format": 1, "typecheck": 2, "test": 3, "build": 4, "custom": 5}


@dataclass(frozen=True)
class DetectedCheck:
    """One command a workspace's manifests and configs call for, and its ecosystem.

    The ecosystem is planning's own: a member without a test command is covered by its
    workspace root's test command of the same ecosystem, never another's. `tools` are the
    programs the command runs (`eslint`, `tsc`, `pytest`): a tool's config concerns the checks
    running it. `task` is its name in the repository's task runner (the script `test:unit`,
    the Makefile target `lint`), which task graphs name in their `dependsOn`.
    A command that `fans_out` runs its kind in every member (a root `pnpm -r test`, `turbo
    run test`): it is planned for the root's own changes and for members with no such
    command, not for a member that has one. `covers` are the folders (or files) relative to
    the workspace that the tool's config says it checks (mypy's `files`, pyright's
    `include`): a source change elsewhere in the workspace does not concern it; empty, all.
    """

    id: str
    kind: str
    command: str
    ecosystem: Ecosystem
    tools: frozenset[str] = frozenset()
    task: str | None = None
    fans_out: bool = False
    covers: tuple[str, ...] = ()
