"""What every provider format shares: a parsed model response, its RuntimeEvents, tool specs.

Why one module under the three adapters (``openai_chat``, ``openai_responses``,
``anthropic``): a model response, whatever its wire format, is one *model step*: text,
thinking and tool calls in the order the model produced them
(docs/reference/continuation.md#provider-formats). Each adapter only reads its format; turning
that step into validated content and then into RuntimeEvents with the reference's ids and refs
is done once, here, so the three cannot drift apart.

The adapters never import a provider SDK: they read a response as a plain mapping (an SDK object
is dumped through pydantic, which maka_es depends on anyway), so the core imports without the
optional ``providers`` extra. Pure: no clock, no ids invented; the caller passes ``ts``.

A response the ledger cannot record (no choice, an unknown item type, arguments that are not
JSON) raises :class:`InvalidProviderOutputError` (``provider_output_invalid``) whose message
names the item and what is wrong, so a run that ends on it says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from maka_es.errors import InvalidProviderOutputError, MakaError
from maka_es.tooljournal.model.tools import Tool
from maka_es.wire.codec import canonical_json, operation_id_for
from maka_es.wire.events import FunctionCallContent, RuntimeEvent, TextContent, ThinkingContent
from maka_es.wire.facts import envelope

__all__ = [
    "ModelResponse",
    "ProviderResponseInput",
    "ToolSpec",
    "as_mapping",
    "call_output",
    "invalid_output",
    "model_response_events",
    "parse_arguments",
    "step_id_of",
    "text_output",
    "thinking_output",
    "tool_specs",
]

#: A provider response: the SDK's own pydantic object, or its JSON as a mapping.
ProviderResponseInput = BaseModel | Mapping[str, Any]


@dataclass(frozen=True)
class ModelResponse:
    """One model step, provider-neutral.

    ``step_id`` is the provider's id for the step (chat completion, response or message id);
    ``outputs`` are validated RuntimeEvent content wire dicts (``text``, ``thinking``,
    ``function_call``) in the model's order; ``stop_reason`` is the provider's own word.
    """

    step_id: str
    outputs: tuple[dict[str, Any], ...]
    stop_reason: str

    @property
    def tool_calls(self) -> tuple[dict[str, Any], ...]:
        """The ``function_call`` outputs, in order (the calls the host must now run)."""
        return tuple(o for o in self.outputs if o["kind"] == "function_call")

    def to_events(self, spine: Mapping[str, str], *, ts: float) -> tuple[RuntimeEvent, ...]:
        """This step as RuntimeEvents of the run ``spine`` (see :func:`model_response_events`)."""
        return model_response_events(self, spine, ts=ts)


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model is told about it: name, description and JSON Schema of its input."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    @classmethod
    def from_tool(cls, tool: Tool[Any], description: str = "") -> ToolSpec:
        """The spec of a registered tool: its input model's JSON Schema (by alias, as the
        model must spell the arguments)."""
        return cls(tool.name, description, tool.input_model.model_json_schema(by_alias=True))


def as_mapping(response: ProviderResponseInput) -> dict[str, Any]:
    """A response as JSON data: an SDK object dumped by pydantic, a mapping copied."""
    if isinstance(response, BaseModel):
        dumped: dict[str, Any] = response.model_dump(mode="json")
        return dumped
    if isinstance(response, Mapping):
        try:
            copied: dict[str, Any] = json.loads(json.dumps(dict(response), allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise invalid_output(
                0, f"provider response is not JSON data: {exc}", "not_json"
            ) from exc
        return copied
    raise InvalidProviderOutputError(
        f"provider response is a {type(response).__name__}, not a response object or mapping",
        detail={"index": 0, "reason": "not_a_response"},
    )


def invalid_output(index: int, message: str, reason: str) -> InvalidProviderOutputError:
    """A refusal of output ``index`` whose message names what is wrong."""
    return InvalidProviderOutputError(
        f"provider output {index}: {message}", detail={"index": index, "reason": reason}
    )


def _validated(index: int, model: type[BaseModel], content: dict[str, Any]) -> dict[str, Any]:
    try:
        validated = model.model_validate(content)
    except MakaError as exc:
        raise invalid_output(
            index, f"not valid {content['kind']} content: {exc.args[0]}", "invalid_content"
        ) from exc
    wire: dict[str, Any] = validated.to_wire()  # type: ignore[attr-defined]
    return wire


def text_output(
    index: int, text: str, provider_options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A model ``text`` content."""
    content: dict[str, Any] = {"kind": "text", "text": text}
    if provider_options:
        content["providerOptions"] = dict(provider_options)
    return _validated(index, TextContent, content)


