"""The ready-made SDK providers, driven by the real SDK clients against a local fake API.

Why: a host passes ``openai.OpenAI()`` or ``anthropic.Anthropic()`` and never converts a format
itself (ADR 0036). Each test runs a whole ``run_turn`` (two parallel calls, then the answer) on
the real SQLite file with the SDK's own client pointed at an HTTP server on 127.0.0.1, and
asserts the request bodies the model received: the prompt once, the tools offered, and the
second call's history with one assistant turn holding both calls, each answered by its result;
and a second turn's request, which starts with the first turn as the SDK sent it (ADR 0038).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import openai
from pydantic import BaseModel

from maka_es import (
    AnthropicMessagesProvider,
    AsyncAnthropicMessagesProvider,
    AsyncOpenAIChatProvider,
    AsyncOpenAIResponsesProvider,
    HostConfig,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    RuntimeApplication,
)
from maka_es.providers.protocol import ProviderRequest
from maka_es.tooljournal.runtime import Tool, ToolContext
from tests.support.fake_model_server import fake_model_server

PROMPT = "look a and b up"


class Lookup(BaseModel):
    """Look a key up."""

    key: str


def lookup(args: Lookup, context: ToolContext) -> dict[str, Any]:
    return {"kind": "text", "text": f"{args.key}=1"}


def run_turn(tmp_path: Path, provider: Any, *prompts: str) -> str | None:
    host = HostConfig(
        backend_kind="ai-sdk",
        llm_connection_slug="main",
        model_id="m",
        permission_mode="ask",
        cwd=str(tmp_path),
    )
    tool = Tool("Lookup", Lookup, lookup, recovery_mode="replay_safe")
    with RuntimeApplication.open_sqlite(
        str(tmp_path / "runtime.sqlite"), tools=[tool], host_config=host
    ) as app:
        app.open_session("s1")
        result = app.run_turn("s1", PROMPT, provider, run_id="r1", system_prompt="be brief")
        assert result.status == "completed", result
        for n, prompt in enumerate(prompts, start=2):  # later turns (ADR 0038)
            later = app.run_turn("s1", prompt, provider, run_id=f"r{n}", system_prompt="be brief")
            assert later.status == "completed", later
        return result.answer


def chat_completion(n: int, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
    }


def chat_call(call_id: str, key: str) -> dict[str, Any]:
    arguments = json.dumps({"key": key})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "Lookup", "arguments": arguments},
    }


CHAT_ANSWERS = [
    chat_completion(
        1,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [chat_call("c1", "a"), chat_call("c2", "b")],
        },
        "tool_calls",
    ),
    chat_completion(2, {"role": "assistant", "content": "both are 1"}, "stop"),
]


def assert_chat_bodies(bodies: list[dict[str, Any]]) -> None:
    first, second = bodies
    assert first["model"] == "m"
    assert first["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": PROMPT},
    ]
    assert [t["function"]["name"] for t in first["tools"]] == ["Lookup"]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["key"]
    system, user, assistant, *results = second["messages"]
    assert (system["role"], user) == ("system", {"role": "user", "content": PROMPT})
    assert assistant["role"] == "assistant"
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert [(m["role"], m["tool_call_id"], m["content"]) for m in results] == [
        ("tool", "c1", "a=1"),
        ("tool", "c2", "b=1"),
    ]


def test_openai_chat_provider_over_the_real_client(tmp_path: Path) -> None:
    with fake_model_server(list(CHAT_ANSWERS)) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        answer = run_turn(tmp_path, OpenAIChatProvider(client, model="m"))
    assert answer == "both are 1"
    assert [path for path, _ in server.requests] == ["/v1/chat/completions"] * 2
    assert_chat_bodies(server.bodies)


def responses_call(call_id: str, key: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": "Lookup",
        "arguments": json.dumps({"key": key}),
        "status": "completed",
    }


def response(n: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def test_openai_responses_provider_over_the_real_client(tmp_path: Path) -> None:
    text = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "both are 1", "annotations": []}],
    }
    answers = [
        response(1, [responses_call("c1", "a"), responses_call("c2", "b")]),
        response(2, [text]),
    ]
    with fake_model_server(answers) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        answer = run_turn(tmp_path, OpenAIResponsesProvider(client, model="m", store=False))
    assert answer == "both are 1"
    assert [path for path, _ in server.requests] == ["/v1/responses"] * 2
    first, second = server.bodies
    assert (first["instructions"], first["store"]) == ("be brief", False)
    assert [t["name"] for t in first["tools"]] == ["Lookup"]
    user_items = [i for i in second["input"] if i.get("role") == "user"]
    assert len(user_items) == 1
    assert PROMPT in json.dumps(user_items[0])
    kinds = [(i.get("type"), i.get("call_id")) for i in second["input"] if i.get("role") != "user"]
    assert kinds == [
        ("function_call", "c1"),
        ("function_call", "c2"),
        ("function_call_output", "c1"),
        ("function_call_output", "c2"),
    ]


def anthropic_message(n: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


ANTHROPIC_ANSWERS = [
    anthropic_message(
        1,
        [
            {"type": "tool_use", "id": "c1", "name": "Lookup", "input": {"key": "a"}},
            {"type": "tool_use", "id": "c2", "name": "Lookup", "input": {"key": "b"}},
        ],
        "tool_use",
    ),
    anthropic_message(2, [{"type": "text", "text": "both are 1"}], "end_turn"),
]


def test_anthropic_messages_provider_over_the_real_client(tmp_path: Path) -> None:
    with fake_model_server(list(ANTHROPIC_ANSWERS)) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        answer = run_turn(tmp_path, AnthropicMessagesProvider(client, model="m", max_tokens=256))
    assert answer == "both are 1"
    assert [path for path, _ in server.requests] == ["/v1/messages"] * 2
    first, second = server.bodies
    assert (first["system"], first["max_tokens"]) == ("be brief", 256)
    assert [t["name"] for t in first["tools"]] == ["Lookup"]
    user, assistant, results = second["messages"]
    assert user["role"] == "user"
    assert PROMPT in json.dumps(user["content"])
    assert [b["id"] for b in assistant["content"] if b["type"] == "tool_use"] == ["c1", "c2"]
    assert results["role"] == "user"
    assert [b["tool_use_id"] for b in results["content"]] == ["c1", "c2"]


def request() -> ProviderRequest:
    user = {
        "id": "u1",
        "sessionId": "s1",
        "invocationId": "i1",
        "runId": "r1",
        "turnId": "t1",
        "ts": 1,
        "partial": False,
        "role": "user",
        "author": "user",
        "content": {"kind": "text", "text": PROMPT},
    }
    return ProviderRequest("s1", "r1", "i1", "t1", (user,))  # type: ignore[arg-type]


def test_the_async_providers_over_the_real_async_clients() -> None:
    """``complete`` is awaited on ``openai.AsyncOpenAI`` / ``anthropic.AsyncAnthropic``."""

    async def both() -> list[tuple[str, ...]]:
        with fake_model_server([CHAT_ANSWERS[1], response(2, []), ANTHROPIC_ANSWERS[1]]) as server:
            client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="t", max_retries=0)
            aclient = anthropic.AsyncAnthropic(base_url=server.url, api_key="t", max_retries=0)
            turns = [
                await AsyncOpenAIChatProvider(client, model="m").complete(request()),
                await AsyncOpenAIResponsesProvider(client, model="m").complete(request()),
                await AsyncAnthropicMessagesProvider(aclient, model="m").complete(request()),
            ]
            await client.close()
            await aclient.close()
        assert [path for path, _ in server.requests] == [
            "/v1/chat/completions",
            "/v1/responses",
            "/v1/messages",
        ]
        assert server.bodies[0]["messages"] == [{"role": "user", "content": PROMPT}]
        return [tuple(o["kind"] for o in turn.outputs) for turn in turns]

    assert asyncio.run(both()) == [("text",), (), ("text",)]


NEXT = "and c?"


def test_a_second_turn_starts_with_the_first_in_every_sdk_format(tmp_path: Path) -> None:
    """Each format's second-turn body: the first turn (prompt, both calls, both results, the
    answer) once, then the new prompt; the real clients sent them, the server saw them."""
    for name in ("chat", "responses", "anthropic"):
        (tmp_path / name).mkdir()
    chat = [*CHAT_ANSWERS, chat_completion(3, {"role": "assistant", "content": "c?"}, "stop")]
    with fake_model_server(chat) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        run_turn(tmp_path / "chat", OpenAIChatProvider(client, model="m"), NEXT)
    system, *turns = server.bodies[2]["messages"]
    assert system == {"role": "system", "content": "be brief"}
    assert turns[:4] == server.bodies[1]["messages"][1:]  # the prompt, the calls, the results
    assert turns[4:] == [
        {"role": "assistant", "content": "both are 1"},
        {"role": "user", "content": NEXT},
    ]

    text = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "both are 1", "annotations": []}],
    }
    answers = [
        response(1, [responses_call("c1", "a"), responses_call("c2", "b")]),
        response(2, [text]),
        response(3, [{**text, "id": "msg_2"}]),
    ]
    with fake_model_server(answers) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        run_turn(tmp_path / "responses", OpenAIResponsesProvider(client, model="m"), NEXT)
    items = server.bodies[2]["input"]
    assert items[:5] == server.bodies[1]["input"]
    assert [(i.get("type"), i.get("role"), i.get("content")) for i in items[5:]] == [
        ("message", "assistant", "both are 1"),
        ("message", "user", NEXT),
    ]

    claude = [*ANTHROPIC_ANSWERS, anthropic_message(3, [{"type": "text", "text": "c?"}], "end")]
    with fake_model_server(claude) as server:
        claude_client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        provider = AnthropicMessagesProvider(claude_client, model="m")
        run_turn(tmp_path / "anthropic", provider, NEXT)
    messages = server.bodies[2]["messages"]
    assert messages[:3] == server.bodies[1]["messages"]
    assert messages[3:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "both are 1"}]},
        {"role": "user", "content": [{"type": "text", "text": NEXT}]},
    ]
