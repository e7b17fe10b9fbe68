"""Smoke tests of bench/throughput.py: a tiny real run, and the skip line without the extra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import throughput  # noqa: E402


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_small_run_reports_every_setup(postgres_url, redis_url):
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "throughput.py"), "--runs", "3", "--steps", "50",
         "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")},
             "RATCHET_TEST_POSTGRES_URL": postgres_url, "RATCHET_TEST_REDIS_URL": redis_url},
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "embedded (SQLite + in-process worker): 3 runs" in out, out
    assert "2 workers (Redis + PostgreSQL): 3 runs" in out, out
    assert "not measured" not in out, out
    assert "ratchet ledger step commits" in out and "raw WAL" in out, out


def test_missing_extra_prints_a_skip_line(tmp_path, monkeypatch, capsys):
    for module in ("dbos", "langgraph", "langgraph.graph", "langgraph.checkpoint.sqlite"):
        monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    rates = throughput.bench_steps(tmp_path, 20, 1)
    assert rates.langgraph is None and rates.dbos is None and rates.ratchet > 0
    throughput.print_steps(20, 1, rates)
    out = capsys.readouterr().out
    assert out.count("skipped: install .[bench]") == 3, out
