"""OpenAI Chat Completions, both ways: a ``ChatCompletion`` to a model step, a run to a request.

Why: a host on the chat-completions API needs the model's answer recorded as RuntimeEvents (the
tool calls with their ids, so T1 lands on the right operation) and the run's history sent back
as ``messages`` with every call answered by its result
(docs/reference/continuation.md#provider-formats). Reading: ``choices[0].message`` gives, in
order, reasoning (``reasoning_content``, which OpenAI-compatible servers add; OpenAI itself
sends none), text, a refusal (as text, marked ``providerOptions.openai.refusal``), then the
function tool calls. Writing: :func:`~maka_es.providers.export.to_openai_chat_messages`
plus the system prompt and the tools. The SDK is never imported (``formats``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from maka_es.providers.export import ProviderMessage, to_openai_chat_messages
from maka_es.providers.formats import (
    ModelResponse,
    ProviderResponseInput,
    ToolSpec,
    as_mapping,
    call_output,
    invalid_output,
    parse_arguments,
    step_id_of,
    text_output,
    thinking_output,
    tool_specs,
)
from maka_es.tooljournal.model.tools import Tool
from maka_es.wire.events import RuntimeEventInput

__all__ = ["openai_chat_request", "openai_chat_response"]


def _message(response: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The one choice's message and finish reason (the ledger records one answer)."""
    choices = response.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        count = len(choices) if isinstance(choices, list) else 0
        raise invalid_output(0, f"chat completion has {count} choices, expected 1", "choices")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    if not isinstance(message, dict):
        raise invalid_output(0, "chat completion choice has no message", "message_missing")
    reason = choice.get("finish_reason")
    return message, reason if isinstance(reason, str) and reason else "stop"


def _tool_call(index: int, call: object) -> dict[str, Any]:
    """One function tool call; a custom (free-text) tool call has no JSON arguments to journal."""
    call = call if isinstance(call, dict) else {}
    call_id = call.get("id")
    if call.get("type", "function") != "function":
        raise invalid_output(
            index,
            f"tool call {call_id} has type {call.get('type')!r}; only function tool calls "
            "are supported",
            "tool_call_unsupported",
        )
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    args = parse_arguments(index, str(call_id), function.get("arguments"))
    return call_output(index, call_id, function.get("name"), args)


def openai_chat_response(response: ProviderResponseInput) -> ModelResponse:
    """A ``ChatCompletion`` (the SDK object or its JSON) as one model step.

    Empty texts are not outputs (the API sends ``content: ""`` or ``None`` beside calls). More
    or fewer than one choice, a non-function tool call, or arguments that are not strict JSON
    raise ``InvalidProviderOutputError`` naming the call.
    """
    data = as_mapping(response)
    step_id = step_id_of(0, data.get("id"))
    message, finish_reason = _message(data)
    outputs: list[dict[str, Any]] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        outputs.append(thinking_output(len(outputs), reasoning))
    content = message.get("content")
    if isinstance(content, str) and content:
        outputs.append(text_output(len(outputs), content))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        outputs.append(text_output(len(outputs), refusal, {"openai": {"refusal": True}}))
    for call in message.get("tool_calls") or ():
        outputs.append(_tool_call(len(outputs), call))
    return ModelResponse(step_id, tuple(outputs), finish_reason)


def openai_chat_request(
    events: Iterable[RuntimeEventInput],
    *,
    model: str,
    system_prompt: str | None = None,
    tools: Sequence[ToolSpec | Tool[Any]] = (),
    history: Iterable[RuntimeEventInput] = (),
) -> dict[str, Any]:
    """Chat-completions create parameters for a run's history: ``model``, ``messages`` (the
    system prompt first, when given, then the session ``history`` before ``events``, ADR
    0038) and the ``function`` tools. Refuses an unpaired tool exchange
    (``provider_export_invalid``)."""
    messages: list[ProviderMessage] = to_openai_chat_messages(chain(history, events))
    if system_prompt:
        messages.insert(0, {"role": "system", "content": system_prompt})
    request: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        request["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": dict(spec.parameters),
                },
            }
            for spec in tool_specs(tools)
        ]
    return request
