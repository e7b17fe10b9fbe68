"""What a CI step's script is: an install, host preparation, a release, or a check.

Pure, over the text of a `run:` script once its expressions are substituted. A script is read
command by command (lines, `\\` continuations joined, comments and blank lines dropped):

- **publish**: it publishes, deploys or uploads (`npm publish`, `cargo publish`, `twine
  upload`, `docker push`, `gh release`, `git push`, ...): not verification, never run.
- **fix**: it rewrites the files it looks at (`--fix`, `--write`): it would pass where the
  check fails, so it is no verification either.
- **bookkeeping**: every command only writes the workflow's own files (`echo ... >>
  $GITHUB_OUTPUT`, `$GITHUB_ENV`, `$GITHUB_PATH`, `$GITHUB_STEP_SUMMARY`) or its log
  (`ci_bookkeeping`): it passes whatever the change is, so it is no check.
- **install**: every command installs the project's dependencies (`pnpm install`, `npm ci`,
  `yarn install`, `uv sync`, `pip install -e .`, `pip install -r requirements.txt`, `poetry
  install`, `cargo fetch`, `go mod download`) or prepares the host (below), and one at least
  installs: it becomes the setup of its folder, with CI's own flags.
- **host preparation**: every command installs a tool or configures the runner (`rustup`,
  `apt-get`, `curl`, `pip install tox`, `npm install -g`, `corepack enable`, `playwright
  install`, `git config`, `git clone`, `uv venv`, `exit 0`, and bookkeeping among them):
  like a toolchain action, not a check.
- **check**: anything else, run as CI runs it. Its kind (lint, format, typecheck, test, build,
  custom) and its ecosystems (from the tools its commands start with) come from the words of
  the script and the step's name.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from verification.ci_bookkeeping import bookkeeping
from verification.tools import ToolUse, kinds
from verification.workspaces import Ecosystem

StepRole = Literal["publish", "bookkeeping", "fix", "install", "host", "check"]

_NODE, _PY, _GO, _RUST = Ecosystem.NODE, Ecosystem.PYTHON, Ecosystem.GO, Ecosystem.RUST

# Words a command may start with before its tool: variable assignments are split off first.
_PREFIXES = frozenset({"sudo", "time", "env", "exec", "nohup", "xvfb-run"})

_PUBLISH = re.compile(
    r"^(?:(?:npm|pnpm|yarn|bun|cargo|uv|poetry|flit|hatch|pdm|maturin|lerna|changeset|vsce|"
    r"ovsx|gem)\s+(?:.*\s)?(?:publish|upload|release)\b"
    r"|twine\s+upload\b|docker\s+(?:push|login)\b|gh\s+release\b|git\s+push\b|"
    r"semantic-release\b|release-it\b|codecov\b|aws\s+s3\b|gsutil\b|netlify\s+deploy\b|"
    r"wrangler\s+(?:deploy|publish)\b|firebase\s+deploy\b|vercel\b|.*\spublish\b)")
# Fixers: a command rewriting the files it checks passes where the check fails.
_FIXES = re.compile(r"\s(?:--fix|--write|--apply|--unsafe-fixes)\b")
# A step name saying the step ships something (a release build is still a build).
_SHIPPING_NAME = re.compile(r"\b(publish|deploy|upload)", re.IGNORECASE)

_NODE_INSTALL = re.compile(
    r"^(?:(?:pnpm|npm|bun)\s+(?:install|i|ci)\b|yarn(?:\s+install\b|\s+--|\s*$))")
_PYTHON_INSTALL = re.compile(
    r"^(?:uv\s+sync\b|poetry\s+install\b|pdm\s+(?:install|sync)\b|pipenv\s+(?:install|sync)\b|"
    r"hatch\s+env\s+create\b)")
_PIP = re.compile(r"^(?:python3?\s+-m\s+)?(?:uv\s+)?pip3?\s+install\b")
# pip options naming the project or its requirement files: what makes a pip install the
# project's own dependencies rather than a tool.
_PIP_PROJECT = re.compile(r"(?:^|\s)(?:-e|--editable|-r|--requirement|-c|--constraint|\.|"
                          r"\.\[[^\]]*\]|\./\S*|\S+\.txt)(?:\s|$)")
_OTHER_INSTALL = re.compile(r"^(?:cargo\s+fetch\b|go\s+mod\s+download\b)")

_HOST = re.compile(
    r"^(?:(?:apt-get|apt|brew|choco|winget|snap|dnf|yum|apk|pacman|port)\b|rustup\b|"
    r"(?:curl|wget)\b|corepack\b|cargo\s+(?:install|binstall)\b|go\s+install\b|"
    r"pipx\s+install\b|uv\s+(?:tool|python)\s+install\b|npm\s+(?:i|install)\s+(?:.*\s)?"
    r"(?:-g|--global)\b|(?:npx|pnpm\s+exec|pnpm\s+dlx|yarn|bunx)\s+playwright\s+install\b|"
    r"playwright\s+install\b|git\s+config\b|mkdir\b|chmod\b|export\b|ulimit\b|"
    r"echo\b.*>>\s*\"?\$\{?GITHUB_(?:ENV|PATH|OUTPUT|STEP_SUMMARY)|"
    r"python3?\s+-m\s+venv\b|uv\s+venv\b|virtualenv\b|(?:source|\.)\s+\S*activate\b|"
    r"node\s+node_modules/\S+/install|git\s+clone\b|echo\b|printf\b|exit\s+0\s*$|true\s*$|"
    r":\s*$)")

# The tool a command starts with, and its ecosystem.
_ECOSYSTEM_TOOLS = {
    "pnpm": _NODE, "npm": _NODE, "npx": _NODE, "yarn": _NODE, "node": _NODE, "bun": _NODE,
    "bunx": _NODE, "tsc": _NODE, "vue-tsc": _NODE, "eslint": _NODE, "prettier": _NODE,
    "vitest": _NODE, "jest": _NODE, "turbo": _NODE, "nx": _NODE, "lerna": _NODE,
    "deno": _NODE,
    "python": _PY, "python3": _PY, "pytest": _PY, "uv": _PY, "uvx": _PY, "ruff": _PY,
    "mypy": _PY, "pyright": _PY, "tox": _PY, "nox": _PY, "pip": _PY, "pip3": _PY,
    "poetry": _PY, "hatch": _PY, "pdm": _PY, "maturin": _PY, "black": _PY, "flake8": _PY,
    "pylint": _PY, "pre-commit": None, "ty": _PY,
    "cargo": _RUST, "rustc": _RUST, "rustup": _RUST, "rustfmt": _RUST, "cargo-nextest": _RUST,
    "go": _GO, "gofmt": _GO, "golangci-lint": _GO, "staticcheck": _GO,
}  # fmt: skip

# Kinds, tried in order on the step's name, then its script: the first that matches. A format
# check is a lint, as `tools.py` and `scripts.py` read one.
_KINDS = (
    ("lint", re.compile(r"\blint\b|eslint|clippy|ruff\s+check|\bruff\b|flake8|pylint|golangci|"
                        r"go\s+vet|shellcheck|actionlint|zizmor|biome\s+(?:lint|check|ci)|"
                        r"stylelint|markdownlint|yamllint|cargo\s+deny|\bvet\b|\bfmt\b|"
                        r"\bformat|prettier|black\b.*--check|\bgofmt\b", re.IGNORECASE)),
    ("typecheck", re.compile(r"\btsc\b|vue-tsc|type-?check|\bmypy\b|pyright|\bty\s+check|"
                             r"cargo\s+check\b|\btypes\b", re.IGNORECASE)),
    ("test", re.compile(r"\btests?\b|pytest|vitest|\bjest\b|nextest|\bspec\b|\be2e\b|"
                        r"test[-:_]", re.IGNORECASE)),
    ("build", re.compile(r"\bbuild\b|maturin\s+develop|\bcompile\b|\bbundle\b", re.IGNORECASE)),
)


def commands(script: str) -> list[str]:
    """The script's commands: lines with `\\` continuations joined, comments and blank lines
    left out."""
    found: list[str] = []
    pending = ""
    for raw in script.splitlines():
        line = raw.strip()
        if pending:
            line = f"{pending} {line}"
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].strip()
            continue
        if line and not line.startswith("#"):
            found.append(line)
    if pending:
        found.append(pending)
    return found


# Variable assignments before a command's tool (`A=1 B="x y" cmd`).
_ASSIGNMENTS = re.compile(r"""(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|"[^"]*"|\S*)\s+)+""")


