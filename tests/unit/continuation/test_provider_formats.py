"""Provider adapters against the SDKs' own types, offline.

A ``ChatCompletion``, a Responses ``Response`` and an Anthropic ``Message`` built with the SDKs'
models become model steps and RuntimeEvents (text, thinking or reasoning, tool calls with their
ids); a run's history becomes a request that the SDKs' request parameter types accept
unchanged; what the ledger cannot record is refused with a message naming it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from maka_es.errors import InvalidProviderOutputError
from maka_es.providers.anthropic import (
    anthropic_messages_request,
    anthropic_messages_response,
)
from maka_es.providers.formats import ModelResponse, ToolSpec
from maka_es.providers.openai_chat import openai_chat_request, openai_chat_response
from maka_es.providers.openai_responses import (
    openai_responses_request,
    openai_responses_response,
)
from maka_es.testing.builders import Events, Spine
from maka_es.tooljournal.model.tools import Tool, outcome_unknown_result
from maka_es.wire.codec import operation_id_for
from maka_es.wire.events import RuntimeEvent
from tests.unit.continuation.provider_sdk import (
    ANTHROPIC_REQUEST,
    OPENAI_CHAT_REQUEST,
    OPENAI_RESPONSES_REQUEST,
    anthropic_message,
    chat_completion,
    output_call,
    output_message,
    responses_response,
    sdk_validated,
)

SPINE = Spine("session-1", "invocation-1", "run-1", "turn-1")
EV = Events.decoded(SPINE, ts=1)
WIRE_SPINE = {
    "sessionId": "session-1",
    "invocationId": "invocation-1",
    "runId": "run-1",
    "turnId": "turn-1",
}


def call(call_id: str, name: str, args: Any) -> dict[str, Any]:
    return {"kind": "function_call", "id": call_id, "name": name, "args": args}


# --- responses become model steps and events ---------------------------------------------


def test_chat_completion_text_and_parallel_calls() -> None:
    completion = chat_completion(
        "Reading both.",
        [("call_a", "Read", '{"path": "a.json"}'), ("call_b", "Bash", '{"command":"ls"}')],
    )
    step = openai_chat_response(completion)
    assert step == ModelResponse(
        "chatcmpl-1",
        (
            {"kind": "text", "text": "Reading both."},
            call("call_a", "Read", {"path": "a.json"}),
            call("call_b", "Bash", {"command": "ls"}),
        ),
        "tool_calls",
    )
    assert [c["id"] for c in step.tool_calls] == ["call_a", "call_b"]


def test_chat_completion_reasoning_content_and_refusal() -> None:
    completion = chat_completion(
        None, finish_reason="stop", reasoning_content="think first", refusal="I can't."
    )
    assert openai_chat_response(completion).outputs == (
        {"kind": "thinking", "text": "think first"},
        {"kind": "text", "text": "I can't.", "providerOptions": {"openai": {"refusal": True}}},
    )


def test_responses_reasoning_message_and_calls() -> None:
    response = responses_response(
        [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [
                    {"type": "summary_text", "text": "Need a.json."},
                    {"type": "summary_text", "text": "Then ls."},
                ],
                "encrypted_content": "gAAAA",
            },
            output_message("Reading."),
            output_call("call_a", "Read", '{"path":"a.json"}'),
            output_call("call_b", "Bash", '{"command":"ls"}'),
        ]
    )
    step = openai_responses_response(response)
    assert step == ModelResponse(
        "resp_1",
        (
            {
                "kind": "thinking",
                "text": "Need a.json.\n\nThen ls.",
                "providerOptions": {"openai": {"itemId": "rs_1", "encryptedContent": "gAAAA"}},
            },
            {"kind": "text", "text": "Reading."},
            call("call_a", "Read", {"path": "a.json"}),
            call("call_b", "Bash", {"command": "ls"}),
        ),
        "completed",
    )


def test_responses_incomplete_names_its_reason() -> None:
    response = responses_response(
        [output_message("Trunc")],
        status="incomplete",
        incomplete_details={"reason": "max_output_tokens"},
    )
    assert openai_responses_response(response).stop_reason == "max_output_tokens"


def test_anthropic_thinking_redacted_text_and_tool_use() -> None:
    message = anthropic_message(
        [
            {"type": "thinking", "thinking": "Need a.json.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Reading.", "citations": None},
            {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"path": "a.json"}},
        ]
    )
    assert anthropic_messages_response(message) == ModelResponse(
        "msg_01",
        (
            {"kind": "thinking", "text": "Need a.json.", "signature": "sig-1"},
            {
                "kind": "thinking",
                "text": "",
                "providerOptions": {"anthropic": {"redactedData": "opaque"}},
            },
            {"kind": "text", "text": "Reading."},
            call("toolu_a", "Read", {"path": "a.json"}),
        ),
        "tool_use",
    )


def test_a_step_becomes_events_with_the_reference_ids_and_refs() -> None:
    step = openai_chat_response(chat_completion("Reading.", [("call_a", "Read", "{}")]))
    events = step.to_events(WIRE_SPINE, ts=7)
    operation_id = operation_id_for("invocation-1", "call_a")
    assert [e.to_wire() for e in events] == [
        {
            "id": "chatcmpl-1_0",
            **WIRE_SPINE,
            "ts": 7,
            "partial": False,
            "role": "model",
            "author": "agent",
            "content": {"kind": "text", "text": "Reading."},
            "refs": {"providerEventId": "chatcmpl-1"},
        },
        {
            "id": f"{operation_id}_call",
            **WIRE_SPINE,
            "ts": 7,
            "partial": False,
            "role": "model",
            "author": "agent",
            "origin": "provider",
            "modelVisibility": "visible",
            "content": call("call_a", "Read", {}),
            "refs": {"operationId": operation_id, "toolCallId": "call_a", "stepId": "chatcmpl-1"},
        },
    ]
    assert step.to_events(WIRE_SPINE, ts=7) == events  # deterministic: a retry rebuilds them


def test_a_plain_mapping_converts_like_the_sdk_object() -> None:
    completion = chat_completion("hi", [("call_a", "Read", "{}")])
    assert openai_chat_response(completion.model_dump(mode="json")) == openai_chat_response(
        completion
    )


# --- refusals name what is wrong -----------------------------------------------------------

REFUSED: dict[str, tuple[Any, str, str]] = {
    "arguments not JSON": (
        lambda: openai_chat_response(chat_completion(None, [("call_a", "Read", "{path: 1")])),
        "tool_arguments_invalid",
        "call_a",
    ),
    "arguments NaN": (
        lambda: openai_responses_response(
            responses_response([output_call("call_n", "Read", '{"n": NaN}')])
        ),
        "tool_arguments_invalid",
        "call_n",
    ),
    "two choices": (
        lambda: openai_chat_response(
            {**chat_completion("a").model_dump(mode="json"), "choices": []}
        ),
        "choices",
        "0 choices",
    ),
    "custom tool call": (
        lambda: openai_chat_response(
            chat_completion("a").model_dump(mode="json")
            | {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_c",
                                    "type": "custom",
                                    "custom": {"name": "grammar", "input": "x"},
                                }
                            ],
                        },
                    }
                ]
            }
        ),
        "tool_call_unsupported",
        "call_c",
    ),
    "hosted tool item": (
        lambda: openai_responses_response(
            responses_response(
                [
                    {
                        "type": "web_search_call",
                        "id": "ws_1",
                        "status": "completed",
                        "action": {"type": "search", "query": "x"},
                    }
                ]
            )
        ),
        "item_type",
        "web_search_call",
    ),
    "server tool block": (
        lambda: anthropic_messages_response(
            anthropic_message(
                [
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_1",
                        "name": "web_search",
                        "input": {"query": "x"},
                    }
                ]
            )
        ),
        "block_type",
        "server_tool_use",
    ),
    "response without id": (
        lambda: anthropic_messages_response({"content": []}),
        "response_id_missing",
        "no id",
    ),
    "not JSON data": (
        lambda: openai_chat_response({"id": "x", "choices": [float("nan")]}),
        "not_json",
        "not JSON",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unrecordable_responses_are_refused_with_a_message_naming_why(case: str) -> None:
    convert, reason, named = REFUSED[case]
    with pytest.raises(InvalidProviderOutputError) as caught:
        convert()
    assert caught.value.code == "provider_output_invalid"
    assert caught.value.detail["reason"] == reason
    assert named in str(caught.value)


# --- a run becomes a request the SDK types accept ----------------------------------------


class ReadArgs(BaseModel):
    path: str


TOOLS: list[ToolSpec | Tool[Any]] = [
    Tool("Read", ReadArgs, lambda args, context: {"kind": "text", "text": "x"}),
    ToolSpec("Bash", "Run a command", {"type": "object", "properties": {}}),
]


def run_history() -> list[RuntimeEvent]:
    """A run with a signed thinking, an OpenAI reasoning item, two parallel calls answered in
    the tool journal's text envelope (one an outcome-unknown error), and a final text."""
    return [
        EV.user("fix the port", event_id="user-1"),
        EV.thinking("need the config", event_id="think-1", signature="sig-1"),
        EV.event(
            event_id="reason-1",
            role="model",
            author="agent",
            content={
                "kind": "thinking",
                "text": "summary",
                "providerOptions": {"openai": {"itemId": "rs_1"}},
            },
        ),
        EV.text("Reading.", event_id="model-1"),
        EV.call("call_a", "Read", {"path": "a.json"}, event_id="c-a", with_refs=True),
        EV.call("call_b", "Bash", {"command": "ls"}, event_id="c-b", with_refs=True),
        EV.response(
            "call_a", "Read", {"kind": "text", "text": "port: 3000"}, event_id="r-a", with_refs=True
        ),
        EV.response(
            "call_b",
            "Bash",
            outcome_unknown_result("killed"),
            event_id="r-b",
            is_error=True,
            with_refs=True,
        ),
        EV.text("The port is 3000.", event_id="model-2"),
        EV.terminal("completed", event_id="terminal-1"),
    ]


