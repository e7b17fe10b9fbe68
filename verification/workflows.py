"""A repository's GitHub Actions workflows, as data: triggers, jobs, steps.

Pure. `read_workflows` takes the texts of `.github/workflows/*.yml|yaml` (the base revision's:
a change cannot choose its own checks) and returns each file as a `Workflow`, or the reason it
was ignored (`WorkflowProblem`: YAML refused by `yaml_events`, not a mapping). The
model keeps what planning reads, following GitHub's "Workflow syntax for GitHub Actions":

- `on` in its three forms (`on: push`, `on: [push, pull_request]`, a mapping of events with
  `branches`, `branches-ignore`, `tags`, `tags-ignore`, `paths`, `paths-ignore`, `types`),
  and `workflow_call.inputs` with their defaults;
- workflow `env` and `defaults.run` (`shell`, `working-directory`);
- jobs: `needs`, `if`, `runs-on`, `strategy.matrix` (with `include` and `exclude`),
  `services`, `container`, `env`, `defaults.run`, `continue-on-error`, `outputs`, and a
  reusable workflow's `uses` with `with`;
- steps: `name`, `id`, `if`, `run`, `uses`, `with`, `shell`, `working-directory`, `env`,
  `continue-on-error` (a `parallel:` group's steps count as steps in order).

Values keep their YAML types; expressions (`${{ }}`) stay text for `expressions` to evaluate.

A step `uses: ./folder` runs the local action whose metadata is `folder/action.yml` (or
`action.yaml`), read as an `Action` ("Metadata syntax for GitHub Actions"): its `runs.using`,
its inputs' defaults and, for a composite action, its steps; `local_actions` names the
folders still to read, so nested composite actions are read too.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from posixpath import normpath
from typing import Any

from verification.config import ConfigError
from verification.manifests import mapping
from verification.yaml_events import load_yaml

# Words one of the events a change triggers needs (or a reusable workflow's): a file with
# none of them (a schedule, an issue bot) never runs for a change and is not parsed.
_CHANGE_EVENT = re.compile(r"pull_request|push|merge_group|workflow_call")
# The most matrix combinations looked at for one job (GitHub runs at most 256).
MAX_COMBINATIONS = 256
# The largest workflow file read, and the most YAML nodes it may expand to (each use of an
# alias counting its whole value): GitHub's own workflow parser's limits, 1 MiB and a million
# parse events (actions/runner src/Sdk/WorkflowParser/ParseOptions.cs, MaxFileSize and
# MaxParseEvents). A real workflow GitHub runs is read whole (deno's generated ci.yml is
# 424 kB, about 80,000 nodes counted so: past a ratchet.yml's limits), while a larger one,
# which GitHub would refuse too, is refused, the size before parsing. libyaml parses 1 MiB in
# well under a second.
MAX_WORKFLOW_BYTES = 1024 * 1024
MAX_WORKFLOW_NODES = 1_000_000
# The metadata files of a local action, in the order GitHub's runner tries them.
ACTION_FILES = ("action.yml", "action.yaml")
# Local composite actions run through composite actions, at most: deeper nesting is listed,
# not expanded (GitHub's runner refuses its own depth, `CompositeActionsMaxDepth`, a little
# further down).
MAX_ACTION_DEPTH = 8


@dataclass(frozen=True)
class EventFilter:
    """One event of `on`, with its filters; None for a filter the workflow does not set."""

    name: str
    branches: tuple[str, ...] | None = None
    branches_ignore: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None
    tags_ignore: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    paths_ignore: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Defaults:
    """`defaults.run`: the shell and working directory of run steps."""

    shell: str | None = None
    working_directory: str | None = None


@dataclass(frozen=True)
class Step:
    """One step of a job, as written."""

    index: int  # its position in the job, from 1
    name: str | None
    id: str | None
    condition: Any  # `if`: text, a boolean, or None
    run: str | None
    uses: str | None
    with_: Mapping[str, Any]
    shell: str | None
    working_directory: str | None
    env: Mapping[str, Any]
    continue_on_error: Any

    @property
    def label(self) -> str:
        """How a reader finds the step: its name, its id, or what it runs or uses."""
        if self.name:
            return self.name
        if self.id:
            return self.id
        text = (self.run or self.uses or "").strip().splitlines()
        return text[0][:60] if text else f"step {self.index}"


@dataclass(frozen=True)
class Job:
    """One job of a workflow, as written."""

    id: str
    name: str | None
    needs: tuple[str, ...]
    condition: Any
    runs_on: Any
    matrix: Any  # `strategy.matrix`: a mapping, an expression, or None
    services: tuple[str, ...]
    container: Any
    env: Mapping[str, Any]
    defaults: Defaults
    continue_on_error: Any
    outputs: Mapping[str, Any]
    steps: tuple[Step, ...]
    uses: str | None  # a reusable workflow this job calls
    with_: Mapping[str, Any]


@dataclass(frozen=True)
class Workflow:
    """One workflow file: its events, the inputs it takes when called, env, defaults, jobs."""

    path: str
    name: str | None
    events: Mapping[str, EventFilter]
    inputs: Mapping[str, Any]  # workflow_call (and workflow_dispatch) input defaults
    env: Mapping[str, Any]
    defaults: Defaults
    jobs: tuple[Job, ...]


@dataclass(frozen=True)
class Action:
    """A local action's metadata: how it runs, its inputs' defaults, a composite's steps."""

    path: str  # the metadata file read (`folder/action.yml`)
    using: str  # `runs.using`: composite, node20, docker...
    inputs: Mapping[str, Any]  # input -> its default (None without one)
    steps: tuple[Step, ...]  # a composite action's, in order

    @property
    def composite(self) -> bool:
        return self.using == "composite"


