"""``ratchet agent try``: each missing piece of a preset's setup is one line saying what to do,
and the preset's CLI runs once, sandboxed behind the egress proxy, against the trial model
(runner/agents/trial.py) with a placeholder key. A stand-in ``gemini`` program plays the CLI
here (tests/agents/ runs the real ones)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from runner.agents.trial import ANSWER, TrialModel

REAL_KEY = "real-gemini-key-never-sent-21"
# A stand-in CLI: asks the model at GOOGLE_GEMINI_BASE_URL (the proxy's route inside the
# sandbox), or fails the way ``STUB`` says.
STUB = """#!/usr/bin/env python3
import json, os, sys, urllib.request
if sys.argv[1:] == ["--version"]:
    print("0.0.1-stub"); sys.exit(0)
sys.stdin.read()
if any("{real}" in value for value in os.environ.values()):
    print("the agent saw the runner's real key"); sys.exit(3)
mode = "{mode}"
if mode == "refused":
    print("Invalid auth method selected."); sys.exit(41)
if mode == "asked":
    url = os.environ["GOOGLE_GEMINI_BASE_URL"] + "/v1beta/models/m:generateContent"
    request = urllib.request.Request(url, data=json.dumps({{"contents": []}}).encode(),
                                     headers={{"content-type": "application/json",
                                              "x-goog-api-key": os.environ["GEMINI_API_KEY"]}})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
    print(opener.open(request, timeout=30).read().decode())
sys.exit(0)
"""


def agent_try(tmp_path: Path, *, mode: str | None, key: bool = True
              ) -> subprocess.CompletedProcess[str]:
    path = "/usr/bin:/bin"
    if mode is not None:
        folder = tmp_path / "bin"
        folder.mkdir()
        stub = folder / "gemini"
        stub.write_text(STUB.format(real=REAL_KEY, mode=mode))
        stub.chmod(0o755)
        path = f"{folder}:{path}"
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("RATCHET_") and not name.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PATH=path, RATCHET_HOME=str(tmp_path / "home"))
    if key:
        env["GEMINI_API_KEY"] = REAL_KEY
    return subprocess.run([sys.executable, "-m", "app.cli", "agent", "try", "--agent", "gemini"],
                          env=env, capture_output=True, text=True, timeout=240, check=False,
                          cwd=Path(__file__).parents[1])


def test_each_missing_piece_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    done = agent_try(tmp_path, mode=None, key=False)
    assert done.returncode == 2, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FAIL  agent: 'gemini' is not on the agents' PATH: install it"
                               " (npm install -g @google/gemini-cli")
    assert lines[1].startswith("FAIL  credentials: set GEMINI_API_KEY")
    assert "ok    sandbox: bwrap starts processes here" in lines
    assert lines[-1] == "skip  trial: fix what failed first"


def test_the_cli_reaches_the_trial_model_through_the_proxy_without_the_real_key(
        tmp_path: Path) -> None:
    done = agent_try(tmp_path, mode="asked")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok    agent: gemini is " in done.stdout and "(version 0.0.1-stub)" in done.stdout
    assert ("ok    trial: gemini reached the trial model through the sandbox and the egress"
            " proxy (1 request(s), gemini API) and exited 0") in done.stdout


def test_a_cli_that_exits_without_asking_the_model_fails_the_trial(tmp_path: Path) -> None:
    done = agent_try(tmp_path, mode="silent")
    assert done.returncode == 2
    assert "FAIL  trial: gemini exited 0 without asking the model" in done.stdout


def test_a_cli_that_fails_is_reported_with_the_end_of_its_log(tmp_path: Path) -> None:
    done = agent_try(tmp_path, mode="refused")
    assert done.returncode == 2
    trial = done.stdout.splitlines()[-1]
    assert trial.startswith("FAIL  trial: ") and "Invalid auth method selected." in trial


def test_a_gemini_request_for_json_of_a_schema_gets_an_instance_of_it() -> None:
    """Gemini CLI's model router asks for JSON of its schema before the prompt (Gemini `Type`
    names, upper case); answered with text it retries for a minute and a half."""
    router = {"type": "OBJECT", "required": ["complexity_reasoning", "complexity_score"],
              "properties": {"complexity_reasoning": {"type": "STRING"},
                             "complexity_score": {"type": "INTEGER"}}}
    listed = {"type": "object", "required": ["picks"],
              "properties": {"picks": {"type": "array", "minItems": 2,
                                       "items": {"enum": ["flash", "pro"]}},
                             "note": {"type": "string"}}}

    def answer(model: TrialModel, body: dict[str, Any], method: str = "generateContent") -> str:
        request = urllib.request.Request(
            f"{model.url}/v1beta/models/trial-model:{method}", json.dumps(body).encode(),
            {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
        reply = json.loads(text.removeprefix("data: ") if method.startswith("stream") else text)
        return reply["candidates"][0]["content"]["parts"][0]["text"]

    ask = {"contents": [{"role": "user", "parts": [{"text": "route this"}]}]}
    with TrialModel() as model:
        for method in ("generateContent", "streamGenerateContent"):
            config = {"responseMimeType": "application/json", "responseJsonSchema": router}
            routed = json.loads(answer(model, {**ask, "generationConfig": config}, method))
            assert isinstance(routed["complexity_reasoning"], str)
            assert 1 <= routed["complexity_score"] <= 100
        config = {"responseMimeType": "application/json", "responseSchema": listed}
        assert json.loads(answer(model, {**ask, "generationConfig": config})) == {
            "picks": ["flash", "flash"]}
        assert answer(model, ask) == ANSWER  # no schema asked: the one short text
        greedy = {"type": "array", "minItems": 10**9, "items": {"type": "string"}}
        config = {"responseMimeType": "application/json", "responseJsonSchema": greedy}
        assert json.loads(answer(model, {**ask, "generationConfig": config})) == ["trial"] * 16
