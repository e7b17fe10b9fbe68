"""Which of the base's CI jobs a change triggers, and what their steps become.

Pure. `read_ci` takes the base's workflows (`workflows.py`) and the changed files that need
verifying, and follows GitHub's rules:

- **Trigger**: a workflow runs for the change on `pull_request` (or `pull_request_target`)
  when it has one (with `types` including opened, synchronize or reopened), else on `push`
  (not for a push filtered to tags only), else on `merge_group`; its `paths` / `paths-ignore`
  of that event must admit at least one changed file (`filter_patterns`). Branch filters
  must admit the default branch the change targets and lands on (`DEFAULT_BRANCHES`: main,
  master...): a workflow on pushes to `release` only is a release's. Jobs of a workflow only
  called (`workflow_call`) run through their caller's job (`uses: ./.github/workflows/...`),
  with the inputs it passes over the called workflow's defaults.
- **Jobs**: `needs` order them; a job's `if:` is evaluated (`expressions`) when it depends
  only on what planning knows (the event, taken as a plain pull request: no labels, not a
  draft, no marker in its title, body or commit message; inputs, `runner.os`, the outputs a
  `dorny/paths-filter` step's inline filters give its job; a skipped step's and a release
  action's outputs, which are empty: nothing is released here), else the job runs and its
  checks say so. A job needing a job that does not run does not run, unless its `if:` holds a
  status function (`always()`, `!cancelled()`). One combination of its matrix is planned: the first,
  in GitHub's order, whose `runs-on` is not Windows or macOS.
- **Steps**, in order: toolchain actions and host preparation are not checks, nor is a step
  only doing the workflow's bookkeeping (`ci_bookkeeping`: `echo ... >> $GITHUB_OUTPUT`;
  `--explain` says so), whose outputs the later `if:`s still read as unknown; installs are
  its folder's setup; every other `run:` step is a check in its working directory. A step
  using a local composite action (`uses: ./.github/actions/build`, its `action.yml` read from
  the base like the workflows) plans the action's steps in its place, nested ones too (at
  most `MAX_ACTION_DEPTH` deep, no cycle), with the action's `inputs` (the caller's `with:`
  over each input's `default`) and the caller's `env`, not the job's `defaults.run`; their
  keys add the calling step's id or name (`ci.test.build.run-tests`). What cannot run in the
  sandbox or is no verification becomes a `UnverifiedStep` with its reason: another action
  (a local one that is not composite too, or nested too deep, or in a cycle), a job with
  `services` or a `container`, a benchmark or metrics, a job committing what its steps
  rewrite (autofix-ci), a job on Windows or macOS only, a
  reusable workflow of another repository, a step needing secrets or another unknown
  expression, a shell other than bash or sh, a working directory outside the repository,
  publishing or deploying, rewriting files (`--fix`), running as root (`sudo mount`),
  `continue-on-error`, the steps after
  an artifact download (they work on another job's output; not when it brings back, where it
  was made, what a job it needs uploaded: all checks run in one tree, after that job's), and
  after a browser download the
  first test that drives browsers (`ci_steps.tests_in_browsers`: an e2e suite, playwright...)
  and every step after it; its builds and unit tests before that run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from posixpath import normpath, relpath
from typing import Any

from verification.ci_bookkeeping import bookkeeping, not_checked
from verification.ci_steps import (
    command_line,
    commands,
    downloads_browsers,
    ecosystems_of,
    install_ecosystem,
    kind_of,
    needs_root,
    role,
    shell_of,
    tests_in_browsers,
)
from verification.config import ConfigError
from verification.expressions import (
    Partial,
    Unknown,
    Value,
    evaluate,
    evaluate_condition,
    interpolate,
    to_text,
    truthy,
)
from verification.filter_patterns import admits
from verification.globs import compile_glob
from verification.manifests import mapping
from verification.model import BookkeepingStep, UnverifiedStep
from verification.scripts import TaskResolver, line_uses
from verification.tools import ToolUse
from verification.workflows import (
    MAX_ACTION_DEPTH,
    Defaults,
    EventFilter,
    Job,
    Step,
    Workflow,
    WorkflowProblem,
    Workflows,
    combinations,
    local_action,
    matrix_problem,
)
from verification.workspaces import Ecosystem
from verification.yaml_events import load_yaml

# Events a change triggers, in the order a workflow's are tried.
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
CHANGE_EVENTS = (*PULL_REQUEST_EVENTS, "push", "merge_group")
# The names a repository's default branch goes by: a change targets it, then lands on it. A
# workflow on pushes (or pull requests) to other branches only (`branches: [release]`) runs
# for releases, not for the change.
DEFAULT_BRANCHES = ("main", "master", "develop", "dev", "trunk")
# Activity types of a pull request that a new change triggers (GitHub's defaults).
CHANGE_TYPES = frozenset({"opened", "synchronize", "reopened"})
# Reusable workflows called through reusable workflows, at most (GitHub allows 10 levels).
MAX_CALL_DEPTH = 10
# Actions that prepare the runner (a toolchain, a cache, the checkout): not checks.
TOOLCHAIN_ACTIONS = frozenset({
    "actions/checkout", "actions/cache", "actions/cache/restore", "pnpm/action-setup",
    "astral-sh/setup-uv", "dtolnay/rust-toolchain", "actions-rs/toolchain",
    "swatinem/rust-cache", "moonrepo/setup-rust", "taiki-e/install-action",
    "jlumbroso/free-disk-space", "denoland/setup-deno", "oven-sh/setup-bun",
    "mozilla-actions/sccache-action", "arduino/setup-protoc", "bufbuild/buf-setup-action",
    "extractions/setup-just", "jdx/mise-action", "ruby/setup-ruby", "gradle/actions/setup-gradle",
})  # fmt: skip
# Actions that compute which files changed: evaluated when their filters are inline.
PATHS_FILTER_ACTIONS = frozenset({"dorny/paths-filter"})
# Actions that release (version, publish, tag): in a verification nothing is released, so their
# outputs are empty, and the steps on what they published (`if: steps.changesets.outputs.
# published == 'true'`) do not run.
RELEASE_ACTIONS = frozenset({
    "changesets/action", "softprops/action-gh-release", "googleapis/release-please-action",
    "google-github-actions/release-please-action", "ncipollo/release-action",
})  # fmt: skip
# The `steps.<id>` of a step that does not run: no outputs (each is null), skipped.
_SKIPPED = Partial({"outputs": {}, "outcome": "skipped", "conclusion": "skipped"})
# Actions bringing another job's (or run's) artifacts: the steps after them work on those.
DOWNLOAD_ACTIONS = ("actions/download-artifact@", "dawidd6/action-download-artifact@")
UPLOAD_ACTIONS = ("actions/upload-artifact@",)
_SETUP_ACTION = re.compile(r"^[^/]+/setup-[^/@]+$")
_NOT_LINUX = re.compile(r"windows|macos|\bmac\b|osx", re.IGNORECASE)
# A job or workflow that benchmarks, measures sizes or collects metrics: it measures, it does
# not pass or fail a change.
_BENCHMARK = re.compile(r"bench|\bsize\b|(?<![a-z])metrics(?![a-z])", re.IGNORECASE)
# Actions that commit or propose what the job's steps changed: such a job regenerates or
# formats files (codegen, `--fix`), its steps are fixers.
COMMIT_ACTIONS = frozenset({
    "autofix-ci/action", "stefanzweifel/git-auto-commit-action", "peter-evans/create-pull-request",
    "ad-m/github-push-action", "endbug/add-and-commit",
})  # fmt: skip
# What planning takes the event to carry: a change is verified as a plain pull request (or
# push) that opts into nothing, with no labels, not a draft, and no marker in its title, body
# or commit message (`contains(github.event.pull_request.labels.*.name, 'run-docker')`,
# `contains(github.event.pull_request.title, '[docker]')` are false); the rest is unknown.
_PLAIN_EVENT = Partial({
    "pull_request": Partial({"labels": [], "title": "", "body": "", "draft": False}),
    "head_commit": Partial({"message": ""}),
})
# A variable holding a credential: tools read it without the script naming it (`gh` reads
# GH_TOKEN), so a step setting one planning cannot know does not run.
_CREDENTIAL = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API_?KEY|AUTH", re.IGNORECASE)
# An `if:` with a status function (`always()`, `!cancelled()`) runs the job although a job it
# needs was skipped; without one, GitHub skips it too.
_STATUS_GUARD = re.compile(r"\b(?:always|cancelled)\(\s*\)")


@dataclass(frozen=True)
class CiCheck:
    """A `run:` step that becomes a check: where it runs, what, and where it comes from.

    `script` is the step's script with its expressions substituted (what dedup compares);
    `command` adds the step's environment and shell. `setups` are the folders whose setup
    (its job's installs) runs first; `after` the keys of the checks it needs (the previous
    check of its job, or the last checks of the jobs its job needs)."""

    key: str  # unique per plan: workflow stem, job key, step
    folder: str
    kind: str
    command: str
    script: str
    ecosystems: frozenset[Ecosystem]
    tools: frozenset[str]  # the tools its commands run (`tools.tool_uses`)
    workflow: str
    job: str
    step: str
    setups: tuple[str, ...]
    after: tuple[str, ...]
    notes: tuple[str, ...]  # why it runs although an `if:` could not be evaluated


@dataclass(frozen=True)
class CiInstall:
    """An install step: the setup of `folder` for `ecosystem`, with CI's flags."""

    folder: str
    ecosystem: Ecosystem | None
    command: str


