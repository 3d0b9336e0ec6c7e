"""The provider seam: request shape (replay context only), validated turns, scripted double."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from maka_es.errors import InvalidRuntimeEventError, MakaError
from maka_es.providers.export import (
    ProviderExportError,
    to_anthropic_messages,
    to_openai_chat_messages,
)
from maka_es.providers.protocol import (
    InvalidProviderOutputError,
    Provider,
    ProviderRequest,
    ProviderScriptExhaustedError,
    ProviderTurn,
    ScriptedProvider,
)
from maka_es.testing.builders import Events, Spine
from maka_es.wire.events import RuntimeEvent

EV = Events.decoded(Spine("session-1", "invocation-1", "run-1", "turn-1"), ts=1)


def context() -> tuple[RuntimeEvent, ...]:
    return (
        EV.user("run the tests", event_id="user-1"),
        EV.call("tool-1", "Bash", {"command": "npm test"}, event_id="call-1", with_refs=True),
        EV.response("tool-1", "Bash", {"exitCode": 0}, event_id="result-1", with_refs=True),
        EV.terminal("failed", event_id="terminal-1", error_code=None),
    )


def request(**overrides: Any) -> ProviderRequest:
    fields: dict[str, Any] = {
        "session_id": "session-1",
        "run_id": "run-2",
        "invocation_id": "invocation-2",
        "turn_id": "turn-2",
        "replay_context": context(),
        "system_prompt": "You are careful.",
        "tool_names": ("Bash", "Write"),
    }
    fields.update(overrides)
    return ProviderRequest(**fields)


# --- ProviderRequest --------------------------------------------------------------------------


def test_request_has_no_room_for_new_user_input() -> None:
    """A continuation request is the replay context plus host-rebuilt config, nothing else
    (``tools``: the specs of the offered tools, rebuilt from the catalogue, ADR 0036;
    ``history``: the session's earlier completed turns, committed, ADR 0038)."""
    assert [f.name for f in dataclasses.fields(ProviderRequest)] == [
        "session_id",
        "run_id",
        "invocation_id",
        "turn_id",
        "replay_context",
        "system_prompt",
        "tool_names",
        "tools",
        "history",
    ]


def test_request_is_frozen_and_normalises_its_inputs() -> None:
    wire_context: Any = [e.to_wire() for e in context()]
    req = request(replay_context=wire_context, tool_names=["Bash"])
    assert req.replay_context == context()
    assert all(isinstance(e, RuntimeEvent) for e in req.replay_context)
    assert req.tool_names == ("Bash",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.run_id = "other"  # type: ignore[misc]
    defaults = ProviderRequest("s", "r", "i", "t", ())
    assert (defaults.system_prompt, defaults.tool_names) == (None, ())


def test_request_refuses_an_invalid_event() -> None:
    broken: Any = [{**EV.user(text="run it").to_wire(), "partial": "no"}]
    with pytest.raises(InvalidRuntimeEventError):
        request(replay_context=broken)


def test_request_message_views_delegate_to_the_exporters() -> None:
    req = request()
    assert req.openai_messages() == to_openai_chat_messages(context())
    assert req.anthropic_messages() == to_anthropic_messages(context())
    users = [m for m in req.openai_messages() if m["role"] == "user"]
    assert users == [{"role": "user", "content": "run the tests"}]  # the original, once


def test_request_views_refuse_a_dangling_call() -> None:
    req = request(
        replay_context=(
            EV.user(text="run it"),
            EV.call("tool-1", event_id="call-1", with_refs=True),
        )
    )
    with pytest.raises(ProviderExportError):
        req.openai_messages()
    with pytest.raises(ProviderExportError):
        req.anthropic_messages()


# --- ProviderTurn -----------------------------------------------------------------------------


def test_turn_validates_and_copies_text_and_thinking_outputs() -> None:
    text: dict[str, Any] = {"kind": "text", "text": "Tests pass."}
    thought: dict[str, Any] = {"kind": "thinking", "text": "check", "signature": "sig"}
    turn = ProviderTurn(outputs=(thought, text))
    assert turn.outputs == (thought, text)
    assert turn.stop_reason == "end_turn"
    text["text"] = "mutated afterwards"
    assert turn.outputs[1] == {"kind": "text", "text": "Tests pass."}
    assert ProviderTurn().outputs == ()
    assert ProviderTurn(outputs=(), stop_reason="max_tokens").stop_reason == "max_tokens"


@pytest.mark.parametrize(
    ("output", "field"),
    [
        ({"kind": "text"}, "text"),
        ({"kind": "text", "text": 3}, "text"),
        ({"kind": "text", "text": "x", "extra": 1}, "extra"),
        ({"kind": "text", "text": "x", "displayText": None}, "displayText"),
        ({"kind": "thinking", "text": "x", "signature": 5}, "signature"),
    ],
)
def test_turn_refuses_malformed_content(output: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidProviderOutputError) as caught:
        ProviderTurn(outputs=({"kind": "text", "text": "fine"}, output))
    assert caught.value.code == "provider_output_invalid"
    assert caught.value.detail["index"] == 1
    assert caught.value.detail["field"] == field


@pytest.mark.parametrize(
    "output",
    [
        {"kind": "function_response", "id": "tool-2", "name": "Bash", "result": {}},
        {"kind": "error", "message": "boom"},
        {"text": "no kind"},
        "plain string",
    ],
)
def test_turn_refuses_anything_but_text_thinking_and_tool_calls(output: Any) -> None:
    with pytest.raises(InvalidProviderOutputError) as caught:
        ProviderTurn(outputs=(output,))
    assert caught.value.detail["index"] == 0
    assert isinstance(caught.value, MakaError)


def test_turn_accepts_tool_calls_as_exact_wire_content() -> None:
    """Issue 11 §1: a continuation is a full agent turn, so a turn may call tools."""
    call = {"kind": "function_call", "id": "tool-2", "name": "Bash", "args": {"command": "ls"}}
    turn = ProviderTurn(outputs=({"kind": "text", "text": "let me look"}, call))
    assert turn.outputs[1] == call
    assert turn.outputs[1] is not call  # a fresh copy: later mutation cannot reach the ledger
    assert turn.tool_calls == (call,)
    assert ProviderTurn(outputs=({"kind": "text", "text": "done"},)).tool_calls == ()


@pytest.mark.parametrize(
    ("outputs", "field", "words"),
    [
        (
            (
                {"kind": "function_call", "id": "c1", "name": "Bash", "args": {}},
                {"kind": "function_call", "id": "c1", "name": "Read", "args": {}},
            ),
            "id",
            "repeats tool call id 'c1' of output 0",
        ),
        (
            ({"kind": "function_call", "id": "c1", "name": "Bash", "args": {}},),
            "providerExecuted",
            "provider-executed tool call",
        ),
        (({"kind": "function_call", "id": "c1", "name": "Bash"},), "args", "function_call"),
    ],
    ids=["duplicate-id", "provider-executed", "no-args"],
)
def test_turn_refuses_bad_tool_calls_with_a_message_naming_the_problem(
    outputs: tuple[dict[str, Any], ...], field: str, words: str
) -> None:
    if field == "providerExecuted":
        outputs = ({**outputs[0], "providerExecuted": True},)
    with pytest.raises(InvalidProviderOutputError) as caught:
        ProviderTurn(outputs=outputs)
    assert caught.value.detail["field"] == field
    assert words in caught.value.args[0]


# --- ScriptedProvider -------------------------------------------------------------------------


def test_scripted_provider_answers_in_order_and_records_requests() -> None:
    first = ProviderTurn(outputs=({"kind": "text", "text": "one"},))
    second = ProviderTurn(outputs=({"kind": "text", "text": "two"},), stop_reason="stop")
    provider = ScriptedProvider([first, second])
    assert isinstance(provider, Provider)
    assert provider.remaining == 2
    req_a, req_b = request(run_id="run-a"), request(run_id="run-b")
    assert provider.complete(req_a) is first
    assert provider.complete(req_b) is second
    assert provider.requests == [req_a, req_b]
    assert provider.remaining == 0


def test_scripted_provider_replays_errors_and_still_records_the_request() -> None:
    boom = TimeoutError("provider timed out")
    after = ProviderTurn(outputs=({"kind": "text", "text": "recovered"},))
    provider = ScriptedProvider([boom, after])
    req = request()
    with pytest.raises(TimeoutError) as caught:
        provider.complete(req)
    assert caught.value is boom
    assert provider.complete(req) is after
    assert provider.requests == [req, req]


def test_scripted_provider_refuses_calls_beyond_its_script() -> None:
    def script() -> Iterator[ProviderTurn]:
        yield ProviderTurn()

    provider = ScriptedProvider(script())
    provider.complete(request())
    with pytest.raises(ProviderScriptExhaustedError) as caught:
        provider.complete(request())
    assert caught.value.code == "provider_script_exhausted"
    assert caught.value.detail == {"calls": 2, "scripted": 1}
    assert len(provider.requests) == 2
    with pytest.raises(ProviderScriptExhaustedError):
        ScriptedProvider([]).complete(request())


def test_scripted_provider_refuses_a_malformed_script() -> None:
    bad: Any = [ProviderTurn(), {"kind": "text", "text": "not a turn"}]
    with pytest.raises(TypeError, match="scripted item 1"):
        ScriptedProvider(bad)
