"""The provider SDKs' own types, offline: response objects to convert, request types to obey.

Why a support module: the adapter tests must build the real ``ChatCompletion``, ``Response``
and ``Message`` objects (validated by the SDKs' pydantic models, no network) and must let the
SDKs' request parameter types judge what the adapters send. The request types are TypedDicts
whose ``Iterable`` fields pydantic validates lazily, so :func:`sdk_validated` walks the
validated value to the end and returns it as plain data: a test compares it with the request,
and a key the SDK type does not know (dropped by validation) or a value it coerced shows up
as a difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses import Response
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

OPENAI_CHAT_REQUEST: TypeAdapter[Any] = TypeAdapter(CompletionCreateParamsNonStreaming)
OPENAI_RESPONSES_REQUEST: TypeAdapter[Any] = TypeAdapter(ResponseCreateParamsNonStreaming)
ANTHROPIC_REQUEST: TypeAdapter[Any] = TypeAdapter(MessageCreateParamsNonStreaming)


def _plain(value: Any) -> Any:
    """Validated data with every lazy ``Iterable`` consumed (which validates its items)."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, Iterable):
        return [_plain(item) for item in value]
    return value


def sdk_validated(adapter: TypeAdapter[Any], request: Mapping[str, Any]) -> Any:
    """``request`` validated by the SDK's parameter type, as plain data."""
    return _plain(adapter.validate_python(request))


def chat_completion(
    content: str | None,
    calls: Iterable[tuple[str, str, str]] = (),
    *,
    completion_id: str = "chatcmpl-1",
    finish_reason: str = "tool_calls",
    **message: Any,
) -> ChatCompletion:
    """A ``ChatCompletion`` with one choice: ``content`` and ``(id, name, arguments)`` calls."""
    tool_calls = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
        for cid, name, arguments in calls
    ]
    body: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, **message}
    if tool_calls:
        body["tool_calls"] = tool_calls
    return ChatCompletion.model_validate(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-test",
            "choices": [
                {"index": 0, "finish_reason": finish_reason, "logprobs": None, "message": body}
            ],
        }
    )


def responses_response(
    output: list[dict[str, Any]], *, response_id: str = "resp_1", **fields: Any
) -> Response:
    """A Responses API ``Response`` with these ``output`` items."""
    return Response.model_validate(
        {
            "id": response_id,
            "object": "response",
            "created_at": 1,
            "model": "gpt-test",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "status": "completed",
            "output": output,
            **fields,
        }
    )


def output_message(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def output_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def anthropic_message(
    content: list[dict[str, Any]], *, message_id: str = "msg_01", stop_reason: str = "tool_use"
) -> Message:
    """An Anthropic ``Message`` with these content blocks."""
    return Message.model_validate(
        {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": content,
        }
    )
