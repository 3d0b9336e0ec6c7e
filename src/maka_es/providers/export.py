"""Provider message export: a replay context as OpenAI / Anthropic request messages.

Why this exists: a continuation hands its provider the *validated replay context*
(docs/reference/continuation.md#provider-history), a list of committed ``RuntimeEvent``s that mixes
model history (user text, model text and thinking, tool calls and results) with system facts the
model never sees (terminal, continuation-start, permission, dispatch and recovery facts). A provider
adapter needs that history in its own wire shape, and it must never send a tool call without its
result (or a result without its call): both APIs reject such a request, and - worse - a model shown
an unanswered call may act on it again. The exporters here are pure (no network, no clock) and
**refuse** rather than repair: an unpaired or interleaved tool exchange raises
:class:`ProviderExportError` (code ``provider_export_invalid``), so no exporter can ever emit a
dangling tool call.

Per-event projection is :func:`maka_es.providers.replay_items.provider_replay_item` (projection
version 1), the same function whose items the continuation's ``providerReplayDigest`` binds. That is
deliberate: the messages are a function of exactly the digest-bound items, so user text carries the
reference's folding (quotes, attachments, the steering envelope) and a tool result is the stored
``result`` (``providerOutput`` for provider-executed tools), sent as the tool's text
(:func:`tool_result_text`). It also fixes what is *not* model
history: partial, hidden, content-less, empty-text, error-content and wrong-role events, and
system-role text (the host rebuilds the system prompt; the reference projection excludes system text
by default).

Shape rules shared by both formats (the "exchange" rules):

* an **assistant step** is a maximal run of consecutive model items (text, thinking, calls);
  it becomes one assistant message, so a model text written just before (or after) its calls
  travels with them;
* every call of a step must be answered, with the same tool name, by exactly one result before
  the model speaks again; results may arrive in any order;
* a user text that lands while a step's results are still outstanding (a steering message sent
  while a tool ran) is emitted right after the step's last result: both APIs require results
  to follow their calls immediately, and the steering envelope already tells the model the
  message arrived mid-work. Nothing else is ever reordered.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from maka_es.errors import ExportReason, ProviderExportError
from maka_es.providers.replay_items import provider_replay_item
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEventInput, decode_events

__all__ = [
    "ExportReason",
    "ProviderExportError",
    "ExchangeTurn",
    "ProviderMessage",
    "exchange_turns",
    "to_anthropic_messages",
    "to_openai_chat_messages",
    "tool_result_text",
]

#: One provider request message (a plain JSON-compatible dict, ready for the provider SDK).
ProviderMessage = dict[str, Any]

# --- format-neutral exchange pass -------------------------------------------------------------

Item = dict[str, Any]
TurnRole = Literal["user", "assistant", "tool"]


@dataclass
class ExchangeTurn:
    """One provider-neutral turn: a user text, an assistant step, or a step's tool results."""

    role: TurnRole
    items: list[Item] = field(default_factory=list)


def _items(events: Iterable[RuntimeEventInput]) -> list[Item]:
    items: list[Item] = []
    for event in decode_events(events):
        item = provider_replay_item(event.to_wire())
        if item is not None:
            items.append(item)
    return items


