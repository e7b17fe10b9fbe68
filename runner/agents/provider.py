"""What an agent CLI's failed exit says about its model provider: a temporary refusal (rate
limit, overload, a 5xx, the network) that is worth waiting out, or credentials the provider
refused or the CLI never had, which only the operator can fix.

One pure classifier per CLI over its log's end (``Preset.classify``; the runner asks only about
an agent that ended on its own without completing), reading
the CLI's own error shape first (Claude Code's ``result`` object, Codex's ``turn.failed`` and
``error`` events, opencode's ``error`` event) and its documented error lines after that; a
log that shows neither is not the provider's doing (None). The texts they match are the CLIs'
own (tests/test_provider_errors.py quotes them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Trouble(StrEnum):
    TRANSIENT = "transient"  # wait and try again: no attempt of the step is charged
    CREDENTIALS = "credentials"  # stop: the operator sets a key or seeds a login


@dataclass(frozen=True)
class ProviderError:
    """The provider's part in a failed agent: which kind, and why in a few words."""

    trouble: Trouble
    reason: str  # e.g. "the model API is overloaded (529)"

    def to_dict(self) -> dict[str, str]:
        return {"trouble": self.trouble.value, "reason": self.reason}


Classifier = Callable[[str], "ProviderError | None"]

# Statuses a provider answers when asking again later can work.
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
# Anthropic's and OpenAI's error types that say the same.
_TRANSIENT_TYPES = frozenset({"rate_limit_error", "overloaded_error", "api_error",
                              "timeout_error", "server_error", "rate_limit_exceeded",
                              "server_is_overloaded", "slow_down"})
_CREDENTIAL_TYPES = frozenset({"authentication_error", "invalid_api_key"})
# Network failures as Node, Rust's reqwest and Python's httpx print them.
_NETWORK = re.compile(
    r"\b(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|EPIPE|socket hang up"
    r"|Connection error|connection reset|Connection refused|error sending request for url"
    r"|stream disconnected before completion|Request timed out|APIConnectionError)\b",
    re.IGNORECASE)
_STATUS = re.compile(r"\b(?:API Error|status|last status|Error code)[:=]? ?(\d{3})\b",
                     re.IGNORECASE)