@dataclass(frozen=True)
class WorkflowProblem:
    """A workflow or action file planning could not read, and why."""

    path: str
    reason: str


@dataclass
class Workflows:
    """The workflows of a revision by path, the files that were ignored, and the local
    actions their steps use, by folder."""

    by_path: dict[str, Workflow] = field(default_factory=dict)
    problems: list[WorkflowProblem] = field(default_factory=list)
    actions: dict[str, Action | WorkflowProblem] = field(default_factory=dict)


def read_workflows(texts: Mapping[str, str | None]) -> Workflows:
    """Parse each workflow file (`path -> text`, None for a file that could not be read as
    UTF-8 text of at most `tree.MAX_READ_BYTES`); one naming no event a change triggers is
    left out unread, one over `MAX_WORKFLOW_BYTES` or `MAX_WORKFLOW_NODES` is a problem."""
    found = Workflows()
    for path in sorted(texts):
        text = texts[path]
        if text is None:
            found.problems.append(WorkflowProblem(path, "ignored: not UTF-8 text of a readable "
                                                        "size"))
            continue
        if not _CHANGE_EVENT.search(text):
            continue
        try:
            data = load_yaml(text, path=path, max_bytes=MAX_WORKFLOW_BYTES,
                             max_nodes=MAX_WORKFLOW_NODES)
        except ConfigError as exc:
            found.problems.append(WorkflowProblem(path, f"ignored: {exc}"))
            continue
        workflow = _workflow(path, data)
        if isinstance(workflow, WorkflowProblem):
            found.problems.append(workflow)
        elif workflow.jobs:  # a workflow of no jobs runs nothing
            found.by_path[path] = workflow
    return found


def local_action(uses: str) -> str | None:
    """The folder of the local action a step's `uses: ./folder` names ("." for `./`), or
    None for an action of another repository or a Docker image."""
    if not uses.startswith("./"):
        return None
    return normpath(uses.strip())


def action_files(folder: str) -> tuple[str, ...]:
    """The metadata files of the action in `folder`, in the order GitHub tries them; none
    for a folder outside the repository."""
    if folder.startswith(("/", "../")) or folder == "..":
        return ()
    return tuple(name if folder == "." else f"{folder}/{name}" for name in ACTION_FILES)


