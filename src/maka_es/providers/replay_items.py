"""The provider replay item of one committed RuntimeEvent: how it appears to the model.

Why one definition, here with the provider formats: the exporters (``export``) send exactly
these items, a first turn and a continuation alike, and the provider-replay digest a
continuation claim is bound to (``maka_es.continuation.model.replay``) is computed over them,
so what is hashed is what is sent (docs/reference/wire.md#replay-items; projection version 1).
Only the per-event rules live here; pairing calls with results, trimming an interrupted suffix
and the digests belong to the replay. Pure: no I/O, deterministic, never mutates its input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeAlias

from maka_es.wire.codec import CodecInputError, as_wire, canonical_json

__all__ = ["ToolOutputProjection", "format_text_with_inline_refs", "provider_replay_item"]

_ATTACHMENT_RESOURCE_PREFIX: Final = "maka://runtime/attachments"
_ARTIFACT_ENTITY_ID_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")


def _steering_envelope(text: str) -> str:
    return (
        "The user sent a message while you were working:\n<user_query>\n" + text + "\n</user_query>"
    )


def _format_quotes(quotes: Sequence[object]) -> str:
    blocks: list[str] = []
    for quote in quotes:
        q = quote if isinstance(quote, Mapping) else {}
        label = q.get("label")
        label_attr = "" if label is None else ' label="' + str(label).replace('"', "'") + '"'
        blocks.append(f"<quoted_excerpt{label_attr}>\n{q.get('text')}\n</quoted_excerpt>")
    return "\n".join(blocks)


def _format_attachments(attachments: Sequence[object]) -> str:
    blocks: list[str] = []
    for attachment in attachments:
        a = attachment if isinstance(attachment, Mapping) else {}
        ref = a.get("ref")
        ref = ref if isinstance(ref, Mapping) else {}
        kind = ref.get("kind")
        relative = ref.get("relativePath")
        resource: str | None = None
        if (
            kind == "session_file"
            and isinstance(relative, str)
            and _ARTIFACT_ENTITY_ID_RE.fullmatch(relative)
        ):
            resource = f"{_ATTACHMENT_RESOURCE_PREFIX}/{relative}"
        if resource is not None:
            access = (
                f"Read argument: {canonical_json({'ref': resource})}\n"
                "This is a Session resource, not a workspace file. Use the ref above; "
                "never use the display name as a path."
            )
        elif kind == "workspace_file":
            access = f"Read argument: {canonical_json({'path': relative})}"
        elif kind == "external_file":
            access = f"Read argument: {canonical_json({'path': ref.get('absolutePath')})}"
        else:
            access = "The attachment content is unavailable to Read."
        blocks.append(
            "\n".join(
                [
                    "<attachment>",
                    access,
                    f"name: {canonical_json(a.get('name'))}",
                    f"mime_type: {canonical_json(a.get('mimeType'))}",
                    "</attachment>",
                ]
            )
        )
    return "\n".join(blocks)


def format_text_with_inline_refs(content: Mapping[str, object]) -> str:
    """Model-facing text of a text content: the text, then quote and attachment blocks.

    Why: replay items carry the exact text the reference sends to the provider, so the
    provider replay digest depends on this folding being byte-identical.
    """
    text = content.get("text")
    if not isinstance(text, str):
        raise CodecInputError("text content has no text", code="provider_replay_invalid")
    blocks: list[str] = []
    quotes = content.get("quotes")
    if isinstance(quotes, list) and quotes:
        blocks.append(_format_quotes(quotes))
    attachments = content.get("attachments")
    if isinstance(attachments, list) and attachments:
        blocks.append(_format_attachments(attachments))
    if not blocks:
        return text
    return "\n\n".join([text, *blocks])


def _truthy_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


ToolOutputProjection: TypeAlias = Callable[[str, object], object]


def provider_replay_item(
    event_wire: Mapping[str, object],
    *,
    include_system: bool = False,
    project_tool_output: ToolOutputProjection | None = None,
) -> dict[str, object] | None:
    """The provider replay item (projection version 1) one RuntimeEvent contributes, or None.

    Item shapes (optional keys only when the source has them):

    * text: ``{kind:'text', role:'user'|'assistant'|'system', content, attachments?,
      providerOptions?, steering?:{eventId}, stepId? (assistant only: refs.providerEventId or
      refs.storedMessageId), eventId, ts}`` — ``content`` is the text with quotes/attachments
      folded in, wrapped in the steering envelope for ``steering: true`` user text;
    * thinking: ``{kind:'thinking', text, signature?, providerOptions?, stepId?, eventId, ts}``;
    * tool call: ``{kind:'tool_call', toolCallId, toolName, input, providerOptions?,
      providerExecuted?, stepId? (refs.stepId), eventId, ts}``;
    * tool result: ``{kind:'tool_result', toolCallId, toolName, output, isError,
      providerExecuted?, eventId, ts}``.

    Returns None for partial, model-hidden, content-less, empty-text, error-content, system
    (unless ``include_system``) and wrong-role events. Plan-level rules — call/result pairing,
    dropping unmatched calls, skipping signed thinking in unpaired tool turns, suffix trimming —
    belong to the replay planner, not here. ``project_tool_output(toolName, output)`` applies
    the reference's tool-specific model projections of results (Bash / Write / Edit /
    FormatJson summaries); without it the stored result (or ``providerOutput`` for
    provider-executed tools) is used verbatim.
    """
    event = as_wire(event_wire)
    if not isinstance(event, Mapping):
        raise CodecInputError("not a RuntimeEvent wire object", code="provider_replay_invalid")
    content = _replayable_content(event)
    role = event.get("role")
    if content is None or (role == "system" and not include_system):
        return None
    refs = event.get("refs")
    refs = refs if isinstance(refs, Mapping) else {}
    kind = content.get("kind")
    item: dict[str, object] | None
    if kind == "text":
        item = _text_item(content, role, refs, event.get("id"))
    elif kind == "thinking":
        item = _thinking_item(content, role, refs)
    elif kind == "function_call":
        item = _tool_call_item(content, role, refs)
    else:
        item = _tool_result_item(content, role, project_tool_output)
    if item is None:
        return None
    item["eventId"] = event.get("id")
    item["ts"] = event.get("ts")
    return item


def _replayable_content(event: Mapping[str, object]) -> Mapping[str, object] | None:
    """The content of a committed, visible event of a replayable kind (non-empty text,
    thinking, a call or a result); ``None`` for anything else."""
    if event.get("partial") is True or event.get("modelVisibility") == "hidden":
        return None
    content = event.get("content")
    if not isinstance(content, Mapping):
        return None
    kind = content.get("kind")
    if kind == "text":
        text = content.get("text")
        return content if isinstance(text, str) and text else None
    return content if kind in ("thinking", "function_call", "function_response") else None


def _step_id(refs: Mapping[str, object]) -> str | None:
    """The provider step a model text or thinking belongs to."""
    return _truthy_str(refs.get("providerEventId")) or _truthy_str(refs.get("storedMessageId"))


def _text_item(
    content: Mapping[str, object], role: object, refs: Mapping[str, object], event_id: object
) -> dict[str, object] | None:
    replay_role = {"user": "user", "model": "assistant", "system": "system"}.get(str(role))
    if replay_role is None:
        return None
    steering = content.get("steering") is True and replay_role == "user"
    body = format_text_with_inline_refs(content)
    item: dict[str, object] = {
        "kind": "text",
        "role": replay_role,
        "content": _steering_envelope(body) if steering else body,
    }
    if steering:
        item["steering"] = {"eventId": event_id}
    if content.get("attachments") is not None:
        item["attachments"] = content["attachments"]
    if "providerOptions" in content:
        item["providerOptions"] = content["providerOptions"]
    if replay_role == "assistant":
        step_id = _step_id(refs)
        if step_id:
            item["stepId"] = step_id
    return item


def _thinking_item(
    content: Mapping[str, object], role: object, refs: Mapping[str, object]
) -> dict[str, object] | None:
    if role != "model":
        return None
    item: dict[str, object] = {"kind": "thinking", "text": content.get("text")}
    signature = _truthy_str(content.get("signature"))
    if signature:
        item["signature"] = signature
    if "providerOptions" in content:
        item["providerOptions"] = content["providerOptions"]
    step_id = _step_id(refs)
    if step_id:
        item["stepId"] = step_id
    return item


def _tool_call_item(
    content: Mapping[str, object], role: object, refs: Mapping[str, object]
) -> dict[str, object] | None:
    if role != "model":
        return None
    item: dict[str, object] = {
        "kind": "tool_call",
        "toolCallId": content.get("id"),
        "toolName": content.get("name"),
        "input": content.get("args"),
    }
    if "providerOptions" in content:
        item["providerOptions"] = content["providerOptions"]
    if "providerExecuted" in content:
        item["providerExecuted"] = content["providerExecuted"]
    step_id = _truthy_str(refs.get("stepId"))
    if step_id:
        item["stepId"] = step_id
    return item


def _tool_result_item(
    content: Mapping[str, object],
    role: object,
    project_tool_output: ToolOutputProjection | None,
) -> dict[str, object] | None:
    if role != "tool":
        return None
    name = content.get("name")
    output = (
        content["providerOutput"]
        if content.get("providerExecuted") and "providerOutput" in content
        else content.get("result")
    )
    if project_tool_output is not None and isinstance(name, str):
        output = project_tool_output(name, output)
    item: dict[str, object] = {
        "kind": "tool_result",
        "toolCallId": content.get("id"),
        "toolName": name,
        "output": output,
        "isError": content.get("isError") is True,
    }
    if "providerExecuted" in content:
        item["providerExecuted"] = content["providerExecuted"]
    return item