def _json_lines(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects that are whole lines of ``text`` (a CLI's event stream)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def _by_status(status: int | None, what: str) -> ProviderError | None:
    if status in (401, 403):
        return ProviderError(Trouble.CREDENTIALS, f"the model API refused the credentials"
                                                  f" ({status}): {what}")
    if status in _TRANSIENT_STATUS:
        return ProviderError(Trouble.TRANSIENT, f"{_status_words(status)} ({status}): {what}")
    return None


def _status_words(status: int) -> str:
    if status == 429:
        return "the model API rate-limited the agent"
    if status == 529:
        return "the model API is overloaded"
    return "the model API failed"


def _by_text(text: str, credentials: re.Pattern[str],
             transient: re.Pattern[str] | None = None) -> ProviderError | None:
    """The CLI's error lines, when it printed no structured error: credentials first (a
    missing key also fails the connection), then the CLI's own words for a temporary
    refusal, then a status, then the network."""
    found = credentials.search(text)
    if found:
        return ProviderError(Trouble.CREDENTIALS, _clip(found.group(0)))
    found = transient.search(text) if transient else None
    if found:
        return ProviderError(Trouble.TRANSIENT, "the model API refused for now: "
                             + _clip(_line_of(text, found.start())))
    for match in reversed(list(_STATUS.finditer(text))):
        verdict = _by_status(int(match.group(1)), _clip(_line_of(text, match.start())))
        if verdict is not None:
            return verdict
    found = _NETWORK.search(text)
    if found:
        return ProviderError(Trouble.TRANSIENT, "the model API could not be reached: "
                             + _clip(_line_of(text, found.start())))
    return None


def _plain(text: str) -> str:
    """The lines of ``text`` that are not JSON events: a streaming CLI's own error lines,
    without the files and command output its events quote."""
    return "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith("{"))


def _line_of(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return text[start:end if end >= 0 else len(text)].strip()


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


# --- Claude Code ---------------------------------------------------------------------------

_CLAUDE_CREDENTIALS = re.compile(
    r"Invalid API key[^\n]*|Not logged in[^\n]*|OAuth token has expired[^\n]*"
    r"|Credit balance is too low[^\n]*|authentication_error[^\n]*", re.IGNORECASE)


def classify_claude(text: str) -> ProviderError | None:
    """Claude Code (``-p --output-format stream-json``): its ``result`` object says
    ``is_error`` with ``api_error_status`` and ``api_error_type`` (``overloaded_error`` for a
    529 once its own retries ran out) and the message (``API Error: 529 ...``, ``Invalid API
    key · Please run /login``, ``Not logged in · Please run /login``)."""
    result = None
    for value in _json_lines(text):
        if value.get("type") == "result":
            result = value
    if result is not None and result.get("is_error"):
        message = str(result.get("result") or result.get("subtype") or "")
        kind = str(result.get("api_error_type") or "")
        status = result.get("api_error_status")
        status = status if isinstance(status, int) else None
        if kind in _CREDENTIAL_TYPES or _CLAUDE_CREDENTIALS.search(message):
            return ProviderError(Trouble.CREDENTIALS, _clip(message or kind))
        verdict = _by_status(status, _clip(message or kind))
        if verdict is None and kind in _TRANSIENT_TYPES:
            verdict = ProviderError(Trouble.TRANSIENT, f"the model API answered {kind}: "
                                    f"{_clip(message)}")
        if verdict is not None:
            return verdict
        return _by_text(message, _CLAUDE_CREDENTIALS)
    return _by_text(_plain(text)[-8192:], _CLAUDE_CREDENTIALS)


# --- Codex ---------------------------------------------------------------------------------

_CODEX_CREDENTIALS = re.compile(
    r"Missing environment variable: `?\w+`?[^\n]*|unexpected status 401[^\n]*"
    r"|Incorrect API key[^\n]*|invalid_api_key[^\n]*|Not logged in[^\n]*|Quota exceeded[^\n]*"
    r"|You've hit your usage limit[^\n]*", re.IGNORECASE)
_CODEX_OVERLOADED = re.compile(r"currently experiencing high demand|server_is_overloaded"
                               r"|Selected model is at capacity", re.IGNORECASE)


def classify_codex(text: str) -> ProviderError | None:
    """Codex (``exec --json``): the message of its last ``turn.failed`` or ``error`` event
    (``exceeded retry limit, last status: 429 Too Many Requests``, ``unexpected status 401
    Unauthorized: ...``, ``stream disconnected before completion: ...``); its progress
    notes (``Reconnecting... 1/5``) are not the failure."""
    message = ""
    for value in _json_lines(text):
        if value.get("type") == "turn.failed" and isinstance(value.get("error"), dict):
            message = str(value["error"].get("message") or "")
        elif value.get("type") == "error" and not str(value.get("message", "")).startswith(
                "Reconnecting"):
            message = str(value.get("message") or "")
    # Without one, its own error lines; not the API events it logs (the model's words).
    own = "\n".join(line for line in _plain(text).splitlines() if "SSE event: " not in line)
    return _by_text(message or own[-8192:], _CODEX_CREDENTIALS, _CODEX_OVERLOADED)


# --- opencode, aider, goose ----------------------------------------------------------------

# What litellm (aider), the AI SDK (opencode) and goose print for refused credentials, and
# for a provider that refuses for now.
_CREDENTIALS = re.compile(
    r"AuthenticationError[^\n]*|not able to authenticate you[^\n]*|invalid x-api-key[^\n]*"
    r"|Incorrect API key[^\n]*|API key (?:is )?(?:missing|not set|required)[^\n]*"
    r"|ProviderAuthError[^\n]*|\b401 Unauthorized[^\n]*|Authentication failed[^\n]*",
    re.IGNORECASE)
_REFUSED_FOR_NOW = re.compile(
    r"RateLimitError|InternalServerError|ServiceUnavailableError|OverloadedError"
    r"|overloaded_error|rate_limit_error|rate limited you|servers are down or overloaded"
    r"|Rate limit exceeded|Too Many Requests", re.IGNORECASE)


def classify_opencode(text: str) -> ProviderError | None:
    """opencode (``run --format json``): its last ``error`` event (or the server's
    ``session.error``): a ``ProviderAuthError``, or an ``APIError`` with ``statusCode`` and
    ``isRetryable``; else its error lines."""
    error: dict[str, Any] | None = None
    for value in _json_lines(text):
        found = (value.get("properties") or {}) if value.get("type") == "session.error" else value
        if value.get("type") in {"error", "session.error"} and isinstance(
                found.get("error"), dict):
            error = found["error"]
    if error is not None:
        name = str(error.get("name") or "")
        data = error.get("data") if isinstance(error.get("data"), dict) else error
        message = _clip(str(data.get("message") or name))
        status = data.get("statusCode")
        if name == "ProviderAuthError":
            return ProviderError(Trouble.CREDENTIALS, message)
        verdict = _by_status(status if isinstance(status, int) else None, message)
        if verdict is None and data.get("isRetryable") is True:
            verdict = ProviderError(Trouble.TRANSIENT, f"the model API refused for now:"
                                    f" {message}")
        if verdict is not None:
            return verdict
    return classify_text(_plain(text))


def classify_text(text: str) -> ProviderError | None:
    """A CLI that prints its provider's errors as lines (aider through litellm, goose)."""
    return _by_text(text[-8192:], _CREDENTIALS, _REFUSED_FOR_NOW)


# --- Gemini CLI, Copilot CLI ---------------------------------------------------------------

_GEMINI_CREDENTIALS = re.compile(
    r"UNAUTHENTICATED[^\n]*|PERMISSION_DENIED[^\n]*|API key not valid[^\n]*"
    r"|API_KEY_INVALID[^\n]*|you must specify the GEMINI_API_KEY[^\n]*"
    r"|Please set an Auth method[^\n]*|Invalid auth method selected[^\n]*", re.IGNORECASE)
_GEMINI_REFUSED_FOR_NOW = re.compile(r"RESOURCE_EXHAUSTED|\"status\": ?\"UNAVAILABLE\""
                                     r"|\"status\": ?\"INTERNAL\"|DEADLINE_EXCEEDED"
                                     r"|model is overloaded", re.IGNORECASE)
_GOOGLE_CODE = re.compile(r"\"code\": ?(\d{3})")


def classify_gemini(text: str) -> ProviderError | None:
    """Gemini CLI (``--output-format stream-json``): its ``result`` event with ``status``
    ``error`` quotes the API's error (``[API Error: {"error":{"code":429,...,"status":
    "RESOURCE_EXHAUSTED"}}]``); before a session starts it prints its login errors as lines
    (``When using Gemini API, you must specify the GEMINI_API_KEY environment variable.``)."""
    message = ""
    for value in _json_lines(text):
        if value.get("type") == "result" and value.get("status") == "error":
            error = value.get("error") if isinstance(value.get("error"), dict) else {}
            message = str(error.get("message") or "")
    if message:
        code = _GOOGLE_CODE.search(message)
        verdict = _by_status(int(code.group(1)), _clip(message)) if code else None
        if verdict is not None:
            return verdict
    return _by_text(message or _plain(text)[-8192:], _GEMINI_CREDENTIALS,
                    _GEMINI_REFUSED_FOR_NOW)


_COPILOT_CREDENTIALS = re.compile(
    r"No authentication information found[^\n]*|Authentication failed[^\n]*"
    r"|Bad credentials[^\n]*", re.IGNORECASE)


def classify_copilot(text: str) -> ProviderError | None:
    """Copilot CLI (``--output-format json``): its last ``session.error`` event has an
    ``errorType`` (``authentication``, ``rate_limit``), a ``statusCode`` and a message
    (``Failed to get response from the AI model; retried 5 times ... Last error: 429``);
    without a login it prints ``Error: No authentication information found.`` before any
    event."""
    error: dict[str, Any] | None = None
    for value in _json_lines(text):
        if value.get("type") == "session.error" and isinstance(value.get("data"), dict):
            error = value["data"]
    if error is not None:
        message = _clip(str(error.get("message") or error.get("errorType") or ""))
        if error.get("errorType") == "authentication":
            return ProviderError(Trouble.CREDENTIALS, message)
        status = error.get("statusCode")
        verdict = _by_status(status if isinstance(status, int) else None, message)
        if verdict is None and error.get("errorType") == "rate_limit":
            verdict = ProviderError(Trouble.TRANSIENT, f"the model API refused for now:"
                                    f" {message}")
        if verdict is not None:
            return verdict
    return _by_text(_plain(text)[-8192:], _COPILOT_CREDENTIALS, _REFUSED_FOR_NOW)
