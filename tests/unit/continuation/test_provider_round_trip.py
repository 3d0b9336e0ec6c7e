"""Round trip through each provider format: events -> request -> echoed response -> events.

For any run of user texts, model steps (thinking of either provider, a text, parallel calls)
and their results (the tool journal's text envelope, bare strings or JSON, errors too): the
request is accepted unchanged by the SDK's request type; a response that echoes each of the
request's assistant steps, built with the SDK's own response type and converted back, yields
calls with the same ids, names and arguments; and the rebuilt run (echoed steps, original
results) exports to the very same request, so results travel unchanged as well.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

from maka_es.providers.anthropic import (
    anthropic_messages_request,
    anthropic_messages_response,
)
from maka_es.providers.formats import ModelResponse
from maka_es.providers.openai_chat import openai_chat_request, openai_chat_response
from maka_es.providers.openai_responses import (
    openai_responses_request,
    openai_responses_response,
)
from maka_es.testing.builders import Events, Spine
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
WIRE_SPINE = {"sessionId": "session-1", "invocationId": "invocation-1"} | {
    "runId": "run-1",
    "turnId": "turn-1",
}

# --- the generated run ----------------------------------------------------------------------

TEXT = st.text(min_size=1, max_size=12)
JSON_LEAVES = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | TEXT
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
ARGS = st.dictionaries(st.sampled_from(["path", "command", "n", "content"]), JSON_VALUES)
RESULTS = JSON_VALUES | st.builds(lambda text: {"kind": "text", "text": text}, st.text())


def thinking(event_id: str, draw: st.DrawFn) -> RuntimeEvent | None:
    """No thinking, Claude's signed thinking, or an OpenAI reasoning item."""
    kind = draw(st.sampled_from(["none", "anthropic", "openai"]))
    if kind == "none":
        return None
    content: dict[str, Any] = {"kind": "thinking", "text": draw(st.text(max_size=12))}
    if kind == "anthropic":
        content["signature"] = draw(TEXT)
    else:
        content["providerOptions"] = {"openai": {"itemId": f"rs_{event_id}"}}
    return EV.event(event_id=event_id, role="model", author="agent", content=content)


@st.composite
def runs(draw: st.DrawFn) -> list[RuntimeEvent]:
    """A user text, then steps; a step ends with its results (any order) or a user text."""
    events = [EV.user(draw(TEXT), event_id="user-0")]
    for step in range(draw(st.integers(1, 4))):
        think = thinking(f"think-{step}", draw)
        if think is not None:
            events.append(think)
        names = draw(st.lists(st.sampled_from(["Read", "Write", "Bash"]), max_size=3))
        if not names or draw(st.booleans()):  # every step shows the model something
            events.append(EV.text(draw(TEXT), event_id=f"text-{step}"))
        ids = [f"call_{step}_{n}" for n in range(len(names))]
        for call_id, name in zip(ids, names, strict=True):
            events.append(EV.call(call_id, name, draw(ARGS), event_id=f"c-{call_id}"))
        for n in draw(st.permutations(range(len(ids)))):
            is_error = draw(st.none() | st.booleans())
            events.append(
                EV.response(
                    ids[n], names[n], draw(RESULTS), event_id=f"r-{ids[n]}", is_error=is_error
                )
            )
        if not ids:
            events.append(EV.user(draw(TEXT), event_id=f"user-{step + 1}"))
    events.append(EV.terminal("completed", event_id="terminal-1"))
    return events


def segments(events: list[RuntimeEvent]) -> list[list[RuntimeEvent]]:
    """Consecutive model events form one step; every other event is a segment of its own."""
    out: list[list[RuntimeEvent]] = []
    for event in events:
        if event.role == "model" and out and out[-1][0].role == "model":
            out[-1].append(event)
        else:
            out.append([event])
    return out


def calls(events: list[RuntimeEvent]) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, c.args) for e in events if (c := e.function_call) is not None]


# --- one format: request, its assistant steps, the echo of a step -------------------------


