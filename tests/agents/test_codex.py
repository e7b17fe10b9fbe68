"""Codex (the real ``@openai/codex``, pinned in clis.py) through every phase, sandbox on,
against the scripted model API behind the egress proxy's route."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agents.conftest import KEYS, MakeRatchet
from tests.e2e.harness import drive_to_done
from tests.fakes.modelapi import CALC, ModelServer
from tests.gitrepo import git

# Dollars per million tokens for a model the price table does not know (Codex names none).
PRICES = {"*": {"input": 2.0, "output": 8.0}}


def codex_seed(folder: Path) -> Path:
    """The operator's Codex config (RATCHET_AGENT_HOME_SEED): a model Codex has no metadata
    for gets its plain tools (exec_command), which the scripted model calls; Codex's own
    models get a JavaScript tool (exec) the script does not drive."""
    seed = folder / ".codex"
    seed.mkdir(parents=True)
    (seed / "config.toml").write_text('model = "ratchet-fake"\n')
    return seed


def test_codex_takes_a_run_from_research_to_done(agent_ratchet: MakeRatchet,
                                                 model: ModelServer, tmp_path: Path) -> None:
    ratchet = agent_ratchet("codex", env={
        "RATCHET_AGENT_HOME_SEED": str(codex_seed(tmp_path / "seed")),
        "RATCHET_AGENT_PRICES": json.dumps(PRICES)})
    run_id, _ = drive_to_done(ratchet)

    assert "return a + b" in git(ratchet.repo, "show", f"ratchet/{run_id}:calc.py")
    assert "test_add" in git(ratchet.repo, "show", f"ratchet/{run_id}:test_calc.py")
    # Every turn went through Codex's own shell in its own sandbox (nested in Ratchet's), and
    # implement saw the test fail before repair fixed it.
    for phase in ("research", "specify", "implement", "repair"):
        turns = [r.turn for r in model.phase_requests(phase) if r.status == 200]
        assert turns == list(range(len(CALC[phase].actions) + 1)), (phase, turns)
    implement = model.phase_requests("implement")
    assert "Process exited with code 1" in implement[3].tool_output
    assert "FAIL: test_add" in implement[3].tool_output
    # The model wrote the outputs; Codex's last message did not replace them.
    folder = ratchet.export(run_id, ratchet.home.parent / "export")
    assert (folder / "implementation/summary.md").read_text() == "Implemented calc.add.\n"
    assert (folder / "spec.md").read_text().startswith("# Spec")
    # The runner's key, added by the proxy, on every request.
    assert {r.headers.get("authorization") for r in model.requests} == {
        f"Bearer {KEYS['OPENAI_API_KEY']}"}
    # Tokens as the API reported them, priced from the table (Codex reports no cost).
    usage = ratchet.status(run_id)["usage"]
    assert usage["total"]["input_tokens"] == sum(r.input_tokens for r in model.requests)
    assert usage["total"]["output_tokens"] == sum(r.output_tokens for r in model.requests)
    expected = (usage["total"]["input_tokens"] * 2.0 + usage["total"]["output_tokens"] * 8.0) / 1e6
    assert abs(usage["total"]["cost_usd"] - expected) < 1e-6
    assert usage["total"]["unpriced_runs"] == 0
