"""The verification plan: which checks to run for a change, as canonical, hashable data.

Pure: `build_plan` reads the repository only through the `Tree` protocol, so the same changed
files, tree and config always give the same plan and the same sha256. The steps, each in its
own module:

1. `index`: one pass over the tree's paths keeps the files planning reacts to.
2. `workspaces`: membership from the ecosystems' declarations (pnpm, npm, yarn, uv, Cargo,
   go.work); manifests in fixture and template folders that nothing declares are test data.
3. `select` (with `graph` and `lockfiles`): which workspaces each changed file concerns, and
   every workspace depending on them, transitively.
4. `runners`: each selected workspace's own commands; a workspace root's runner covers the
   members that have no command of that kind (its root vitest config, its root `tests/`);
   the install a fresh worktree needs becomes the install root's setup.

A workspace the config names (the root through `verify.checks`, others through
`verify.workspaces`) runs its configured checks instead of detected ones.

A change cannot choose its own checks. Given the tree the change starts from (`base`, with the
config read there), the plan is the plan of the base's layout and manifests, plus what the
change's own layout adds: a manifest the change adds, removes or edits can add checks, never
drop or replace the base's (on the same key, the base's command runs). Only a base workspace
whose folder the change deleted entirely is left out: nothing remains there to check.

A changed file that is not documentation, not in `verify.ignore`, and that no planned check
covers is listed in `Plan.unverified`: a plan with no checks and such files concludes
`neutral`, never `success`.
"""

from __future__ import annotations

import gc
import re
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from posixpath import basename, normpath
from typing import TYPE_CHECKING

from plumbing.files import printable_path
from verification.checks import DetectedCheck
from verification.config import CheckConfig, VerifyConfig, WorkspaceConfig
from verification.explain import Explanation, FileCoverage
from verification.graph import DependencyGraph, build_graph
from verification.index import RepoIndex, is_below, is_workflow_file, join, relative, shapes_plan
from verification.manifests import Manifests, mapping
from verification.model import (
    BookkeepingStep,
    Plan,
    PlannedCheck,
    PlannedWorkspace,
    UnverifiedStep,
    shown,
)
from verification.node_runner import loads_build_output
from verification.runners import Runners, narrow_cargo, widen_cargo
from verification.select import (
    LOCKFILES,
    Runs,
    Selection,
    is_documentation,
    is_global_file,
    runs_of,
    select,
)
from verification.task_runners import TaskLookup
from verification.tree import Tree, read_texts
from verification.workspaces import Ecosystem, Layout, declared_names, find_layout

# Reading CI loads with the first workflow that has jobs: a repository without one plans
# without importing it.
if TYPE_CHECKING:
    from verification.ci import CiCheck, CiJob, CiPlan
    from verification.task_graphs import TaskGraph
    from verification.workflows import Workflows

__all__ = [
    "Plan",
    "PlanResult",
    "PlannedCheck",
    "PlannedWorkspace",
    "build_plan",
    "is_documentation",
    "is_global_file",
    "plan_change",
]

# The pre-commit config, whose hooks are checks (`hooks`, read only when it exists).
HOOKS_FILE = ".pre-commit-config.yaml"  # hooks.CONFIG_FILE
# A command running the pre-commit hooks (pre-commit itself, or prek, its Rust port).
_PRE_COMMIT_RUN = re.compile(r"(?:^|[\s;&|(/])(?:pre-commit|prek)(?:\s+run\b|\s*$)",
                             re.MULTILINE)
# Why a check only the base's layout plans runs, in `--explain`.
BASE_STEP = "planned by the base revision's manifests: a change cannot drop this check"
# Kinds of check a workspace root's runner runs for members that have none of their own.
ROOT_COVERED_KINDS = ("lint", "typecheck", "test")


@dataclass(frozen=True)
class PlanResult:
    """A plan and the explanation of it."""

    plan: Plan
    explanation: Explanation


def build_plan(
    changed_files: Iterable[str], tree: Tree, config: VerifyConfig, *, base: Tree | None = None
) -> Plan:
    """Plan the checks that `changed_files` call for (see the module docstring for the rules).

    `base` is the tree the change starts from; with it, the base's checks are kept whatever
    the change does to its manifests, and a changed lockfile selects only the workspaces whose
    resolved dependencies changed. `concurrency` is the config's value;
    unset, it stays None so the plan (and its hash) does not depend on the machine.
    """
    return plan_change(changed_files, tree, config, base=base).plan