class _Exchange:
    """The turns grouped so far and the state of the step whose tool exchange is open."""

    def __init__(self) -> None:
        self.turns: list[ExchangeTurn] = []
        self.step: ExchangeTurn | None = None  # the open assistant step (accepts model items)
        self.results: ExchangeTurn | None = None  # the tool turn of the step's arriving results
        self.pending: dict[str, tuple[str, str]] = {}  # call id -> (tool name, call event id)
        self.seen_calls: set[str] = set()
        self.deferred: list[ExchangeTurn] = []  # user texts that came while results were due

    def user_text(self, item: Item) -> None:
        """A user text closes the step, or waits until the step's results are all in."""
        turn = ExchangeTurn("user", [item])
        if self.pending:
            self.deferred.append(turn)
        else:
            self.turns.append(turn)
            self.step = None

    def tool_result(self, item: Item) -> None:
        """A result answers one open call with the same tool name; the last one releases the
        deferred user texts."""
        call_id = str(item["toolCallId"])
        if call_id not in self.pending:
            again = " again" if call_id in self.seen_calls else ""
            raise _export_error(
                f"tool result {call_id} (event {item['eventId']}) answers no open call{again}",
                "unmatched_tool_result",
                item,
            )
        name, _ = self.pending[call_id]
        if item["toolName"] != name:
            raise _export_error(
                f"tool result {call_id} names {item['toolName']!r}, its call {name!r}",
                "tool_id_mismatch",
                item,
            )
        del self.pending[call_id]
        if self.results is None:
            self.results = ExchangeTurn("tool")
            self.turns.append(self.results)
            self.step = None
        self.results.items.append(item)
        if not self.pending:
            self.results = None
            self.turns.extend(self.deferred)
            self.deferred.clear()

    def model_item(self, item: Item) -> None:
        """Assistant text, thinking or a tool call joins the open step (or opens one)."""
        if self.results is not None:  # the step's results started arriving but are incomplete
            raise self._interleaved(item)
        if item["kind"] == "tool_call":
            call_id = str(item["toolCallId"])
            if call_id in self.seen_calls:
                raise _export_error(
                    f"tool call id {call_id} is used twice (event {item['eventId']})",
                    "duplicate_tool_call",
                    item,
                )
            self.seen_calls.add(call_id)
            self.pending[call_id] = (str(item["toolName"]), str(item["eventId"]))
        if self.step is None:
            self.step = ExchangeTurn("assistant")
            self.turns.append(self.step)
        self.step.items.append(item)

    def finish(self) -> list[ExchangeTurn]:
        """The turns, once no call is left without its result."""
        if self.pending:
            call_id, (name, call_event) = next(iter(self.pending.items()))
            raise ProviderExportError(
                f"tool call {call_id} ({name}, event {call_event}) has no result",
                reason="unmatched_tool_call",
                tool_call_id=call_id,
                event_id=call_event,
            )
        return self.turns

    def _interleaved(self, item: Item) -> ProviderExportError:
        call_id, (name, call_event) = next(iter(self.pending.items()))
        return ProviderExportError(
            f"tool call {call_id} ({name}, event {call_event}) has no result before "
            f"event {item['eventId']}",
            reason="tool_exchange_interleaved",
            tool_call_id=call_id,
            event_id=str(item["eventId"]),
        )


def _export_error(message: str, reason: ExportReason, item: Item) -> ProviderExportError:
    """A refusal naming the tool call and the event of ``item``."""
    return ProviderExportError(
        message,
        reason=reason,
        tool_call_id=str(item["toolCallId"]),
        event_id=str(item["eventId"]),
    )


def exchange_turns(events: Iterable[RuntimeEventInput]) -> list[ExchangeTurn]:
    """Group the model-visible items into turns, enforcing the exchange rules (module doc);
    every provider format (chat completions, Responses, Anthropic Messages) starts here."""
    exchange = _Exchange()
    for item in _items(events):
        if item["kind"] == "text" and item["role"] == "user":
            exchange.user_text(item)
        elif item["kind"] == "tool_result":
            exchange.tool_result(item)
        else:
            exchange.model_item(item)
    return exchange.finish()


def tool_result_text(output: Any) -> str:
    """Tool-result content as the model reads it: the tool's text.

    A tool's result is stored in its ``{"kind": "text", "text": ...}`` envelope (extra keys such
    as ``uncertainOutcome`` included, docs/reference/tool-journal.md#t2); the model is sent the
    envelope's ``text``, not the envelope's JSON. A bare string goes as is; any other value
    (a structured result) as canonical JSON. Only the rendering changes: the replay digest is
    computed over the stored items, not over this text.
    """
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and output.get("kind") == "text":
        text = output.get("text")
        if isinstance(text, str):
            return text
    return canonical_json(output)


# --- OpenAI chat completions ------------------------------------------------------------------


