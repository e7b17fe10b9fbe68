"""A command that runs a task runner, read by what its tasks run.

Pure (reads through the callables it is given). `make test`, `just lint`, `uv run poe check`,
`tox -e lint`, `nox -s tests`, `turbo run test --filter web` and `nx run-many -t lint` name
tasks; the tools those tasks run (`tools.py`) say what kind of check the command is and
which tool's config concerns it. `TaskLookup` finds a folder's task files (a Makefile,
a justfile, `[tool.poe.tasks]`, tox and nox configurations) and reads each once; their
reader (`task_files`) loads only when such a file exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from verification.commandline import Command, commands
from verification.scripts import line_uses
from verification.tools import ToolUse

if TYPE_CHECKING:
    from verification.task_files import TaskFile

# The task runners a command may start, and the files each reads, in the order it looks.
RUNNER_FILES = {
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "just": ("justfile", "Justfile", ".justfile"),
    "tox": ("tox.ini", "tox.toml", "pyproject.toml", "setup.cfg"),
    "nox": ("noxfile.py",),
    "poe": ("pyproject.toml",),
}
TASK_FILE_NAMES = frozenset(name for names in RUNNER_FILES.values() for name in names)
# Deepest chain of task runners calling task runners that is followed.
MAX_DEPTH = 8
# Makefiles read for one line, its includes' includes at most: a planted chain stops there.
MAX_MAKEFILES = 32

# Options of each runner that take a value (so the value is not read as a task).
_VALUED = {
    "make": frozenset({"-f", "--file", "--makefile", "-I", "--include-dir", "-o",
                       "--old-file", "-W", "--what-if", "--assume-new", "-l"}),
    "just": frozenset({"-f", "--justfile", "-d", "--working-directory", "--set", "--shell",
                       "--shell-arg", "--dotenv-filename", "--dotenv-path", "--color"}),
    "poe": frozenset({"-C", "--directory", "--root", "-e", "--executor"}),
    "tox": frozenset({"-c", "--conf", "--root", "--workdir", "-x", "--override",
                      "-m", "--labels", "-f", "--factors", "-p", "--parallel"}),
    "nox": frozenset({"-f", "--noxfile", "-t", "--tags", "-k", "--keywords", "-p",
                      "--python", "--envdir", "--extra-pythons", "--force-python"}),
}


class TaskLookup:
    """The task files of the repository's folders, each read once.

    `read(path)` gives a file's text (None when missing), `toml(path)` its parsed TOML
    table, `has(folder, name)` whether the folder holds it; `scripts(folder)` the folder's
    package.json scripts and `projects(folder)` the Node packages (and Nx projects) a
    `turbo run` or `nx run-many` started there runs in, for the fanning-out runners."""

    def __init__(self, *, read: Callable[[str], str | None],
                 toml: Callable[[str], Mapping[str, object]],
                 has: Callable[[str, str], bool],
                 scripts: Callable[[str], Mapping[str, object]] | None = None,
                 projects: Callable[[str], Sequence[str]] | None = None,
                 targets: Callable[[str], Mapping[str, object]] | None = None) -> None:
        self.read = read
        self.toml = toml
        self.has = has
        self.scripts = scripts or (lambda folder: {})
        self.projects = projects or (lambda folder: ())
        self.targets = targets or (lambda folder: {})
        self._files: dict[tuple[str, str], TaskFile | None] = {}
        # What each invocation (runner, folder, tasks) runs, once read.
        self._read: dict[tuple[str, str, tuple[str, ...]], tuple[ToolUse, ...]] = {}

    def task_file(self, runner: str, folder: str) -> TaskFile | None:
        """The tasks `runner` finds in `folder`, None when it has no file there."""
        key = (runner, folder)
        if key not in self._files:
            self._files[key] = self._load(runner, folder)
        return self._files[key]

    def _load(self, runner: str, folder: str) -> TaskFile | None:
        present = [n for n in RUNNER_FILES[runner] if self.has(folder, n)]
        if not present:
            return None
        from verification import task_files

        def path(name: str) -> str:
            return name if folder == "." else f"{folder}/{name}"

        if runner == "make":
            return task_files.makefile_tasks(self.read(path(present[0])) or "")
        if runner == "just":
            return task_files.justfile_tasks(self.read(path(present[0])) or "")
        if runner == "nox":
            return task_files.nox_sessions(self.read(path("noxfile.py")) or "")
        pyproject = self.toml(path("pyproject.toml")) if "pyproject.toml" in present else {}
        if runner == "poe":
            found = task_files.poe_tasks(pyproject)
            return found if found.tasks else None
        for name in present:  # tox: the first of its files holding its configuration
            if name == "tox.ini":
                return task_files.tox_envs(self.read(path(name)) or "")
            if name == "tox.toml":
                return task_files.tox_toml_envs(self.toml(path(name)))
            if name == "pyproject.toml":
                table = pyproject.get("tool")
                tox = table.get("tox") if isinstance(table, dict) else None
                if isinstance(tox, dict):
                    return task_files.tox_toml_envs(tox)
            if name == "setup.cfg":
                text = self.read(path(name)) or ""
                if "[tox:tox]" in text:
                    return task_files.tox_envs(text, core="tox:tox")
        return None

    def uses(self, command: Command, folder: str, depth: int = 0) -> list[ToolUse] | None:
        """The tools `command` (run in `folder`) runs through the tasks it names, in order,
        each once; None when it runs no task runner planning can read (the caller classifies
        it)."""
        if depth >= MAX_DEPTH:
            return None
        program, args = _runner_of(command)
        if program not in RUNNER_FILES and program not in ("turbo", "nx"):
            return None  # most commands: no task runner, and no folder to work out
        where = _joined(folder, command.cwd)
        if program in ("turbo", "nx"):
            return self._fanned_out(program, args, where, depth)
        if program == "make":
            if _option(args, ("-f", "--file", "--makefile")) is not None:
                return None  # another makefile than the one planning reads
            where = _joined(where, _option(args, ("-C", "--directory")) or ".")
        if program == "just":
            where = _joined(where, _option(args, ("-d", "--working-directory")) or ".")
        found = self.task_file(program, where)
        if found is None:
            return None
        names = _invoked(program, args, found)
        if names is None:
            return None
        key = (program, where, tuple(names))
        if key in self._read:  # read once: a task run from many lines (or itself) is not
            return list(self._read[key])  # read again, however the file nests them
        self._read[key] = ()
        uses: list[ToolUse] = []
        seen: set[str] = set()
        pending = [(name, 0) for name in names]
        while pending:
            name, level = pending.pop(0)
            task = found.tasks.get(name)
            if task is None or name in seen or level >= MAX_DEPTH:
                continue
            seen.add(name)
            pending += [(call, level + 1) for call in task.calls]
            for line in task.lines:
                uses += self.line_uses(line, where, depth + 1)
        self._read[key] = tuple(dict.fromkeys(uses))  # each use once: the reading stays small
        return list(self._read[key])

    def makefiles(self, line: str, folder: str) -> frozenset[str]:
        """The Makefiles (repository paths) the `make` commands of a shell line run in
        `folder` read: the one make picks where it runs (`cd`, `-C`; GNUmakefile, makefile,
        Makefile, or `-f`'s), and those it includes, literally named. A Makefile of another
        folder is another file: a root Makefile's change concerns only the checks reading it."""
        from verification import task_files

        pending: list[tuple[str, str]] = []  # (a makefile's path, the folder make runs in)
        for command in commands(line):
            program, args = _runner_of(command)
            if program != "make":
                continue
            where = _joined(_joined(folder, command.cwd),
                            _option(args, ("-C", "--directory")) or ".")
            named = _option(args, ("-f", "--file", "--makefile"))
            picked = [named] if named else [n for n in RUNNER_FILES["make"] if self.has(where, n)]
            pending += [(_joined(where, picked[0]), where)] if picked else []
        read: set[str] = set()
        while pending and len(read) < MAX_MAKEFILES:
            path, where = pending.pop()
            if path in read:
                continue
            read.add(path)
            text = self.read(path) or ""
            pending += [(_joined(where, name), where)
                        for name in task_files.makefile_includes(text)]
        return frozenset(read)

    def line_uses(self, line: str, folder: str, depth: int = 0) -> list[ToolUse]:
        """The tools a shell line run in `folder` runs, through the package scripts and the
        task runners it starts."""
        return line_uses(line, self.scripts(folder), tasks=self.resolver(folder, depth))

    def resolver(self, folder: str, depth: int = 0) -> Callable[[Command], list[ToolUse] | None]:
        """`uses` for the commands of a line run in `folder` (what `scripts.line_uses` asks)."""
        return lambda command: self.uses(command, folder, depth)

    def _fanned_out(self, program: str, args: tuple[str, ...], folder: str,
                    depth: int) -> list[ToolUse] | None:
        """`turbo run a b` and `nx run-many -t a,b` run the tasks in every package that has
        them: the tools of those packages' scripts (and Nx targets) of that name."""
        tasks, only = (_turbo_tasks(args), None) if program == "turbo" else _nx_targets(args)
        if not tasks:
            return None
        key = (program, folder, (*tasks, f"project={only}"))
        if key in self._read:
            return list(self._read[key])
        self._read[key] = ()
        uses: list[ToolUse] = []
        projects = [p for p in self.projects(folder) if p != folder]  # not the starter's own
        named = [p for p in projects if only is not None and p.rpartition("/")[2] == only]
        for project in named or projects:
            scripts = self.scripts(project)
            targets = self.targets(project)
            for task in tasks:
                if task in targets:
                    for line in _target_lines(targets[task]):
                        uses += self.line_uses(line, project, depth + 1)
                elif isinstance(scripts.get(task), str):
                    uses += self.line_uses(f"npm run {task}", project, depth + 1)
        self._read[key] = tuple(dict.fromkeys(uses))  # each use once: the reading stays small
        return list(self._read[key])


def _runner_of(command: Command) -> tuple[str, tuple[str, ...]]:
    """The task runner a command starts (`poetry poe x` is poe's, `pnpm nx ...` nx's), with
    its arguments."""
    program, args = command.program, command.args
    if program == "gmake":
        return "make", args
    if program == "poetry" and args[:1] == ("poe",):
        return "poe", args[1:]
    if program in ("pnpm", "yarn", "bun") and args[:1] in (("turbo",), ("nx",)):
        return args[0], args[1:]  # `pnpm turbo lint`: the manager runs the binary
    if program in ("tox", "nox") and args[:1] in (("run",), ("r",)):
        return program, args[1:]
    return program, args


def _invoked(runner: str, args: tuple[str, ...], found: TaskFile) -> list[str] | None:
    """The tasks an invocation names (the file's default for none); None when it runs none
    of them (`make -n`, `just --list`, an unknown task)."""
    if runner == "tox":
        envs = _option(args, ("-e", "--env"))
        if envs is not None:
            return [e.strip() for e in envs.split(",") if e.strip()]
        return list(found.default or found.tasks)
    if runner == "nox":
        sessions = _option_values(args, ("-s", "--session", "--sessions", "-e"))
        return sessions or list(found.default)
    if runner == "make" and any(a in ("-n", "--dry-run", "-q", "--question", "-p") for a in args):
        return None
    words = _words(runner, args)
    if runner == "poe":
        return words[:1] if words and words[0] in found.tasks else None
    if runner == "just":
        if any(a.startswith("--") and a not in _VALUED["just"] for a in args):
            return None  # `just --list`, `just --fmt`: the runner's own commands
        named = [w for w in words if w in found.tasks]
        return named if named else (list(found.default) if not words else None)
    named = [w for w in words if "=" not in w]  # `make test V=1`
    if not named:
        return list(found.default)
    return named if all(n in found.tasks for n in named) else None


def _words(runner: str, args: tuple[str, ...]) -> list[str]:
    """The arguments that are not options nor option values."""
    valued = _VALUED.get(runner, frozenset())
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            break
        elif arg.startswith("-"):
            skip = arg in valued or (runner == "make" and arg in ("-C", "--directory"))
        else:
            words.append(arg)
    return words


def _option(args: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    """The value of the first of `names` among `args` (`-e x`, `-e=x`, `--env=x`, `-ex`)."""
    for at, arg in enumerate(args):
        for name in names:
            if arg == name and at + 1 < len(args):
                return args[at + 1]
            if arg.startswith(name + "="):
                return arg[len(name) + 1:]
            if len(name) == 2 and arg.startswith(name) and len(arg) > 2 and arg[2] != "-":
                return arg[2:]
    return None


def _option_values(args: tuple[str, ...], names: tuple[str, ...]) -> list[str]:
    """nox's `-s a b --other`: every word after one of `names` up to the next option."""
    found: list[str] = []
    taking = False
    for arg in args:
        if arg in names:
            taking = True
        elif arg.startswith("-"):
            taking = False
            name, equals, value = arg.partition("=")
            if equals and name in names:
                found += value.split(",")
        elif taking:
            found.append(arg)
    return found


def _turbo_tasks(args: tuple[str, ...]) -> list[str]:
    """`turbo run test lint --filter x` (or turbo 2's `turbo test`): the tasks."""
    words = list(args[1:] if args[:1] == ("run",) else args)
    tasks: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = "=" not in word and word in ("--filter", "-F", "--concurrency", "--cache-dir",
                                                "--output-logs", "--log-order", "--graph",
                                                "--env-mode", "--cache", "--log-prefix")
        else:
            tasks.append(word.split("#")[-1])
    return tasks if args[:1] == ("run",) or (tasks and tasks[0] not in _TURBO_COMMANDS) else []


_TURBO_COMMANDS = frozenset({"prune", "login", "logout", "link", "unlink", "gen", "generate",
                             "daemon", "info", "telemetry", "ls", "query", "watch", "boundaries",
                             "scan", "bin", "completion", "devtools"})


def _nx_targets(args: tuple[str, ...]) -> tuple[list[str], str | None]:
    """`nx run-many -t a,b`, `nx affected --targets=a`, `nx run p:a`, `nx a p`: the targets,
    and the one project named (its folder's name, as Nx names inferred projects), if any."""
    if not args:
        return [], None
    if args[0] in ("run-many", "affected"):
        value = _option(args, ("-t", "--target", "--targets"))
        return [t for t in (value or "").split(",") if t], None
    if args[0] == "run" and len(args) > 1:
        project, _, target = args[1].partition(":")
        return ([target.split(":")[0]], project) if target else ([], None)
    if args[0].startswith("-") or args[0] in _NX_COMMANDS:
        return [], None
    project = next((a for a in args[1:] if not a.startswith("-")), None)
    return [args[0]], project


_NX_COMMANDS = frozenset({"graph", "show", "format", "format:check", "format:write", "list",
                          "migrate", "report", "reset", "daemon", "init", "add", "generate",
                          "g", "release", "sync", "sync:check", "watch", "exec", "connect",
                          "view-logs", "repair", "import", "login", "logout", "mcp",
                          "print-affected", "affected:graph", "workspace-lint"})


# Nx executors and the command they stand for, so `tools.py` reads them.
NX_EXECUTORS = {
    "jest": "jest", "vite:test": "vitest run", "vitest": "vitest run", "lint": "eslint .",
    "eslint": "eslint .", "tsc": "tsc", "playwright": "playwright test", "cypress": "cypress",
    "rollup": "rollup -c", "webpack": "webpack", "esbuild": "esbuild", "vite:build": "vite build",
    "next:build": "next build", "swc": "swc",
}  # fmt: skip


def _target_lines(target: object) -> list[str]:
    """The shell lines an Nx target runs: `nx:run-commands`' `command`/`commands`, a known
    executor's command (`@nx/jest:jest` is jest), a target given as a command string."""
    if isinstance(target, str):
        return [target]
    if not isinstance(target, dict):
        return []
    options = target.get("options") if isinstance(target.get("options"), dict) else {}
    assert isinstance(options, dict)
    if isinstance(target.get("command"), str):
        return [target["command"]]
    if isinstance(options.get("command"), str):
        return [options["command"]]
    if isinstance(options.get("commands"), list):
        return [c if isinstance(c, str) else str(c.get("command", "")) for c in options["commands"]
                if isinstance(c, (str, dict))]
    executor = target.get("executor")
    if isinstance(executor, str) and ":" in executor:
        plugin, _, name = executor.partition(":")
        short = plugin.rsplit("/", 1)[-1]
        command = NX_EXECUTORS.get(f"{short}:{name}") or NX_EXECUTORS.get(name)
        return [command] if command else []
    return []


def _joined(folder: str, other: str) -> str:
    from posixpath import normpath

    if other in (".", ""):
        return folder
    joined = normpath(other if folder == "." else f"{folder}/{other}")
    return "." if joined in ("", ".") else joined
