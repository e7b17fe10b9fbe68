"""Tokens into dollars for CLIs that report no cost: the shipped price table, the operator's
over it, and cached input counted once."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.agents.presets import parse_codex
from runner.prices import DEFAULT_PRICES, load_prices, price_of, priced

CODEX_TURN = ('{"type":"turn.completed","usage":{"input_tokens":100000,'
              '"cached_input_tokens":80000,"output_tokens":5000}}\n')


def test_codex_tokens_are_priced_with_cached_input_counted_once() -> None:
    usage = parse_codex(CODEX_TURN)
    assert (usage["input_tokens"], usage["cache_read_tokens"]) == (20000, 80000)
    record = priced({**usage, "model": "gpt-5-codex"}, DEFAULT_PRICES)
    # 20k uncached at $1.25/M, 80k cached at $0.125/M, 5k out at $10/M.
    assert record["cost_usd"] == pytest.approx(0.025 + 0.01 + 0.05)
    assert record["cost_priced_as"] == "gpt-5-codex"


@pytest.mark.parametrize(("model", "key"), [
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("anthropic/claude-haiku-4-5", "claude-haiku-4-5"),
    ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
    ("GPT-5", "gpt-5"),
    ("gpt-5-turbo-preview", None),  # no guess from a mere prefix
    (None, None),
])
def test_a_model_is_priced_by_its_name_or_dated_release(model: str | None,
                                                       key: str | None) -> None:
    found = price_of(DEFAULT_PRICES, model)
    assert (found[0] if found else None) == key


def test_a_cli_cost_is_never_replaced_and_an_unknown_model_says_why_it_has_none() -> None:
    assert priced({"cost_usd": 0.5, "input_tokens": 10**6, "model": "gpt-5"},
                  DEFAULT_PRICES)["cost_usd"] == 0.5
    record = priced({"input_tokens": 1000}, DEFAULT_PRICES)
    assert "cost_usd" not in record
    assert "the CLI did not name it" in record["problems"][0]
    assert "RATCHET_AGENT_PRICES" in record["problems"][0]
    assert priced({"turns": 2}, DEFAULT_PRICES) == {"turns": 2}  # no tokens, nothing to price


def test_the_operator_table_prices_any_model_over_the_shipped_one(tmp_path: Path) -> None:
    table = load_prices('{"*": {"input": 2, "output": 8}, "gpt-5": {"input": 1, "output": 1,'
                        ' "cache_read": 0}}')
    assert priced({"input_tokens": 10**6, "cache_read_tokens": 10**6}, table)["cost_usd"] == 4
    assert priced({"input_tokens": 10**6, "model": "gpt-5"}, table)["cost_usd"] == 1
    assert price_of(table, "claude-sonnet-4-5") == ("claude-sonnet-4-5",
                                                    DEFAULT_PRICES["claude-sonnet-4-5"])
    file = tmp_path / "prices.json"
    file.write_text('{"gpt-6-sol": {"input": 3, "output": 20, "cache_read": 0.3}}')
    assert price_of(load_prices(str(file)), "gpt-6-sol")[1].output == 20  # type: ignore[index]


@pytest.mark.parametrize(("value", "problem"), [
    ("{not json", "is not JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"gpt-5": {"input": 1}}', "with input and output"),
    ('{"gpt-5": {"input": 1, "output": -2}}', "output must be a non-negative number"),
    ('{"gpt-5": {"input": 1, "output": 2, "reasoning": 1}}', "unknown keys: reasoning"),
    ("/no/such/prices.json", "cannot be read"),
])
def test_a_bad_price_table_is_refused_naming_the_problem(value: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        load_prices(value)
