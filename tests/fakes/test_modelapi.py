"""The scripted model API speaks each wire format and follows its script (the real CLIs run
against it in tests/agents/)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.fakes.modelapi import ModelServer, Script, Switches

OUTPUT = "/s/research.1/out/research/repository-analysis.md"
PROMPT = f"# Ratchet research step research.1 (run r-1)\n\n- `$RATCHET_OUTPUT` is `{OUTPUT}`.\n"
SYSTEM = "You are a CLI.\n - Primary working directory: /w/tree\n"


def events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def test_anthropic_turns_follow_the_script_through_the_clis_own_tools() -> None:
    tools = [{"name": name, "input_schema": {"properties": {"file_path": {}, "content": {}}}}
             for name in ("Read", "Write")]
    with ModelServer() as model:
        first = httpx.post(f"{model.url}/v1/messages?beta=true", headers={"x-api-key": "k1"},
                           json={"stream": True, "system": SYSTEM, "tools": tools,
                                 "messages": [{"role": "user", "content": PROMPT}]})
        start = [e for e in events(first) if e["type"] == "content_block_start"]
        assert start[0]["content_block"]["name"] == "Read"
        delta = next(e for e in events(first) if e["type"] == "content_block_delta")
        assert json.loads(delta["delta"]["partial_json"]) == {"file_path": "/w/tree/README.md"}

        done = {"role": "assistant", "content": [{"type": "tool_use", "name": "Read"}]}
        second = httpx.post(f"{model.url}/v1/messages", json={
            "stream": True, "system": SYSTEM, "tools": tools,
            "messages": [{"role": "user", "content": PROMPT}, done, {"role": "user",
                                                                     "content": "ok"}]})
        delta = next(e for e in events(second) if e["type"] == "content_block_delta")
        arguments = json.loads(delta["delta"]["partial_json"])
        assert arguments["file_path"] == OUTPUT and arguments["content"].startswith("# Analysis")
        side = httpx.post(f"{model.url}/v1/messages", json={"messages": [
            {"role": "user", "content": "Write a title"}]}).json()
        assert side["content"] == [{"type": "text", "text": "OK."}]
    assert [(r.phase, r.turn, r.headers.get("x-api-key")) for r in model.requests] == [
        ("research", 0, "k1"), ("research", 1, None), (None, 0, None)]
    assert model.requests[0].size > len(PROMPT) and model.requests[0].input_tokens > 0


def test_responses_write_through_codexs_patch_tool_and_run_its_shell() -> None:
    prompt = PROMPT.replace("research", "implement").replace(
        "research/repository-analysis.md", "implementation/summary.md")
    tools = [{"type": "function", "name": "shell",
              "parameters": {"properties": {"command": {"type": "array"}}}},
             {"type": "custom", "name": "apply_patch"}]
    context = {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context><cwd>/w/tree</cwd>"}]}
    calls: list[dict[str, Any]] = []
    with ModelServer() as model:
        for _ in range(3):
            answer = httpx.post(f"{model.url}/v1/responses", json={
                "stream": True, "tools": tools,
                "input": [context, {"role": "user", "content": prompt}, *calls]})
            item = next(e["item"] for e in events(answer)
                        if e["type"] == "response.output_item.done")
            calls.append(item)
    assert calls[0]["type"] == "custom_tool_call"
    assert calls[0]["input"].startswith("*** Begin Patch\n*** Add File: /w/tree/calc.py\n")
    assert calls[2] == {**calls[2], "type": "function_call", "name": "shell"}
    assert json.loads(calls[2]["arguments"]) == {
        "command": ["bash", "-lc", "python3 -m unittest -q"]}


def test_chat_completions_call_the_clients_functions_and_stream_the_final_text() -> None:
    tools = [{"type": "function", "function": {"name": "write", "parameters": {
        "properties": {"filePath": {}, "content": {}}}}},
        {"type": "function", "function": {"name": "read", "parameters": {
            "properties": {"filePath": {}}}}}]
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": PROMPT}]
    script = Script(switches=Switches(text_chunks=3))
    with ModelServer(script) as model:
        for _ in range(3):
            answer = events(httpx.post(f"{model.url}/v1/chat/completions",
                                       json={"stream": True, "tools": tools,
                                             "messages": messages}))
            calls = [c for e in answer for choice in e["choices"]
                     for c in choice["delta"].get("tool_calls", [])]
            messages.append({"role": "assistant", "tool_calls": calls})
    assert [json.loads(c["function"]["arguments"]) for m in messages[2:4]
            for c in m["tool_calls"]][1]["filePath"] == OUTPUT
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in answer if e["choices"])
    assert text == "Research written." and answer[-1]["usage"]["prompt_tokens"] > 0


def test_the_first_requests_fail_with_the_chosen_status_then_the_script_goes_on() -> None:
    script = Script(switches=Switches(fail_first=2, fail_status=529))
    with ModelServer(script) as model:
        answers = [httpx.post(f"{model.url}/v1/messages", json={
            "messages": [{"role": "user", "content": PROMPT}]}) for _ in range(3)]
    assert [a.status_code for a in answers] == [529, 529, 200]
    assert answers[0].json()["error"]["type"] == "overloaded_error"
    assert [r.status for r in model.requests] == [529, 529, 200]


def test_a_hung_stream_stops_mid_answer_and_holds_the_connection() -> None:
    script = Script(switches=Switches(hang_phase="research"))
    received = []
    request = {"stream": True, "messages": [{"role": "user", "content": PROMPT}]}
    with ModelServer(script) as model, httpx.stream(
            "POST", f"{model.url}/v1/messages", timeout=httpx.Timeout(5, read=1),
            json=request) as answer:
        try:
            for line in answer.iter_lines():
                received.append(line)
        except httpx.ReadTimeout:
            received.append("(still open)")
    assert received[0] == "event: message_start" and received[-1] == "(still open)"
    assert not any("message_stop" in line for line in received)
