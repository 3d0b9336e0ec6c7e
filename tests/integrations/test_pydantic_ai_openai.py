"""The Pydantic AI integration with a real provider model class: ``OpenAIChatModel`` over
``OpenAIProvider`` with the OpenAI SDK's own client, whose HTTP transport is a local
``MockTransport`` of the SDK's own HTTP library (``httpx2`` in this SDK version) answering
with real chat-completions JSON (issue 24, part 1).

What the model API received is checked request by request: the prompt once, the system prompt
once and first, and every assistant tool call answered by its tool message, across a crash
inside the write and the resumed turn, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from maka_es import failpoints
from maka_es.integrations.pydantic_ai import DurableAgent, ToolPolicy
from maka_es.tooljournal.runtime import BEFORE_T2
from tests.integrations.pai_support import Killed, open_app

PROMPT = "write the port from config.txt into port.txt"


def completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    """A chat.completion body as the API returns it."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


class ChatAPI:
    """The fake API: its answer follows from how many tool messages the request holds."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        results = sum(m["role"] == "tool" for m in body["messages"])
        calls = [
            [tool_call("call_read", "read_file", {"path": "config.txt"})],
            [tool_call("call_write", "write_file", {"path": "port.txt", "content": "4000\n"})],
        ]
        if results < len(calls):
            message = {"role": "assistant", "content": None, "tool_calls": calls[results]}
            return httpx.Response(200, json=completion(message, "tool_calls"))
        message = {"role": "assistant", "content": "port.txt holds 4000"}
        return httpx.Response(200, json=completion(message, "stop"))


def openai_agent(api: ChatAPI, workspace: Path, writes: list[str]) -> DurableAgent[str]:
    client = AsyncOpenAI(
        api_key="test-key",
        base_url="http://model.test/v1",
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(api)),
    )
    model = OpenAIChatModel("gpt-4.1", provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, system_prompt="You edit files carefully.")

    @agent.tool_plain
    def read_file(path: str) -> str:
        return (workspace / path).read_text()

    @agent.tool_plain
    def write_file(path: str, content: str) -> str:
        writes.append(path)
        (workspace / path).write_text(content)
        return f"wrote {path}"

    return DurableAgent(
        agent, tools={"read_file": "replay_safe", "write_file": ToolPolicy.file_write(workspace)}
    )


def assert_requests_clean(bodies: list[dict[str, Any]]) -> None:
    for body in bodies:
        messages = body["messages"]
        assert [m["role"] for m in messages][:2] == ["system", "user"]
        assert [m["content"] for m in messages if m["role"] == "user"] == [PROMPT]
        assert sum(m["role"] == "system" for m in messages) == 1
        answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        called = [c["id"] for m in messages for c in m.get("tool_calls") or []]
        assert sorted(called) == sorted(answered)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "config.txt").write_text("4000\n")
    return root


def test_a_turn_records_the_api_answers_and_journals_the_tools(
    store_url: str, workspace: Path
) -> None:
    api, writes = ChatAPI(), list[str]()
    durable = openai_agent(api, workspace, writes)
    with open_app(store_url, durable, workspace) as app:
        app.recover()
        app.open_session("s1")
        turn = durable.run_sync(app, "s1", PROMPT, run_id="r1")
        assert turn.output == "port.txt holds 4000"
        events = app.read_run_events("r1")
        calls = [e.function_call.id for e in events if e.function_call]
        assert calls == ["call_read", "call_write"]
        assert [op.tool_call_id for op in app.tool_journal.tool_operations("r1")] == calls
    assert writes == ["port.txt"]
    assert len(api.bodies) == 3
    assert_requests_clean(api.bodies)


def test_a_crash_inside_the_write_resumes_with_the_replayed_history(
    store_url: str, workspace: Path
) -> None:
    api, writes = ChatAPI(), list[str]()
    durable = openai_agent(api, workspace, writes)
    app = open_app(store_url, durable, workspace)
    app.recover()
    app.open_session("s1")
    failpoints.arm(BEFORE_T2, lambda point: (_ for _ in ()).throw(Killed()) if writes else None)
    try:
        with pytest.raises(Killed):
            durable.run_sync(app, "s1", PROMPT, run_id="r1")
    finally:
        failpoints.disarm(BEFORE_T2)
    restarted = openai_agent(api, workspace, writes)
    with open_app(store_url, restarted, workspace) as app:
        app.recover()
        resumed = restarted.resume_sync(app, "s1")
        assert resumed.status == "continued"
        assert resumed.output == "port.txt holds 4000"
    assert writes == ["port.txt"]  # settled from the file, not written again
    assert (workspace / "port.txt").read_text() == "4000\n"
    assert len(api.bodies) == 3  # read, write (killed), and one resumed request
    assert_requests_clean(api.bodies)
    tool_messages = [m for m in api.bodies[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_read", "call_write"]