def test_openai_chat_request_is_valid_and_results_are_the_tools_text() -> None:
    request = openai_chat_request(
        run_history(), model="gpt-test", system_prompt="Be brief.", tools=TOOLS
    )
    assert sdk_validated(OPENAI_CHAT_REQUEST, request) == request
    messages = request["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert [m for m in messages if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "call_a", "content": "port: 3000"},
        {"role": "tool", "tool_call_id": "call_b", "content": "outcome_unknown: killed"},
    ]
    assert request["tools"][0]["function"]["parameters"] == ReadArgs.model_json_schema()


def test_openai_responses_request_is_valid_and_carries_only_its_own_reasoning() -> None:
    request = openai_responses_request(
        run_history(), model="gpt-test", system_prompt="Be brief.", tools=TOOLS
    )
    assert sdk_validated(OPENAI_RESPONSES_REQUEST, request) == request
    assert request["instructions"] == "Be brief."
    assert [item.get("type") for item in request["input"]] == [
        "message",
        "reasoning",  # the Anthropic-signed thinking is not sent to OpenAI
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "message",
    ]
    assert request["input"][1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "summary"}],
    }
    assert request["input"][5:7] == [
        {"type": "function_call_output", "call_id": "call_a", "output": "port: 3000"},
        {"type": "function_call_output", "call_id": "call_b", "output": "outcome_unknown: killed"},
    ]