def plan_change(
    changed_files: Iterable[str], tree: Tree, config: VerifyConfig, *, base: Tree | None = None
) -> PlanResult:
    """`build_plan`, with the explanation `ratchet verify --explain` prints."""
    with _collection_paused():
        return _plan_change(changed_files, tree, config, base=base)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while planning, when it ran: a monorepo's
    plan makes a million objects that live until it ends, and the collector walked them
    some hundred times a plan (a full pass among them), 20 to 40 ms of 1,500 packages'
    170. What planning drops is freed by reference counting all the same."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _plan_change(changed_files: Iterable[str], tree: Tree, config: VerifyConfig, *,
                 base: Tree | None) -> PlanResult:
    changed = sorted({normpath(path.strip()) for path in changed_files if path.strip()})
    index = RepoIndex.from_paths(tree.paths())
    manifests = Manifests(tree)
    workflows = _base_workflows(index, manifests, changed, base)
    planned = _plan_tree(changed, tree, config, base=base, workflows=workflows, index=index,
                         manifests=manifests)
    if base is None or not any(shapes_plan(path) for path in changed):
        return planned  # the base lays out and plans the same
    floor = _plan_tree(changed, _BaseManifests(base, tree), config, base=base,
                       workflows=workflows)
    return _with_floor(floor, planned, _folders(tree))


def _base_workflows(index: RepoIndex, manifests: Manifests, changed: list[str],
                    base: Tree | None) -> Workflows | None:
    """The base revision's workflows: a change cannot choose its own checks. A workflow file
    the change does not touch is the same in both trees, so it is read with the manifests,
    in one batch; one the change touches is read from the base (absent there: none)."""
    touched = {path for path in changed if is_workflow_file(path)}
    kept = [path for path in index.workflows if is_workflow_file(path) and (
        base is None or path not in touched)]
    manifests.prefetch([*_planned_reads(index), *kept])
    texts = {path: manifests.text(path) for path in kept}
    if base is not None and touched:
        texts.update({path: text for path, text in read_texts(base, sorted(touched)).items()
                      if text is not None})
    if not texts:
        return None
    from verification.workflows import read_workflows
    workflows = read_workflows(texts)
    _read_base_actions(workflows, manifests, set(changed), base)
    return workflows


def _read_base_actions(workflows: Workflows, manifests: Manifests, changed: set[str],
                       base: Tree | None) -> None:
    """The base revision's local actions the workflows' steps use, as the workflows are read:
    a file the change touches from the base, the others with the manifests. Each round
    reads the actions the last one's composite actions use, `MAX_ACTION_DEPTH` rounds at
    most (deeper ones are not expanded)."""
    from verification.workflows import (
        MAX_ACTION_DEPTH,
        action_files,
        local_actions,
        read_actions,
    )

    for _ in range(MAX_ACTION_DEPTH + 1):
        folders = local_actions(workflows)
        if not folders:
            return
        paths = [path for folder in folders for path in action_files(folder)]
        kept = [path for path in paths if base is None or path not in changed]
        manifests.prefetch(kept)
        texts = {path: manifests.text(path) for path in kept}
        touched = [path for path in paths if base is not None and path in changed]
        if base is not None and touched:
            texts.update(read_texts(base, touched))
        read_actions(workflows, folders, texts)


def _planned_reads(index: RepoIndex) -> list[str]:
    """Every file planning may read, to read in one batch (from a revision, a file read alone
    is a git process): the index's, lockfiles aside (large, read only when a change has one)."""
    return [join(folder, name) for folder, names in index.names.items() for name in names
            if name not in LOCKFILES]


def _plan_tree(changed: list[str], tree: Tree, config: VerifyConfig, *, base: Tree | None,
               workflows: Workflows | None, index: RepoIndex | None = None,
               manifests: Manifests | None = None) -> PlanResult:
    index = index or RepoIndex.from_paths(tree.paths())
    if manifests is None:  # the base's layout: its files in one batch too
        manifests = Manifests(tree)
        manifests.prefetch(_planned_reads(index))
    configured = _configured_workspaces(config)
    layout = find_layout(index, manifests, configured=configured)
    needs_graph = not all(is_global_file(p) or is_documentation(p) or runs_of(p) is not None
                          for p in changed)
    graph = build_graph(layout, manifests) if needs_graph else None
    selection = select(changed, layout, manifests, config, base=base, graph=graph, index=index)
    lookup = task_lookup(layout, index, manifests)
    assembly = _Assembly(layout, Runners(layout, index, manifests, lookup), configured, config)
    assembly.add_selected(selection)
    assembly.add_root_runners(selection)
    if index.has(".", HOOKS_FILE) and "." not in configured:
        assembly.add_hooks(manifests.text(HOOKS_FILE) or "", selection, lookup)
    if workflows is not None and (workflows.by_path or workflows.problems):
        from verification.ci import read_ci

        verifying = [path for path, status in selection.files.items()
                     if status.kind not in ("ignored", "documentation")]

        assembly.add_ci(read_ci(workflows, verifying, _Folders(tree), lookup.scripts,
                                lookup.resolver), selection)
    if assembly.checks:
        assembly.add_needs(graph or build_graph(layout, manifests))
    plan, reasons = assembly.finish(selection)
    return PlanResult(plan, Explanation(plan, reasons, _coverage(changed, selection, plan, reasons),
                                        dict(layout.skipped), declared_names(layout, manifests),
                                        tuple(dict.fromkeys(assembly.bookkeeping))))


