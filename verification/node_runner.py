"""The commands a Node workspace declares, run with its own package manager.

Pure (reads through `Manifests` and the `RepoIndex`). The package manager is the one the
repository pins (`packageManager` in the install root's package.json, as Corepack reads it),
else the one its lockfile belongs to; scripts run through it, and a fresh worktree gets the
frozen install that lockfile allows (`pnpm install --frozen-lockfile`, `npm ci`, `yarn
install --immutable`) as the install root's setup.
"""

from __future__ import annotations

import re
from functools import lru_cache
from posixpath import dirname, normpath

from verification.checks import DetectedCheck
from verification.index import RepoIndex, join
from verification.manifests import Manifests, declares, mapping, node_dependencies
from verification.scripts import Script, TaskResolver, checks_of
from verification.workspaces import Ecosystem, Layout

# Lockfiles, in the order that decides the package manager when several exist.
NODE_LOCKFILES = (
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("package-lock.json", "npm"),
    ("npm-shrinkwrap.json", "npm"),
    ("bun.lock", "bun"),
    ("bun.lockb", "bun"),
)

# Folders a package's build writes its output to, by convention.
BUILD_OUTPUTS = ("dist", "lib", "build", "out")

# ESLint plugins that run another tool, and that tool.
_ESLINT_PLUGINS = (("eslint-plugin-prettier", "prettier"),)

# A script running a task in every member of the workspace: pnpm's, npm's and bun's recursive
# flags, yarn's `workspaces foreach`, turbo, lerna, `nx run-many` / `nx affected`.
FANS_OUT = re.compile(
    r"\b(?:pnpm|npm|bun)\b[^;&|]*\s(?:-r|--recursive|-ws|--workspaces)\b"
    r"|\byarn\s+workspaces\s+(?:foreach|run)\b|\bturbo\s+(?:run\s+)?[\w:-]+"
    r"|\blerna\s+(?:run|exec)\b|\bnx\s+(?:run-many|affected)\b")

# How each manager runs a binary of the installed dependencies.
_EXEC = {"pnpm": "pnpm exec", "yarn": "yarn run", "npm": "npm exec --", "bun": "bunx"}

# Test runner configs that make a folder's test command `vitest run` or `jest`.
_VITEST_CONFIGS = ("vitest.config.", "vitest.workspace.")
_JEST_CONFIGS = ("jest.config.",)


def node_checks(workspace: str, layout: Layout, index: RepoIndex, manifests: Manifests,
                tasks: TaskResolver | None = None) -> list[DetectedCheck]:
    """The checks of a Node workspace: its lint, typecheck, test and build scripts however it
    spells them (`scripts.checks_of`, reading the task runners they start through `tasks`),
    and its test runner's config when no test script names one."""
    package = manifests.json(join(workspace, "package.json"))
    manager = package_manager(workspace, layout, index, manifests)
    scripts = mapping(package.get("scripts"))
    found = checks_of(scripts, tasks=tasks)
    plugins = (_eslint_runs(workspace, layout, manifests)
               if any("eslint" in script.tools for script in found) else frozenset())
    checks = [
        DetectedCheck(check_id(script.name), script.kind, f"{manager} run {script.name}",
                      Ecosystem.NODE, script.tools | plugins if "eslint" in script.tools
                      else script.tools, script.name, fans_out=_fans_out(script, scripts))
        for script in found
    ]
    if not any(check.kind == "test" for check in checks):
        runner = _configured_runner(workspace, index, package)
        if runner is not None:
            checks.append(DetectedCheck("node-test", "test", f"{_EXEC[manager]} {runner}",
                                        Ecosystem.NODE, frozenset({runner.split()[0]})))
    return checks


def _eslint_runs(workspace: str, layout: Layout, manifests: Manifests) -> frozenset[str]:
    """Tools eslint runs through a plugin the package (or its install root) depends on:
    with `eslint-plugin-prettier`, eslint runs prettier and reads its config."""
    root = layout.install_root(workspace, Ecosystem.NODE) if workspace in layout.workspaces else (
        workspace)
    packages = [manifests.json(join(folder, "package.json")) for folder in {workspace, root}]
    return frozenset(tool for plugin, tool in _ESLINT_PLUGINS
                     if any(declares(package, plugin) for package in packages))


