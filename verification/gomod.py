"""Parsing `go.mod` and `go.work` directives that planning needs (module, require, replace, use).

Pure. Go's files are line based: a directive is either one line (`require example.com/a
v1.2.3`) or a parenthesised block of lines (`require (` ... `)`); `//` starts a comment. See
https://go.dev/ref/mod#go-mod-file and https://go.dev/ref/mod#go-work-file.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GoMod:
    """A go.mod: its module path, required module paths, and replacements by a local folder."""

    module: str | None
    requires: tuple[str, ...]
    # (module path replaced, the local folder it is replaced by, as written: ../shared)
    local_replaces: tuple[tuple[str, str], ...]


def parse_go_mod(text: str) -> GoMod:
    module = None
    requires: list[str] = []
    replaces: list[tuple[str, str]] = []
    for verb, args in _directives(text):
        if verb == "module" and args:
            module = args[0].strip('"')
        elif verb == "require" and args:
            requires.append(args[0].strip('"'))
        elif verb == "replace" and "=>" in args:
            arrow = args.index("=>")
            old, new = args[:arrow], args[arrow + 1 :]
            # A local replacement is a path starting with ./ or ../ and has no version.
            if old and len(new) == 1 and new[0].startswith(("./", "../")):
                replaces.append((old[0].strip('"'), new[0].strip('"')))
    return GoMod(module, tuple(requires), tuple(replaces))


def parse_go_work_uses(text: str) -> list[str]:
    """The folders a go.work `use`s, as written (./a, ../b, .)."""
    return [args[0].strip('"') for verb, args in _directives(text) if verb == "use" and args]


def _directives(text: str) -> list[tuple[str, list[str]]]:
    """Each directive as (verb, its words): block entries carry their block's verb."""
    found: list[tuple[str, list[str]]] = []
    block: str | None = None
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block is not None:
            if line == ")":
                block = None
            else:
                found.append((block, line.split()))
            continue
        words = line.split()
        if len(words) >= 2 and words[1] == "(":
            block = words[0]
            continue
        found.append((words[0], words[1:]))
    return found