def task_lookup(layout: Layout, index: RepoIndex, manifests: Manifests) -> TaskLookup:
    """The task runners of the tree's folders, read through its manifests: a folder's
    package.json scripts, and for `turbo run` / `nx run-many` the Node workspaces and Nx
    projects (`project.json`) at or below the folder they start in."""
    nx_projects = sorted(folder for folder, names in index.names.items()
                         if "project.json" in names)

    def scripts(folder: str) -> Mapping[str, object]:
        return mapping(manifests.json(join(folder, "package.json")).get("scripts"))

    def projects(folder: str) -> list[str]:
        below = [p for p in nx_projects if folder == "." or p == folder
                 or p.startswith(folder + "/")]
        return sorted({*layout.below(folder, Ecosystem.NODE), *below})

    def targets(folder: str) -> Mapping[str, object]:
        package = mapping(mapping(manifests.json(join(folder, "package.json")).get("nx")))
        return {**mapping(package.get("targets")),
                **mapping(manifests.json(join(folder, "project.json")).get("targets"))}

    return TaskLookup(read=manifests.text, toml=manifests.toml, has=index.has,
                      scripts=scripts, projects=projects, targets=targets)


class _BaseManifests:
    """The base's files for planning, except its lockfiles, read as the change has them: the
    layout and the checks are the base's, and a changed lockfile still selects only the
    workspaces whose resolution it moved."""

    def __init__(self, base: Tree, change: Tree) -> None:
        self.base = base
        self.change = change

    def paths(self) -> Iterable[str]:
        return self.base.paths()

    def read_text(self, path: str) -> str | None:
        return self._source(path).read_text(path)

    def read_many(self, paths: Iterable[str]) -> dict[str, str | None]:
        wanted = list(paths)
        found = read_texts(self.base, [p for p in wanted if self._source(p) is self.base])
        found.update(read_texts(self.change, [p for p in wanted if p not in found]))
        return found

    def _source(self, path: str) -> Tree:
        return self.change if basename(path) in LOCKFILES else self.base


def _with_floor(floor: PlanResult, change: PlanResult, present: set[str]) -> PlanResult:
    """The base's plan (`floor`) with the checks only the change's layout plans added.

    A floor check whose workspace folder is gone from the change's tree (`present`: its
    folders) is left out; a check of the change with a floor check's key is the floor's (a
    narrowed cargo command that the two plans narrow differently runs `--workspace`).
    """
    theirs = {c.key: c.command for c in change.plan.checks}
    kept = [replace(c, command=widen_cargo(c.command, theirs.get(c.key, c.command)))
            for c in floor.plan.checks if floor.plan.folder(c.workspace) in present]
    keys = {c.key for c in kept}
    added = [c for c in change.plan.checks if c.key not in keys]
    checks = sorted([*kept, *added], key=lambda c: c.workspace)  # stable: the floor's first
    reasons: dict[str, dict[str, tuple[str, ...]]] = {}
    changed_keys = {c.key for c in change.plan.checks}
    for check in kept:
        because = floor.explanation.reasons.get(check.key, {})
        if check.key not in changed_keys:
            because = {f: (*steps, BASE_STEP) for f, steps in because.items()}
        reasons[check.key] = dict(because)
    for check in change.plan.checks:
        for file, steps in change.explanation.reasons.get(check.key, {}).items():
            reasons.setdefault(check.key, {}).setdefault(file, steps)
    workspaces = _merge_workspaces(floor.plan, change.plan, present, {c.workspace for c in checks})
    covering: dict[str, list[str]] = {}
    for check in checks:
        for file in reasons.get(check.key, {}):
            covering.setdefault(file, []).append(check.key)
    files = tuple(replace(coverage, checks=tuple(covering.get(coverage.path, ())))
                  for coverage in change.explanation.files)
    locations = tuple(sorted({*floor.plan.locations, *change.plan.locations}))
    unverified = tuple(printable_path(c.path) for c in files if c.unverified)
    steps = tuple(dict.fromkeys((*floor.plan.unverified_steps, *change.plan.unverified_steps)))
    plan = Plan(workspaces, _within(checks), change.plan.concurrency, locations, unverified,
                steps)
    skipped = {**floor.explanation.skipped, **change.explanation.skipped}
    names = {**floor.explanation.names, **change.explanation.names}
    bookkeeping = tuple(dict.fromkeys((*floor.explanation.bookkeeping,
                                       *change.explanation.bookkeeping)))
    return PlanResult(plan, Explanation(plan, reasons, files, skipped, names, bookkeeping))


def _within(checks: list[PlannedCheck]) -> tuple[PlannedCheck, ...]:
    """The checks, each needing only checks of the same plan."""
    keys = {check.key for check in checks}
    return tuple(c if keys.issuperset(c.needs) else
                 replace(c, needs=tuple(n for n in c.needs if n in keys)) for c in checks)