@dataclass
class CiJob:
    """A job the change triggers, what its steps became, and what it skipped."""

    workflow: str  # the file of the triggered workflow (the caller's, for a called one)
    key: str  # the job's id, `caller/called` for a reusable workflow's job
    explicit: bool  # its workflow's `paths` name the files it covers
    admitted: frozenset[str]  # the changed files its workflow's filters admit
    event: str
    folder: str = "."  # where its steps run unless they say otherwise
    checks: list[CiCheck] = field(default_factory=list)
    installs: list[CiInstall] = field(default_factory=list)
    unverified: list[UnverifiedStep] = field(default_factory=list)
    bookkeeping: list[BookkeepingStep] = field(default_factory=list)  # steps that are no checks
    # The artifacts its steps upload: name -> the path uploaded (one path, no wildcard).
    uploads: dict[str, str] = field(default_factory=dict)
    # The folders of the local composite actions whose steps it plans (nested ones too).
    actions: set[str] = field(default_factory=set)


@dataclass
class CiPlan:
    """The triggered jobs in order, and the workflows that could not be read."""

    jobs: list[CiJob] = field(default_factory=list)
    problems: list[UnverifiedStep] = field(default_factory=list)


def read_ci(workflows: Workflows, changed: Sequence[str], folders: Container[str],
            scripts: Callable[[str], Mapping[str, object]],
            tasks: Callable[[str], TaskResolver] | None = None) -> CiPlan:
    """The jobs `changed` triggers (see the module docstring); `folders` are the tree's
    folders, so a working directory that does not exist is named; `scripts` the package.json
    scripts of a folder, so a step running one (`pnpm run check`) is read by what it runs,
    and `tasks` the reader of the task runners started in a folder (`make test` is what its
    recipe runs)."""
    plan = CiPlan(problems=[UnverifiedStep(p.path, "", "", p.reason) for p in workflows.problems])
    for path, workflow in sorted(workflows.by_path.items()):
        event = _trigger(workflow)
        if event is None:
            continue
        filtered = [f for f in changed if _admitted(event, f)]
        if not filtered:
            continue
        reader = _WorkflowReader(workflows, path, event, frozenset(filtered), folders,
                                 changed, scripts, tasks)
        plan.jobs += reader.read(workflow, {}, prefix="", depth=0, outer_needs=())
    return plan