def _tool_words(command: str) -> list[str]:
    """The words of a command from its tool on: assignments (`A=1 cmd`) and `sudo` dropped.
    Split on blanks, not shell-parsed: only the first words matter, and a script of many
    lines would take a shell lexer long."""
    words = command.split()
    while words:
        assigned = _ASSIGNMENTS.match(" ".join(words) + " ")
        if assigned is not None:
            words = (" ".join(words) + " ")[assigned.end():].split()
        elif words[0] in _PREFIXES:
            words = words[1:]
        else:
            break
    return words


def _bare(command: str) -> str:
    """The command from its tool on, as text (for the patterns above)."""
    words = _tool_words(command)
    return " ".join(words) if words else command


def role(script: str, name: str | None, uses: Sequence[ToolUse] = ()) -> StepRole:
    """What the script is (see the module docstring); `uses` are the tools it runs, through
    the package scripts it calls (`scripts.line_uses`)."""
    lines = [_bare(c) for c in commands(script)]
    if (name and _SHIPPING_NAME.search(name)) or any(_PUBLISH.match(line) for line in lines):
        return "publish"
    if not lines:
        return "host"
    if bookkeeping(script, uses) is not None:
        return "bookkeeping"
    if any(_FIXES.search(line) for line in lines) or any(use.writes for use in uses):
        return "fix"
    installs = [line for line in lines if install_ecosystem(line) is not None]
    if all(line in installs or is_host_preparation(line) for line in lines):
        return "install" if installs else "host"
    return "check"