def _merge_workspaces(floor: Plan, change: Plan, present: set[str],
                      checked: set[str]) -> tuple[PlannedWorkspace, ...]:
    """Each workspace's setup from both plans, the floor's commands first; a floor workspace
    whose folder is gone is left out."""
    setups: dict[str, list[str]] = {}
    uses: dict[str, set[str]] = {}
    for plan in (floor, change):
        for workspace in plan.workspaces:
            if plan is floor and floor.folder(workspace.path) not in present:
                continue
            commands = setups.setdefault(workspace.path, [])
            commands += [c for c in workspace.setup if c not in commands]
            uses.setdefault(workspace.path, set()).update(workspace.uses)
    return tuple(
        PlannedWorkspace(path, tuple(setups[path]), tuple(sorted(uses[path] & setups.keys())))
        for path in sorted(setups) if path in checked or setups[path]
    )


class _Folders:
    """The folders of a tree, listed the first time a CI step names a working directory."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self._found: set[str] | None = None

    def __contains__(self, folder: object) -> bool:
        if folder == ".":
            return True
        if self._found is None:
            self._found = _folders(self.tree)
        return folder in self._found


def _folders(tree: Tree) -> set[str]:
    """Every folder holding a file of `tree`, at any depth ("." included)."""
    found = {"."}
    for path in tree.paths():
        folder = path.rpartition("/")[0]
        while folder and folder not in found:
            found.add(folder)
            folder = folder.rpartition("/")[0]
    return found


class _Assembly:
    """Collects the checks of selected workspaces, with the reasons behind each check."""

    def __init__(self, layout: Layout, runners: Runners, configured: dict[str, WorkspaceConfig],
                 config: VerifyConfig) -> None:
        self.layout = layout
        self.runners = runners
        self.configured = configured
        self.config = config
        self.checks: dict[str, list[tuple[PlannedCheck, DetectedCheck | None]]] = {}
        self.reasons: dict[str, dict[str, tuple[str, ...]]] = {}
        self.needs: dict[str, tuple[str, ...]] = {}  # check key -> keys of the checks it needs
        self.ci: dict[str, tuple[CiCheck, CiJob]] = {}  # check key -> its CI step and job
        self.unverified_steps: list[UnverifiedStep] = []
        self.bookkeeping: list[BookkeepingStep] = []  # CI steps that are no checks
        self._tasks: TaskGraph | None = None  # the turbo or Nx task graph, once read
        self._tasks_read = False
        # Each workspace's checks, and the builds its dependents wait for, once asked:
        # planning a monorepo asks for a dependency's many times.
        self._planned: dict[str, tuple[tuple[PlannedCheck, DetectedCheck | None], ...]] = {}
        self._builds: dict[str, tuple[str, ...]] = {}
        # The pre-commit hooks that pre-commit installs from the network first (`add_hooks`).
        self.installed_hooks: tuple[str, ...] = ()

    def add_selected(self, selection: Selection) -> None:
        everything = bool(selection.global_files)
        names = sorted(self.layout.workspaces) if everything else sorted(selection.reasons)
        for workspace in names:
            because = dict(selection.reasons.get(workspace, {}))
            for file in selection.global_files:
                because.setdefault(file, ("shapes every build",))
            own: dict[str, tuple[str, ...]] | None = None  # made for a check that fans out
            for check, detected in self._workspace_checks(workspace):
                reasons = because
                if detected is not None and detected.fans_out:
                    # A root command running every member's (`pnpm -r test`) is not run for a
                    # member's change reaching the root through a dependency edge.
                    if own is None:
                        own = {f: s for f, s in because.items() if (workspace, f) in
                               selection.direct or f in selection.global_files}
                    reasons = own
                self._add(check, detected, _concerning(reasons, workspace, detected, selection))
        self._add_running(selection)

    def _add_running(self, selection: Selection) -> None:
        """Each check whose command runs a changed CI file or root Makefile (`Runs`)."""
        if not selection.runs:
            return
        for workspace in sorted(self.layout.workspaces.keys() | self.configured.keys()):
            for check, detected in self._workspace_checks(workspace):
                text = self._runs_text(check, detected)
                self._add(check, detected, {
                    file: (f"{check.command!r} runs {runs.what}",)
                    for file, runs in selection.runs.items()
                    if self._runs(file, runs, text, check.workspace)})

    def _runs(self, file: str, runs: Runs, text: str, folder: str) -> bool:
        """Whether a check's command (`text`, run in `folder`) runs the changed `file`."""
        if runs.read_by_make and self.runners.tasks is not None:
            return file in self.runners.tasks.makefiles(text, folder)
        return re.search(runs.pattern, text) is not None

    def _runs_text(self, check: PlannedCheck, detected: DetectedCheck | None) -> str:
        """What a check's command runs, as text: a package script's body too (`pnpm run test`
        running `turbo run test`)."""
        if detected is None or detected.task is None or detected.ecosystem is not Ecosystem.NODE:
            return check.command
        scripts = mapping(self.runners.manifests.json(join(check.workspace, "package.json"))
                          .get("scripts"))
        body = scripts.get(detected.task)
        return f"{check.command}\n{body}" if isinstance(body, str) else check.command

    def add_root_runners(self, selection: Selection) -> None:
        """A member with no lint, typecheck or test command of an ecosystem is covered by its
        workspace root's command of that kind (a root vitest config, a root `tests/` run with
        `uv run pytest`): the root's check runs for the member's changes."""
        for workspace in sorted(self.checks.keys() | selection.reasons.keys()):
            if workspace in self.configured or workspace not in self.layout.workspaces:
                continue
            because = selection.reasons.get(workspace, {})
            if not because:
                continue
            own = [d for _, d in self._workspace_checks(workspace) if d is not None]
            for ecosystem, root in self.layout.workspaces[workspace].roots:
                have = {d.kind for d in own if d.ecosystem is ecosystem}
                for kind in ROOT_COVERED_KINDS:
                    if kind in have:
                        continue
                    step = (f"{workspace} has no {kind} command of its own; the {ecosystem} "
                            f"workspace root {root} runs it")
                    for check, detected in self._workspace_checks(root):
                        if check.kind == kind and (detected is None or
                                                   detected.ecosystem is ecosystem):
                            covered = _concerning(because, workspace, detected, selection)
                            self._add(check, detected, {f: (*s, step) for f, s in covered.items()})

    def add_hooks(self, text: str, selection: Selection, lookup: TaskLookup) -> None:
        """The repository's pre-commit hooks the change concerns (`hooks.plan_hooks`)."""
        from verification.hooks import plan_hooks

        verifying = [path for path, status in selection.files.items()
                     if status.kind not in ("ignored", "documentation")]
        planned = plan_hooks(text, verifying, lookup, float(self.config.timeout))
        self.installed_hooks = planned.installed
        self.unverified_steps += planned.unverified
        for check, because in planned.checks:
            self._add(check, None, because)

    def add_ci(self, ci: CiPlan, selection: Selection) -> None:
        """The checks of the CI jobs the change triggers, for the files each covers
        (`ci_cover.covering`), with the earlier checks of their jobs and of the jobs they
        need (CI runs them first); the CI steps they skip are listed. A CI check in a folder
        `.github/ratchet.yml` configures is not planned: the configured checks win."""
        from verification.ci_cover import covering

        self.unverified_steps += ci.problems
        timeout = float(self.config.timeout)
        makefiles = self.runners.tasks.makefiles if self.runners.tasks is not None else None
        by_id: dict[str, str] = {}
        for job in ci.jobs:
            concerned = not job.checks and not self._configures(job.folder)
            for ci_check in job.checks:
                if self._configures(ci_check.folder):
                    continue
                if self.installed_hooks and _PRE_COMMIT_RUN.search(ci_check.script):
                    # Offline, `pre-commit run` fails installing them: the hooks are planned
                    # from the config instead (`add_hooks`), those it installs listed.
                    if covering(job, ci_check, selection, self.layout, makefiles=makefiles):
                        self.unverified_steps.append(UnverifiedStep(
                            job.workflow, job.key, ci_check.step,
                            f"runs pre-commit, which first installs {len(self.installed_hooks)}"
                            " hooks from the network: its local hooks are planned from "
                            f"{HOOKS_FILE} instead"))
                    continue
                check = PlannedCheck(ci_check.key, ci_check.folder, ci_check.kind,
                                     ci_check.command, timeout, None)
                by_id[ci_check.key] = check.key
                self.ci[check.key] = (ci_check, job)
                because = covering(job, ci_check, selection, self.layout, makefiles=makefiles)
                concerned = concerned or bool(because)
                self._add(check, None, because)
            if concerned:
                self.unverified_steps += job.unverified
                self.bookkeeping += job.bookkeeping
        pending = [key for key in self.ci if key in self.reasons]
        while pending:
            key = pending.pop()
            ci_check, _ = self.ci[key]
            self.needs[key] = tuple(by_id[a] for a in ci_check.after if a in by_id)
            for need in self.needs[key]:
                if need not in self.reasons:
                    step = f"{key} runs after it in CI"
                    because = {f: (*s, step) for f, s in self.reasons[key].items()}
                    self._add(PlannedCheck(*self._ci_check(need)), None, because)
                    pending.append(need)

    def _configures(self, folder: str) -> bool:
        """True when `.github/ratchet.yml` configures the workspace `folder` belongs to."""
        return folder in self.configured or self.layout.folder_owner(folder) in self.configured

    def _ci_check(self, key: str) -> tuple[str, str, str, str, float, None]:
        ci_check, _ = self.ci[key]
        return (ci_check.key, ci_check.folder, ci_check.kind, ci_check.command,
                float(self.config.timeout), None)

    def add_needs(self, graph: DependencyGraph) -> None:
        """What each check needs first, and the checks it needs that were not selected (a
        dependency's build, a configured check named in `needs`), planned with the reasons
        of the check needing them. Configured checks need what their `needs` name; detected
        ones follow `_detected_needs`. A need that would close a cycle (two packages
        depending on each other) is left out: one of their builds must go first anyway."""
        configured = self.config.needs_keys()
        pending = deque(entry for entries in self.checks.values() for entry in entries)
        while pending:
            check, detected = pending.popleft()
            key = check.key
            if key in self.needs or key in self.ci:
                continue
            if check.workspace in self.configured:
                wanted = configured.get(key, [])
            else:
                wanted = self._detected_needs(check, detected, graph)
            for need in wanted:
                needed = self._check(need)
                if needed is not None and needed[0].key not in self.reasons:
                    step = f"{key} needs it to pass first"
                    because = {f: (*s, step) for f, s in self.reasons.get(key, {}).items()}
                    self._add(*needed, because)
                    pending.append(needed)
            self.needs[key] = tuple(wanted)
        self.needs = _without_cycles(self.needs)

    def _detected_needs(self, check: PlannedCheck, detected: DetectedCheck | None,
                        graph: DependencyGraph) -> list[str]:
        """A build, typecheck or test of a workspace needs the build of each Node package it
        loads through that package's build output (`loads_build_output`): the workspaces it
        depends on, and for a test its own package too. A task graph's `dependsOn` (turbo,
        Nx) adds what it declares: `^build` the build of each dependency, `build` its own."""
        found = self._declared_needs(check, detected, graph)
        if check.kind not in ("build", "typecheck", "test"):
            return found
        folders = graph.dependencies(check.workspace)
        if check.kind == "test":
            folders = [*folders, check.workspace]
        found += [key for folder in folders for key in self._builds_first(folder)
                  if key != check.key]
        return list(dict.fromkeys(found))

    def _builds_first(self, folder: str) -> tuple[str, ...]:
        """The keys of `folder`'s builds when what loads its package loads their output."""
        found = self._builds.get(folder)
        if found is None:
            found = self._builds[folder] = tuple(
                built.key for built, _ in self._workspace_checks(folder) if built.kind == "build"
            ) if self._built_before_loading(folder) else ()
        return found

    def _declared_needs(self, check: PlannedCheck, detected: DetectedCheck | None,
                        graph: DependencyGraph) -> list[str]:
        """The checks a turbo or Nx task graph says `check`'s task (`detected`'s) needs
        first."""
        if detected is None or detected.task is None or detected.ecosystem is not Ecosystem.NODE:
            return []
        tasks = self._task_graph()
        needs = tasks.needs(check.workspace, detected.task) if tasks is not None else None
        if needs is None:
            return []
        found = [c.key for task in needs.own for c, d in self._workspace_checks(check.workspace)
                 if d is not None and d.task == task and c.key != check.key]
        found += [c.key for task in needs.upstream for folder in graph.dependencies(check.workspace)
                  if folder not in self.configured and folder in self.layout.workspaces
                  for c, d in self._workspace_checks(folder) if d is not None and d.task == task]
        return found

    def _task_graph(self) -> TaskGraph | None:
        """The repository's turbo or Nx task graph, read the first time a check asks; None
        without a root `turbo.json` or `nx.json`."""
        if not self._tasks_read:
            index, manifests = self.runners.index, self.runners.manifests
            self._tasks_read = True
            if index.has(".", "turbo.json") or index.has(".", "nx.json"):
                from verification.task_graphs import TaskGraph

                def name(folder: str) -> str | None:
                    found = manifests.json(join(folder, "package.json")).get("name")
                    return found if isinstance(found, str) else None

                graph = TaskGraph(read_json=manifests.json, has=index.has, package_name=name)
                self._tasks = graph if graph.declared else None
        return self._tasks

    def _built_before_loading(self, folder: str) -> bool:
        workspace = self.layout.workspaces.get(folder)
        return (folder not in self.configured and workspace is not None
                and Ecosystem.NODE in workspace.ecosystems
                and loads_build_output(folder, self.runners.manifests))

    def _check(self, key: str) -> tuple[PlannedCheck, DetectedCheck | None] | None:
        workspace, _, check_id = key.rpartition(":")
        workspace = workspace or "."
        if workspace not in self.configured and workspace not in self.layout.workspaces:
            return None
        return next(((c, d) for c, d in self._workspace_checks(workspace) if c.id == check_id),
                    None)

    def finish(self, selection: Selection) -> tuple[Plan, dict[str, dict[str, tuple[str, ...]]]]:
        self._drop_duplicates()
        installs = self._ci_installs()
        planned: list[PlannedCheck] = []
        setups: dict[str, list[str]] = {}
        uses: dict[str, set[str]] = {}
        for workspace in sorted(self.checks):
            entries = self.checks[workspace]
            planned += [self._narrowed(check, detected, selection) for check, detected in entries]
            if workspace in self.configured:
                setups.setdefault(workspace, []).extend(self.configured[workspace].setup)
                continue
            setups.setdefault(workspace, [])
            for ecosystem in sorted({d.ecosystem for _, d in entries if d is not None}):
                root = self.layout.install_root(workspace, ecosystem)
                command = installs.get((root, ecosystem), self.runners.install(root, ecosystem))
                if command is None:
                    continue
                commands = setups.setdefault(root, [])
                if command not in commands:
                    commands.append(command)
                if root != workspace:
                    uses.setdefault(workspace, set()).add(root)
        for key in self.reasons.keys() & self.ci.keys():
            for folder in self.ci[key][0].setups:
                commands = setups.setdefault(folder, [])
                commands += [c for (f, _), c in installs.items()
                             if f == folder and c not in commands]
        workspaces = tuple(
            PlannedWorkspace(path, tuple(setups[path]), tuple(sorted(uses.get(path, ()))))
            for path in sorted(setups)
            if path in self.checks or setups[path]
        )
        waits: dict[str, tuple[str, ...]] = {}  # workspace -> its detected checks' setups
        # Made whole, not through `dataclasses.replace`: it costs thrice as much, per check.
        planned = [
            PlannedCheck(check.id, check.workspace, check.kind, check.command, check.timeout,
                         check.junit, needs=self.needs.get(check.key, ()),
                         setups=self._setups(check, uses, setups, waits),
                         writes=(check.workspace,) if check.kind == "build" else ())
            for check in planned
        ]
        plan = Plan(workspaces, _within(planned), self.config.concurrency)
        covered = {f for because in self.reasons.values() for f in because}
        unverified = tuple(
            path for path, status in sorted(selection.files.items())
            if status.kind not in ("ignored", "documentation") and path not in covered
        )
        # Explained under the names the plan shows (bytes that are not UTF-8 as \xNN).
        reasons = {printable_path(key): because for key, because in self.reasons.items()}
        steps = tuple(dict.fromkeys(self.unverified_steps))
        return shown(Plan(plan.workspaces, plan.checks, plan.concurrency, (), unverified,
                          steps)), reasons

    def _setups(self, check: PlannedCheck, uses: dict[str, set[str]],
                setups: dict[str, list[str]], waits: dict[str, tuple[str, ...]]
                ) -> tuple[str, ...]:
        """The setups a check waits for: a CI check its job's installs, a detected one its
        install root's and its own workspace's (the same for each of the workspace's, kept in
        `waits`)."""
        if check.key in self.ci:
            return tuple(f for f in self.ci[check.key][0].setups if setups.get(f))
        found = waits.get(check.workspace)
        if found is None:
            found = waits[check.workspace] = tuple(
                w for w in (*sorted(uses.get(check.workspace, ())), check.workspace)
                if setups.get(w))
        return found

    def _drop_duplicates(self) -> None:
        """Leave out each detected check a planned CI check runs already (`duplicated_by`):
        its files are the CI check's to cover, and what needed it needs the CI check."""
        ci_checks = [self.ci[key][0] for key in self.ci if key in self.reasons]
        if not ci_checks:
            return
        from verification.ci_cover import duplicated_by

        plan_keys = {c.key: key for key, (c, _) in self.ci.items()}
        replaced: dict[str, str] = {}
        for workspace, entries in self.checks.items():
            for check, detected in entries:
                if detected is None or check.key in self.ci:
                    continue
                twin = duplicated_by(workspace, check.command, detected, ci_checks, self.layout)
                if twin is None:
                    continue
                replaced[check.key] = plan_keys[twin.key]
                step = f"the CI step {twin.step!r} runs what {check.key} would"
                known = self.reasons[plan_keys[twin.key]]
                for file, steps in self.reasons.pop(check.key).items():
                    known.setdefault(file, (*steps, step))
        if not replaced:
            return
        for workspace in list(self.checks):
            self.checks[workspace] = [(c, d) for c, d in self.checks[workspace]
                                      if c.key not in replaced]
            if not self.checks[workspace]:
                del self.checks[workspace]
        self.needs = {key: tuple(dict.fromkeys(replaced.get(n, n) for n in needs))
                      for key, needs in self.needs.items() if key not in replaced}

    def _ci_installs(self) -> dict[tuple[str, Ecosystem | None], str]:
        """The installs of the jobs of planned CI checks, per folder and ecosystem: the first
        in CI order. They replace the detected install of that ecosystem there."""
        found: dict[tuple[str, Ecosystem | None], str] = {}
        for key, (_, job) in self.ci.items():
            if key in self.reasons:
                for install in job.installs:
                    found.setdefault((install.folder, install.ecosystem), install.command)
        return found

    def _narrowed(self, check: PlannedCheck, detected: DetectedCheck | None,
                  selection: Selection) -> PlannedCheck:
        """A Cargo workspace's `--workspace` command run for the selected crates only (`-p`
        each), when they are some of its crates: the changed ones and their dependents."""
        if detected is None or detected.ecosystem is not Ecosystem.RUST:
            return check
        crates = selection.narrowed(check.workspace)
        if not crates:
            return check
        from verification.cargo import crate_name  # Cargo's reader: only for crates

        every = self.layout.cargo_crates(check.workspace)
        names = [crate_name(self.runners.manifests.toml(join(crate, "Cargo.toml"))) or crate
                 for crate in every if crate in crates]
        command = narrow_cargo(check.command, names)
        if len(names) == len(every) or command == check.command:
            return check
        step = (f"cargo runs the {len(names)} of {len(every)} crates of the Cargo workspace "
                f"that changed or depend on a change: "
                + "; ".join(f"{name} ({crates[crate][-1]})"
                            for name, crate in zip(names, (c for c in every if c in crates),
                                                   strict=True)))
        self.reasons[check.key] = {file: (*steps, step)
                                   for file, steps in self.reasons[check.key].items()}
        return replace(check, command=command)

    def _workspace_checks(self, workspace: str
                          ) -> tuple[tuple[PlannedCheck, DetectedCheck | None], ...]:
        found = self._planned.get(workspace)
        if found is None:
            if workspace in self.configured:
                entry = self.configured[workspace]
                found = tuple((_configured_check(workspace, c, self.config), None)
                              for c in entry.checks)
            else:
                timeout = float(self.config.timeout)
                found = tuple((PlannedCheck(d.id, workspace, d.kind, d.command, timeout, None), d)
                              for d in self.runners.checks(workspace))
            self._planned[workspace] = found
        return found

    def _add(self, check: PlannedCheck, detected: DetectedCheck | None,
             because: dict[str, tuple[str, ...]]) -> None:
        if not because:
            return
        key = check.key
        known = self.reasons.get(key)
        if known is None:
            self.checks.setdefault(check.workspace, []).append((check, detected))
            self.reasons[key] = dict(because)
            return
        for file, steps in because.items():
            known.setdefault(file, steps)


