"""The tasks a repository's task runners declare, and the shell lines each runs.

Pure: each reader takes a file's text (or its parsed TOML) and never runs anything. A CI step
`make test`, `just lint`, `uv run poe check`, `tox -e lint` or `nox -s tests` says little by
itself; what the task runs says what it is (`tools.py` reads those lines). Readers, after each
tool's own documentation:

- **make** (GNU make's rules): `target: prerequisites` with tab-indented recipe lines; simple
  variables (`PYTHON ?= python3`, `$(MAKE)`) substituted, `@`/`-`/`+` recipe prefixes
  dropped, conditionals and `define` blocks skipped; prerequisites are tasks run first. The
  default goal is `.DEFAULT_GOAL` or the first target.
- **just** (the justfile grammar): `name params: dependencies` with indented lines; `x :=
  "value"` variables substituted in `{{x}}`, `alias t := test` followed, a shebang recipe
  read as its script when it is a shell's. The default recipe is `[default]`'s or the first.
- **poe** (`[tool.poe.tasks]`): `cmd` and `shell` tasks' lines, `sequence` and `ref` tasks'
  calls, `deps` run first; `script` and `expr` tasks run Python: no lines.
- **tox** (`tox.ini`, `[tox:tox]` in setup.cfg, `legacy_tox_ini`, tox 4's TOML): each env's
  `commands`, the `[testenv]` ones for an env without a section of its own (`py`, `py312`),
  factor-conditional lines (`lint: ruff check .`) for the envs with that factor.
- **nox** (`noxfile.py`, read with `ast`, never imported): each session's `session.run(...)`
  calls with literal arguments, `session.notify(...)` as calls; `nox.options.sessions` the
  default.
"""

from __future__ import annotations

import ast
import configparser
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Deepest chain of tasks calling tasks followed (a cycle stops at the first task seen twice).
MAX_TASK_DEPTH = 8
# A task file longer than this is not read (a planted file could be megabytes of rules).
MAX_TASK_FILE = 1_000_000


@dataclass(frozen=True)
class Task:
    """One task of a runner: the shell lines it runs, in order, and the tasks of the same
    runner it runs first (prerequisites, dependencies) or calls (a sequence's items)."""

    name: str
    lines: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskFile:
    """The tasks of one file, by name, and the tasks a bare invocation runs."""

    runner: str  # make, just, poe, tox, nox
    tasks: Mapping[str, Task]
    default: tuple[str, ...] = ()


# --- make -------------------------------------------------------------------------------------

_MAKE_ASSIGNMENT = re.compile(r"^(?:export\s+|override\s+)?([A-Za-z_][\w.-]*)\s*(?:\?|::?|\+|!)?="
                              r"\s*(.*)$")
_MAKE_RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*::?(?!=)\s*(.*)$")
_MAKE_DIRECTIVES = re.compile(r"^(?:ifeq|ifneq|ifdef|ifndef|else|endif|include|-include|sinclude|"
                              r"vpath|undefine|unexport)\b")
_MAKE_REFERENCE = re.compile(r"\$[({]([A-Za-z_][\w.-]*)[)}]|\$([A-Za-z_@<^*?])")


def makefile_tasks(text: str) -> TaskFile:
    """The targets of a Makefile and their recipes (see the module docstring)."""
    variables: dict[str, str] = {"MAKE": "make"}
    rules: dict[str, tuple[list[str], list[str]]] = {}  # target -> (prerequisites, recipe)
    default: str | None = None
    current: list[str] = []  # the targets the recipe lines being read belong to
    in_define = False
    for line in _joined_lines(text[:MAX_TASK_FILE]):
        if in_define:
            in_define = not line.strip().startswith("endef")
            continue
        if line.startswith("\t"):
            recipe = line[1:].strip()
            if current and recipe and not recipe.startswith("#"):
                for target in current:
                    rules[target][1].append(recipe)
            continue
        stripped = line.split("#", 1)[0].rstrip() if "#" in line else line.rstrip()
        if not stripped.strip():
            continue
        if stripped.startswith("define "):
            in_define, current = True, []
            continue
        if _MAKE_DIRECTIVES.match(stripped.strip()):
            continue  # both branches of a conditional are read: planning cannot evaluate it
        rule = _MAKE_RULE.match(stripped)
        assignment = _MAKE_ASSIGNMENT.match(stripped.strip())
        if assignment is not None and (rule is None or "=" in rule.group(1) or
                                       rule.group(2).startswith("=")):
            name, value = assignment.groups()
            if name == ".DEFAULT_GOAL":
                default = value.strip()
            else:
                variables.setdefault(name, value.strip())
            current = []
            continue
        if rule is None:
            current = []
            continue
        targets, rest = rule.group(1).split(), rule.group(2)
        if "=" in rest.split(";", 1)[0]:
            current = []  # a target-specific variable (`test: VERBOSE = 1`)
            continue
        prerequisites, _, inline = rest.partition(";")
        current = [t for t in targets if "%" not in t]
        for target in current:
            known = rules.setdefault(target, ([], []))
            known[0].extend(w for w in prerequisites.split("|", 1)[0].split()
                            if "%" not in w and "$" not in w)
            if inline.strip():
                known[1].append(inline.strip())
            if default is None and not target.startswith("."):
                default = target
    tasks = {
        target: Task(target, tuple(_make_line(r, variables) for r in recipe),
                     tuple(p for p in prerequisites if p in rules))
        for target, (prerequisites, recipe) in rules.items() if not target.startswith(".")
    }
    return TaskFile("make", tasks, (default,) if default in tasks else ())


