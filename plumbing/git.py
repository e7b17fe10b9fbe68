"""The one way Ratchet runs git: an explicit repository, a scrubbed environment, safe settings.

A worktree is written by untrusted code (an agent, a check, a pull request). Git reads a lot from
where it runs: it discovers the repository through a ``.git`` file, reads configuration that can
name programs (``core.fsmonitor``, hooks, filters, ``core.sshCommand``), reads attributes that
rewrite content on the way in or out, and honours environment variables that redirect it. So
every call here names its git dir (and work tree) explicitly, starts from an environment that
holds only what git needs, ignores system and global configuration, and forces the settings that
could run a program or change bytes. ``runner/`` and ``verification/`` both use this module.

Git never looks inside anything the worktree's writer made: submodules are ignored everywhere
(``diff.ignoreSubmodules=all`` for porcelain, ``--ignore-submodules=all`` on the plumbing that
compares the work tree, no recursion), because a folder at a gitlink path may hold a nested
repository whose own configuration names a filter git would run as Ratchet, or a FIFO that
blocks git forever. The caller scans the tree before git sees it (``plumbing/walk.py``); every
call also has a timeout, after which git and everything it started are killed.

An attributes file in the private git dir (``info/attributes``, the highest-precedence source,
https://git-scm.com/docs/gitattributes) switches off, for every path, the attributes a
``.gitattributes`` in the worktree could use to transform content: ``install_neutral_attributes``
writes it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from plumbing.process import stop_group

logger = logging.getLogger(__name__)

# Forced on every call with ``-c`` (highest precedence): nothing a repository's configuration
# says can run a program, hide a change, or make hashes and patches depend on the host.
SAFE_CONFIG = (
    "core.hooksPath=/dev/null",  # no hooks, whatever the repository says
    "core.fsmonitor=false",  # a configured fsmonitor is a program git would run
    "core.untrackedCache=false",  # a planted cache could hide untracked files
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",  # only the repository's .gitignore decides what is ignored
    "core.quotePath=off",  # paths as raw bytes, not octal escapes
    "core.autocrlf=false",  # content is stored and restored byte for byte
    "core.safecrlf=false",
    "core.pager=cat",
    "credential.helper=",  # an empty value clears inherited helpers
    "protocol.ext.allow=never",  # ext:: URLs run commands
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "diff.ignoreSubmodules=all",  # porcelain never runs `git status` inside a submodule
    "status.submoduleSummary=false",
    "core.trustctime=true",  # a rewritten file with a forged mtime still looks changed
    "core.checkStat=default",
    "color.ui=false",
    "advice.detachedHead=false",
    "i18n.commitEncoding=UTF-8",  # no encoding header: same inputs, same commit sha
    "gc.autoDetach=false",  # an automatic gc finishes while a caller's lock is still held
    "gc.pruneExpire=never",  # run git dirs borrow the mirror's objects through alternates
)

# Every attribute that can change bytes between the work tree and the object store, or make git
# run a program, switched off (``-``) or back to git's default (``!``) for every path.
NEUTRAL_ATTRIBUTES = "* !text !eol -filter -ident !diff !merge !working-tree-encoding -delta\n"

# Inherited variables a git call keeps; everything else (RATCHET_* secrets, GIT_DIR, GIT_*
# redirections, GIT_CONFIG_PARAMETERS, identities) is dropped.
_ENV_KEEP = frozenset(
    {
        "PATH",
        "HOME",  # ssh finds its keys and known_hosts there
        "TMPDIR",
        "SSH_AUTH_SOCK",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
    }
)

# How long a git call may take (seconds) unless its caller says otherwise: commands that talk to
# a remote move a whole repository; every other one reads or writes one local tree.
LOCAL_TIMEOUT = 600.0
NETWORK_TIMEOUT = 1800.0
_NETWORK_COMMANDS = frozenset({"clone", "fetch", "push", "ls-remote"})
# How long a timed-out git gets to exit after SIGTERM before its group is killed.
_STOP_GRACE = 2.0

_ENV_FIXED = {
    "LC_ALL": "C",
    "LANGUAGE": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",  # a mirrored refs/replace/ must not swap the objects we read
    "GIT_TERMINAL_PROMPT": "0",  # fail instead of waiting for a password nobody will type
    "GIT_OPTIONAL_LOCKS": "0",  # reading commands never rewrite an index
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}


class GitError(Exception):
    """A git command could not run or exited non-zero; carries the command and git's output."""

    def __init__(
        self,
        args: Sequence[str],
        where: Path,
        returncode: int | None,
        stdout: bytes = b"",
        stderr: bytes = b"",
        *,
        reason: str | None = None,
    ) -> None:
        self.command = ("git", *args)
        self.where = where
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr.decode("utf-8", "replace").strip()
        detail = reason or f"exit {returncode}: {self.stderr or '(no output)'}"
        super().__init__(f"`git {' '.join(args)}` failed in {where} ({detail})")