def _without_cycles(needs: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """`needs` with each need that closes a cycle left out, in one depth-first pass (linear:
    the graph comes from the repository's manifests), visiting keys and needs in order."""
    kept: dict[str, list[str]] = {key: [] for key in needs}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(needs):
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(needs[start]))]
        while stack:
            key, rest = stack[-1]
            need = next(rest, None)
            if need is None:
                state[key] = 2
                stack.pop()
            elif state.get(need) != 1:  # a need on the current path would close a cycle
                kept[key].append(need)
                if need not in state:
                    state[need] = 1
                    stack.append((need, iter(needs.get(need, ()))))
    return {key: tuple(found) for key, found in kept.items()}


def _concerning(because: dict[str, tuple[str, ...]], workspace: str,
                detected: DetectedCheck | None, selection: Selection
                ) -> dict[str, tuple[str, ...]]:
    """The reasons that apply to a check run for `workspace`: a file that concerns some
    ecosystems of it only selects those ecosystems' detected checks, a tool's config only
    the checks running that tool, a source file outside what the tool's config says it
    checks (`DetectedCheck.covers`: mypy's `files`) not that tool's check (configured checks
    run for any file)."""
    if detected is None:
        return because
    return {f: s for f, s in because.items()
            if selection.concerns(workspace, f, detected.ecosystem)
            and (f not in selection.tools or selection.tools[f].runs_in(detected))
            and _covered(f, workspace, detected, selection)}