_MAKE_INCLUDE = re.compile(r"^(?:-include|sinclude|include)\s+(.*)$")


def makefile_includes(text: str) -> tuple[str, ...]:
    """The files a Makefile includes (`include common.mk`, `-include ../Makefile`), as
    written: relative to the folder make runs in. A name holding a variable or a wildcard is
    left out: planning does not expand it."""
    found: list[str] = []
    for line in _joined_lines(text[:MAX_TASK_FILE]):
        directive = _MAKE_INCLUDE.match(line.split("#", 1)[0].strip())
        if directive is not None and not line.startswith("\t"):  # not a recipe's line
            found += [w for w in directive.group(1).split() if not re.search(r"[$*?\[]", w)]
    return tuple(dict.fromkeys(found))


def _make_line(recipe: str, variables: Mapping[str, str]) -> str:
    line = recipe.lstrip("@-+ \t")
    for _ in range(4):  # variables holding variables, a few levels deep
        expanded = _MAKE_REFERENCE.sub(lambda m: variables.get(m.group(1) or "", ""), line)
        if expanded == line:
            break
        line = expanded
    return line.replace("$$", "$")


def _joined_lines(text: str) -> list[str]:
    """Lines with `\\` continuations joined (a recipe line keeps its leading tab)."""
    found: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = f"{pending} {raw.strip()}" if pending else raw
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        pending = ""
        found.append(line)
    if pending:
        found.append(pending)
    return found


# --- just -------------------------------------------------------------------------------------

_JUST_RECIPE = re.compile(r"^@?([A-Za-z_][\w-]*)((?:\s+[^:]*?)?)\s*:(?!=)\s*(.*)$")
_JUST_ASSIGNMENT = re.compile(r"^(?:export\s+)?([A-Za-z_][\w-]*)\s*:=\s*(.*)$")
_JUST_ALIAS = re.compile(r"^alias\s+([A-Za-z_][\w-]*)\s*:=\s*([A-Za-z_][\w-]*)\s*$")
_JUST_INTERPOLATION = re.compile(r"\{\{\s*(.*?)\s*\}\}")
_JUST_SHELLS = re.compile(r"^#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?\S*?(?:bash|sh|zsh)\b")


def justfile_tasks(text: str) -> TaskFile:
    """The recipes of a justfile and their lines (see the module docstring)."""
    variables: dict[str, str] = {}
    aliases: dict[str, str] = {}
    recipes: dict[str, tuple[list[str], list[str]]] = {}  # name -> (dependencies, lines)
    default: str | None = None
    marked_default = False
    pending_default = False
    current: str | None = None
    shebang: bool | None = None  # the current recipe's first line: None, a shell's, another's
    for line in _joined_lines(text[:MAX_TASK_FILE]):
        if line[:1] in (" ", "\t"):
            body = line.strip()
            if current is None or not body:
                continue
            if shebang is None and not recipes[current][1] and body.startswith("#!"):
                shebang = _JUST_SHELLS.match(body) is not None
                continue
            if shebang is False or body.startswith("#"):
                continue
            recipes[current][1].append(_just_line(body.lstrip("@-"), variables))
            continue
        stripped = line.strip()
        current, shebang = None, None
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            pending_default = pending_default or "default" in stripped
            continue
        alias = _JUST_ALIAS.match(stripped)
        if alias is not None:
            aliases[alias.group(1)] = alias.group(2)
            continue
        assignment = _JUST_ASSIGNMENT.match(stripped)
        if assignment is not None:
            variables[assignment.group(1)] = _just_value(assignment.group(2))
            continue
        if stripped.startswith(("set ", "import ", "mod ", "export ")):
            continue
        recipe = _JUST_RECIPE.match(stripped)
        if recipe is None:
            continue
        name, dependencies = recipe.group(1), recipe.group(3)
        current = name
        recipes[name] = (_just_dependencies(dependencies), [])
        if pending_default and not marked_default:
            default, marked_default = name, True
        elif default is None:
            default = name
        pending_default = False
    tasks = {name: Task(name, tuple(lines), tuple(d for d in deps if d in recipes))
             for name, (deps, lines) in recipes.items()}
    for alias_name, target in aliases.items():
        if target in tasks and alias_name not in tasks:
            tasks[alias_name] = Task(alias_name, (), (target,))
    return TaskFile("just", tasks, (default,) if default in tasks else ())


