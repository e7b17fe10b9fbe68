"""How CI-derived checks meet the change and the detected checks.

Pure. Two questions, answered from the selection (`select.py`) and the layout:

- **What a CI check covers** (`covering`): each changed file its workflow's filters admit,
  when the check concerns it. A workflow whose `paths` list the files it runs for has said
  so: every check of it covers every admitted file. Otherwise a check covers a file of a
  workspace the change selects (dependents included) when that workspace lies below the
  check's folder or holds it, and the check's tools are of that file's ecosystem (a
  `cargo test` step covers no Python file); a tool's config only the checks running that
  tool; a workflow file or pre-commit config only the checks running it, a root Makefile
  those whose `make` reads it (where they run, or through an include); a local composite
  action's files (its `action.yml`, what its folder holds) every check of a job that plans
  its steps; a file in no workspace the checks of its folder and language;
  `.github/ratchet.yml` every check.
- **Which detected check a CI check duplicates** (`duplicated_by`): the same command in the
  same folder; a package script the CI step runs (`pnpm run lint` there, `pnpm -r lint`,
  `turbo run lint`, `nx run-many -t lint`, `lerna run lint`, `yarn workspaces foreach run
  lint`, `npm run lint --workspaces` from an enclosing folder); or a check of the same kind
  and ecosystem in the same folder (CI's `cargo test --workspace --features x` is the
  repository's own test command there; `cargo clippy` type-checks too), for Node in an
  enclosing folder too (a root `eslint .`, `vitest` or `tsc -b` spans the packages below it,
  as the root's detected command does for members without their own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from posixpath import splitext

from verification.checks import DetectedCheck
from verification.ci import CiCheck, CiJob
from verification.index import is_below
from verification.select import Selection, Tool, tool_of
from verification.workflows import action_files
from verification.workspaces import Ecosystem, Layout

Steps = tuple[str, ...]
# The Makefiles the `make` of a shell line run in a folder reads (`TaskLookup.makefiles`).
Makefiles = Callable[[str, str], frozenset[str]]

# The ecosystem of a source file by its extension, for a file no workspace holds.
_EXTENSIONS = {
    ".py": Ecosystem.PYTHON, ".pyi": Ecosystem.PYTHON, ".rs": Ecosystem.RUST,
    ".go": Ecosystem.GO, ".js": Ecosystem.NODE, ".mjs": Ecosystem.NODE, ".cjs": Ecosystem.NODE,
    ".jsx": Ecosystem.NODE, ".ts": Ecosystem.NODE, ".mts": Ecosystem.NODE,
    ".cts": Ecosystem.NODE, ".tsx": Ecosystem.NODE, ".vue": Ecosystem.NODE,
    ".svelte": Ecosystem.NODE,
}  # fmt: skip


def covering(job: CiJob, check: CiCheck, selection: Selection, layout: Layout, *,
             makefiles: Makefiles | None = None) -> dict[str, Steps]:
    """The changed files `check` covers, each with the steps from it (for `--explain`);
    `makefiles` gives the Makefiles a script's `make` reads in a folder
    (`TaskLookup.makefiles`): a root Makefile is covered by the checks reading it."""
    because: dict[str, Steps] = {}
    trigger = f"{job.workflow} runs on {job.event}" + (
        " (its paths name it)" if job.explicit else "")
    for file in sorted(job.admitted):
        status = selection.files.get(file)
        if status is None or status.kind in ("ignored", "documentation"):
            continue
        if _concerns(job, check, file, status.kind, selection, layout, makefiles):
            because[file] = (trigger, f"job {job.key}, step {check.step!r}", *check.notes)
    return because


def _concerns(job: CiJob, check: CiCheck, file: str, kind: str, selection: Selection,
              layout: Layout, makefiles: Makefiles | None) -> bool:
    if kind == "global" or _runs_action(job, file):
        return True
    if kind == "runs":
        runs = selection.runs[file]
        if job.explicit:
            return True
        if runs.read_by_make and makefiles is not None:
            return file in makefiles(check.script, check.folder)
        return re.search(runs.pattern, check.script) is not None
    if kind == "unowned":
        return job.explicit  # no tool reads it: only a workflow whose paths name it
    if job.explicit:
        return True
    tool = selection.tools.get(file) or tool_of(file)  # a pyproject's [tool.ruff] too
    if tool is not None and kind in ("shared", "outside"):
        folder = file.rpartition("/")[0] or "."
        return runs_tool(check, tool) and (is_below(check.folder, folder)
                                           or is_below(folder, check.folder))
    selected = [w for w, files in selection.reasons.items() if file in files]
    if not selected:
        ecosystem = _EXTENSIONS.get(splitext(file)[1])
        return is_below(file, check.folder) and (
            not check.ecosystems or (ecosystem is not None and ecosystem in check.ecosystems))
    for workspace in selected:
        inside = is_below(workspace, check.folder) or layout.folder_owner(
            check.folder) == workspace
        held = layout.workspaces.get(workspace)
        scope = selection.ecosystems.get(workspace, {}).get(file)
        allowed = (set(scope) if scope is not None else
                   set(held.ecosystems) if held is not None else set(Ecosystem))
        if inside and (not check.ecosystems or check.ecosystems & allowed):
            return True
    return False


def _runs_action(job: CiJob, file: str) -> bool:
    """True when `file` belongs to a local composite action the job runs: its metadata, or
    a file in its folder (the scripts its steps run; the root's action only its metadata)."""
    return any(file in action_files(folder) or (folder != "." and is_below(file, folder))
               for folder in job.actions)


def runs_tool(check: CiCheck, tool: Tool) -> bool:
    """True when the CI check runs the tool a config configures: by name (`tools.py` reads
    its commands), or, when it names no known tool (`pnpm run lint`), by its kind (as
    `Tool.runs_in` reads a detected check)."""
    return bool(tool.names & check.tools) or (not check.tools and check.kind in tool.kinds)


def duplicated_by(workspace: str, command: str, detected: DetectedCheck,
                  checks: Sequence[CiCheck], layout: Layout) -> CiCheck | None:
    """The CI check that runs what a detected check of `workspace` runs, if one does."""
    script = detected.id.removeprefix("node-") if detected.id.startswith("node-") else None
    for check in checks:
        if check.folder == workspace and _same(check.script, command):
            return check
        lines = [line.strip() for line in check.script.splitlines() if line.strip()]
        if script is not None and detected.ecosystem is Ecosystem.NODE:
            if check.folder == workspace and any(_runs_script(line, script) for line in lines):
                return check
            member = is_below(workspace, check.folder) and workspace != check.folder
            if member and any(_fans_out(line, script) for line in lines):
                return check
        over = check.folder == workspace or (detected.ecosystem is Ecosystem.NODE
                                             and is_below(workspace, check.folder))
        if over and detected.ecosystem in check.ecosystems and detected.kind in _kinds(check):
            return check
    return None


def _kinds(check: CiCheck) -> set[str]:
    if check.kind == "lint" and "clippy" in check.script:
        return {"lint", "typecheck"}  # clippy runs `cargo check` first
    return {check.kind}


def _same(script: str, command: str) -> bool:
    return " ".join(script.split()) == " ".join(command.split())


def _runs_script(line: str, script: str) -> bool:
    """`line` runs package script `script` of its folder (`pnpm run lint`, `npm test`)."""
    name = re.escape(script)
    return re.match(rf"^(?:pnpm|yarn|bun)\s+(?:run\s+)?{name}(?:\s|$)|"
                    rf"^npm\s+(?:run(?:-script)?\s+{name}|{name})(?:\s|$)", line) is not None


def _fans_out(line: str, script: str) -> bool:
    """`line` runs package script `script` in every member (`pnpm -r test`, `turbo run
    test`, `nx run-many -t test`, ...)."""
    name = re.escape(script)
    patterns = (
        rf"^pnpm\s+(?:\S+\s+)*(?:-r|--recursive)\s+(?:\S+\s+)*(?:run\s+)?{name}(?:\s|$)",
        rf"^pnpm\s+(?:run\s+)?{name}\s+(?:\S+\s+)*(?:-r|--recursive)(?:\s|$)",
        rf"^(?:npx\s+|pnpm\s+(?:exec\s+)?|yarn\s+)?turbo\s+(?:run\s+)?(?:[^-\s]\S*\s+)*{name}"
        rf"(?:\s|$)",
        rf"^(?:npx\s+|pnpm\s+(?:exec\s+)?|yarn\s+)?nx\s+run-many\b.*(?:-t|--targets?)[=\s]"
        rf"(?:\S*,)?{name}(?:[,\s]|$)",
        rf"^(?:npx\s+|pnpm\s+(?:exec\s+)?|yarn\s+)?lerna\s+run\s+{name}(?:\s|$)",
        rf"^yarn\s+workspaces\s+(?:foreach\s+(?:\S+\s+)*)?run\s+{name}(?:\s|$)",
        rf"^npm\s+(?:run\s+)?{name}\s+.*(?:--workspaces|-ws)(?:\s|$)",
    )
    return any(re.match(p, line) for p in patterns)
