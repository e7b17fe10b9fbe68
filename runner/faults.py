"""Named crash points for failure-injection tests: the process kills its own process group.

A setting (read once at start-up, for failure-injection tests only) names one point, optionally
narrowed to a step or effect: ``after_commit:research.1``, ``after_agent_output:implement.1``,
``after_effect_intent:verify.1:push``. Unset, every call is a no-op. The kill is SIGKILL of the
whole group, exactly what an OOM killer or a lost host does, so nothing gets to clean up.
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CrashPoints:
    spec: str | None = None

    def reached(self, point: str, where: str = "") -> None:
        """Die here if ``point`` (and ``where``, when the spec names one) is the armed one."""
        if not self.spec:
            return
        name, _, target = self.spec.partition(":")
        if name != point or (target and target != where):
            return
        log.warning("crash point %r reached at %r: killing process group", point, where)
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpgrp(), signal.SIGKILL)
        # Not a group leader (started without its own session): never take the parent down.
        os.kill(os.getpid(), signal.SIGKILL)


NO_CRASH = CrashPoints()