def local_actions(workflows: Workflows) -> list[str]:
    """The folders of the local actions the workflows' steps (and the composite actions
    read so far) use that are not read yet."""
    steps = [step for workflow in workflows.by_path.values() for job in workflow.jobs
             for step in job.steps]
    steps += [step for action in workflows.actions.values() if isinstance(action, Action)
              for step in action.steps]
    folders = {local_action(step.uses) for step in steps if step.uses is not None}
    return sorted(f for f in folders if f is not None and f not in workflows.actions)


def read_actions(workflows: Workflows, folders: Iterable[str],
                 texts: Mapping[str, str | None]) -> None:
    """Parse the action of each folder from `texts` (`action_files` -> text, None for a file
    absent or not readable) into `workflows.actions`: the first file GitHub would read, or
    the reason none could be."""
    for folder in folders:
        if not action_files(folder):
            workflows.actions[folder] = WorkflowProblem(folder, "is outside the repository")
            continue
        path = next((p for p in action_files(folder) if texts.get(p) is not None), None)
        if path is None:
            workflows.actions[folder] = WorkflowProblem(
                folder, "has no action.yml or action.yaml planning could read (absent, or not "
                        "UTF-8 text of a readable size)")
            continue
        try:
            data = load_yaml(texts[path] or "", path=path, max_bytes=MAX_WORKFLOW_BYTES,
                             max_nodes=MAX_WORKFLOW_NODES)
        except ConfigError as exc:
            workflows.actions[folder] = WorkflowProblem(path, str(exc))
            continue
        runs = mapping(mapping(data).get("runs"))
        using = _text(runs.get("using"))
        if using is None:
            workflows.actions[folder] = WorkflowProblem(path, "says nowhere how it runs "
                                                              "(no runs.using)")
            continue
        inputs = {str(name): mapping(spec).get("default")
                  for name, spec in mapping(mapping(data).get("inputs")).items()}
        steps = tuple(_steps(runs.get("steps"))) if using == "composite" else ()
        workflows.actions[folder] = Action(path, using, inputs, steps)


def _workflow(path: str, data: Any) -> Workflow | WorkflowProblem:
    if data is None:
        data = {}  # an empty file runs nothing
    if not isinstance(data, dict):
        return WorkflowProblem(path, "ignored: the file is not a mapping of workflow keys")
    jobs = mapping(data.get("jobs"))
    on = data.get("on", data.get(True))  # YAML 1.1 writers may have made `on` a boolean
    events = _events(on)
    inputs: dict[str, Any] = {}
    for event in ("workflow_dispatch", "workflow_call"):
        raw = mapping(on).get(event) if isinstance(on, dict) else None
        for name, spec in mapping(mapping(raw).get("inputs")).items():
            inputs[str(name)] = mapping(spec).get("default")
    return Workflow(
        path=path,
        name=_text(data.get("name")),
        events=events,
        inputs=inputs,
        env=_env(data.get("env")),
        defaults=_defaults(data.get("defaults")),
        jobs=tuple(_job(str(job_id), job) for job_id, job in jobs.items() if isinstance(job, dict)),
    )


def _events(on: Any) -> dict[str, EventFilter]:
    if isinstance(on, str):
        return {on: EventFilter(on)}
    if isinstance(on, list):
        return {str(e): EventFilter(str(e)) for e in on if isinstance(e, str)}
    if not isinstance(on, dict):
        return {}
    events = {}
    for name, spec in on.items():
        spec = mapping(spec)
        events[str(name)] = EventFilter(
            str(name),
            branches=_patterns(spec.get("branches")),
            branches_ignore=_patterns(spec.get("branches-ignore")),
            tags=_patterns(spec.get("tags")),
            tags_ignore=_patterns(spec.get("tags-ignore")),
            paths=_patterns(spec.get("paths")),
            paths_ignore=_patterns(spec.get("paths-ignore")),
            types=_patterns(spec.get("types")),
        )
    return events


def _patterns(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(item) for item in value if isinstance(item, (str, int, float)))
    return ()