def _trigger(workflow: Workflow) -> EventFilter | None:
    for name in CHANGE_EVENTS:
        event = workflow.events.get(name)
        if event is None:
            continue
        if name in PULL_REQUEST_EVENTS and event.types is not None \
                and not CHANGE_TYPES & set(event.types):
            continue
        if name == "push" and event.branches is None and event.branches_ignore is None and (
                event.tags is not None or event.tags_ignore is not None):
            continue  # a push of tags only (a release)
        if name != "merge_group" and not _on_default_branch(event):
            continue  # a release branch's, not the change's
        return event
    return None


def _on_default_branch(event: EventFilter) -> bool:
    """Whether the event's branch filters admit the branch a change targets and lands on: the
    default branch, whose name planning takes to be one of DEFAULT_BRANCHES."""
    return any((event.branches is None or admits(event.branches, branch)) and (
        event.branches_ignore is None or not admits(event.branches_ignore, branch))
        for branch in DEFAULT_BRANCHES)


def _admitted(event: EventFilter, path: str) -> bool:
    if event.paths is not None:
        return admits(event.paths, path)
    if event.paths_ignore is not None:
        return not admits(event.paths_ignore, path)
    return True


class _WorkflowReader:
    """Reads the jobs of one triggered workflow (and of the workflows it calls)."""

    def __init__(self, workflows: Workflows, path: str, event: EventFilter,
                 admitted: frozenset[str], folders: Container[str], changed: Sequence[str],
                 scripts: Callable[[str], Mapping[str, object]],
                 tasks: Callable[[str], TaskResolver] | None) -> None:
        self.workflows = workflows
        self.path = path
        self.event = event
        self.admitted = admitted
        self.folders = folders
        self.changed = changed
        self.scripts = scripts
        self.tasks = tasks
        self.stem = path.rpartition("/")[2].rsplit(".", 1)[0]

    def read(self, workflow: Workflow, inputs: Mapping[str, Value], *, prefix: str,
             depth: int, outer_needs: tuple[str, ...]) -> list[CiJob]:
        """The jobs of `workflow` in `needs` order; `outer_needs` are what its caller job
        needs (job keys)."""
        read: list[CiJob] = []
        state: dict[str, _JobState] = {}  # job id -> what dependants learn from it
        for job in _in_order(workflow.jobs):
            key = f"{prefix}{job.id}"
            needs = tuple(n for n in job.needs if n in state)
            ran = [state[n] for n in needs]
            if any(not s.ran for s in ran) and not _STATUS_GUARD.search(str(job.condition or "")):
                state[job.id] = _JobState(False, (), {})
                continue
            contexts = self._contexts(inputs, {n: state[n].outputs for n in needs})
            condition = evaluate_condition(job.condition, contexts)
            if condition is not True and not isinstance(condition, Unknown):
                state[job.id] = _JobState(False, (), {})
                continue
            notes = (f"job {key}: its if ({_shown(job.condition)}) needs {condition.what}: "
                     "planned as if true",) if isinstance(condition, Unknown) else ()
            after = tuple(k for s in ran for k in s.last) or (outer_needs if not needs else ())
            if job.uses is not None:
                called = self._call(job, key, contexts, depth, after)
                read += called
                last = tuple(c.checks[-1].key for c in called if c.checks) or after
                state[job.id] = _JobState(True, last, {})
                continue
            handed = {name: path for s in ran for name, path in s.uploads.items()}
            entry, outputs = self._job(workflow, job, key, contexts, notes, after, handed)
            read.append(entry)
            last = (entry.checks[-1].key,) if entry.checks else after
            state[job.id] = _JobState(True, last, outputs, entry.uploads)
        return read

    def _contexts(self, inputs: Mapping[str, Value],
                  needs: Mapping[str, Mapping[str, Value]]) -> dict[str, Value]:
        return {
            "github": Partial({"event_name": self.event.name, "event": _PLAIN_EVENT}),
            "runner": Partial({"os": "Linux", "arch": "X64"}),
            "inputs": dict(inputs),
            "needs": Partial({job: Partial({"outputs": Partial(outputs)})
                              for job, outputs in needs.items()}),
            "env": {},
        }

    def _call(self, job: Job, key: str, contexts: dict[str, Value], depth: int,
              after: tuple[str, ...]) -> list[CiJob]:
        """The jobs of the reusable workflow `job` calls, or the job listed as skipped."""
        uses = job.uses or ""
        local = re.sub(r"^(\./|\$/)", "", uses)
        called = self.workflows.by_path.get(normpath(local)) if uses.startswith(
            ("./", "$/")) else None
        reason = None
        if called is None:
            reason = (f"calls the reusable workflow {uses}, of another repository: not run here"
                      if not uses.startswith(("./", "$/")) else
                      f"calls {uses}, which is not a workflow planning could read")
        elif depth >= MAX_CALL_DEPTH:
            reason = f"calls reusable workflows more than {MAX_CALL_DEPTH} levels deep"
        if reason is not None:
            entry = CiJob(self.path, key, self.event.paths is not None, self.admitted,
                          self.event.name)
            entry.unverified.append(UnverifiedStep(self.path, key, "", reason))
            return [entry]
        assert called is not None
        inputs: dict[str, Value] = dict(called.inputs)
        for name, value in job.with_.items():
            inputs[str(name)] = _value(value, contexts)
        return self.read(called, inputs, prefix=f"{key}/", depth=depth + 1, outer_needs=after)

    def _job(self, workflow: Workflow, job: Job, key: str, contexts: dict[str, Value],
             notes: tuple[str, ...], after: tuple[str, ...],
             handed: Mapping[str, str]) -> tuple[CiJob, dict[str, Value]]:
        """The job's checks, installs and skipped steps, and its outputs. `handed` are the
        artifacts the jobs it needs upload: a download of one back where it was made is no
        other job's output here, since every check runs in the same tree, after those jobs'."""
        where = job.defaults.working_directory or workflow.defaults.working_directory
        entry = CiJob(self.path, key, self.event.paths is not None, self.admitted,
                      self.event.name, normpath(where) if where and "${{" not in where else ".")
        skip = self._job_problem(workflow, job, contexts)
        if isinstance(skip, str):
            entry.unverified.append(UnverifiedStep(self.path, key, "", skip))
            return entry, {}
        contexts = {**contexts, "matrix": skip}
        env = _environment([workflow.env, job.env], contexts)
        walk = _Walk(entry, handed, after)
        defaults = Defaults(job.defaults.shell or workflow.defaults.shell, where)
        contexts["steps"] = self._steps(job.steps, walk, contexts, env, notes, _Scope(defaults))
        outputs = {}
        for name, value in job.outputs.items():
            resolved = _value(value, contexts)
            if not isinstance(resolved, Unknown):
                outputs[str(name)] = resolved
        # The installs are its checks' setup whatever their place in the job.
        folders = tuple(dict.fromkeys(i.folder for i in entry.installs))
        entry.checks = [_with_setups(c, folders) for c in entry.checks]
        return entry, outputs

    def _steps(self, steps: Sequence[Step], walk: _Walk, contexts: dict[str, Value],
               env: dict[str, Value], notes: tuple[str, ...], scope: _Scope) -> Partial:
        """Plan `steps` in order into `walk`: the job's own, or a local composite action's
        (`scope`). Returns their `steps` context, the outputs as they came (the later
        steps read them, and the job's outputs)."""
        entry, key = walk.entry, walk.entry.key
        steps_context = Partial()
        contexts = {**contexts, "steps": steps_context}
        for step in steps:
            label = scope.label + step.label
            step_contexts = {**contexts, "env": {**env}}
            condition = evaluate_condition(step.condition, step_contexts)
            if condition is not True and not isinstance(condition, Unknown):
                if step.id:  # as GitHub has it: a skipped step, with no outputs
                    steps_context[step.id] = _SKIPPED
                continue
            step_notes = notes + ((f"step {label!r}: its if ({_shown(step.condition)}) "
                                   f"needs {condition.what}: planned as if true",)
                                  if isinstance(condition, Unknown) else ())
            if step.uses is not None and local_action(step.uses) is not None:
                self._composite(step, walk, step_contexts, env, step_notes, scope)
                continue
            if step.uses is not None:
                outputs = self._action(step, entry, label)
                if step.id and outputs is not None:
                    steps_context[step.id] = Partial({"outputs": Partial(outputs),
                                                      "outcome": "success",
                                                      "conclusion": "success"})
                elif step.id and step.uses.split("@", 1)[0].lower() in RELEASE_ACTIONS:
                    # Nothing is released here: `published` and its other outputs are null.
                    steps_context[step.id] = _SKIPPED
                if step.uses.lower().startswith(UPLOAD_ACTIONS):
                    _note_upload(step, entry, step_contexts)
                if step.uses.lower().startswith(DOWNLOAD_ACTIONS) and not _handed_back(
                        step, walk.handed, step_contexts, self.folders):
                    walk.downloaded = step.uses.split("@", 1)[0]
                continue
            if step.run is None:
                continue
            if downloads_browsers(step.run):
                walk.browsers = walk.browsers or label  # host preparation, like the others
                continue
            needed = (f"runs on what {walk.downloaded} brought (another job's or run's "
                      "artifacts)" if walk.downloaded is not None else
                      f"needs the browsers {walk.browsers!r} downloads" if walk.in_browsers
                      else None)
            if needed is not None:
                entry.unverified.append(UnverifiedStep(self.path, key, label,
                                                       f"{needed}, which does not run here"))
                continue
            made = self._run_step(step, label, key, step_contexts, env, scope.defaults,
                                  action=scope.actions[-1] if scope.actions else None)
            if isinstance(made, UnverifiedStep):
                entry.unverified.append(made)
                continue
            if isinstance(made, BookkeepingStep):
                entry.bookkeeping.append(made)
                continue
            if made is None:
                continue
            if isinstance(made, CiInstall):
                walk.installs.append(made)
                entry.installs.append(made)
                continue
            folder, script, command, kind, uses, unset = made
            if walk.browsers is not None and tests_in_browsers(script, kind,
                                                               self.scripts(folder)):
                # From the first test in browsers on, the job's steps may use what it made.
                walk.in_browsers = True
                entry.unverified.append(UnverifiedStep(
                    self.path, key, label,
                    f"needs the browsers {walk.browsers!r} downloads, which does not run here"))
                continue
            check = CiCheck(
                key=self._key(step, entry, scope.slug),
                folder=folder, kind=kind, command=command, script=script,
                ecosystems=ecosystems_of(script, uses), tools=frozenset(u.tool for u in uses),
                workflow=self.path, job=key, step=label,
                setups=tuple(dict.fromkeys(i.folder for i in walk.installs)),
                after=walk.previous, notes=step_notes + unset,
            )
            entry.checks.append(check)
            walk.previous = (check.key,)
        return steps_context

    def _composite(self, step: Step, walk: _Walk, contexts: dict[str, Value],
                   env: dict[str, Value], notes: tuple[str, ...], scope: _Scope) -> None:
        """A step using a local action: a composite action's steps planned in its place,
        with its inputs (the caller's `with:` over the action's defaults) and the caller's
        `env`, but not the job's `defaults.run` (GitHub's runner applies those to the job's
        own steps only); else the step listed with why it is not."""
        uses = step.uses or ""
        folder = local_action(uses) or "."
        label = scope.label + step.label
        action = self.workflows.actions.get(folder)

        def skipped(reason: str) -> None:
            walk.entry.unverified.append(UnverifiedStep(self.path, walk.entry.key, label,
                                                        reason))

        if folder in scope.actions:
            chain = " > ".join((*scope.actions, folder))
            return skipped(f"uses {uses} inside itself ({chain}): a cycle, not expanded")
        if len(scope.actions) >= MAX_ACTION_DEPTH:
            return skipped(f"uses {uses} through more than {MAX_ACTION_DEPTH} composite "
                           "actions: not expanded")
        if action is None:
            return skipped(f"uses {uses}, which planning did not read")
        if isinstance(action, WorkflowProblem):
            return skipped(f"uses {uses}: {action.path} {action.reason}")
        if not action.composite:
            return skipped(f"uses the local action {uses}, which runs with {action.using}: "
                           "only a composite action's steps are planned")
        if _truthy_flag(step.continue_on_error, contexts):
            return skipped("continue-on-error: CI does not require it to pass")
        # Input names in any case, as GitHub reads them: `with: Node-Version` sets node-version.
        inputs: dict[str, Value] = {}
        for name, default in action.inputs.items():
            inputs[str(name).lower()] = _input(default, contexts)
        for name, value in step.with_.items():
            inputs[str(name).lower()] = _input(value, contexts)
        walk.entry.actions.add(folder)
        inner = {**contexts, "inputs": inputs}
        # Its checks' keys go on with its id or name (else its folder's), unique in the job.
        part = scope.slug + (_words(step.id or step.name or folder.rpartition("/")[2])
                             or f"step-{step.index}")
        start = f"{self.stem}.{walk.entry.key.replace('/', '.')}.{part}."
        if any(c.key.startswith(start) for c in walk.entry.checks):
            part = f"{part}-{step.index}"  # the same action used twice
        self._steps(action.steps, walk, inner,
                    _environment([step.env], {**contexts, "env": dict(env)}, base=env), notes,
                    _Scope(Defaults(), (*scope.actions, folder), f"{part}.", f"{label} > "))

    def _key(self, step: Step, entry: CiJob, within: str) -> str:
        """A check's key: the workflow stem, the job key, and the step's id or name in
        lowercase words (after its composite actions' steps, `within`), unique in its job."""
        slug = _words(step.id or step.name or step.label) or f"step-{step.index}"
        key = f"{self.stem}.{entry.key.replace('/', '.')}.{within}{slug}"
        return key if key not in {c.key for c in entry.checks} else f"{key}-{step.index}"

    def _job_problem(self, workflow: Workflow, job: Job,
                     contexts: dict[str, Value]) -> str | dict[str, Value]:
        """Why the job cannot run here, or the matrix combination it runs with."""
        names = (job.id, job.name or "", workflow.name or "", workflow.path.rpartition("/")[2])
        if any(_BENCHMARK.search(name) for name in names):
            return "runs benchmarks or measures sizes: measurements, not verification"
        committer = next((step.uses for step in job.steps if step.uses and step.uses.split(
            "@", 1)[0].lower() in COMMIT_ACTIONS), None)
        if committer is not None:
            return (f"commits what its steps rewrite ({committer.split('@', 1)[0]}):"
                    " a fixer, not verification")
        if job.services:
            return f"needs services ({', '.join(job.services)}): they do not run in the sandbox"
        if job.container is not None:
            image = mapping(job.container).get("image") if isinstance(job.container, dict) \
                else job.container
            return f"runs in a container ({to_text(image)}): containers do not run in the sandbox"
        if _truthy_flag(job.continue_on_error, contexts):
            return "continue-on-error: CI does not require it to pass"
        problem = matrix_problem(job.matrix)
        if problem is not None:
            return problem
        labels: list[str] = []
        for combination in combinations(job.matrix) if job.matrix is not None else [{}]:
            runs_on = _value(job.runs_on, {**contexts, "matrix": combination})
            shown = to_text(runs_on) if not isinstance(runs_on, Unknown) else ""
            if not _NOT_LINUX.search(shown):
                return dict(combination)
            labels.append(shown.replace("\n", " "))
        if not labels:
            return "its matrix has no combination"
        return f"runs on {labels[0]} only (no Linux combination): only Linux jobs run here"

    def _action(self, step: Step, entry: CiJob, label: str) -> dict[str, Value] | None:
        """A `uses:` step: nothing for a toolchain action, the outputs of a paths filter it
        can evaluate, else listed as skipped."""
        uses = step.uses or ""
        name = uses.split("@", 1)[0].lower()
        if name in TOOLCHAIN_ACTIONS or _SETUP_ACTION.match(name) or name.startswith(
                "actions/setup-"):
            return None
        if name in PATHS_FILTER_ACTIONS:
            outputs = _paths_filter(step, self.changed)
            if outputs is not None:
                return outputs
            reason = "uses dorny/paths-filter with filters planning cannot read inline"
        elif name == "pre-commit/action":
            reason = ("uses the action pre-commit/action: the hooks it runs are planned from "
                      ".pre-commit-config.yaml (those pre-commit must install are listed)")
        else:
            reason = f"uses the action {uses}: actions do not run in the sandbox"
        entry.unverified.append(UnverifiedStep(self.path, entry.key, label, reason))
        return None

    def _run_step(self, step: Step, label: str, key: str, contexts: dict[str, Value],
                  env: dict[str, Value], defaults: Defaults, *, action: str | None = None
                  ) -> UnverifiedStep | BookkeepingStep | CiInstall | _Made | None:
        """A `run:` step as what a check is made of, a `CiInstall`, None for host
        preparation, why bookkeeping is no check, or why it is skipped; `defaults` are the
        `defaults.run` that apply; `action` the folder of the composite action it is a step
        of (its scripts are named by `github.action_path`)."""
        def skipped(reason: str) -> UnverifiedStep:
            return UnverifiedStep(self.path, key, label, reason)

        if _truthy_flag(step.continue_on_error, contexts):
            return skipped("continue-on-error: CI does not require it to pass")
        shell = shell_of(step.shell or defaults.shell)
        if not shell.runs:
            return skipped(f"runs with shell {shell.argv[0]}: only bash and sh run here")
        step_env = _environment([step.env], {**contexts, "env": dict(env)}, base=env)
        where = step.working_directory or defaults.working_directory
        folder = "."
        if where is not None:
            resolved = interpolate(where, {**contexts, "env": step_env})
            if isinstance(resolved, Unknown):
                return skipped(_needs(resolved))
            folder = normpath(resolved.strip() or ".")
            if folder.startswith(("/", "../")) or folder == "..":
                return skipped(f"runs in {resolved}, outside the repository")
            if folder not in self.folders:
                return skipped(f"runs in {resolved}, a folder the repository does not have")
        if action is not None:  # the action's folder, as seen from where the step runs
            github = Partial({**mapping(contexts.get("github")),
                              "action_path": _path_from(folder, action)})
            contexts = {**contexts, "github": github}
        script = interpolate(step.run or "", {**contexts, "env": step_env})
        if isinstance(script, Unknown):
            return skipped(_needs(script))
        unset: list[str] = []
        for name, value in step_env.items():
            if not isinstance(value, Unknown):
                continue
            if re.search(rf"\${{?{re.escape(name)}\b", script) or (name in step.env and (
                    value.what.startswith(("secrets", "vars", "github.token"))
                    or _CREDENTIAL.search(name))):
                return skipped(_needs(value))
            if name in step.env:
                unset.append(name)  # a setting the script never reads: its tools' default
        known = {k: v for k, v in step_env.items() if not isinstance(v, Unknown)}
        package = self.scripts(folder)
        runners = self.tasks(folder) if self.tasks is not None else None
        uses = [use for line in commands(script)
                for use in line_uses(line, package, tasks=runners)]
        what = role(script, step.name, uses)
        if what == "publish":
            return skipped("publishes, deploys or uploads: not verification")
        if what == "fix":
            return skipped("rewrites the files it checks (--fix, --write): not verification")
        if what == "host":
            return None
        if what == "bookkeeping":
            return BookkeepingStep(self.path, key, label,
                                   not_checked(bookkeeping(script, uses) or frozenset()))
        root = needs_root(script) if what == "check" else None
        if root is not None:
            return skipped(f"runs {root!r} as root: the sandbox has no root")
        command = command_line(script, shell, known)
        if what == "install":
            lines = [install_ecosystem(line) for line in script.splitlines()]
            ecosystem = next((e for e in lines if e is not None), None)
            return CiInstall(folder, ecosystem, command)
        notes = tuple(f"step {label!r}: runs without {name} (it needs "
                      f"{step_env[name].what}, which planning cannot know)" for name in unset)
        return folder, script.strip(), command, kind_of(script, step.name, uses), uses, notes