def install_ecosystem(command: str) -> Ecosystem | None:
    """The ecosystem whose dependencies `command` installs, or None when it installs none."""
    line = _bare(command)
    if _NODE_INSTALL.match(line):
        words = line.split()
        # `npm install left-pad` installs a package, not the project's dependencies.
        named = [w for w in words[2:] if not w.startswith("-")]
        return None if named and words[1] in ("install", "i") else _NODE
    if _PYTHON_INSTALL.match(line):
        return _PY
    if _PIP.match(line) and _PIP_PROJECT.search(line[_PIP.match(line).end():]):  # type: ignore[union-attr]
        return _PY
    if _OTHER_INSTALL.match(line):
        return _RUST if line.startswith("cargo") else _GO
    return None


# Host preparation that downloads browsers: the steps after it test in those browsers.
_BROWSERS = re.compile(r"playwright\s+install\b|puppeteer\S*/install|puppeteer\s+browsers\s+"
                       r"install|cypress\s+install\b")


def downloads_browsers(script: str) -> bool:
    """True when the script downloads browsers (`playwright install`, puppeteer's install)."""
    return _BROWSERS.search(script) is not None


# What a test that drives browsers names: its runner, a browser, an end-to-end config or
# project (`vitest -c vitest.config.e2e.ts`, `--project e2e-browser`, `test:e2e`).
_IN_BROWSERS = re.compile(r"(?<![a-z])(?:e2e|browsers?|playwright|puppeteer|cypress|webdriver"
                          r"|selenium|chromium|firefox|webkit|karma|galata)(?![a-z])",
                          re.IGNORECASE)
_SCRIPT_RUN = re.compile(r"\b(?:pnpm|npm|yarn|jlpm|bun)(?:\s+run)?\s+([\w:.-]+)")


def tests_in_browsers(script: str, kind: str, package: Mapping[str, object]) -> bool:
    """True when a step testing after a browser download drives those browsers: its script,
    or the package scripts it runs (`package`: the folder's package.json scripts), name a
    browser, a browser test runner or an end-to-end suite. A build, a lint or a type check
    never does, nor a unit test (`vitest run`)."""
    if kind in ("build", "lint", "typecheck"):
        return False
    texts, seen = [script], set()
    while texts:
        text = texts.pop()
        if _IN_BROWSERS.search(text):
            return True
        for name in _SCRIPT_RUN.findall(text):
            body = package.get(name)
            if isinstance(body, str) and name not in seen:
                seen.add(name)
                texts.append(body)
    return False


_SUDO = re.compile(r"(?:^|[;&|(]\s*)sudo\s+(?:-\S+\s+)*(\S+)")