class GitTimedOut(GitError):
    """A git command ran past its timeout; it and every process it started were killed."""

    def __init__(self, args: Sequence[str], where: Path, timeout: float, stdout: bytes = b"",
                 stderr: bytes = b"") -> None:
        self.timeout = timeout
        super().__init__(args, where, None, stdout, stderr, reason=(
            f"it did not finish within {timeout:g} s and was stopped; a tree git cannot read"
            " quickly (or a remote that does not answer) is the usual cause"))


def git_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every git call: the kept variables of ``environ`` plus fixed ones."""
    source = os.environ if environ is None else environ
    return {**{k: v for k, v in source.items() if k in _ENV_KEEP}, **_ENV_FIXED}


@dataclass(frozen=True)
class Git:
    """Git bound to one repository: ``git_dir`` always, ``work_tree`` when it has one.

    ``Git(git_dir=None)`` runs commands that need no repository (``clone``, ``ls-remote``) in
    ``cwd``. Extra ``config`` pairs are added after the safe settings (e.g. a credential helper).
    ``timeout`` (seconds) bounds every call; None: ``NETWORK_TIMEOUT`` for commands that talk to
    a remote, ``LOCAL_TIMEOUT`` for the rest.
    """

    git_dir: Path | None
    work_tree: Path | None = None
    cwd: Path | None = None
    config: tuple[str, ...] = ()
    timeout: float | None = None

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git ARGS``; raise ``GitError`` when it cannot start or (``check``) fails, and
        ``GitTimedOut`` when it runs past ``timeout`` (default: the instance's, else the
        command's)."""
        return self.start(*args, input=input, env=env, timeout=timeout).wait(check=check)

    def start(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> RunningGit:
        """Start ``git ARGS`` and return at once: several git commands can work at the same
        time (``RunningGit.wait`` collects each). Raises ``GitError`` when it cannot start."""
        command = ["git"]
        for setting in (*SAFE_CONFIG, *self.config):
            command += ["-c", setting]
        if self.git_dir is not None:
            command.append(f"--git-dir={self.git_dir}")
            # Without a work tree, say so: git would otherwise look for one around the cwd.
            command.append(f"--work-tree={self.work_tree}" if self.work_tree else "--bare")
        command += args
        where = self.work_tree or self.git_dir or self.cwd or Path.cwd()
        cwd = self.cwd or self.work_tree or self.git_dir
        limit = timeout or self.timeout or _default_timeout(args)
        logger.debug("git %r in %r", args, str(where))
        try:
            # Its own session: on a timeout git and whatever it started are stopped together.
            proc = subprocess.Popen(
                command,
                cwd=cwd,
                env={**git_environment(), **(env or {})},
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            reason = f"{exc}; check that git is installed and the folder exists"
            raise GitError(args, where, None, reason=reason) from exc
        return RunningGit(proc, args, where, input, time.monotonic() + limit, limit)

    def __call__(
        self, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> bytes:
        """Run git and return its stdout as bytes."""
        return self.run(*args, input=input, env=env).stdout

    def text(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        """Run git and return its stdout stripped, as text (for shas and ref names)."""
        return self(*args, env=env).decode("utf-8", "replace").strip()

    def paths(self, *args: str) -> list[str]:
        """Run a ``-z`` git listing; return its paths (``RunningGit.paths``)."""
        return self.start(*args).paths()


class RunningGit:
    """A started git command (``Git.start``); ``wait`` collects its output."""

    def __init__(self, proc: subprocess.Popen[bytes], args: Sequence[str], where: Path,
                 input: bytes | None, deadline: float, limit: float) -> None:
        self._proc = proc
        self._args = tuple(args)
        self._where = where
        self._input = input
        self._deadline = deadline
        self._limit = limit
        self._done = False

    def wait(self, *, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Its output once it exits; raises ``GitError`` when it failed (``check``) and
        ``GitTimedOut`` past its timeout, counted from its start. Interrupted, it is stopped:
        no git is left behind."""
        proc = self._proc
        self._done = True
        try:
            stdout, stderr = proc.communicate(self._input,
                                              timeout=max(self._deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            stop_group(proc, grace=_STOP_GRACE)
            stdout, stderr = _leftover_output(proc)
            raise GitTimedOut(self._args, self._where, self._limit, stdout, stderr) from None
        except BaseException:  # interrupted: leave no git behind
            stop_group(proc, grace=_STOP_GRACE)
            raise
        result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        if check and result.returncode != 0:
            raise GitError(self._args, self._where, result.returncode, result.stdout,
                           result.stderr)
        return result

    def paths(self) -> list[str]:
        """A ``-z`` listing's NUL-separated paths, decoded losslessly; raises as ``wait``.

        Decoded in one call, as ``os.fsdecode`` would each name (NUL is ASCII, so no character
        spans two names): a listing of 100,000 paths costs milliseconds, not a loop.
        """
        out = self.wait().stdout.decode(sys.getfilesystemencoding(),
                                        sys.getfilesystemencodeerrors())
        names = out.split("\0")
        names.pop()  # after the NUL ending the last name (or of no output at all): nothing
        return names

    def stop(self) -> None:
        """End it unread, and everything it started (nothing once ``wait`` was called)."""
        if not self._done:
            self._done = True
            stop_group(self._proc, grace=_STOP_GRACE)
            _leftover_output(self._proc)


def _leftover_output(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a stopped git printed; nothing when a process that left its group (a daemon a
    filter started) still holds the pipes, rather than waiting for it."""
    try:
        return proc.communicate(timeout=_STOP_GRACE)
    except subprocess.TimeoutExpired:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        return b"", b""


def _default_timeout(args: Sequence[str]) -> float:
    """``NETWORK_TIMEOUT`` for a command that talks to a remote, ``LOCAL_TIMEOUT`` otherwise."""
    return NETWORK_TIMEOUT if args and args[0] in _NETWORK_COMMANDS else LOCAL_TIMEOUT


def install_neutral_attributes(git_dir: Path) -> None:
    """Write ``info/attributes`` so a worktree's ``.gitattributes`` cannot transform content."""
    info = git_dir / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "attributes").write_text(NEUTRAL_ATTRIBUTES)


def discover(path: Path) -> Git:
    """The repository containing ``path`` (a user's own checkout, named on the command line).

    Discovery happens once, with the safe settings; every later call names the git dir and
    work tree found here. Raises ``GitError`` when ``path`` is not inside a work tree.
    """
    out = Git(git_dir=None, cwd=path).run(
        "rev-parse", "--absolute-git-dir", "--show-toplevel", check=True
    )
    lines = out.stdout.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) != 2:
        raise GitError(("rev-parse",), path, 0, reason=f"{path} is not inside a work tree")
    return Git(git_dir=Path(lines[0]), work_tree=Path(lines[1]))
