"""The provider seam of every turn: what it is asked, what it answers, a scripted double.

Why a seam: a continuation must call its provider exactly once, *after* the continuation-start
fact is durable, with the validated replay context and nothing else - never a new user event,
never a second copy of the original user message (docs/reference/continuation.md#provider-history).
:class:`ProviderRequest` makes that shape the only one a provider can receive: it carries the
committed replay context (system facts included; the exporters drop what the model never
sees) plus what the host rebuilds for every call - the system prompt and the current tool
catalog - and no field for extra user input.

A continuation is a full agent turn (docs/reference/continuation.md#agent-loop): a
:class:`ProviderTurn` may carry tool calls, and the executor then runs them through the tool
journal and asks the provider again with the run's replay, so one continuation may make several
provider calls, each a :class:`ProviderRequest` of the same shape.

* :class:`ProviderRequest` / :class:`ProviderTurn` - request and answer, frozen.
* :class:`Provider` - the protocol the agent loop of a turn or a continuation depends on.
* :class:`ScriptedProvider` - deterministic double for tests and the demo.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from maka_es.errors import InvalidProviderOutputError, MakaError, ProviderScriptExhaustedError
from maka_es.providers.export import (
    ProviderMessage,
    to_anthropic_messages,
    to_openai_chat_messages,
)
from maka_es.providers.formats import ToolSpec
from maka_es.wire.events import (
    FunctionCallContent,
    RuntimeEvent,
    RuntimeEventInput,
    TextContent,
    ThinkingContent,
    decode_events,
)

__all__ = [
    "InvalidProviderOutputError",
    "Provider",
    "ProviderRequest",
    "ProviderScriptExhaustedError",
    "ProviderTurn",
    "ScriptedProvider",
]


@dataclass(frozen=True)
class ProviderRequest:
    """One provider call of run ``run_id``: the replay context plus host-rebuilt config.

    ``replay_context`` is the continuation's committed context in ledger order (mappings are
    decoded to ``RuntimeEvent``s; an invalid one raises ``InvalidRuntimeEventError``). It is
    passed whole - terminal, start and other system facts included - so a provider can audit
    what it was given; :meth:`openai_messages` / :meth:`anthropic_messages` are the
    model-facing views. ``system_prompt`` and ``tool_names`` are rebuilt by the host for this
    call, never replayed from the ledger; ``tools`` are the specs of those tools (name and
    JSON Schema, filled by the agent loop from the tool catalogue) for a provider to offer.

    ``history`` is the session's conversation before this turn (ADR 0038,
    ``continuation.session_history``): the earlier completed turns, model-visible events
    only, the same for a turn and for every continuation or fork of it. It is a separate
    prefix, never part of the replay context (whose items and digests it leaves alone), and
    every format renders it first: :attr:`conversation` is what a provider sends.
    """

    session_id: str
    run_id: str
    invocation_id: str
    turn_id: str
    replay_context: tuple[RuntimeEvent, ...]
    system_prompt: str | None = None
    tool_names: tuple[str, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    history: tuple[RuntimeEvent, ...] = ()

    def __post_init__(self) -> None:
        context: Iterable[RuntimeEventInput] = self.replay_context
        object.__setattr__(self, "replay_context", decode_events(context))
        earlier: Iterable[RuntimeEventInput] = self.history
        object.__setattr__(self, "history", decode_events(earlier))
        object.__setattr__(self, "tool_names", tuple(self.tool_names))
        object.__setattr__(self, "tools", tuple(self.tools))

    @property
    def conversation(self) -> tuple[RuntimeEvent, ...]:
        """What the model is shown: the session history, then the replay context."""
        return self.history + self.replay_context

    def openai_messages(self) -> list[ProviderMessage]:
        """The conversation as OpenAI chat-completions messages (system prompt not included:
        a host prepends ``{"role": "system", ...}`` itself)."""
        return to_openai_chat_messages(self.conversation)

    def anthropic_messages(self) -> list[ProviderMessage]:
        """The conversation as Anthropic Messages API messages (the system prompt is the
        request's separate ``system`` parameter)."""
        return to_anthropic_messages(self.conversation)


#: The content models a provider output may have, by ``kind``.
_OUTPUT_MODELS: dict[object, type[TextContent | ThinkingContent | FunctionCallContent]] = {
    "text": TextContent,
    "thinking": ThinkingContent,
    "function_call": FunctionCallContent,
}


def _validated_output(index: int, output: object) -> dict[str, Any]:
    """The exact wire dict of one model output, or :class:`InvalidProviderOutputError` whose
    message names what was wrong (it becomes the run's ``failureMessage``)."""
    if not isinstance(output, Mapping):
        raise InvalidProviderOutputError(
            f"provider output {index} is not a content mapping", detail={"index": index}
        )
    kind = output.get("kind")
    model = _OUTPUT_MODELS.get(kind)
    if model is None:
        raise InvalidProviderOutputError(
            f"provider output {index} has kind {kind!r}; only 'text', 'thinking' and "
            "'function_call' are accepted",
            detail={"index": index, "kind": kind},
        )
    try:
        wire = model.model_validate(dict(output)).to_wire()
    except MakaError as exc:
        raise InvalidProviderOutputError(
            f"provider output {index} is not valid {kind} content: {exc.args[0]}",
            detail={"index": index, **exc.detail},
        ) from exc
    if kind == "function_call" and wire.get("providerExecuted") is True:
        # its result would come from the provider, not from a tool this runtime journals
        raise InvalidProviderOutputError(
            f"provider output {index} is a provider-executed tool call, which a continuation "
            "does not run",
            detail={"index": index, "field": "providerExecuted"},
        )
    return wire


def _refuse_duplicate_calls(outputs: tuple[dict[str, Any], ...]) -> None:
    """Two calls of one turn with the same id would be one operation (same operation id)."""
    seen: dict[str, int] = {}
    for index, output in enumerate(outputs):
        if output["kind"] != "function_call":
            continue
        call_id = output["id"]
        if call_id in seen:
            raise InvalidProviderOutputError(
                f"provider output {index} repeats tool call id {call_id!r} of output "
                f"{seen[call_id]}",
                detail={"index": index, "field": "id", "toolCallId": call_id},
            )
        seen[call_id] = index


@dataclass(frozen=True)
class ProviderTurn:
    """What one provider call produced.

    ``outputs`` are RuntimeEvent ``content`` dicts of kind ``text``, ``thinking`` or
    ``function_call`` (wire keys), validated with the content models on construction and stored
    as fresh exact wire dicts, so a caller mutating its own dicts later cannot change what gets
    committed. Tool call ids are unique within a turn, and a provider-executed call is refused.
    A turn without a tool call ends the continuation's loop; a turn with calls has them run
    through the tool journal (docs/reference/continuation.md#agent-loop). ``stop_reason`` is
    the provider's own word for why it stopped (``end_turn`` by default); it is informational.
    """

    outputs: tuple[dict[str, Any], ...] = ()
    stop_reason: str = "end_turn"

    def __post_init__(self) -> None:
        raw: Iterable[object] = self.outputs
        validated = tuple(_validated_output(n, output) for n, output in enumerate(raw))
        _refuse_duplicate_calls(validated)
        object.__setattr__(self, "outputs", validated)

    @property
    def tool_calls(self) -> tuple[dict[str, Any], ...]:
        """The turn's ``function_call`` outputs, in order."""
        return tuple(output for output in self.outputs if output["kind"] == "function_call")


@runtime_checkable
class Provider(Protocol):
    """A model provider: one request in, one turn out (or an exception, which the caller
    commits as the run's failure). A continuation calls it once per step of its loop."""

    def complete(self, request: ProviderRequest) -> ProviderTurn: ...


class ScriptedProvider:
    """Deterministic provider: answers with (or raises) the scripted items in order.

    Every request is appended to :attr:`requests` *before* the script is consulted, so a test
    can assert what the provider was asked even when the call failed. A call beyond the script
    raises :class:`ProviderScriptExhaustedError`: a caller that asks more often than expected
    must fail loudly, not repeat the last answer.
    """

    def __init__(self, turns: Iterable[ProviderTurn | Exception]) -> None:
        script: deque[ProviderTurn | Exception] = deque(turns)
        for n, item in enumerate(script):
            if not isinstance(item, ProviderTurn | Exception):
                raise TypeError(f"scripted item {n} is neither a ProviderTurn nor an exception")
        self._script = script
        self._scripted = len(script)
        self.requests: list[ProviderRequest] = []

    @property
    def remaining(self) -> int:
        """How many scripted items have not been used yet."""
        return len(self._script)

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        self.requests.append(request)
        if not self._script:
            raise ProviderScriptExhaustedError(
                f"scripted provider called {len(self.requests)} times, "
                f"but only {self._scripted} answers were scripted",
                detail={"calls": len(self.requests), "scripted": self._scripted},
            )
        item = self._script.popleft()
        if isinstance(item, Exception):
            raise item
        return item
