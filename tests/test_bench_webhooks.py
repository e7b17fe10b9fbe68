"""Smoke tests of bench/webhooks.py: its deliveries are what GitHub would send, and a tiny real
run against both servers reports both measurements without a server error."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from gidgethub.sansio import Event

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import webhooks  # noqa: E402


def test_deliveries_are_signed_real_payloads_in_the_mix() -> None:
    deliveries = webhooks.build_deliveries(webhooks.load_examples(), 200, first_issue=500,
                                           seed=1)
    kinds = Counter(d.kind for d in deliveries)
    assert kinds == {f"{event}.{action}": share * 10 for event, action, share in webhooks.MIX}
    issues = []
    for delivery in deliveries:
        headers = {k.lower(): v for k, v in delivery.headers.items()}
        event = Event.from_http(headers, delivery.body, secret=webhooks.SECRET)  # checks HMAC
        assert f"{event.event}.{event.data['action']}" == delivery.kind
        if delivery.kind == "issues.labeled":
            assert event.data["label"]["name"] == webhooks.TRIGGER_LABEL
            issues.append(event.data["issue"]["number"])
    assert len(set(issues)) == len(issues) == 10  # one run each: every issue its own
    assert len({d.headers["X-GitHub-Delivery"] for d in deliveries}) == 200


@pytest.mark.slow
def test_quick_run_measures_both_servers_without_server_errors(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = webhooks.main(["--quick"])
    out = capsys.readouterr().out
    assert code in (0, 1), out  # the verdict on a busy test machine is not this test's business
    lines = {label: next((line for line in out.splitlines() if label in line), "")
             for label in ("bare Starlette + HMAC", "ratchet serve (embedded defaults)")}
    for label, line in lines.items():
        assert "achieved" in line and "p99" in line, f"no {label} measurement in:\n{out}"
        statuses = [part.split(":")[0] for part in line.split("status ", 1)[1].split(", ")]
        assert statuses and all(s.isdigit() and int(s) < 500 for s in statuses), line
    assert "202: 2" in lines["ratchet serve (embedded defaults)"], out  # 5% of 40 are labeled
    assert "p99 ratio ratchet/bare" in out and re.search(r"^(PASS|FAIL)", out, re.M), out
    assert "5xx, timeouts or errors" not in out and "expected" not in out, out