# A check step's parts: folder, script, command, kind, the tools it runs, and notes on what
# it runs without.
_Made = tuple[str, str, str, str, list[ToolUse], tuple[str, ...]]


@dataclass
class _Walk:
    """A job's steps as they are planned: what the later steps see of the earlier ones."""

    entry: CiJob
    handed: Mapping[str, str]  # the artifacts the jobs it needs upload
    previous: tuple[str, ...]  # the keys of the checks the next check runs after
    installs: list[CiInstall] = field(default_factory=list)
    downloaded: str | None = None  # an artifact download the later steps work on
    browsers: str | None = None  # a browser download the later steps may test in
    in_browsers: bool = False  # a step tested in them: the job's later steps are not run


@dataclass(frozen=True)
class _Scope:
    """Where steps come from: the job itself, or the local composite actions it runs them
    through (`actions`, outermost first), with the `defaults.run` that apply, the start of
    their checks' last key part and of their labels (`build.`, `Build > `)."""

    defaults: Defaults
    actions: tuple[str, ...] = ()
    slug: str = ""
    label: str = ""


@dataclass(frozen=True)
class _JobState:
    """What the jobs needing a job learn: whether it runs, its last checks, its outputs."""

    ran: bool
    last: tuple[str, ...]
    outputs: Mapping[str, Value]
    uploads: Mapping[str, str] = field(default_factory=dict)


