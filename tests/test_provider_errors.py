"""What each preset's CLI says when its model provider refuses: the classifiers on the CLIs'
own error texts, and what the runner does with them (a real subprocess standing in for the
CLI; `make test-agents` runs the real ones against a scripted model API)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from runner.agents.command import CommandAgent
from runner.agents.presets import preset
from runner.agents.provider import (
    ProviderError,
    Trouble,
    classify_claude,
    classify_codex,
    classify_copilot,
    classify_gemini,
    classify_opencode,
    classify_text,
)
from runner.decisions import Limits, decide_failure, provider_retries
from runner.errors import (
    AgentUnauthorized,
    DeterministicFailure,
    ProviderUnavailable,
    TransientFailure,
)
from runner.ledger.records import Event
from runner.names import EventType
from runner.workflow import Outcome, State
from tests.test_decisions import run_in
from tests.test_preset_agents import make_task


def claude_result(message: str, **fields: object) -> str:
    """Claude Code's stream-json end: its init, then the result that ends a failed session."""
    return "\n".join([
        json.dumps({"type": "system", "subtype": "init", "model": "claude-sonnet-4-5"}),
        json.dumps({"type": "result", "subtype": "success", "is_error": True,
                    "duration_ms": 61000, "num_turns": 1, "result": message,
                    "total_cost_usd": 0, **fields}),
    ]) + "\n"


OVERLOADED = ('API Error: 529 {"type":"error","error":{"type":"overloaded_error",'
              '"message":"Overloaded"}}')
RATE_LIMITED = ('API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":'
                '"This request would exceed the rate limit for your organization"}}')
# A failure that is no provider's: a test the agent could not make pass.
TEST_FAILURE = "FAILED tests/test_calc.py::test_add - AssertionError: assert 3 == 4\n"


@pytest.mark.parametrize(("log", "trouble"), [
    (claude_result(OVERLOADED, api_error_status=529, api_error_type="overloaded_error"),
     Trouble.TRANSIENT),
    (claude_result(RATE_LIMITED, api_error_status=429, api_error_type="rate_limit_error"),
     Trouble.TRANSIENT),
    (claude_result("API Error: 500 Internal server error", api_error_status=500),
     Trouble.TRANSIENT),
    (claude_result("API Error: Connection error."), Trouble.TRANSIENT),
    (claude_result("Invalid API key · Please run /login", api_error_status=401),
     Trouble.CREDENTIALS),
    (claude_result("API Error: 401 Invalid API key · Please run /login"), Trouble.CREDENTIALS),
    (claude_result("Not logged in · Please run /login"), Trouble.CREDENTIALS),
    (claude_result("Credit balance is too low"), Trouble.CREDENTIALS),
    # Before any event: printed on stderr.
    ("Error: Invalid API key · Fix external API key\n", Trouble.CREDENTIALS),
])
def test_claude(log: str, trouble: Trouble) -> None:
    verdict = classify_claude(log)
    assert verdict is not None and verdict.trouble is trouble


@pytest.mark.parametrize("log", [
    claude_result("Reached maximum number of turns (40)", subtype="error_max_turns"),
    TEST_FAILURE,
    # A file it read quotes an error text: an event, not Claude's own error line.
    json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "content":
               "raise AuthError('Invalid API key · Please run /login')  # 529"}]}}) + "\n",
])
def test_claude_blames_no_provider_for_other_failures(log: str) -> None:
    assert classify_claude(log) is None


def codex_events(*events: dict[str, object]) -> str:
    started = [{"type": "thread.started", "thread_id": "0199a213"}, {"type": "turn.started"}]
    return "\n".join(json.dumps(e) for e in [*started, *events]) + "\n"


@pytest.mark.parametrize(("log", "trouble"), [
    (codex_events({"type": "error", "message": "Reconnecting... 1/5"},
                  {"type": "turn.failed", "error": {
                      "message": "exceeded retry limit, last status: 429 Too Many Requests"}}),
     Trouble.TRANSIENT),
    (codex_events({"type": "error", "message":
                   "unexpected status 503 Service Unavailable: upstream connect error"}),
     Trouble.TRANSIENT),
    (codex_events({"type": "turn.failed", "error": {"message":
                   "stream disconnected before completion: error sending request for url"
                   " (http://127.0.0.1:3128/_ratchet/openai/responses)"}}),
     Trouble.TRANSIENT),
    (codex_events({"type": "turn.failed", "error": {"message":
                   "We're currently experiencing high demand, which may cause temporary"
                   " errors."}}),
     Trouble.TRANSIENT),
    (codex_events({"type": "error", "message":
                   'unexpected status 401 Unauthorized: {"error":{"message":"Incorrect API key'
                   ' provided: sk-ratch***","code":"invalid_api_key"}}'}),
     Trouble.CREDENTIALS),
    ("Error: Missing environment variable: `OPENAI_API_KEY`.\n", Trouble.CREDENTIALS),
    (codex_events({"type": "turn.failed", "error": {"message":
                   "Quota exceeded. Check your plan and billing details."}}),
     Trouble.CREDENTIALS),
])
def test_codex(log: str, trouble: Trouble) -> None:
    verdict = classify_codex(log)
    assert verdict is not None and verdict.trouble is trouble