def to_openai_chat_messages(events: Iterable[RuntimeEventInput]) -> list[ProviderMessage]:
    """OpenAI chat-completions ``messages`` for a replay context (no system message).

    * user text -> ``{"role": "user", "content": text}``;
    * an assistant step -> one ``{"role": "assistant", "content": ...}``: its text (a string;
      ``None`` when the step has only calls; a list of text parts when it has several texts),
      plus ``tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}]``
      with ``arguments`` the canonical JSON of the call's args;
    * each result -> ``{"role": "tool", "tool_call_id", "content"}`` (the tool's text,
      :func:`tool_result_text`; chat completions has no error flag, so an error result is its
      content alone);
    * thinking is dropped: chat completions accepts no reasoning input, signed or not. A step
      that held only thinking yields no message.

    Raises :class:`ProviderExportError` for an unpaired or interleaved tool exchange.
    """
    messages: list[ProviderMessage] = []
    for turn in exchange_turns(events):
        if turn.role == "user":
            messages.append({"role": "user", "content": turn.items[0]["content"]})
        elif turn.role == "tool":
            messages.extend(
                {
                    "role": "tool",
                    "tool_call_id": item["toolCallId"],
                    "content": tool_result_text(item["output"]),
                }
                for item in turn.items
            )
        else:
            texts = [item["content"] for item in turn.items if item["kind"] == "text"]
            calls = [
                {
                    "id": item["toolCallId"],
                    "type": "function",
                    "function": {
                        "name": item["toolName"],
                        "arguments": canonical_json(item["input"]),
                    },
                }
                for item in turn.items
                if item["kind"] == "tool_call"
            ]
            if not texts and not calls:
                continue
            content: Any
            if not texts:
                content = None
            elif len(texts) == 1:
                content = texts[0]
            else:
                content = [{"type": "text", "text": text} for text in texts]
            message: ProviderMessage = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
    return messages


# --- Anthropic Messages -----------------------------------------------------------------------


def _anthropic_block(item: Item) -> dict[str, Any] | None:
    kind = item["kind"]
    if kind == "text":
        return {"type": "text", "text": item["content"]}
    if kind == "thinking":
        options = item.get("providerOptions") or {}
        anthropic = options.get("anthropic")
        redacted = anthropic.get("redactedData") if isinstance(anthropic, dict) else None
        if isinstance(redacted, str) and redacted:
            # Thinking the API redacted: its opaque data goes back as it came.
            return {"type": "redacted_thinking", "data": redacted}
        signature = item.get("signature")
        if not signature:
            # The API rejects a thinking block without its signature (it cannot verify the
            # reasoning is the model's own); the reference skips unsigned thinking too.
            return None
        return {"type": "thinking", "thinking": item["text"], "signature": signature}
    if kind == "tool_call":
        tool_input = item["input"]
        if not isinstance(tool_input, dict):
            raise ProviderExportError(
                f"tool call {item['toolCallId']} (event {item['eventId']}) has non-object "
                "args; an Anthropic tool_use input must be an object",
                reason="tool_input_not_object",
                tool_call_id=str(item["toolCallId"]),
                event_id=str(item["eventId"]),
            )
        return {
            "type": "tool_use",
            "id": item["toolCallId"],
            "name": item["toolName"],
            "input": tool_input,
        }
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": item["toolCallId"],
        "content": tool_result_text(item["output"]),
    }
    if item["isError"] is True:
        block["is_error"] = True
    return block


def to_anthropic_messages(events: Iterable[RuntimeEventInput]) -> list[ProviderMessage]:
    """Anthropic Messages API ``messages`` for a replay context (no system prompt).

    * user text -> a ``{"type": "text"}`` block in a ``user`` message;
    * an assistant step -> one ``assistant`` message with its blocks in ledger order: text,
      ``thinking`` (only with a signature: unsigned thinking is dropped because the API refuses
      a thinking block it cannot verify; ``redacted_thinking`` for thinking recorded with
      ``providerOptions.anthropic.redactedData``), ``tool_use`` (``input`` = the call's args,
      which must be a JSON object, else ``tool_input_not_object``);
    * a step's results -> ``tool_result`` blocks (content: the tool's text,
      :func:`tool_result_text`; ``is_error: true`` only for an error result) in a ``user``
      message;
    * consecutive messages of one role are merged (the API requires alternation); a user
      message therefore starts with the tool results it answers, then any user text.

    Raises :class:`ProviderExportError` for an unpaired or interleaved tool exchange.
    """
    messages: list[ProviderMessage] = []
    for turn in exchange_turns(events):
        blocks = [b for b in (_anthropic_block(item) for item in turn.items) if b is not None]
        if not blocks:
            continue
        role = "assistant" if turn.role == "assistant" else "user"
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    return messages
