"""What a check found: one line each, ``ok``, ``warn``, ``FAIL`` or ``skip``, saying what to do.

A ``Finding`` is data: ``ratchet doctor`` prints its line (or its JSON), ``serve`` and
``worker`` log it at start, and ``/readyz`` answers 503 while a *fatal* one stands. Fatal is
decided by the check that found it (an agent CLI that does not start is fatal where agents
run; GitHub not answering is not: an outage passes, a refused key does not), so the same
finding means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum


class Check(StrEnum):
    """What is checked, by name: the names ``ratchet doctor`` prints and ``/readyz`` reports."""

    SETTINGS = "settings"
    AGENT = "agent"
    CREDENTIALS = "credentials"
    SEED = "seed"
    SANDBOX = "sandbox"
    LEDGER = "ledger"
    BROKER = "broker"
    GITHUB_APP = "github-app"
    WEBHOOK_SECRET = "webhook-secret"
    PUBLIC_URL = "public-url"
    # ``ratchet agent try`` only: where the preset's CLI connects, and its trial step.
    HOSTS = "hosts"
    TRIAL = "trial"


class Verdict(StrEnum):
    OK = "ok"
    WARN = "warn"  # works, but a setting deserves a look; never fails doctor
    FAIL = "FAIL"
    SKIP = "skip"  # does not apply to this configuration, or could not be tried


# What to do about a fatal failure, in words that hold whatever the cause: ``/readyz`` is
# open to anyone who reaches the port, so it names the check and the next step, never the
# host's paths, URLs or programs (the service's log and ``ratchet doctor`` have those).
REMEDIES: Mapping[Check, str] = {
    Check.SETTINGS: "a RATCHET_* setting cannot be used: fix it, then restart",
    Check.AGENT: "the agent CLI (RATCHET_AGENT or RATCHET_AGENT_COMMAND) is missing or does"
                 " not start: install it on the agents' PATH or fix the setting, then restart",
    Check.CREDENTIALS: "the agent has no model credentials: set its preset's key variable"
                       " (or RATCHET_AGENT_HOME_SEED), then restart",
    Check.SEED: "a RATCHET_AGENT_HOME_SEED path does not exist: create it or drop it, then"
                " restart",
    Check.SANDBOX: "the sandbox does not start: install bubblewrap or allow user namespaces,"
                   " then restart",
    Check.LEDGER: "the ledger cannot be used: start it or fix RATCHET_STORE_URL",
    Check.BROKER: "the broker cannot be reached: start it or fix RATCHET_BROKER_URL",
    Check.GITHUB_APP: "GitHub does not accept the App's credentials: fix RATCHET_GITHUB_APP_ID,"
                      " the private key or RATCHET_GITHUB_APP_SLUG, then restart",
    Check.WEBHOOK_SECRET: "RATCHET_WEBHOOK_SECRET is not set, so every delivery is refused:"
                          " set it to the App's webhook secret, then restart",
}
_AFTER = " (the service's log and `ratchet doctor` name the cause)"


@dataclass(frozen=True)
class Finding:
    """One check's result: its verdict and one sentence (what holds, or what to do next).

    ``fatal``: a service that found this does not do its work (``/readyz`` answers 503);
    only a ``FAIL`` is ever fatal. The text never holds a secret.
    """

    check: Check
    verdict: Verdict
    text: str
    fatal: bool = False

    def line(self) -> str:
        return f"{self.verdict.value:<5} {self.check.value}: {self.text}"

    def to_dict(self) -> dict[str, object]:
        return {"check": self.check.value, "status": self.verdict.value, "text": self.text,
                "fatal": self.fatal}

    @property
    def failed(self) -> bool:
        return self.verdict is Verdict.FAIL


def ok(check: Check, text: str) -> Finding:
    return Finding(check, Verdict.OK, text)


def warn(check: Check, text: str) -> Finding:
    return Finding(check, Verdict.WARN, text)


def fail(check: Check, text: str, *, fatal: bool = True) -> Finding:
    return Finding(check, Verdict.FAIL, text, fatal=fatal)


def skip(check: Check, text: str) -> Finding:
    return Finding(check, Verdict.SKIP, text)


def all_hold(findings: Iterable[Finding]) -> bool:
    """No check failed (a warning or a skipped check does not count)."""
    return not any(finding.failed for finding in findings)


def readiness(findings: Iterable[Finding]) -> list[dict[str, str]]:
    """The fatal failures as ``/readyz`` reports them: each check's name and what to do."""
    return [{"check": finding.check.value,
             "next": REMEDIES.get(finding.check, "fix it, then restart") + _AFTER}
            for finding in findings if finding.failed and finding.fatal]