def gemini_result(code: int, status: str, message: str) -> str:
    """Gemini CLI 0.61.0's stream-json end after the API refused (captured, trimmed)."""
    error = json.dumps({"error": {"code": code, "message": message, "status": status}})
    return ('{"type":"init","session_id":"s","model":"gemini-2.5-flash"}\n'
            + json.dumps({"type": "result", "status": "error", "error": {
                "type": "unknown", "message": f"[API Error: {error}]"}, "stats": {}}) + "\n")


@pytest.mark.parametrize(("log", "trouble"), [
    (gemini_result(401, "UNAUTHENTICATED", "invalid x-api-key"), Trouble.CREDENTIALS),
    (gemini_result(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
     Trouble.CREDENTIALS),
    (gemini_result(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted"), Trouble.TRANSIENT),
    (gemini_result(503, "UNAVAILABLE", "The model is overloaded."), Trouble.TRANSIENT),
    ("When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\n",
     Trouble.CREDENTIALS),
    ("Invalid auth method selected.\n", Trouble.CREDENTIALS),
])
def test_gemini(log: str, trouble: Trouble) -> None:
    verdict = classify_gemini(log)
    assert verdict is not None and verdict.trouble is trouble


def copilot_error(kind: str, status: int, message: str) -> str:
    """Copilot CLI 1.0.102's JSON end after the provider refused (captured, trimmed)."""
    return "\n".join(json.dumps(event) for event in (
        {"type": "session.error", "data": {"errorType": kind, "message": message,
                                           "statusCode": status}},
        {"type": "result", "exitCode": 1, "usage": {"premiumRequests": 0}})) + "\n"


@pytest.mark.parametrize(("log", "trouble"), [
    (copilot_error("authentication", 401, "Authentication failed with provider at"
                   " http://127.0.0.1:3128/_ratchet/openai (HTTP 401)."), Trouble.CREDENTIALS),
    (copilot_error("rate_limit", 429, "Failed to get response from the AI model; retried 5"
                   " times (total retry wait time: 5.00 seconds) Last error: 429 Rate limited"),
     Trouble.TRANSIENT),
    ("Error: No authentication information found.\n\nCopilot can be authenticated with"
     " GitHub using an OAuth Token or a Fine-Grained Personal Access Token.\n",
     Trouble.CREDENTIALS),
])
def test_copilot(log: str, trouble: Trouble) -> None:
    verdict = classify_copilot(log)
    assert verdict is not None and verdict.trouble is trouble


def test_codex_reconnect_notes_alone_are_not_the_failure() -> None:
    log = codex_events({"type": "error", "message": "Reconnecting... 1/5"},
                       {"type": "turn.completed", "usage": {"input_tokens": 1}})
    assert classify_codex(log + TEST_FAILURE) is None


def test_the_model_words_codex_logs_are_not_its_failure() -> None:
    # The API events Codex logs (the preset's RUST_LOG) hold what the model wrote.
    said = ('2026-12-01T17:38:05Z TRACE codex_api::sse::responses: SSE event: {"type":'
            '"response.output_text.delta","delta":"The server answers status 503: ECONNRESET"}')
    assert classify_codex(said + "\n") is None


@pytest.mark.parametrize(("error", "trouble"), [
    ({"name": "APIError", "data": {"message": "Overloaded", "statusCode": 529,
                                   "isRetryable": True}}, Trouble.TRANSIENT),
    ({"name": "APIError", "data": {"message": "Rate limited", "isRetryable": True}},
     Trouble.TRANSIENT),
    ({"name": "ProviderAuthError", "data": {"providerID": "anthropic", "message":
                                            "invalid x-api-key"}}, Trouble.CREDENTIALS),
    ({"name": "APIError", "data": {"message": "invalid x-api-key", "statusCode": 401,
                                   "isRetryable": False}}, Trouble.CREDENTIALS),
    ({"name": "UnknownError", "data": {"message": "boom"}}, None),
])
def test_opencode(error: dict[str, object], trouble: Trouble | None) -> None:
    log = json.dumps({"type": "error", "timestamp": 1, "sessionID": "ses_1", "error": error})
    verdict = classify_opencode(log + "\n")
    assert (verdict.trouble if verdict else None) is trouble
    event = {"type": "session.error", "properties": {"sessionID": "ses_1", "error": error}}
    verdict = classify_opencode(json.dumps(event) + "\n")
    assert (verdict.trouble if verdict else None) is trouble


@pytest.mark.parametrize(("log", "trouble"), [
    ("litellm.RateLimitError: AnthropicException - {\"type\":\"error\",\"error\":{\"type\":"
     "\"rate_limit_error\"}}\nThe API provider has rate limited you. Try again later or check"
     " your quotas.\nRetrying in 0.2 seconds...\n", Trouble.TRANSIENT),
    ("litellm.InternalServerError: AnthropicException - Overloaded\nThe API provider's servers"
     " are down or overloaded.\n", Trouble.TRANSIENT),
    ("litellm.APIConnectionError: Connection error.\n", Trouble.TRANSIENT),
    ("litellm.AuthenticationError: AnthropicException - {\"type\":\"error\",\"error\":{\"type\":"
     "\"authentication_error\",\"message\":\"invalid x-api-key\"}}\nThe API provider is not"
     " able to authenticate you. Check your API key.\n", Trouble.CREDENTIALS),
    (TEST_FAILURE, None),
])
def test_aider_and_goose(log: str, trouble: Trouble | None) -> None:
    verdict = classify_text(log)
    assert (verdict.trouble if verdict else None) is trouble


# --- what the runner does with it ----------------------------------------------------------

def fake_claude(bin_dir: Path, log: str, exit_code: int) -> None:
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "claude").write_text(
        f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n"
        f"sys.stdout.write({log!r})\nsys.exit({exit_code})\n")
    (bin_dir / "claude").chmod(0o755)


def run_claude(tmp_path: Path, log: str, exit_code: int = 1) -> None:
    bin_dir = tmp_path / "bin"
    fake_claude(bin_dir, log, exit_code)
    chosen = preset("claude")
    agent = CommandAgent(chosen.templates, preset=chosen,
                         env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    agent.run(make_task(tmp_path, "implement", "Do it."))


def test_an_overloaded_model_is_a_transient_failure(tmp_path: Path) -> None:
    log = claude_result(OVERLOADED, api_error_status=529, api_error_type="overloaded_error")
    with pytest.raises(ProviderUnavailable, match=r"overloaded \(529\)") as caught:
        run_claude(tmp_path, log)
    assert caught.value.evidence["provider_error"]["trouble"] == "transient"
    assert caught.value.usage is not None  # what it spent is recorded with the failure


def test_refused_credentials_stop_the_run_naming_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(AgentUnauthorized, match=r"ANTHROPIC_API_KEY.*RATCHET_AGENT_HOME_SEED"):
        run_claude(tmp_path, claude_result("Invalid API key · Please run /login",
                                           api_error_status=401))


def test_any_other_failure_stays_deterministic(tmp_path: Path) -> None:
    with pytest.raises(DeterministicFailure) as caught:
        run_claude(tmp_path, TEST_FAILURE)
    assert "provider_error" not in caught.value.evidence


def provider_failure(step: str) -> Event:
    return Event(run_id="r1", seq=1, type=EventType.STEP_FAILED, at=0.0, step=step, attempt=1,
                 lease_epoch=1, revision=None, key=None,
                 data={"class": "transient", "evidence": {"provider_error": ProviderError(
                     Trouble.TRANSIENT, "overloaded").to_dict()}})


def test_provider_refusals_charge_no_attempt_and_are_bounded_on_their_own() -> None:
    limits = Limits(max_attempts=3, max_provider_retries=4)
    run = run_in(State.IMPLEMENT, "implement.1", attempt=5)
    earlier = provider_retries([provider_failure("implement.1")] * 3
                               + [provider_failure("research.1")], "implement.1")
    assert earlier == 3
    retried = decide_failure(run, ProviderUnavailable("overloaded"), limits, uncharged=earlier,
                             jitter=lambda low, high: high)
    assert retried.outcome is None and retried.delay > 0
    # Another transient failure at attempt 5: 3 of them were the provider's, 2 are charged.
    timeout = TransientFailure("agent timed out")
    assert decide_failure(run, timeout, limits, uncharged=earlier).outcome is None
    assert decide_failure(run, timeout, limits).outcome is Outcome.FAILED
    gave_up = decide_failure(run, ProviderUnavailable("overloaded"), limits, uncharged=4)
    assert gave_up.outcome is Outcome.FAILED and "refused 5 times in a row" in gave_up.reason