def _in_order(jobs: Sequence[Job]) -> list[Job]:
    """Jobs with each after the jobs it needs (file order otherwise); a job in a cycle of
    needs, or needing a job that does not exist, comes last and does not run."""
    ids = {job.id for job in jobs}
    placed: list[Job] = []
    done: set[str] = set()
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if all(n in done or n not in ids for n in j.needs)]
        if not ready:
            break
        for job in ready:
            placed.append(job)
            done.add(job.id)
        pending = [j for j in pending if j.id not in done]
    return placed


def _environment(layers: Iterable[Mapping[str, Any]], contexts: Mapping[str, Value], *,
                 base: Mapping[str, Value] | None = None) -> dict[str, Value]:
    """`env` mappings merged in order (workflow, job, step), each value's expressions
    substituted with the variables set before it; a value needing an unknown is `Unknown`."""
    env: dict[str, Value] = dict(base or {})
    for layer in layers:
        for name, raw in layer.items():
            value = _value(raw, {**contexts, "env": dict(env)})
            env[name] = value if isinstance(value, Unknown) else to_text(value)
    return env


def _value(raw: Any, contexts: Mapping[str, Value]) -> Value:
    """A YAML value with the expressions in its strings evaluated: a string that is only
    one expression keeps the expression's type."""
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("${{") and text.endswith("}}") and text.count("${{") == 1:
            return evaluate(text[3:-2], contexts)
        return interpolate(raw, contexts)
    if isinstance(raw, list):
        items = [_value(item, contexts) for item in raw]
        return next((i for i in items if isinstance(i, Unknown)), items)
    if isinstance(raw, dict):
        return {k: _value(v, contexts) for k, v in raw.items()}
    if isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    return raw


