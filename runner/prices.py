"""What a model's tokens cost, for agents whose CLI reports tokens but no dollars (Codex), or
whose report a kill cut short: a price table per model, shipped with the public list prices of
current Anthropic and OpenAI models and overridden by the operator (RATCHET_AGENT_PRICES).

Prices are US dollars per million tokens: ``input`` (uncached input), ``output``,
``cache_read`` (cached input) and ``cache_write`` (input written to a cache). A usage record
counts cached input once, in ``cache_read_tokens``, never again in ``input_tokens``. Pure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

# The key that prices a model the CLI did not name, or one the table does not list.
ANY_MODEL = "*"
_PER_TOKEN = 1e-6
# A dated or pinned release of a listed model: "claude-sonnet-4-5-20250929",
# "gpt-5-2025-08-07".
_RELEASE = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens of each kind."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, usage: Mapping[str, Any]) -> float:
        counts = {kind: _count(usage.get(f"{kind}_tokens"))
                  for kind in ("input", "output", "cache_read", "cache_write")}
        return round(sum(counts[kind] * getattr(self, kind) for kind in counts) * _PER_TOKEN, 8)


def _price(input: float, output: float, cache_read: float, cache_write: float | None = None
           ) -> Price:
    return Price(input, output, cache_read, input if cache_write is None else cache_write)


# Public list prices (https://www.anthropic.com/pricing#api, https://openai.com/api/pricing/,
# Google's below);
# Anthropic's cache writes are the 5-minute ones, OpenAI charges none. A model not listed here
# is priced by the operator's table (RATCHET_AGENT_PRICES), or left unpriced.
DEFAULT_PRICES: Mapping[str, Price] = MappingProxyType({
    "claude-opus-4-5": _price(5, 25, 0.5, 6.25),
    "claude-opus-4-1": _price(15, 75, 1.5, 18.75),
    "claude-opus-4": _price(15, 75, 1.5, 18.75),
    "claude-sonnet-4-5": _price(3, 15, 0.3, 3.75),
    "claude-sonnet-4": _price(3, 15, 0.3, 3.75),
    "claude-3-7-sonnet": _price(3, 15, 0.3, 3.75),
    "claude-haiku-4-5": _price(1, 5, 0.1, 1.25),
    "claude-3-5-haiku": _price(0.8, 4, 0.08, 1),
    "gpt-5.1": _price(1.25, 10, 0.125),
    "gpt-5.1-codex": _price(1.25, 10, 0.125),
    "gpt-5.1-codex-mini": _price(0.25, 2, 0.025),
    "gpt-5": _price(1.25, 10, 0.125),
    "gpt-5-codex": _price(1.25, 10, 0.125),
    "gpt-5-mini": _price(0.25, 2, 0.025),
    "gpt-5-nano": _price(0.05, 0.4, 0.005),
    "gpt-4.1": _price(2, 8, 0.5),
    "gpt-4.1-mini": _price(0.4, 1.6, 0.1),
    "gpt-4o": _price(2.5, 10, 1.25),
    "o3": _price(2, 8, 0.5),
    "o4-mini": _price(1.1, 4.4, 0.275),
    # https://ai.google.dev/gemini-api/docs/pricing (prompts up to 200k tokens)
    "gemini-2.5-pro": _price(1.25, 10, 0.125),
    "gemini-2.5-flash": _price(0.3, 2.5, 0.03),
    "gemini-2.5-flash-lite": _price(0.1, 0.4, 0.01),
})


def price_of(table: Mapping[str, Price], model: str | None) -> tuple[str, Price] | None:
    """The table's entry for ``model`` (a provider prefix such as ``anthropic/`` dropped, a
    dated release priced as its model), else its ``*`` entry, else None."""
    if model:
        name = model.rsplit("/", 1)[-1].lower()
        for candidate in (name, _RELEASE.sub("", name)):
            if candidate in table:
                return candidate, table[candidate]
    if ANY_MODEL in table:
        return ANY_MODEL, table[ANY_MODEL]
    return None


def priced(usage: Mapping[str, Any], table: Mapping[str, Price]) -> dict[str, Any]:
    """``usage`` with ``cost_usd`` from the table where the CLI reported tokens and no cost
    (``cost_priced_as`` names the entry used); a model the table cannot price is a problem
    noted in it, so the record says why its cost is missing."""
    record = dict(usage)
    if "cost_usd" in record or not any(
            _count(record.get(f"{kind}_tokens")) for kind in
            ("input", "output", "cache_read", "cache_write")):
        return record
    model = record.get("model") if isinstance(record.get("model"), str) else None
    found = price_of(table, model)
    if found is None:
        named = f"model {model!r}" if model else "the model (the CLI did not name it)"
        record["problems"] = [*record.get("problems", []), (
            f"no price for {named}: its tokens are not counted in dollars; add it, or a"
            f" {ANY_MODEL!r} entry, to RATCHET_AGENT_PRICES")]
        return record
    key, price = found
    record["cost_usd"] = price.cost(record)
    record["cost_priced_as"] = key
    return record


def load_prices(value: str | None) -> Mapping[str, Price]:
    """The price table: the shipped one, with the operator's entries over it. ``value`` is
    RATCHET_AGENT_PRICES: a JSON object, or the path of a file holding one, mapping a model
    name (or ``*``) to ``{"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}``
    in dollars per million tokens (``cache_read`` defaults to ``input``, ``cache_write`` too).

    Raises ``ValueError`` naming what is wrong.
    """
    if not value or not value.strip():
        return DEFAULT_PRICES
    text = value if value.lstrip().startswith(("{", "[")) else _read(value)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"RATCHET_AGENT_PRICES is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("RATCHET_AGENT_PRICES must be a JSON object of model: prices")
    table = dict(DEFAULT_PRICES)
    for model, entry in data.items():
        table[str(model).lower()] = _entry(str(model), entry)
    return MappingProxyType(table)


def _read(path: str) -> str:
    try:
        return Path(path).expanduser().read_text()
    except OSError as exc:
        raise ValueError(f"RATCHET_AGENT_PRICES names {path}, which cannot be read:"
                         f" {exc.strerror or exc}; give a JSON object or a readable file"
                         ) from None


def _entry(model: str, entry: object) -> Price:
    if not isinstance(entry, dict) or not {"input", "output"} <= entry.keys():
        raise ValueError(f"RATCHET_AGENT_PRICES[{model!r}] must be an object with input and"
                         " output (dollars per million tokens), and optionally cache_read"
                         " and cache_write")
    unknown = set(entry) - {"input", "output", "cache_read", "cache_write"}
    if unknown:
        raise ValueError(f"RATCHET_AGENT_PRICES[{model!r}] has unknown keys:"
                         f" {', '.join(sorted(unknown))}")
    values = {key: entry.get(key, entry["input"]) for key in
              ("input", "output", "cache_read", "cache_write")}
    for key, number in values.items():
        if (not isinstance(number, int | float) or isinstance(number, bool)
                or not math.isfinite(number) or number < 0):
            raise ValueError(f"RATCHET_AGENT_PRICES[{model!r}].{key} must be a non-negative"
                             " number of dollars per million tokens")
    return Price(**{key: float(number) for key, number in values.items()})


def _count(value: object) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value)
    return 0