def _covered(file: str, workspace: str, detected: DetectedCheck, selection: Selection) -> bool:
    """False for a source file of `workspace` that the check's tool is told not to check."""
    status = selection.files.get(file)
    if not detected.covers or status is None or status.kind != "code":
        return True
    inside = relative(file, workspace)
    return inside is None or any(is_below(inside, c) for c in detected.covers)


def _coverage(changed: list[str], selection: Selection, plan: Plan,
              reasons: dict[str, dict[str, tuple[str, ...]]]) -> tuple[FileCoverage, ...]:
    by_file: dict[str, list[str]] = {}
    for check in plan.checks:
        for file in reasons.get(check.key, {}):
            by_file.setdefault(file, []).append(check.key)
    return tuple(
        FileCoverage(path, selection.files[path].kind, _detail(path, selection, by_file),
                     tuple(by_file.get(path, ())))
        for path in changed
    )


def _detail(path: str, selection: Selection, by_file: dict[str, list[str]]) -> str:
    """How planning read `path`; for a tool's config no planned check runs, that it is so."""
    tool = selection.tools.get(path)
    if tool is not None and not by_file.get(path):
        return f"configures {tool.name}, and no planned check runs {tool.name}"
    return selection.files[path].detail


def _configured_workspaces(config: VerifyConfig) -> dict[str, WorkspaceConfig]:
    configured = {workspace.path: workspace for workspace in config.workspaces}
    if config.checks:
        configured["."] = WorkspaceConfig(path=".", checks=list(config.checks))
    return configured


def _configured_check(folder: str, check: CheckConfig, config: VerifyConfig) -> PlannedCheck:
    timeout = check.timeout if check.timeout is not None else config.timeout
    return PlannedCheck(check.id, folder, check.kind, check.run, float(timeout), check.junit)