def _input(raw: Any, contexts: Mapping[str, Value]) -> Value:
    """An action input's value as GitHub passes every input, text (empty without a
    default); one needing what planning cannot know stays `Unknown`."""
    if raw is None:
        return ""
    value = _value(raw, contexts)
    return value if isinstance(value, Unknown) else to_text(value)


def _truthy_flag(raw: Any, contexts: Mapping[str, Value]) -> bool:
    value = _value(raw, contexts)
    return not isinstance(value, Unknown) and truthy(value)


def _note_upload(step: Step, entry: CiJob, contexts: Mapping[str, Value]) -> None:
    """Keep what an upload step uploads when it is one path planning can resolve."""
    name, path = (_value(step.with_.get(k), contexts) for k in ("name", "path"))
    if isinstance(name, str) and isinstance(path, str) and path.strip() and "\n" not in \
            path.strip() and not re.search(r"[*?\[!]", path):
        entry.uploads[name] = normpath(path.strip())


def _handed_back(step: Step, handed: Mapping[str, str], contexts: Mapping[str, Value],
                 folders: Container[str]) -> bool:
    """True when a download brings back, where it was made, an artifact a job this one needs
    uploaded: a directory into itself, a file into its own folder."""
    name, path = (_value(step.with_.get(k), contexts) for k in ("name", "path"))
    uploaded = handed.get(name) if isinstance(name, str) else None
    if uploaded is None or not isinstance(path if path is not None else "", str):
        return False
    into = normpath(path.strip() if isinstance(path, str) and path.strip() else ".")
    parent = uploaded.rpartition("/")[0] or "."
    return into == uploaded or (into == parent and uploaded not in folders)


