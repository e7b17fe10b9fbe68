"""``RATCHET_PUBLIC_URL`` answers: ``GET <url>/healthz`` from this host returns Ratchet's own
answer. GitHub delivers webhooks and people follow links to that URL; from here a failure
means the tunnel or proxy in front of the service is down, or the URL names something else.
Never fatal: the service works for whoever reaches it, and a tunnel may come up later.
"""

from __future__ import annotations

import httpx

from app.doctor.findings import Check, Finding, fail, ok, skip, warn

# Seconds for the whole exchange: a tunnel slower than this loses GitHub's deliveries anyway
# (GitHub waits 10 s for an answer).
PUBLIC_URL_TIMEOUT_S = 5.0
HEALTHZ_ANSWER = "ok"  # what Ratchet's /healthz says (app/service.py)


def public_url_finding(url: str | None, *, app: bool) -> Finding:
    """``app``: a GitHub App is configured (links and deliveries need the URL)."""
    if not url:
        if app:
            return warn(Check.PUBLIC_URL, "RATCHET_PUBLIC_URL is not set: comments and check"
                                          " runs get no link to the run's page; set it to where"
                                          " GitHub reaches this service")
        return skip(Check.PUBLIC_URL, "RATCHET_PUBLIC_URL is not set (no links to run pages)")
    target = f"{url.rstrip('/')}/healthz"
    try:
        with httpx.Client(timeout=PUBLIC_URL_TIMEOUT_S, follow_redirects=True) as client:
            answer = client.get(target)
    except httpx.HTTPError as exc:
        return fail(Check.PUBLIC_URL, f"{target} does not answer from this host"
                                      f" ({type(exc).__name__}: {str(exc) or 'no answer'}):"
                                      " the tunnel or proxy in front of the service is down,"
                                      " the service is not running, or RATCHET_PUBLIC_URL is"
                                      " wrong", fatal=False)
    if answer.status_code != 200 or answer.text.strip() != HEALTHZ_ANSWER:
        return fail(Check.PUBLIC_URL, f"{target} answered {answer.status_code}, not Ratchet's"
                                      " /healthz: RATCHET_PUBLIC_URL (or the tunnel behind it)"
                                      " leads to another service", fatal=False)
    return ok(Check.PUBLIC_URL, f"{target} answers")