def _just_dependencies(text: str) -> list[str]:
    """`a b (c "arg") && d`: the recipes named, arguments left out."""
    text = re.sub(r"\(\s*([A-Za-z_][\w-]*)[^)]*\)", r"\1", text.replace("&&", " "))
    return [w for w in text.split() if re.fullmatch(r"[A-Za-z_][\w-]*", w)]


def _just_value(raw: str) -> str:
    """A variable's value when it is one string literal (`"uv run"`), else empty."""
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return ""


def _just_line(body: str, variables: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression in variables:
            return variables[expression]
        if expression.startswith("just_executable"):
            return "just"
        return ""
    return _JUST_INTERPOLATION.sub(value, body)


# --- poe --------------------------------------------------------------------------------------

def poe_tasks(pyproject: Mapping[str, Any]) -> TaskFile:
    """The tasks of `[tool.poe.tasks]` (see the module docstring)."""
    table = _mapping(_mapping(_mapping(pyproject.get("tool")).get("poe")).get("tasks"))
    tasks: dict[str, Task] = {}
    for name, spec in table.items():
        if isinstance(name, str):
            lines, calls = _poe_parts(spec, table)
            tasks[name] = Task(name, tuple(lines), tuple(calls))
    return TaskFile("poe", tasks)


def _poe_parts(spec: object, table: Mapping[str, object], depth: int = 0
               ) -> tuple[list[str], list[str]]:
    if depth > MAX_TASK_DEPTH:
        return [], []
    if isinstance(spec, str):
        return [spec], []  # a string is a `cmd` task
    if isinstance(spec, list):
        return _poe_sequence(spec, table, depth)
    if not isinstance(spec, dict):
        return [], []
    calls = [d for d in _strings(spec.get("deps")) if d in table]
    lines: list[str] = []
    if isinstance(spec.get("cmd"), str):
        lines.append(spec["cmd"])
    elif isinstance(spec.get("cmd"), list):
        lines.append(shlex.join(_strings(spec["cmd"])))
    elif isinstance(spec.get("shell"), str):
        lines += [line for line in spec["shell"].splitlines() if line.strip()]
    elif isinstance(spec.get("ref"), str):
        reference = spec["ref"].split()
        if reference and reference[0] in table:
            calls.append(reference[0])
    elif isinstance(spec.get("sequence"), list):
        more, called = _poe_sequence(spec["sequence"], table, depth)
        lines += more
        calls += called
    return lines, calls


def _poe_sequence(items: list[object], table: Mapping[str, object], depth: int
                  ) -> tuple[list[str], list[str]]:
    """A sequence's items: strings name tasks (poe's default item type), tables are tasks."""
    lines: list[str] = []
    calls: list[str] = []
    for item in items:
        if isinstance(item, str):
            name = item.split()[0] if item.split() else ""
            if name in table:
                calls.append(name)
        else:
            more, called = _poe_parts(item, table, depth + 1)
            lines += more
            calls += called
    return lines, calls


# --- tox --------------------------------------------------------------------------------------

_TOX_SUBSTITUTION = re.compile(r"\{(?:posargs(?::[^}]*)?|\[[^\]]*\][^}]*|[a-z_]+dir|envname|"
                               r"toxinidir|envpython|env:[^}]*)\}")


def tox_envs(ini: str, *, core: str = "tox") -> TaskFile:
    """The envs of a tox ini file: `tox.ini`, or `setup.cfg` with `core="tox:tox"` (its
    `[testenv:NAME]` sections are named as in tox.ini)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(ini[:MAX_TASK_FILE])
    except configparser.Error:
        return TaskFile("tox", {})
    base = parser.get("testenv", "commands", fallback="")
    names = _tox_env_list(parser.get(core, "envlist", fallback="")
                          or parser.get(core, "env_list", fallback=""))
    own = {s.split(":", 1)[1]: s for s in parser.sections() if s.startswith("testenv:")}
    tasks: dict[str, Task] = {}
    for name in dict.fromkeys([*names, *own]):
        text = parser.get(own[name], "commands", fallback=base) if name in own else base
        tasks[name] = Task(name, tuple(_tox_lines(text, name)))
    tasks.setdefault("py", Task("py", tuple(_tox_lines(base, "py"))))
    return TaskFile("tox", tasks, tuple(names))


def tox_toml_envs(table: Mapping[str, Any]) -> TaskFile:
    """The envs of tox 4's TOML configuration (`tox.toml`, or `[tool.tox]` of a pyproject).
    A `legacy_tox_ini` string is the ini format."""
    legacy = table.get("legacy_tox_ini")
    if isinstance(legacy, str):
        return tox_envs(legacy)
    base = _toml_commands(_mapping(table.get("env_run_base")).get("commands"))
    envs = _mapping(table.get("env"))
    names = _strings(table.get("env_list"))
    tasks = {name: Task(name, tuple(_toml_commands(_mapping(envs.get(name)).get("commands"))
                                    if "commands" in _mapping(envs.get(name)) else base))
             for name in dict.fromkeys([*names, *(n for n in envs if isinstance(n, str))])}
    tasks.setdefault("py", Task("py", tuple(base)))
    return TaskFile("tox", tasks, tuple(names))


def _toml_commands(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [shlex.join(w for w in _strings(command) if not w.startswith("{"))
            for command in value if isinstance(command, list)]


def _tox_env_list(text: str) -> list[str]:
    """`py{311,312}, lint` as py311, py312, lint (tox's generative env lists)."""
    names: list[str] = []
    for item in re.split(r",(?![^{]*\})|\n", text):
        item = item.strip()
        if not item or item.startswith("#"):
            continue
        expanded = [""]
        for part in re.split(r"(\{[^}]*\})", item):
            options = part[1:-1].split(",") if part.startswith("{") else [part]
            expanded = [e + o.strip() for e in expanded for o in options]
        names += expanded
    return names


def _tox_lines(text: str, env: str) -> list[str]:
    factors = set(env.split("-"))
    found: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        condition = re.match(r"^([!\w.,-]+):\s+(.*)$", line)
        if condition is not None:
            wanted = condition.group(1).split(",")
            if not any(all((f[1:] not in factors) if f.startswith("!") else f in factors
                           for f in option.split("-")) for option in wanted):
                continue
            line = condition.group(2)
        line = _TOX_SUBSTITUTION.sub(lambda m: "." if m.group(0) == "{toxinidir}" else "",
                                     line.lstrip("- ")).strip()
        if line:
            found.append(line)
    return found


# --- nox --------------------------------------------------------------------------------------

def nox_sessions(source: str) -> TaskFile:
    """The sessions of a noxfile and what they run (see the module docstring)."""
    try:
        module = ast.parse(source[:MAX_TASK_FILE])
    except (SyntaxError, ValueError, RecursionError):
        return TaskFile("nox", {})
    tasks: dict[str, Task] = {}
    default: tuple[str, ...] = ()
    for node in module.body:
        if isinstance(node, ast.Assign) and any(_dotted(t) == "nox.options.sessions"
                                                for t in node.targets):
            default = tuple(_literal_strings(node.value))
        if not isinstance(node, ast.FunctionDef):
            continue
        name = _session_name(node)
        if name is None:
            continue
        lines: list[str] = []
        calls: list[str] = []
        for call in ast.walk(node):
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                continue
            method = call.func.attr
            if method in ("run", "run_always") and call.args:
                words = [a.value for a in call.args
                         if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if words and isinstance(call.args[0], ast.Constant):
                    lines.append(shlex.join(words))
            elif method == "notify" and call.args:
                calls += _literal_strings(call.args[0])
        tasks[name] = Task(name, tuple(lines), tuple(calls))
    return TaskFile("nox", tasks, tuple(d for d in default if d in tasks) or tuple(tasks))


def _session_name(node: ast.FunctionDef) -> str | None:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _dotted(target) not in ("nox.session", "session", "nox_poetry.session",
                                   "nox_uv.session"):
            continue
        if isinstance(decorator, ast.Call):
            for keyword in decorator.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant) \
                        and isinstance(keyword.value.value, str):
                    return keyword.value.value
        return node.name
    return None


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _literal_strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)
                and isinstance(e.value, str)]
    return []


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