def _job(job_id: str, data: dict[str, Any]) -> Job:
    strategy = mapping(data.get("strategy"))
    services = data.get("services")
    needs = data.get("needs")
    return Job(
        id=job_id,
        name=_text(data.get("name")),
        needs=(needs,) if isinstance(needs, str) else tuple(
            str(n) for n in needs if isinstance(n, str)) if isinstance(needs, list) else (),
        condition=data.get("if"),
        runs_on=data.get("runs-on"),
        matrix=strategy.get("matrix"),
        services=tuple(str(s) for s in services) if isinstance(services, dict) else (),
        container=data.get("container"),
        env=_env(data.get("env")),
        defaults=_defaults(data.get("defaults")),
        continue_on_error=data.get("continue-on-error"),
        outputs=mapping(data.get("outputs")),
        steps=tuple(_steps(data.get("steps"))),
        uses=_text(data.get("uses")),
        with_=mapping(data.get("with")),
    )


def _steps(value: Any) -> Iterator[Step]:
    """The steps in order; the steps of a `parallel:` group in their order too."""
    flat: list[dict[str, Any]] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and isinstance(item.get("parallel"), list):
            flat += [s for s in item["parallel"] if isinstance(s, dict)]
        elif isinstance(item, dict):
            flat.append(item)
    for index, step in enumerate(flat, start=1):
        yield Step(
            index=index,
            name=_text(step.get("name")),
            id=_text(step.get("id")),
            condition=step.get("if"),
            run=_text(step.get("run")),
            uses=_text(step.get("uses")),
            with_=mapping(step.get("with")),
            shell=_text(step.get("shell")),
            working_directory=_text(step.get("working-directory")),
            env=_env(step.get("env")),
            continue_on_error=step.get("continue-on-error"),
        )


def _defaults(value: Any) -> Defaults:
    run = mapping(mapping(value).get("run"))
    return Defaults(_text(run.get("shell")), _text(run.get("working-directory")))


def _env(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    return {}  # an expression (`env: ${{ fromJSON(...) }}`): nothing known


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def combinations(matrix: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A matrix's combinations in GitHub's order, at most `MAX_COMBINATIONS`: the product of
    its vectors (first key slowest) without the `exclude`d ones, each extended by the
    `include` entries that add to it without overwriting an original value; an `include`
    entry that extends none is a combination of its own. A vector that is not a list (an
    expression) is skipped by the caller (see `matrix_problem`)."""
    vectors = {k: v for k, v in matrix.items() if k not in ("include", "exclude")}
    excludes = [mapping(e) for e in matrix.get("exclude") or [] if isinstance(e, dict)]
    includes = [mapping(i) for i in matrix.get("include") or [] if isinstance(i, dict)]
    keys = list(vectors)
    used = [False] * len(includes)
    count = 0
    if keys:
        for values in itertools.product(*(vectors[k] for k in keys)):
            if count >= MAX_COMBINATIONS:
                return
            combination = dict(zip(keys, values, strict=True))
            if any(all(combination.get(k) == v for k, v in e.items()) for e in excludes):
                continue
            extended = dict(combination)
            for position, include in enumerate(includes):
                if all(combination.get(k, v) == v for k, v in include.items() if k in vectors):
                    extended.update(include)
                    used[position] = True
            count += 1
            yield extended
    for position, include in enumerate(includes):
        if not used[position] and count < MAX_COMBINATIONS:
            count += 1
            yield dict(include)


def matrix_problem(matrix: Any) -> str | None:
    """Why a job's matrix cannot be expanded statically, or None when it can."""
    if matrix is None:
        return None
    if not isinstance(matrix, dict):
        return f"its matrix comes from an expression ({str(matrix).strip()[:80]})"
    for key, value in matrix.items():
        if key in ("include", "exclude"):
            if value is not None and not isinstance(value, list):
                return f"its matrix {key} comes from an expression"
        elif not isinstance(value, list):
            return f"its matrix value {key} comes from an expression ({str(value)[:80]})"
    return None
