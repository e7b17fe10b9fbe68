"""The one way Ratchet runs git: an explicit repository, a scrubbed environment, safe settings.

A worktree is written by untrusted code (an agent, a check, a pull request). Git reads a lot from
where it runs: it discovers the repository through a ``.git`` file, reads configuration that can
name programs (``core.fsmonitor``, hooks, filters, ``core.sshCommand``), reads attributes that
rewrite content on the way in or out, and honours environment variables that redirect it. So
every call here names its git dir (and work tree) explicitly, starts from an environment that
holds only what git needs, ignores system and global configuration, and forces the settings that
could run a program or change bytes. ``runner/`` and ``verification/`` both use this module.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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


def git_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every git call: the kept variables of ``environ`` plus fixed ones."""
    source = os.environ if environ is None else environ
    return {**{k: v for k, v in source.items() if k in _ENV_KEEP}, **_ENV_FIXED}


@dataclass(frozen=True)
class Git:
    """Git bound to one repository: ``git_dir`` always, ``work_tree`` when it has one.

    ``Git(git_dir=None)`` runs commands that need no repository (``clone``, ``ls-remote``) in
    ``cwd``. Extra ``config`` pairs are added after the safe settings (e.g. a credential helper).
    """

    git_dir: Path | None
    work_tree: Path | None = None
    cwd: Path | None = None
    config: tuple[str, ...] = ()

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git ARGS``; raise ``GitError`` when it cannot start or (``check``) fails."""
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
        logger.debug("git %r in %r", args, str(where))
        try:
            result = subprocess.run(
                command,
                cwd=cwd,
                env={**git_environment(), **(env or {})},
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
        except OSError as exc:
            reason = f"{exc}; check that git is installed and the folder exists"
            raise GitError(args, where, None, reason=reason) from exc
        if check and result.returncode != 0:
            raise GitError(args, where, result.returncode, result.stdout, result.stderr)
        return result

    def __call__(
        self, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> bytes:
        """Run git and return its stdout as bytes."""
        return self.run(*args, input=input, env=env).stdout

    def text(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        """Run git and return its stdout stripped, as text (for shas and ref names)."""
        return self(*args, env=env).decode("utf-8", "replace").strip()

    def paths(self, *args: str) -> list[str]:
        """Run a ``-z`` git listing; return its NUL-separated paths decoded losslessly.

        Decoded in one call, as ``os.fsdecode`` would each name (NUL is ASCII, so no character
        spans two names): a listing of 100,000 paths costs milliseconds, not a loop.
        """
        out = self(*args).decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
        return [name for name in out.split("\0") if name]


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
