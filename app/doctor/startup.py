"""The doctor's checks at the start of ``serve`` and ``worker``: each result logged, the fatal
ones kept for ``/readyz`` (``serve``) or refusing to start (``worker``).

The local checks and GitHub's (a short timeout) run before the process takes work, so
readiness is known when the service starts answering; the public URL is asked in the
background once the service listens (it reaches this very service through the tunnel), a
few times while the tunnel may still be coming up, and is never fatal.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from app.doctor.checks import Role, github_findings, local_findings, public_url_findings
from app.doctor.findings import Check, Finding, Verdict, readiness
from app.settings import Settings

log = logging.getLogger(__name__)

# Seconds between the background attempts at the public URL (a tunnel may start after us).
PUBLIC_URL_RETRIES = (1.0, 2.0, 4.0, 8.0)
_PENDING = "pending"
# The verdict a check shows in /readyz when it found several things (seeds): the worst.
_WORST = (Verdict.FAIL, Verdict.WARN, Verdict.OK, Verdict.SKIP)


class StartupChecks:
    """What this process's checks found at start (and the public URL's, once asked)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._findings: list[Finding] = []
        self._pending: set[Check] = set()

    def record(self, findings: Iterable[Finding]) -> None:
        """Log each finding and keep it."""
        for finding in findings:
            log_finding(finding)
            with self._lock:
                self._findings.append(finding)
                self._pending.discard(finding.check)

    def expect(self, check: Check) -> None:
        with self._lock:
            self._pending.add(check)

    @property
    def findings(self) -> list[Finding]:
        with self._lock:
            return list(self._findings)

    def fatal(self) -> list[dict[str, str]]:
        """The fatal failures, as ``/readyz`` names them (the check and what to do)."""
        return readiness(self.findings)

    def summary(self) -> dict[str, str]:
        """Each check's verdict (the worst of its findings), or "pending"."""
        with self._lock:
            findings, pending = list(self._findings), set(self._pending)
        verdicts: dict[str, str] = {check.value: _PENDING for check in pending}
        for finding in findings:
            known = verdicts.get(finding.check.value)
            if known is None or _WORST.index(finding.verdict) < _WORST.index(Verdict(known)):
                verdicts[finding.check.value] = finding.verdict.value
        return verdicts


def log_finding(finding: Finding) -> None:
    """One line of the log per finding: fatal failures as errors, other failures and
    warnings as warnings, the rest as information."""
    level = (logging.ERROR if finding.failed and finding.fatal
             else logging.WARNING if finding.verdict in (Verdict.FAIL, Verdict.WARN)
             else logging.INFO)
    log.log(level, "check %s", finding.line())


def check_at_start(settings: Settings, role: Role) -> StartupChecks:
    """Run the checks that decide whether this process may do its work, logging each."""
    checks = StartupChecks()
    checks.record(local_findings(settings, role))
    checks.record(github_findings(settings, role))
    return checks


def check_public_url_later(checks: StartupChecks, settings: Settings, role: Role, *,
                           wait: Callable[[float], bool]) -> threading.Thread | None:
    """Ask the public URL in a background thread until it answers or the retries are spent;
    record (and log) the last answer. ``wait(seconds)`` returns True when the process stops
    meanwhile. None when there is nothing to ask."""
    if role is Role.WORKER:
        return None
    checks.expect(Check.PUBLIC_URL)

    def ask() -> None:
        findings = public_url_findings(settings, role)
        for delay in PUBLIC_URL_RETRIES:
            if all(finding.verdict is not Verdict.FAIL for finding in findings) or wait(delay):
                break
            findings = public_url_findings(settings, role)
        checks.record(findings)

    thread = threading.Thread(target=ask, name="ratchet-public-url-check", daemon=True)
    thread.start()
    return thread
