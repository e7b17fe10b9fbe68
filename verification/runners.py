"""The repository's own commands for each workspace, and the installs they need first.

Pure. One entry point for planning: `Runners.checks(workspace)` gathers the checks of every
ecosystem a workspace holds (Node and Python in their own modules; Go and Cargo here, whose
toolchains have one way to check a module, plus the linters a workspace declares by their
configs: `clippy.toml` or Cargo's `[lints.clippy]` clippy, `rustfmt.toml` `cargo fmt --check`,
`.golangci.yml` golangci-lint), and `Runners.install(root, ecosystem)` the frozen install a
fresh worktree needs at an install root. Results are cached per plan.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from verification.checks import KIND_ORDER, DetectedCheck
from verification.index import RepoIndex, join, parent
from verification.manifests import Manifests
from verification.node_runner import node_checks, node_install
from verification.python_runner import PythonTests, python_checks, python_install
from verification.workspaces import Ecosystem, Layout

if TYPE_CHECKING:
    from verification.task_runners import TaskLookup

GO_CHECKS = (
    DetectedCheck("go-vet", "lint", "go vet ./...", Ecosystem.GO, frozenset({"go vet"})),
    DetectedCheck("go-test", "test", "go test ./...", Ecosystem.GO, frozenset({"go test"})),
)
CARGO_CHECKS = (
    DetectedCheck("cargo-check", "typecheck", "cargo check --workspace --all-targets",
                  Ecosystem.RUST, frozenset({"cargo check"})),
    DetectedCheck("cargo-test", "test", "cargo test --workspace", Ecosystem.RUST,
                  frozenset({"cargo test"})),
)

CLIPPY = DetectedCheck("cargo-clippy", "lint", "cargo clippy --workspace --all-targets",
                       Ecosystem.RUST, frozenset({"cargo clippy"}))
# Linters a workspace declares by their config files (clippy and rustfmt look for theirs from
# the crate up, golangci-lint from the module up): the config plans the linter.
CARGO_LINTERS = (
    (("clippy.toml", ".clippy.toml"), CLIPPY),
    (("rustfmt.toml", ".rustfmt.toml"),
     DetectedCheck("cargo-fmt", "lint", "cargo fmt --all -- --check", Ecosystem.RUST,
                   frozenset({"rustfmt"}))),
)
GO_LINTERS = (
    ((".golangci.yml", ".golangci.yaml", ".golangci.toml", ".golangci.json"),
     DetectedCheck("golangci-lint", "lint", "golangci-lint run ./...", Ecosystem.GO,
                   frozenset({"golangci-lint"}))),
)


def _declares_clippy_lints(cargo: dict[str, object]) -> bool:
    """True when Cargo.toml configures clippy's lints (`[lints.clippy]`, `[workspace.lints
    .clippy]`): the repository lints with clippy."""
    workspace = cargo.get("workspace")
    tables = [cargo.get("lints"), workspace.get("lints") if isinstance(workspace, dict) else None]
    return any(isinstance(t, dict) and isinstance(t.get("clippy"), dict) for t in tables)


def narrow_cargo(command: str, crates: list[str]) -> str:
    """A Cargo command run for `crates` only: its `--workspace` (or `--all`) becomes one
    `-p NAME` per crate. A command without either is returned as it is."""
    packages = " ".join(f"-p {shlex.quote(name)}" for name in crates)
    return re.sub(r"(?<!\S)--(?:workspace|all)(?!\S)", lambda _: packages, command, count=1)


def widen_cargo(command: str, other: str) -> str:
    """A narrowed Cargo command (`-p` per crate) that a second plan of the same change runs for
    other crates (the base's layout and the change's each choose theirs: a crate added, a
    crate deleted) runs for the whole workspace again: the only set right for both."""
    if command == other or not command.startswith("cargo ") or not _PACKAGES.search(command):
        return command
    return _PACKAGES.sub("--workspace", command, count=1)


_PACKAGES = re.compile(r"(?<!\S)-p \S+(?: -p \S+)*")


class Runners:
    """Detects and caches the checks and installs of one layout's workspaces."""

    def __init__(self, layout: Layout, index: RepoIndex, manifests: Manifests,
                 tasks: TaskLookup | None = None) -> None:
        self.layout = layout
        self.index = index
        self.manifests = manifests
        self.tasks = tasks  # reads the task runners a package script starts (`make lint`)
        self._tests: PythonTests | None = None
        self._checks: dict[str, list[DetectedCheck]] = {}
        self._installs: dict[tuple[str, Ecosystem], str | None] = {}

    def checks(self, workspace: str) -> list[DetectedCheck]:
        """The checks of `workspace`, fastest kinds first; [] for a folder with none."""
        if workspace not in self._checks:
            found: list[DetectedCheck] = []
            ecosystems = self.layout.workspaces[workspace].ecosystems
            if Ecosystem.PYTHON in ecosystems:
                found += python_checks(workspace, self.layout, self.index, self.manifests,
                                       self.python_tests)
            if Ecosystem.NODE in ecosystems:
                found += node_checks(workspace, self.layout, self.index, self.manifests,
                                     self.tasks.resolver(workspace) if self.tasks else None)
            if Ecosystem.GO in ecosystems:
                found += [*self._declared_linters(workspace, GO_LINTERS), *GO_CHECKS]
            if Ecosystem.RUST in ecosystems:
                found += [*self._declared_linters(workspace, CARGO_LINTERS), *CARGO_CHECKS]
                if _declares_clippy_lints(self.manifests.toml(join(workspace, "Cargo.toml"))) \
                        and CLIPPY not in found:
                    found.insert(0, CLIPPY)
            found.sort(key=lambda c: KIND_ORDER.get(c.kind, len(KIND_ORDER)))
            self._checks[workspace] = found
        return self._checks[workspace]

    def _declared_linters(self, workspace: str,
                          linters: tuple[tuple[tuple[str, ...], DetectedCheck], ...]
                          ) -> list[DetectedCheck]:
        """The linters whose config the workspace (or a folder above it, where those tools
        look too) declares: a `clippy.toml` plans clippy, a `.golangci.yml` golangci-lint."""
        found = []
        for names, check in linters:
            folder: str | None = workspace
            while folder is not None:
                if any(self.index.has(folder, name) for name in names):
                    found.append(check)
                    break
                folder = parent(folder)
        return found

    def install(self, root: str, ecosystem: Ecosystem) -> str | None:
        """The install command a fresh worktree needs at `root` for `ecosystem`, or None."""
        key = (root, ecosystem)
        if key not in self._installs:
            command = None
            if ecosystem is Ecosystem.NODE:
                command = node_install(root, self.layout, self.index, self.manifests)
            elif ecosystem is Ecosystem.PYTHON:
                command = python_install(root, self.layout, self.index)
            self._installs[key] = command
        return self._installs[key]

    @property
    def python_tests(self) -> PythonTests:
        if self._tests is None:
            self._tests = PythonTests.from_index(self.index, self.layout)
        return self._tests