def needs_root(script: str) -> str | None:
    """The first command of the script that runs as root on the runner (`sudo mount`, `sudo
    chroot`), beyond installing packages: the sandbox has no root, so the step cannot run."""
    for line in commands(script):
        match = _SUDO.search(line)
        if match is not None and not is_host_preparation(line[match.start():].lstrip(";&|( ")):
            return " ".join(line[match.start():].lstrip(";&|( ").split()[:3])
    return None


def is_host_preparation(command: str) -> bool:
    """True when `command` installs a tool or configures the runner (see the docstring)."""
    line = _bare(command)
    if _PIP.match(line):
        return install_ecosystem(line) is None  # a tool (`pip install tox`), not the project
    return _HOST.match(line) is not None


def kind_of(script: str, name: str | None, uses: Sequence[ToolUse] = ()) -> str:
    """The check kind of a script: what its step's name says ("Run tsc", "Run unit tests"),
    else the kind of the first tool it runs (`tools.py`: `cargo clippy` lints, `vitest`
    tests), else what its words suggest; "custom" when none does."""
    for kind, pattern in _KINDS:
        if name and pattern.search(name):
            return kind
    found = kinds(uses)
    if found:
        return found[0]
    for kind, pattern in _KINDS:
        if pattern.search(script):
            return kind
    return "custom"


def ecosystems_of(script: str, uses: Sequence[ToolUse] = ()) -> frozenset[Ecosystem]:
    """The ecosystems of the tools the script's commands start with (`uv run pytest` is
    Python, `pnpm -r test` Node) and of those it runs through task runners (`uses`: `make
    test` running `go test` is Go); empty when none is known (`./scripts/check.sh`)."""
    found: set[Ecosystem] = set()
    for use in uses:
        ecosystem = _ECOSYSTEM_TOOLS.get(use.tool.split()[0])
        if ecosystem is not None:
            found.add(ecosystem)
    for command in commands(script):
        for part in re.split(r"&&|\|\||;|\|", command):
            words = _tool_words(part.strip())
            if not words:
                continue
            tool = words[0].rsplit("/", 1)[-1]
            ecosystem = _ECOSYSTEM_TOOLS.get(tool)
            if ecosystem is not None:
                found.add(ecosystem)
    return frozenset(found)


@dataclass(frozen=True)
class Shell:
    """How GitHub runs a `run:` script on Linux, from the step's `shell` (see "Workflow syntax
    for GitHub Actions", `jobs.<job_id>.steps[*].shell`); `runs` is False for a shell the
    sandbox's `/bin/sh -c` cannot stand for (pwsh, python, cmd)."""

    argv: tuple[str, ...]
    runs: bool


def shell_of(shell: str | None) -> Shell:
    if shell is None:
        return Shell(("bash", "-e"), True)  # unspecified on Linux: `bash -e {0}`
    text = shell.strip()
    if text == "bash":
        return Shell(("bash", "--noprofile", "--norc", "-eo", "pipefail"), True)
    if text == "sh":
        return Shell(("sh", "-e"), True)
    words = text.replace("{0}", "").split()
    if words and words[0].rsplit("/", 1)[-1] in ("bash", "sh"):
        return Shell(tuple(words), True)  # a custom template such as `bash -eo pipefail {0}`
    return Shell((text,), False)


def command_line(script: str, shell: Shell, env: Mapping[str, str]) -> str:
    """The command a check runs for `script`: one line as it is (the executor's `/bin/sh -c`
    runs it), several through the step's shell so a failing line fails the step as in CI;
    the step's environment exported first."""
    lines = commands(script)
    exports = " ".join(f"{name}={shlex.quote(value)}" for name, value in sorted(env.items()))
    prefix = f"export {exports}; " if exports else ""
    if len(lines) == 1 and "\n" not in script.strip() and not _needs_bash(lines[0]):
        return prefix + lines[0]
    return prefix + " ".join(shell.argv) + " -c " + shlex.quote(script.strip() + "\n")


def _needs_bash(line: str) -> bool:
    """True for a line `/bin/sh` (dash) would read differently: bash syntax."""
    return re.search(r"\[\[|\$\(<|<\(|\bdeclare\b|\bshopt\b|pipefail|\{[^}]*\.\.[^}]*\}", line) \
        is not None
