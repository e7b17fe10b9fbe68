"""Which checks apply, for whom: ``ratchet doctor`` runs every one the configuration calls
for; ``serve`` and ``worker`` run theirs at start.

| check          | doctor | serve                   | worker | fatal when it fails                 |
|----------------|--------|-------------------------|--------|-------------------------------------|
| agent, seed    | yes    | in-process worker only  | yes    | yes                                 |
| credentials    | preset | in-process worker only  | preset | yes                                 |
| sandbox        | yes    | yes                     | yes    | yes (serve and worker refuse start) |
| ledger, broker | yes    | yes                     | yes    | yes                                 |
| github-app     | App    | App                     | App    | refused by GitHub; not unanswered   |
| webhook-secret | App    | App                     | no     | yes                                 |
| public-url     | set    | set (after start)       | no     | never                               |

No agent configured is a failure where runs come from GitHub (an App is configured) and a
warning otherwise (each ``ratchet run`` names its agent).
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum

from app.doctor.agent import agent_findings, sandbox_finding
from app.doctor.findings import Check, Finding, fail
from app.doctor.github_app import github_app_finding, webhook_secret_finding
from app.doctor.public_url import public_url_finding
from app.doctor.services import broker_finding, ledger_finding
from app.settings import Settings, SettingsError


class Role(StrEnum):
    """Who runs the checks: the operator's ``ratchet doctor``, or a process at start."""

    DOCTOR = "doctor"
    SERVE = "serve"  # with the in-process worker when no broker is set
    WORKER = "worker"


def runs_agents(settings: Settings, role: Role) -> bool:
    return role is not Role.SERVE or not settings.broker_url


def local_findings(settings: Settings, role: Role) -> list[Finding]:
    """The checks of this host alone: the agent, the sandbox, the ledger, the broker."""
    try:
        engine = settings.engine_settings()
    except SettingsError as exc:  # a sandbox folder that must not be shown, a bad route
        return [fail(Check.SETTINGS, str(exc).removeprefix("invalid settings: "))]
    findings = []
    if runs_agents(settings, role):
        findings += agent_findings(engine, required=settings.github_app_id is not None)
    findings.append(sandbox_finding(engine))
    findings.append(ledger_finding(settings.ledger_url))
    findings.append(broker_finding(settings.broker_url))
    return findings


def github_findings(settings: Settings, role: Role) -> list[Finding]:
    """The checks that ask GitHub (network, a short timeout)."""
    findings = [github_app_finding(settings)]
    if role is not Role.WORKER:
        findings.append(webhook_secret_finding(settings))
    return findings


def public_url_findings(settings: Settings, role: Role) -> list[Finding]:
    if role is Role.WORKER:
        return []
    return [public_url_finding(settings.public_url, app=settings.github_app_id is not None)]


def all_findings(settings: Settings, role: Role = Role.DOCTOR) -> Iterator[Finding]:
    """Every check that applies, in order, each as soon as it is known."""
    yield from local_findings(settings, role)
    yield from github_findings(settings, role)
    yield from public_url_findings(settings, role)