def test_anthropic_request_is_valid_and_carries_only_signed_thinking() -> None:
    request = anthropic_messages_request(
        run_history(), model="claude-test", max_tokens=1024, system_prompt="Be brief.", tools=TOOLS
    )
    assert sdk_validated(ANTHROPIC_REQUEST, request) == request
    assert request["system"] == "Be brief."
    assistant = request["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["thinking", "text", "tool_use", "tool_use"]
    assert request["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_a", "content": "port: 3000"},
        {
            "type": "tool_result",
            "tool_use_id": "call_b",
            "content": "outcome_unknown: killed",
            "is_error": True,
        },
    ]
    assert request["tools"][1] == {
        "name": "Bash",
        "description": "Run a command",
        "input_schema": {"type": "object", "properties": {}},
    }


def test_redacted_thinking_goes_back_to_anthropic_as_it_came() -> None:
    step = anthropic_messages_response(
        anthropic_message(
            [
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Done.", "citations": None},
            ],
            stop_reason="end_turn",
        )
    )
    history = [EV.user("hi", event_id="user-1"), *step.to_events(WIRE_SPINE, ts=2)]
    request = anthropic_messages_request(history, model="claude-test", max_tokens=16)
    assert sdk_validated(ANTHROPIC_REQUEST, request) == request
    assert request["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Done."},
    ]


