"""The OpenAI Responses API, both ways: a ``Response`` to a model step, a run to a request.

Why: the Responses API carries reasoning as items of its own that must travel back with the
calls they led to, and a call's id is ``call_id``, not the item ``id``
(docs/reference/continuation.md#provider-formats). Reading ``output`` in order:

* ``reasoning`` -> thinking: its summary texts joined by a blank line, the item id (and the
  ``encrypted_content``, for stateless requests) in ``providerOptions.openai``. The encrypted
  content is not a signature: Anthropic must never be sent it;
* ``message`` -> one text per ``output_text`` part (a ``refusal`` part as text marked
  ``providerOptions.openai.refusal``);
* ``function_call`` -> a call with ``call_id`` and the parsed ``arguments``.

Any other item (a hosted tool's call, a computer call) is refused: its outcome is not journaled
here. Writing: user and assistant texts as messages, calls as ``function_call`` items, results
as ``function_call_output`` with the tool's text, and thinking as a ``reasoning`` item only when
it came from this API (it has an item id; the API refuses a reasoning item it did not issue).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from maka_es.providers.export import (
    ExchangeTurn,
    exchange_turns,
    tool_result_text,
)
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
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEventInput

__all__ = ["openai_responses_input", "openai_responses_request", "openai_responses_response"]

_REFUSAL = {"openai": {"refusal": True}}


def _reasoning(index: int, item: dict[str, Any]) -> dict[str, Any]:
    item_id = item.get("id")
    if not isinstance(item_id, str) or not item_id:
        raise invalid_output(index, "reasoning item has no id", "reasoning_id_missing")
    summary = [part.get("text") for part in item.get("summary") or () if isinstance(part, dict)]
    texts = [text for text in summary if isinstance(text, str)]
    options: dict[str, Any] = {"itemId": item_id}
    encrypted = item.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        options["encryptedContent"] = encrypted
    return thinking_output(index, "\n\n".join(texts), provider_options={"openai": options})


def _message_texts(start: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    outputs: list[dict[str, Any]] = []
    for part in item.get("content") or ():
        part = part if isinstance(part, dict) else {}
        index = start + len(outputs)
        if part.get("type") == "output_text" and part.get("text"):
            outputs.append(text_output(index, str(part["text"])))
        elif part.get("type") == "refusal" and part.get("refusal"):
            outputs.append(text_output(index, str(part["refusal"]), _REFUSAL))
        elif part.get("type") not in ("output_text", "refusal"):
            raise invalid_output(
                index, f"message part type {part.get('type')!r} is not supported", "part_type"
            )
    return outputs


def _stop_reason(response: dict[str, Any]) -> str:
    """``completed``, or the ``incomplete_details.reason`` (``max_output_tokens``, ...)."""
    details = response.get("incomplete_details")
    if isinstance(details, dict) and isinstance(details.get("reason"), str):
        return str(details["reason"])
    status = response.get("status")
    return status if isinstance(status, str) and status else "completed"


def openai_responses_response(response: ProviderResponseInput) -> ModelResponse:
    """A Responses API ``Response`` (the SDK object or its JSON) as one model step.

    An unsupported output item, a reasoning item without id, or call arguments that are not
    strict JSON raise ``InvalidProviderOutputError`` naming the item.
    """
    data = as_mapping(response)
    step_id = step_id_of(0, data.get("id"))
    outputs: list[dict[str, Any]] = []
    for item in data.get("output") or ():
        item = item if isinstance(item, dict) else {}
        kind = item.get("type")
        if kind == "reasoning":
            outputs.append(_reasoning(len(outputs), item))
        elif kind == "message":
            outputs.extend(_message_texts(len(outputs), item))
        elif kind == "function_call":
            call_id = item.get("call_id")
            args = parse_arguments(len(outputs), str(call_id), item.get("arguments"))
            outputs.append(call_output(len(outputs), call_id, item.get("name"), args))
        else:
            raise invalid_output(
                len(outputs), f"output item type {kind!r} is not supported", "item_type"
            )
    return ModelResponse(step_id, tuple(outputs), _stop_reason(data))


def _reasoning_item(item: dict[str, Any]) -> dict[str, Any] | None:
    openai = (item.get("providerOptions") or {}).get("openai")
    if not isinstance(openai, dict) or not isinstance(openai.get("itemId"), str):
        return None  # not issued by this API: it would be refused
    summary = [{"type": "summary_text", "text": item["text"]}] if item["text"] else []
    reasoning: dict[str, Any] = {"type": "reasoning", "id": openai["itemId"], "summary": summary}
    if isinstance(openai.get("encryptedContent"), str):
        reasoning["encrypted_content"] = openai["encryptedContent"]
    return reasoning


def _input_item(turn: ExchangeTurn, item: dict[str, Any]) -> dict[str, Any] | None:
    kind = item["kind"]
    if kind == "text":
        role = "user" if turn.role == "user" else "assistant"
        return {"type": "message", "role": role, "content": item["content"]}
    if kind == "thinking":
        return _reasoning_item(item)
    if kind == "tool_call":
        return {
            "type": "function_call",
            "call_id": item["toolCallId"],
            "name": item["toolName"],
            "arguments": canonical_json(item["input"]),
        }
    return {
        "type": "function_call_output",
        "call_id": item["toolCallId"],
        "output": tool_result_text(item["output"]),
    }


def openai_responses_input(events: Iterable[RuntimeEventInput]) -> list[dict[str, Any]]:
    """Responses API ``input`` items for a run's history, in ledger order (module doc). A
    result has no error flag in this API: an error result is its text alone. Refuses an
    unpaired tool exchange (``provider_export_invalid``)."""
    items: list[dict[str, Any]] = []
    for turn in exchange_turns(events):
        for item in turn.items:
            converted = _input_item(turn, item)
            if converted is not None:
                items.append(converted)
    return items


def openai_responses_request(
    events: Iterable[RuntimeEventInput],
    *,
    model: str,
    system_prompt: str | None = None,
    tools: Sequence[ToolSpec | Tool[Any]] = (),
    history: Iterable[RuntimeEventInput] = (),
) -> dict[str, Any]:
    """Responses create parameters: ``model``, ``input`` (the session ``history`` before
    ``events``, ADR 0038), the system prompt as ``instructions`` and the ``function`` tools
    (not strict: the schema is the tool's own)."""
    request: dict[str, Any] = {
        "model": model,
        "input": openai_responses_input(chain(history, events)),
    }
    if system_prompt:
        request["instructions"] = system_prompt
    if tools:
        request["tools"] = [
            {
                "type": "function",
                "name": spec.name,
                "description": spec.description,
                "parameters": dict(spec.parameters),
                "strict": False,
            }
            for spec in tool_specs(tools)
        ]
    return request