@lru_cache(maxsize=1024)
def check_id(script: str) -> str:
    """The check id of a script: `node-` and its name, `:` and other characters a check key
    or log name cannot hold as `-` (`test:unit` is `node-test-unit`). Made once per name:
    the packages of a monorepo repeat theirs."""
    return "node-" + re.sub(r"[^A-Za-z0-9._-]+", "-", script).strip("-")


def _fans_out(script: Script, scripts: dict[str, object]) -> bool:
    """Whether the script runs its task in every member (`FANS_OUT`)."""
    body = scripts.get(script.name)
    return isinstance(body, str) and FANS_OUT.search(body) is not None


def _configured_runner(workspace: str, index: RepoIndex, package: dict[str, object]) -> str | None:
    names = index.names.get(workspace, set())
    if any(name.startswith(_VITEST_CONFIGS) for name in names):
        return "vitest run"
    if any(name.startswith(_JEST_CONFIGS) for name in names) or "jest" in package:
        return "jest"
    return None


def package_manager(workspace: str, layout: Layout, index: RepoIndex, manifests: Manifests) -> str:
    """The manager pinned by the install root's `packageManager`, else by the nearest lockfile
    (a monorepo keeps one at its root), else npm."""
    root = layout.install_root(workspace, Ecosystem.NODE) if workspace in layout.workspaces else (
        workspace)
    pinned = manifests.json(join(root, "package.json")).get("packageManager")
    if isinstance(pinned, str):
        name = pinned.split("@", 1)[0].strip()
        if name in _EXEC:
            return name
    folder = "" if root == "." else root
    while True:
        for lockfile, manager in NODE_LOCKFILES:
            if index.has(folder or ".", lockfile):
                return manager
        if not folder:
            return "npm"
        folder = dirname(folder)


def node_install(root: str, layout: Layout, index: RepoIndex, manifests: Manifests) -> str | None:
    """The frozen install a fresh worktree needs at `root`, or None.

    None when the root has no lockfile of its manager (no reproducible install exists) or
    nothing under it declares a dependency (nothing to install).
    """
    manager = package_manager(root, layout, index, manifests)
    lockfiles = [name for name, owner in NODE_LOCKFILES if owner == manager]
    if not any(index.has(root, name) for name in lockfiles):
        return None
    folders = (root, *layout.members(Ecosystem.NODE, root))
    if not any(node_dependencies(manifests.json(join(f, "package.json"))) for f in folders):
        return None
    if manager == "pnpm":
        return "pnpm install --frozen-lockfile"
    if manager == "npm":
        return "npm ci"
    if manager == "bun":
        return "bun install --frozen-lockfile"
    if _is_yarn_berry(root, index, manifests):
        return "yarn install --immutable"
    return "yarn install --frozen-lockfile"


def _is_yarn_berry(root: str, index: RepoIndex, manifests: Manifests) -> bool:
    """Yarn 2+ (berry) is configured by .yarnrc.yml, or pinned as yarn@2 or later."""
    if index.has(root, ".yarnrc.yml"):
        return True
    pinned = manifests.json(join(root, "package.json")).get("packageManager")
    if isinstance(pinned, str) and pinned.startswith("yarn@"):
        major = pinned[len("yarn@"):].split(".", 1)[0]
        return major.isdigit() and int(major) >= 2
    return False


def loads_build_output(workspace: str, manifests: Manifests) -> bool:
    """True when the package's entry points (`main`, `module`, `types`, `exports`) lie in a
    build output folder (`BUILD_OUTPUTS`): whatever loads it by name, its own tests too, loads
    what its build wrote, so those tests run after the build."""
    package = manifests.json(join(workspace, "package.json"))
    entries = [package.get(name) for name in ("main", "module", "types", "typings", "exports")]
    while entries:
        entry = entries.pop()
        if isinstance(entry, dict):
            entries += entry.values()
        elif isinstance(entry, list):
            entries += entry
        elif isinstance(entry, str):
            first = normpath(entry.removeprefix("./")).split("/")[0]
            if first in BUILD_OUTPUTS:
                return True
    return False
