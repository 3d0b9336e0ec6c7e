"""Anthropic Messages, both ways: a ``Message`` to a model step, a run to a request.

Why: Claude's thinking is signed and must go back verbatim (signature included) with the tool
calls it led to, and a ``tool_use`` input is already an object
(docs/reference/continuation.md#provider-formats). Reading ``content`` in order:

* ``text`` -> text;
* ``thinking`` -> thinking with its ``signature``;
* ``redacted_thinking`` -> thinking with empty text and the opaque ``data`` in
  ``providerOptions.anthropic.redactedData`` (sent back as a ``redacted_thinking`` block);
* ``tool_use`` -> a call with its id, name and ``input``.

Any other block (a server tool's use or result) is refused: its outcome is not journaled here.
Writing: :func:`~maka_es.providers.export.to_anthropic_messages` plus ``system``,
``max_tokens`` and the tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from maka_es.providers.export import to_anthropic_messages
from maka_es.providers.formats import (
    ModelResponse,
    ProviderResponseInput,
    ToolSpec,
    as_mapping,
    call_output,
    invalid_output,
    step_id_of,
    text_output,
    thinking_output,
    tool_specs,
)
from maka_es.tooljournal.model.tools import Tool
from maka_es.wire.events import RuntimeEventInput

__all__ = ["anthropic_messages_request", "anthropic_messages_response"]


def _output(index: int, block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text_output(index, text) if isinstance(text, str) and text else None
    if kind == "thinking":
        signature = block.get("signature")
        return thinking_output(
            index,
            str(block.get("thinking") or ""),
            signature=signature if isinstance(signature, str) else None,
        )
    if kind == "redacted_thinking":
        data = block.get("data")
        if not isinstance(data, str) or not data:
            raise invalid_output(index, "redacted_thinking block has no data", "redacted_data")
        return thinking_output(index, "", provider_options={"anthropic": {"redactedData": data}})
    if kind == "tool_use":
        tool_input = block.get("input")
        if not isinstance(tool_input, dict):
            raise invalid_output(
                index, f"tool_use {block.get('id')} input is not an object", "tool_input"
            )
        return call_output(index, block.get("id"), block.get("name"), tool_input)
    raise invalid_output(index, f"content block type {kind!r} is not supported", "block_type")


def anthropic_messages_response(message: ProviderResponseInput) -> ModelResponse:
    """An Anthropic ``Message`` (the SDK object or its JSON) as one model step. An
    unsupported block raises ``InvalidProviderOutputError`` naming it."""
    data = as_mapping(message)
    step_id = step_id_of(0, data.get("id"))
    outputs: list[dict[str, Any]] = []
    for block in data.get("content") or ():
        output = _output(len(outputs), block if isinstance(block, dict) else {})
        if output is not None:
            outputs.append(output)
    stop_reason = data.get("stop_reason")
    return ModelResponse(
        step_id, tuple(outputs), stop_reason if isinstance(stop_reason, str) else "end_turn"
    )


def anthropic_messages_request(
    events: Iterable[RuntimeEventInput],
    *,
    model: str,
    max_tokens: int,
    system_prompt: str | None = None,
    tools: Sequence[ToolSpec | Tool[Any]] = (),
    history: Iterable[RuntimeEventInput] = (),
) -> dict[str, Any]:
    """Messages create parameters: ``model``, ``max_tokens``, ``messages`` (the session
    ``history`` before ``events``, ADR 0038), the system prompt as ``system`` and the tools
    (``input_schema`` = the tool's JSON Schema). Refuses an unpaired tool exchange or a
    non-object call input (``provider_export_invalid``)."""
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": to_anthropic_messages(chain(history, events)),
    }
    if system_prompt:
        request["system"] = system_prompt
    if tools:
        request["tools"] = [
            {
                "name": spec.name,
                "description": spec.description,
                "input_schema": dict(spec.parameters),
            }
            for spec in tool_specs(tools)
        ]
    return request