def _needs(unknown: Unknown) -> str:
    if unknown.what.startswith("secrets"):
        return f"needs {unknown.what}: secrets never reach the sandbox"
    return f"needs {unknown.what}, which planning cannot know"


def _shown(condition: Any) -> str:
    return " ".join(str(condition).split())[:120]


def _path_from(folder: str, target: str) -> str:
    """`target` (relative to the root) as a path from `folder`, `./` first so a shell runs a
    script named by it as a file: what `github.action_path` names for a step running there
    (GitHub gives an absolute path; a plan holds no host's paths)."""
    path = relpath(target, folder)
    return path if path.startswith("../") or path == ".." else f"./{path}"


def _words(text: str) -> str:
    """A name as a part of a check key: its lowercase words joined by `-`, 40 characters."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40].strip("-")


def _with_setups(check: CiCheck, folders: tuple[str, ...]) -> CiCheck:
    return replace(check, setups=folders)


def _paths_filter(step: Step, changed: Sequence[str]) -> dict[str, Value] | None:
    """The outputs of a `dorny/paths-filter` step whose `filters` are written inline: each
    filter 'true' when a changed file matches one of its patterns (a `!pattern` matching
    what it does not name), and `changes` listing the true ones; None when the filters are
    a file or cannot be read."""
    raw = step.with_.get("filters")
    if not isinstance(raw, str) or ":" not in raw:  # a file of filters: not read
        return None
    try:
        filters = load_yaml(raw, path=f"{step.label}: filters")
    except ConfigError:
        return None
    if not isinstance(filters, dict):
        return None
    outputs: dict[str, Value] = {}
    for name, patterns in filters.items():
        flat: list[str] = []
        pending = [patterns]
        while pending:
            item = pending.pop()
            if isinstance(item, list):
                pending += item
            elif isinstance(item, str):
                flat.append(item)
            elif isinstance(item, dict):  # `added|modified: pattern`: changed files alike
                pending += list(item.values())
        hit = any(_picomatch(pattern, path) for pattern in flat for path in changed)
        outputs[str(name)] = "true" if hit else "false"
    outputs["changes"] = json.dumps([k for k, v in outputs.items() if v == "true"])
    return outputs


def _picomatch(pattern: str, path: str) -> bool:
    if pattern.startswith("!"):
        return not compile_glob(pattern[1:]).matches(path)
    return compile_glob(pattern).matches(path)
