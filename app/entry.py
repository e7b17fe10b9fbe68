"""The ``ratchet`` executable: ``ratchet verify`` without the rest of Ratchet.

Verifying needs no ledger, engine, agents, service or queue, and each command is a new
process: ``ratchet verify`` goes straight to ``app.verify_cli`` (planning starts in a fraction
of the other commands' start-up), every other command to ``app.cli``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

# Options `ratchet` takes before its command; help lists every command, so it takes app.cli.
_GLOBAL_FLAGS = frozenset({"-v", "-vv", "-vvv", "--verbose"})


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if _command(arguments) == "verify":
        from app.verify_cli import main as verify

        return verify(arguments)
    from app.cli import main as everything

    return everything(arguments)


def _command(arguments: list[str]) -> str | None:
    """The command ``arguments`` name, when only ``-v`` flags come before it."""
    for argument in arguments:
        if argument not in _GLOBAL_FLAGS:
            return argument
    return None


if __name__ == "__main__":
    sys.exit(main())