def test_the_core_and_the_adapters_import_without_the_sdks() -> None:
    """The SDKs are an optional extra: with them made unimportable, maka_es still loads."""
    code = (
        "import sys\n"
        "sys.modules['openai'] = None\n"
        "sys.modules['anthropic'] = None\n"
        "import maka_es, maka_es.app\n"
        "import maka_es.providers.openai_chat\n"
        "import maka_es.providers.openai_responses\n"
        "import maka_es.providers.anthropic\n"
        "try:\n"
        "    import openai\n"
        "except ImportError:\n"
        "    print('blocked')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert (done.returncode, done.stdout.strip()) == (0, "blocked"), done.stderr


# --- the session history before the replay (ADR 0038) -----------------------------------------

NEXT = Spine("session-1", "invocation-2", "run-2", "turn-2")
EV2 = Events.decoded(NEXT, ts=5)


def next_turn() -> list[RuntimeEvent]:
    """Turn 2 in the middle of its loop: its prompt, a call and its result."""
    return [
        EV2.user("and the host?", event_id="user-2"),
        EV2.call("call_c", "Read", {"path": "host.json"}, event_id="c-c", with_refs=True),
        EV2.response(
            "call_c", "Read", {"kind": "text", "text": "host: x"}, event_id="r-c", with_refs=True
        ),
    ]


HISTORY_FORMATS: dict[str, tuple[Callable[..., dict[str, Any]], TypeAdapter[Any], str]] = {
    "openai_chat": (
        lambda events, **kw: openai_chat_request(events, model="gpt-test", **kw),
        OPENAI_CHAT_REQUEST,
        "messages",
    ),
    "openai_responses": (
        lambda events, **kw: openai_responses_request(events, model="gpt-test", **kw),
        OPENAI_RESPONSES_REQUEST,
        "input",
    ),
    "anthropic": (
        lambda events, **kw: anthropic_messages_request(
            events, model="claude-test", max_tokens=64, **kw
        ),
        ANTHROPIC_REQUEST,
        "messages",
    ),
}


@pytest.mark.parametrize("name", sorted(HISTORY_FORMATS))
def test_every_format_renders_the_history_first_and_the_sdk_accepts_it(name: str) -> None:
    """The earlier turn (signed thinking, an OpenAI reasoning item, parallel calls, an error
    result, the answer) goes first, exactly as it renders alone, then this turn's replay."""
    build, adapter, key = HISTORY_FORMATS[name]
    history = run_history()
    request = build(next_turn(), history=history, system_prompt="Be brief.", tools=TOOLS)
    assert sdk_validated(adapter, request) == request
    plain = build(next_turn(), history=history)[key]
    alone = build(history)[key]
    assert plain[: len(alone)] == alone
    assert plain[len(alone) :] == build(next_turn())[key]
    assert request == build([*history, *next_turn()], system_prompt="Be brief.", tools=TOOLS)


def test_a_history_ending_on_results_joins_the_next_prompt_for_anthropic() -> None:
    """A turn that completed without a final text ends on its results: Anthropic requires
    alternating roles, so the results and the next prompt are one user message."""
    history = run_history()[:8]  # up to both results, no final text
    request = anthropic_messages_request(
        next_turn()[:1], model="claude-test", max_tokens=64, history=history
    )
    assert sdk_validated(ANTHROPIC_REQUEST, request) == request
    last = request["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result", "text"]
