"""A trial model API on 127.0.0.1 for ``ratchet agent try``: it answers every request of
Anthropic Messages, OpenAI Responses, Chat Completions and Gemini's generateContent with one
short text, streamed the way the real APIs stream it, and records which API was asked with
which key header. A Gemini request asking for JSON of a schema (``responseMimeType``
``application/json``) gets the smallest instance of that schema: Gemini CLI's model router
asks so before the prompt, and retries text for a minute and a half before giving up.

It scripts nothing: a CLI that reaches it through the sandbox and the egress proxy's route,
gets an answer and exits 0 is set up to talk to a model. The scripted model that drives the
CLIs' tools through every phase is the tests' (tests/fakes/modelapi/).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "Ratchet's trial model answered; nothing to do. Exit now."
# What an agent's key variable holds during a trial: never a real key, so nothing is billed.
TRIAL_KEY = "ratchet-trial-key"
_KEY_HEADERS = ("x-api-key", "authorization", "x-goog-api-key")
# Items of an array a schema asks for at least, at most: the request is the CLI's to write.
_MAX_ITEMS = 16


@dataclass(frozen=True)
class Asked:
    """One request the trial model answered."""

    api: str  # anthropic, responses, chat, gemini, other
    path: str
    keyed: bool  # it carried a key header


class TrialModel:
    """The trial model API; a context manager. ``url`` is its base (Anthropic and Gemini
    clients use it as is, OpenAI clients ``url + "/v1"``)."""

    def __init__(self) -> None:
        self.asked: list[Asked] = []
        self._lock = threading.Lock()
        trial = self

        class Handler(_Handler):
            model = trial

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> TrialModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _record(self, asked: Asked) -> None:
        with self._lock:
            self.asked.append(asked)


class _Handler(BaseHTTPRequestHandler):
    model: TrialModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [
                {"id": "trial-model", "object": "model", "created": 0, "owned_by": "ratchet"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.split("?", 1)[0].rstrip("/")
        api = ("count_tokens" if path.endswith("/count_tokens") else
               "anthropic" if path.endswith("/messages") else
               "responses" if path.endswith("/responses") else
               "chat" if path.endswith("/chat/completions") else
               "gemini" if path.endswith((":generateContent", ":streamGenerateContent")) else
               "other")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self.model._record(Asked(api, self.path,
                                 any(name in self.headers for name in _KEY_HEADERS)))
        if api == "count_tokens":
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
        elif api == "other":
            self._json(404, {"error": {"message": f"no route {self.path}"}})
        elif api == "gemini" and not path.endswith(":streamGenerateContent"):
            self._json(200, _gemini(_gemini_answer(body)))
        elif api == "gemini":
            self._stream(_gemini_stream(_gemini_answer(body)))
        elif body.get("stream"):
            self._stream(_EVENTS[api](body.get("model", "trial-model")))
        else:
            self._json(200, _WHOLE[api](body.get("model", "trial-model")))

    def _stream(self, events: Iterator[bytes]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _json(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _sse(name: str | None, data: object) -> bytes:
    return (f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()


def _id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


_USAGE = {"input_tokens": 1, "output_tokens": 1}


def _anthropic_message(model: str) -> dict[str, Any]:
    return {"id": _id("msg_"), "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": ANSWER}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": _USAGE}


def _anthropic(model: str) -> Iterator[bytes]:
    start = {**_anthropic_message(model), "content": [], "stop_reason": None}
    yield _sse("message_start", {"type": "message_start", "message": start})
    yield _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})
    yield _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": ANSWER}})
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}})
    yield _sse("message_stop", {"type": "message_stop"})


def _response(model: str) -> dict[str, Any]:
    item = {"type": "message", "id": _id("item_"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}
    return {"id": _id("resp_"), "object": "response", "created_at": int(time.time()),
            "model": model, "status": "completed", "output": [item],
            "usage": {**_USAGE, "total_tokens": 2,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def _responses(model: str) -> Iterator[bytes]:
    done = _response(model)
    item = done["output"][0]
    yield _sse("response.created", {"type": "response.created", "response": {
        **done, "status": "in_progress", "output": []}})
    yield _sse("response.output_item.added", {"type": "response.output_item.added",
                                              "output_index": 0,
                                              "item": {**item, "status": "in_progress",
                                                       "content": []}})
    yield _sse("response.output_text.delta", {"type": "response.output_text.delta",
                                              "item_id": item["id"], "output_index": 0,
                                              "content_index": 0, "delta": ANSWER})
    yield _sse("response.output_item.done", {"type": "response.output_item.done",
                                             "output_index": 0, "item": item})
    yield _sse("response.completed", {"type": "response.completed", "response": done})


def _completion(model: str) -> dict[str, Any]:
    return {"id": _id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": ANSWER}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def _chat(model: str) -> Iterator[bytes]:
    base = {"id": _id("chatcmpl-"), "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}
    for delta, finish in (({"role": "assistant", "content": ANSWER}, None), ({}, "stop")):
        yield _sse(None, {**base, "choices": [{"index": 0, "delta": delta,
                                               "finish_reason": finish}]})
    yield _sse(None, {**base, "choices": [], "usage": {"prompt_tokens": 1,
                                                       "completion_tokens": 1,
                                                       "total_tokens": 2}})
    yield b"data: [DONE]\n\n"


def _gemini_answer(body: dict[str, Any]) -> str:
    """The text answering a generateContent request: JSON of the schema asked for, if any."""
    config = body.get("generationConfig")
    if not isinstance(config, dict) or config.get("responseMimeType") != "application/json":
        return ANSWER
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    return json.dumps(_instance(schema))


def _instance(schema: object, depth: int = 0) -> object:
    """The smallest value of a JSON or Gemini schema (types in either case): its first enum
    value, its minimum, every required property, `minItems` items (up to _MAX_ITEMS); a depth
    cap for a schema that nests itself."""
    if not isinstance(schema, dict) or depth > 16:
        return None
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return {name: _instance(properties.get(name), depth + 1)
                for name in schema.get("required") or properties}
    if kind == "array":
        least = schema.get("minItems")
        count = min(least, _MAX_ITEMS) if isinstance(least, int) and least > 0 else 0
        return [_instance(schema.get("items"), depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "trial" if kind == "string" else None


def _gemini(text: str = ANSWER) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1,
                              "totalTokenCount": 2}, "modelVersion": "trial-model"}


def _gemini_stream(text: str) -> Iterator[bytes]:
    yield _sse(None, _gemini(text))


_EVENTS = {"anthropic": _anthropic, "responses": _responses, "chat": _chat}
_WHOLE = {"anthropic": _anthropic_message, "responses": _response, "chat": _completion}