def thinking_output(
    index: int,
    text: str,
    *,
    signature: str | None = None,
    provider_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A model ``thinking`` content; ``signature`` only for a provider-verifiable one."""
    content: dict[str, Any] = {"kind": "thinking", "text": text}
    if signature:
        content["signature"] = signature
    if provider_options:
        content["providerOptions"] = dict(provider_options)
    return _validated(index, ThinkingContent, content)


def call_output(index: int, call_id: object, name: object, args: Any) -> dict[str, Any]:
    """A model ``function_call`` content (id, tool name and the parsed arguments)."""
    if not isinstance(call_id, str) or not call_id:
        raise invalid_output(index, "tool call has no id", "tool_call_id_missing")
    if not isinstance(name, str) or not name:
        raise invalid_output(index, f"tool call {call_id} has no tool name", "tool_name_missing")
    content = {"kind": "function_call", "id": call_id, "name": name, "args": args}
    return _validated(index, FunctionCallContent, content)


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def parse_arguments(index: int, call_id: str, arguments: object) -> Any:
    """A call's ``arguments`` JSON text as a value; refused when it is not strict JSON (no
    ``NaN``/``Infinity``, nothing the canonical JSON of the args hash would reject)."""
    if not isinstance(arguments, str):
        raise invalid_output(
            index, f"tool call {call_id} arguments are not a JSON string", "tool_arguments_invalid"
        )
    try:
        value = json.loads(arguments, parse_constant=_refuse_constant)
        canonical_json(value)
    except (ValueError, MakaError) as exc:
        raise invalid_output(
            index,
            f"tool call {call_id} arguments are not valid JSON: {exc}",
            "tool_arguments_invalid",
        ) from exc
    return value


def model_response_events(
    response: ModelResponse, spine: Mapping[str, str], *, ts: float
) -> tuple[RuntimeEvent, ...]:
    """The step as RuntimeEvents of the run ``spine`` (docs/reference/wire.md#examples).

    Text and thinking: role ``model``, author ``agent``, ``refs.providerEventId`` = the step
    id, id ``<stepId>_<n>``. A tool call: the reference's T1-path form, id
    ``<operationId>_call``, ``origin: provider``, ``refs {operationId, toolCallId, stepId}``
    with the deterministic operation id of the call, so T1 of that call lands on the same
    operation and a retried conversion rebuilds identical events.
    """
    events: list[RuntimeEvent] = []
    for n, content in enumerate(response.outputs):
        if content["kind"] == "function_call":
            operation_id = operation_id_for(spine["invocationId"], content["id"])
            wire = envelope(spine, f"{operation_id}_call", ts, "model", "agent")
            wire |= {"origin": "provider", "modelVisibility": "visible", "content": content}
            wire["refs"] = {
                "operationId": operation_id,
                "toolCallId": content["id"],
                "stepId": response.step_id,
            }
        else:
            wire = envelope(spine, f"{response.step_id}_{n}", ts, "model", "agent")
            wire |= {"content": content, "refs": {"providerEventId": response.step_id}}
        events.append(RuntimeEvent.model_validate(wire))
    return tuple(events)


def step_id_of(index: int, value: object) -> str:
    """The provider's id of a response (a step id must be a non-empty string)."""
    if not isinstance(value, str) or not value:
        raise invalid_output(index, "response has no id", "response_id_missing")
    return value


def tool_specs(tools: Sequence[ToolSpec | Tool[Any]]) -> tuple[ToolSpec, ...]:
    """Tool specs, a registered :class:`Tool` turned into its spec (no description)."""
    return tuple(t if isinstance(t, ToolSpec) else ToolSpec.from_tool(t) for t in tools)