@dataclass(frozen=True)
class Format:
    request: Callable[[list[RuntimeEvent]], dict[str, Any]]
    validator: TypeAdapter[Any]
    steps: Callable[[dict[str, Any]], list[Any]]
    echo: Callable[[Any, str], BaseModel]
    parse: Callable[[BaseModel], ModelResponse]


def chat_echo(message: dict[str, Any], step_id: str) -> BaseModel:
    echoed = [
        (c["id"], c["function"]["name"], c["function"]["arguments"])
        for c in message.get("tool_calls", [])
    ]
    return chat_completion(message["content"], echoed, completion_id=step_id)


def responses_steps(request: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Runs of model items (reasoning, calls, assistant messages) in the input."""
    steps: list[list[dict[str, Any]]] = []
    previous_model = False
    for item in request["input"]:
        model = item["type"] in ("reasoning", "function_call") or item.get("role") == "assistant"
        if model and previous_model:
            steps[-1].append(item)
        elif model:
            steps.append([item])
        previous_model = model
    return steps


def responses_echo(items: list[dict[str, Any]], step_id: str) -> BaseModel:
    output: list[dict[str, Any]] = []
    for n, item in enumerate(items):
        if item["type"] == "function_call":
            output.append(output_call(item["call_id"], item["name"], item["arguments"]))
        elif item["type"] == "message":
            output.append(output_message(item["content"], f"msg_{step_id}_{n}"))
        else:
            output.append(item)
    return responses_response(output, response_id=step_id)


def anthropic_echo(message: dict[str, Any], step_id: str) -> BaseModel:
    blocks = [b | {"citations": None} if b["type"] == "text" else b for b in message["content"]]
    return anthropic_message(blocks, message_id=step_id)


def assistant_messages(key: str) -> Callable[[dict[str, Any]], list[Any]]:
    return lambda request: [m for m in request[key] if m["role"] == "assistant"]


FORMATS = {
    "openai_chat": Format(
        lambda events: openai_chat_request(events, model="gpt-test"),
        OPENAI_CHAT_REQUEST,
        assistant_messages("messages"),
        chat_echo,
        openai_chat_response,
    ),
    "openai_responses": Format(
        lambda events: openai_responses_request(events, model="gpt-test"),
        OPENAI_RESPONSES_REQUEST,
        responses_steps,
        responses_echo,
        openai_responses_response,
    ),
    "anthropic": Format(
        lambda events: anthropic_messages_request(events, model="claude-test", max_tokens=64),
        ANTHROPIC_REQUEST,
        assistant_messages("messages"),
        anthropic_echo,
        anthropic_messages_response,
    ),
}


def round_trip(fmt: Format, events: list[RuntimeEvent]) -> None:
    request = fmt.request(events)
    assert sdk_validated(fmt.validator, request) == request
    steps = iter(fmt.steps(request))
    rebuilt: list[RuntimeEvent] = []
    for n, segment in enumerate(segments(events)):
        if segment[0].role != "model":
            rebuilt.extend(segment)
            continue
        step = fmt.parse(fmt.echo(next(steps), f"step-{n}"))
        echoed = list(step.to_events(WIRE_SPINE, ts=2))
        assert calls(echoed) == calls(segment)
        rebuilt.extend(echoed)
    assert next(steps, None) is None  # one assistant step per model step, no more
    assert calls(rebuilt) == calls(events)
    assert fmt.request(rebuilt) == request  # the results, paired, are sent unchanged


@given(runs())
def test_openai_chat_round_trip(events: list[RuntimeEvent]) -> None:
    round_trip(FORMATS["openai_chat"], events)


@given(runs())
def test_openai_responses_round_trip(events: list[RuntimeEvent]) -> None:
    round_trip(FORMATS["openai_responses"], events)


@given(runs())
def test_anthropic_round_trip(events: list[RuntimeEvent]) -> None:
    round_trip(FORMATS["anthropic"], events)
