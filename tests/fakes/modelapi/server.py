"""A scripted model API on 127.0.0.1: Anthropic Messages, OpenAI Responses, Chat Completions
and Gemini's generateContent, streamed as server-sent events the way the real APIs stream them.

Stateless per conversation: a CLI sends the whole conversation every turn, so the answer is
chosen from it alone. The phase comes from the Ratchet prompt's title, the turn from how many
tool calls the conversation already holds; turn ``n`` answers with the phase's ``n``-th action
as a call of the CLI's own tool (``Write``/``Edit``/``Read``/``Bash`` for Claude Code,
``apply_patch`` and ``shell`` for Codex, whatever functions a Chat Completions client offers),
and the turn after the last action with the final text. A request with no Ratchet prompt (a
CLI's side requests: titles, summaries, quota checks) gets a short text answer.

Every request is recorded (``requests``): which API, the key headers that arrived, the body's
size, the phase and turn. ``Switches`` make the model slow, failing or hung.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.modelapi.script import Action, Script, Turns, fill, phase_of, places

# Tool names a CLI may give each action, and the argument names its schema may use.
_TOOLS = {
    "write": ("Write", "write", "write_file", "create_file", "create"),
    "edit": ("Edit", "edit", "edit_file", "str_replace_edit", "replace"),
    "read": ("Read", "read", "read_file", "view"),
    "shell": ("Bash", "bash", "shell", "exec_command", "run_shell_command", "shell_command"),
}
_ARGS = {
    "path": ("file_path", "filePath", "path", "absolute_path"),
    "content": ("content", "contents", "text", "file_text"),
    "old": ("old_string", "oldString", "old_str", "old"),
    "new": ("new_string", "newString", "new_str", "new"),
    "command": ("command", "cmd"),
}
# Key headers worth recording (the proxy adds one; the agent's placeholder must not arrive).
_KEY_HEADERS = ("x-api-key", "authorization", "x-goog-api-key")


@dataclass(frozen=True)
class Recorded:
    """One request the server answered."""

    api: str  # anthropic, responses, chat, count_tokens, other
    path: str
    headers: dict[str, str]  # the key headers, lowercase names
    size: int  # bytes of the request body
    phase: str | None
    turn: int
    status: int
    user_agent: str
    input_tokens: int = 0  # the usage the answer reported
    output_tokens: int = 0
    cached_tokens: int = 0  # of input_tokens, reported as cached (OpenAI Responses)
    tool_output: str = ""  # what the CLI's tool answered to the previous turn's call
    tools: tuple[str, ...] = ()  # the names of the tools the request offered the model


@dataclass(frozen=True)
class _Tool:
    name: str
    properties: dict[str, Any]
    kind: str  # function, custom (freeform input, Codex's apply_patch)


class ModelServer:
    """The scripted model API. ``url`` is its base (``http://127.0.0.1:PORT``); Anthropic
    clients use it as is, OpenAI clients ``url + "/v1"``."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._answered = 0
        self._closing = threading.Event()
        server = self

        class Handler(_Handler):
            model = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()  # hung streams end
        self._httpd.shutdown()
        self._httpd.server_close()

    def phase_requests(self, phase: str | None = None) -> list[Recorded]:
        """The requests that carried a Ratchet prompt (of ``phase``)."""
        return [r for r in self.requests
                if r.phase is not None and (phase is None or r.phase == phase)]

    def _next_failure(self) -> int | None:
        """The error status this request gets, while the first ``fail_first`` last."""
        with self._lock:
            self._answered += 1
            switches = self.script.switches
            return switches.fail_status if self._answered <= switches.fail_first else None

    def _record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)


