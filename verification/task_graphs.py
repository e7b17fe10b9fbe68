"""What a monorepo's task graph says a task needs first: turbo's and Nx's `dependsOn`.

Pure, over parsed JSON. Both tools spell it alike (https://turborepo.com/docs/reference/
configuration#dependson, https://nx.dev/reference/project-configuration#dependson):
`"^build"` is the `build` of every package this one depends on, `"build"` this package's own
`build`. Turbo reads `tasks` (`pipeline` before 2.0) of the root `turbo.json`, a package's
`turbo.json` (`"extends": ["//"]`) overriding a task for that package; a `pkg#task` key is
one package's task (`//#task` the root's), and as a `dependsOn` entry it names one
package's task, not a relation, so it is left out. Nx reads `targetDefaults` of `nx.json` (keyed by
target name or executor), a project's `project.json` (or package.json `nx`) `targets`
overriding; an entry may be an object (`{"target": "build", "projects": "dependencies"}`,
or `"dependencies": true`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskNeeds:
    """The tasks to pass first: this package's (`own`) and each dependency's (`upstream`)."""

    own: tuple[str, ...] = ()
    upstream: tuple[str, ...] = ()

    def __or__(self, other: TaskNeeds) -> TaskNeeds:
        return TaskNeeds(tuple(dict.fromkeys((*self.own, *other.own))),
                         tuple(dict.fromkeys((*self.upstream, *other.upstream))))


class TaskGraph:
    """The declared needs of each package's tasks, from turbo's and Nx's configurations.

    `read_json(path)` gives a parsed JSON object ({} when missing); `package_name(folder)`
    the package's name (for turbo's `pkg#task` keys)."""

    def __init__(self, *, read_json: Callable[[str], Mapping[str, Any]],
                 has: Callable[[str, str], bool], package_name: Callable[[str], str | None]
                 ) -> None:
        self.read_json = read_json
        self.has = has
        self.package_name = package_name
        turbo = read_json("turbo.json") if has(".", "turbo.json") else {}
        self._turbo = _mapping(turbo.get("tasks") or turbo.get("pipeline"))
        nx = read_json("nx.json") if has(".", "nx.json") else {}
        self._nx = _mapping(nx.get("targetDefaults"))

    @property
    def declared(self) -> bool:
        return bool(self._turbo or self._nx)

    def needs(self, folder: str, task: str, executor: str | None = None) -> TaskNeeds | None:
        """What `task` of the package in `folder` needs first; None when neither tool
        declares that task."""
        found: TaskNeeds | None = None
        turbo = self._turbo_task(folder, task)
        if turbo is not None:
            found = _depends_on(turbo.get("dependsOn"), task)
        nx = self._nx_target(folder, task, executor)
        if nx is not None and "dependsOn" in nx:
            declared = _depends_on(nx.get("dependsOn"), task)
            found = declared if found is None else found | declared
        return found

    def _turbo_task(self, folder: str, task: str) -> Mapping[str, Any] | None:
        if not self._turbo:
            return None
        if folder != "." and self.has(folder, "turbo.json"):
            own = _mapping(_mapping(self.read_json(f"{folder}/turbo.json")).get("tasks"))
            if isinstance(own.get(task), dict) and "dependsOn" in own[task]:
                return _mapping(own[task])
        name = "//" if folder == "." else self.package_name(folder)
        for key in (f"{name}#{task}" if name else None, task):
            if key is not None and isinstance(self._turbo.get(key), dict):
                return _mapping(self._turbo[key])
        return None

    def _nx_target(self, folder: str, task: str, executor: str | None
                   ) -> Mapping[str, Any] | None:
        prefix = "" if folder == "." else f"{folder}/"
        own: dict[str, Any] = {}
        if self.has(folder, "project.json"):
            own = _mapping(_mapping(self.read_json(f"{prefix}project.json").get("targets"))
                           .get(task))
        if not own:
            package = self.read_json(f"{prefix}package.json")
            own = _mapping(_mapping(_mapping(package.get("nx")).get("targets")).get(task))
        if "dependsOn" in own:
            return own
        executor = executor or own.get("executor")
        for key in (task, executor):
            if isinstance(key, str) and isinstance(self._nx.get(key), dict):
                return _mapping(self._nx[key])
        return None


def _depends_on(value: object, task: str) -> TaskNeeds:
    own: list[str] = []
    upstream: list[str] = []
    for entry in value if isinstance(value, list) else []:
        if isinstance(entry, str):
            if entry.startswith("$"):  # turbo 1's `$ENV` entries are inputs, not tasks
                continue
            if "#" in entry:
                continue  # `pkg#task`: one named package's task, no dependency relation
            (upstream if entry.startswith("^") else own).append(entry.lstrip("^"))
        elif isinstance(entry, dict):
            target = entry.get("target")
            if not isinstance(target, str):
                continue
            projects = entry.get("projects")
            if entry.get("dependencies") is True or projects in ("dependencies", "{dependencies}"):
                upstream.append(target.lstrip("^"))
            elif projects in (None, "self", "{self}"):
                (upstream if target.startswith("^") else own).append(target.lstrip("^"))
    return TaskNeeds(tuple(t for t in dict.fromkeys(own) if t != task),
                     tuple(dict.fromkeys(upstream)))


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