class _Handler(BaseHTTPRequestHandler):
    model: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: tests read ``requests``

    def do_GET(self) -> None:
        # Model listings (opencode, aider) get one model; anything else is unknown.
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "created": 0, "owned_by": "ratchet"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        raw = self._body()
        path = self.path.split("?", 1)[0].rstrip("/")
        api = ("count_tokens" if path.endswith("/messages/count_tokens") else
               "anthropic" if path.endswith("/messages") else
               "responses" if path.endswith("/responses") else
               "chat" if path.endswith("/chat/completions") else
               "gemini_count" if path.endswith(":countTokens") else
               "gemini" if path.endswith((":generateContent", ":streamGenerateContent")) else
               "other")
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        text = "\n".join(_strings(body))
        found = phase_of(text)
        phase = found[0] if found else None
        turn = _calls_made(api, body)
        status = 200
        usage = {"input": 0, "output": 0, "cached": 0}
        if api == "count_tokens":
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
        elif api == "gemini_count":
            self._json(200, {"totalTokens": max(1, len(raw) // 4)})
        elif api == "other":
            status = 404
            self._json(404, {"error": {"message": f"no route {self.path}"}})
        else:
            failure = self.model._next_failure()
            if failure is not None:
                status = failure
                self._error(api, failure)
            else:
                if path.endswith(":streamGenerateContent"):  # Gemini streams by its path
                    body = {**body, "stream": True}
                usage = self._answer(api, body, text, phase, turn, len(raw))
        self.model._record(Recorded(
            api=api, path=self.path,
            headers={name: self.headers[name] for name in _KEY_HEADERS if name in self.headers},
            size=len(raw), phase=phase, turn=turn, status=status,
            user_agent=self.headers.get("user-agent", ""),
            input_tokens=usage["input"], output_tokens=usage["output"],
            cached_tokens=usage["cached"],
            tool_output=_last_tool_output(api, body),
            tools=tuple(tool.name for tool in _tools(api, body))))

    # --- reading -------------------------------------------------------------------------

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    # --- answering -----------------------------------------------------------------------

    def _answer(self, api: str, body: dict[str, Any], text: str, phase: str | None,
                turn: int, size: int) -> dict[str, int]:
        """Answer with the phase's turn (or a side request's short text); returns the usage
        reported."""
        action: Action | None = None
        final = "OK."
        if phase is not None:
            turns = self.model.script.phases[phase]
            final = turns.final
            if turn < len(turns.actions):
                try:
                    action = fill(turns.actions[turn], places(text, phase))
                except KeyError as missing:
                    final = f"The prompt names no path for {missing}: nothing written."
        tools = _tools(api, body)
        if phase is not None and api == "chat" and not tools and _answered(body) == 0:
            # A client that edits through its reply's text (aider): every write and edit of
            # the phase at once, as SEARCH/REPLACE blocks, then the final text.
            final = _edit_blocks(self.model.script.phases[phase], places(text, phase), final)
            action = None
        call = _call(action, tools) if action else None
        usage = {"input": max(1, size // 4), "output": 20 + len(final) // 4}
        usage["cached"] = int(usage["input"] * self.model.script.switches.cached_share)
        hang = phase is not None and phase == self.model.script.switches.hang_phase
        events = {"anthropic": _anthropic, "responses": _responses, "chat": _chat,
                  "gemini": _gemini}[api](
            body, call, final, usage, self.model.script.switches.text_chunks)
        if not body.get("stream"):
            self._json(200, _whole(api, body, call, final, usage))
            return usage
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        switches = self.model.script.switches
        delay = switches.delay_s if switches.slow_phase in ("", phase) else 0.0
        try:
            for number, event in enumerate(events):
                if number and delay:
                    time.sleep(delay)
                self.wfile.write(event)
                self.wfile.flush()
                if hang and number == 1:
                    self.model._closing.wait()
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        return usage

    def _error(self, api: str, status: int) -> None:
        kind = {401: "authentication_error", 429: "rate_limit_error",
                529: "overloaded_error"}.get(status, "api_error")
        message = {401: "invalid x-api-key", 429: "Rate limited",
                   529: "Overloaded"}.get(status, "Internal server error")
        if api == "anthropic":
            payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        elif api == "gemini":  # Google's error shape: the code, a message and a status word
            payload = {"error": {"code": status, "message": message, "status": {
                401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED"}.get(status, "UNAVAILABLE")}}
        else:
            payload = {"error": {"message": message, "type": kind, "code": kind, "param": None}}
        self._json(status, payload, extra={"retry-after": "0"})

    def _json(self, status: int, payload: object, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


# --- the conversation ------------------------------------------------------------------


def _strings(value: object) -> Iterator[str]:
    """Every string in a request body, in order: the system prompt, messages, tool results."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _calls_made(api: str, body: dict[str, Any]) -> int:
    """How many tool calls the conversation already holds: the turn this request answers."""
    if api == "anthropic":
        return sum(1 for message in body.get("messages") or []
                   if isinstance(message, dict) and message.get("role") == "assistant"
                   and isinstance(message.get("content"), list)
                   for block in message["content"]
                   if isinstance(block, dict) and block.get("type") == "tool_use")
    if api == "responses":
        return sum(1 for item in body.get("input") or [] if isinstance(item, dict)
                   and item.get("type") in ("function_call", "custom_tool_call",
                                            "local_shell_call"))
    if api == "chat":
        return sum(len(message.get("tool_calls") or []) for message in body.get("messages") or []
                   if isinstance(message, dict) and message.get("role") == "assistant")
    if api == "gemini":
        return sum(1 for part in _gemini_parts(body) if "functionCall" in part)
    return 0


def _gemini_parts(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The parts of a Gemini request's contents, in order."""
    for content in body.get("contents") or []:
        if isinstance(content, dict):
            yield from (part for part in content.get("parts") or [] if isinstance(part, dict))


def _last_tool_output(api: str, body: dict[str, Any]) -> str:
    """The text of the conversation's last tool result (Anthropic ``tool_result``, Responses
    ``function_call_output``/``custom_tool_call_output``, Chat ``tool`` message)."""
    found: object = ""
    if api == "anthropic":
        for message in body.get("messages") or []:
            if isinstance(message, dict) and isinstance(message.get("content"), list):
                for block in message["content"]:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found = block.get("content")
    elif api == "responses":
        for item in body.get("input") or []:
            if isinstance(item, dict) and str(item.get("type", "")).endswith("_output"):
                found = item.get("output")
    elif api == "chat":
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "tool":
                found = message.get("content")
    elif api == "gemini":
        for part in _gemini_parts(body):
            if isinstance(part.get("functionResponse"), dict):
                found = part["functionResponse"].get("response")
    return "\n".join(_strings(found))


def _answered(body: dict[str, Any]) -> int:
    """How many answers a Chat Completions conversation holds after the Ratchet prompt (aider's
    system prompt carries example exchanges before it)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    asked = max((i for i, m in enumerate(messages) if phase_of("\n".join(_strings(m)))),
                default=0)
    return sum(1 for m in messages[asked:] if m.get("role") == "assistant")


def _edit_blocks(turns: Turns, where: Mapping[str, str], final: str) -> str:
    """The phase's writes and edits as aider's SEARCH/REPLACE blocks (its ``diff`` edit
    format: the path on its own line, an empty SEARCH creates the file), then ``final``."""
    blocks = []
    where = {"worktree": ".", **where}  # aider names no directory: its root is the worktree
    for action in turns.actions:
        if action.kind not in ("write", "edit"):
            continue
        try:
            action = fill(action, where)
        except KeyError as missing:
            return f"The prompt names no path for {missing}: nothing written."
        search, replace = ((f"    return {action.old}\n", f"    return {action.new}\n")
                           if action.kind == "edit" else ("", action.content))
        blocks.append(f"{action.path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}"
                      ">>>>>>> REPLACE\n```\n")
    return "\n".join([*blocks, final])


def _tools(api: str, body: dict[str, Any]) -> list[_Tool]:
    """The tools the request offers, whatever the API's shape."""
    tools = []
    offered = body.get("tools") or []
    if api == "gemini":  # Gemini groups its functions: tools[].functionDeclarations[]
        offered = [declaration for group in offered if isinstance(group, dict)
                   for declaration in group.get("functionDeclarations") or []]
    for tool in offered:
        if not isinstance(tool, dict):
            continue
        if api == "chat" and isinstance(tool.get("function"), dict):
            tool = tool["function"]
        schema = (tool.get("input_schema") or tool.get("parameters")
                  or tool.get("parametersJsonSchema") or {})
        kind = "custom" if tool.get("type") == "custom" else "function"
        if tool.get("name"):
            tools.append(_Tool(str(tool["name"]), dict(schema.get("properties") or {}), kind))
    return tools


@dataclass(frozen=True)
class _Call:
    name: str
    arguments: dict[str, Any] | None  # a function's arguments
    raw: str | None = None  # a custom tool's freeform input


def _call(action: Action, tools: list[_Tool]) -> _Call | None:
    """``action`` as a call of one of ``tools``: the CLI's own tool for it, else its patch tool
    (write, edit), else its shell."""
    by_name = {tool.name: tool for tool in tools}
    for name in _TOOLS[action.kind]:
        tool = by_name.get(name)
        if tool is not None and tool.kind == "function":
            return _Call(name, _arguments(action, tool))
    patch = by_name.get("apply_patch")
    if patch is not None and action.kind in ("write", "edit"):
        text = _patch(action)
        if patch.kind == "custom":
            return _Call("apply_patch", None, raw=text)
        # Codex names its argument input, opencode patchText.
        name = next((n for n in ("input", "patchText", "patch") if n in patch.properties),
                    "input")
        return _Call("apply_patch", {name: text})
    command = {"read": f"cat {action.path}", "shell": action.command}.get(action.kind)
    if command is None:  # write or edit with only a shell: a heredoc
        command = _shell_write(action)
    for name in _TOOLS["shell"]:
        tool = by_name.get(name)
        if tool is not None:
            return _Call(name, _arguments(Action("shell", command=command), tool))
    return None


def _arguments(action: Action, tool: _Tool) -> dict[str, Any]:
    values = {"path": action.path, "content": action.content, "old": action.old,
              "new": action.new, "command": action.command}
    wanted = {"write": ("path", "content"), "edit": ("path", "old", "new"), "read": ("path",),
              "shell": ("command",)}[action.kind]
    arguments: dict[str, Any] = {}
    for field in wanted:
        name = next((n for n in _ARGS[field] if n in tool.properties), _ARGS[field][0])
        value: Any = values[field]
        if field == "command" and tool.properties.get(name, {}).get("type") == "array":
            value = ["bash", "-lc", value]
        arguments[name] = value
    if action.kind == "shell" and "description" in tool.properties:
        arguments["description"] = "Run the tests"
    if action.kind == "edit" and "instruction" in tool.properties:  # Gemini CLI's replace
        arguments["instruction"] = "Fix the sign in calc.add."
    return arguments


def _patch(action: Action) -> str:
    """Codex's patch format for a write (add the file) or an edit (one line replaced)."""
    if action.kind == "write":
        body = "".join(f"+{line}\n" for line in action.content.splitlines())
        return f"*** Begin Patch\n*** Add File: {action.path}\n{body}*** End Patch\n"
    return (f"*** Begin Patch\n*** Update File: {action.path}\n@@\n"
            f"-    return {action.old}\n+    return {action.new}\n*** End Patch\n")


def _shell_write(action: Action) -> str:
    if action.kind == "write":
        return f"cat > '{action.path}' <<'RATCHET_EOF'\n{action.content}RATCHET_EOF"
    return f"sed -i 's/{action.old}/{action.new}/' '{action.path}'"


# --- the wire formats --------------------------------------------------------------------


def _sse(name: str | None, data: object) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, count)))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _anthropic(body: dict[str, Any], call: _Call | None, final: str, usage: dict[str, int],
               chunks: int) -> Iterable[bytes]:
    model = body.get("model", "claude-fake")
    yield _sse("message_start", {"type": "message_start", "message": {
        "id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage["input"], "output_tokens": 1,
                  "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}})
    if call is not None:
        yield _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "tool_use",
                                                             "id": f"toolu_{uuid.uuid4().hex[:12]}",
                                                             "name": call.name, "input": {}}})
        yield _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(call.arguments)}})
    else:
        yield _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})
        for piece in _pieces(final, chunks):
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": piece}})
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": usage["output"]}})
    yield _sse("message_stop", {"type": "message_stop"})


def _responses_usage(usage: dict[str, int]) -> dict[str, Any]:
    return {"input_tokens": usage["input"],
            "input_tokens_details": {"cached_tokens": usage["cached"]},
            "output_tokens": usage["output"], "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["input"] + usage["output"]}


def _responses_item(call: _Call | None, final: str) -> dict[str, Any]:
    item_id = f"item_{uuid.uuid4().hex[:12]}"
    if call is None:
        return {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": final, "annotations": []}]}
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    if call.raw is not None:
        return {"type": "custom_tool_call", "id": item_id, "call_id": call_id,
                "name": call.name, "input": call.raw, "status": "completed"}
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": call.name,
            "arguments": json.dumps(call.arguments), "status": "completed"}


def _responses(body: dict[str, Any], call: _Call | None, final: str, usage: dict[str, int],
               chunks: int) -> Iterable[bytes]:
    response_id = f"resp_{uuid.uuid4().hex[:12]}"
    model = body.get("model", "gpt-fake")
    base = {"id": response_id, "object": "response", "created_at": int(time.time()),
            "model": model, "output": []}
    yield _sse("response.created", {"type": "response.created",
                                    "response": {**base, "status": "in_progress"}})
    item = _responses_item(call, final)
    yield _sse("response.output_item.added", {"type": "response.output_item.added",
                                              "output_index": 0,
                                              "item": {**item, "status": "in_progress",
                                                       **({"content": []} if call is None
                                                          else {})}})
    if call is None:
        yield _sse("response.content_part.added", {
            "type": "response.content_part.added", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
        for piece in _pieces(final, chunks):
            yield _sse("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                "content_index": 0, "delta": piece})
        yield _sse("response.output_text.done", {
            "type": "response.output_text.done", "item_id": item["id"], "output_index": 0,
            "content_index": 0, "text": final})
    yield _sse("response.output_item.done", {"type": "response.output_item.done",
                                             "output_index": 0, "item": item})
    yield _sse("response.completed", {"type": "response.completed", "response": {
        **base, "status": "completed", "output": [item], "usage": _responses_usage(usage)}})


def _chat(body: dict[str, Any], call: _Call | None, final: str, usage: dict[str, int],
          chunks: int) -> Iterable[bytes]:
    chunk_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"
    model = body.get("model", "gpt-fake")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(None, {"id": chunk_id, "object": "chat.completion.chunk",
                           "created": int(time.time()), "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    if call is not None:
        yield chunk({"tool_calls": [{"index": 0, "id": f"call_{uuid.uuid4().hex[:12]}",
                                     "type": "function", "function": {
                                         "name": call.name,
                                         "arguments": json.dumps(call.arguments)}}]})
    else:
        for piece in _pieces(final, chunks):
            yield chunk({"content": piece})
    yield chunk({}, "tool_calls" if call else "stop")
    yield _sse(None, {"id": chunk_id, "object": "chat.completion.chunk",
                      "created": int(time.time()), "model": model, "choices": [],
                      "usage": {"prompt_tokens": usage["input"],
                                "completion_tokens": usage["output"],
                                "total_tokens": usage["input"] + usage["output"]}})
    yield b"data: [DONE]\n\n"


def _gemini_answer(call: _Call | None, text: str | None, usage: dict[str, int] | None
                   ) -> dict[str, Any]:
    """One Gemini ``GenerateContentResponse``: a function call or text; the last one of a
    stream carries the finish reason and the usage."""
    part = ({"functionCall": {"name": call.name, "args": call.arguments or {}}} if call
            else {"text": text or ""})
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
    answer: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-fake",
                              "responseId": uuid.uuid4().hex[:16]}
    if usage is not None:
        candidate["finishReason"] = "STOP"
        answer["usageMetadata"] = {"promptTokenCount": usage["input"],
                                   "candidatesTokenCount": usage["output"],
                                   "totalTokenCount": usage["input"] + usage["output"]}
    return answer


def _gemini(body: dict[str, Any], call: _Call | None, final: str, usage: dict[str, int],
            chunks: int) -> Iterable[bytes]:
    """Gemini's ``streamGenerateContent?alt=sse``: one response object per event."""
    if call is not None:
        yield _sse(None, _gemini_answer(call, None, usage))
        return
    pieces = _pieces(final, chunks)
    for number, piece in enumerate(pieces):
        yield _sse(None, _gemini_answer(None, piece,
                                        usage if number == len(pieces) - 1 else None))


def _whole(api: str, body: dict[str, Any], call: _Call | None, final: str,
           usage: dict[str, int]) -> dict[str, Any]:
    """A non-streaming answer."""
    if api == "gemini":
        return _gemini_answer(call, final, usage)
    model = body.get("model", "fake")
    if api == "anthropic":
        content: list[dict[str, Any]] = (
            [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": call.name,
              "input": call.arguments}] if call else [{"type": "text", "text": final}])
        return {"id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message", "role": "assistant",
                "model": model, "content": content,
                "stop_reason": "tool_use" if call else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": usage["input"], "output_tokens": usage["output"]}}
    if api == "responses":
        return {"id": f"resp_{uuid.uuid4().hex[:12]}", "object": "response",
                "status": "completed", "model": model, "output": [_responses_item(call, final)],
                "usage": _responses_usage(usage)}
    message: dict[str, Any] = {"role": "assistant", "content": None if call else final}
    if call is not None:
        message["tool_calls"] = [{"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                                  "function": {"name": call.name,
                                               "arguments": json.dumps(call.arguments)}}]
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if call else "stop"}],
            "usage": {"prompt_tokens": usage["input"], "completion_tokens": usage["output"],
                      "total_tokens": usage["input"] + usage["output"]}}

