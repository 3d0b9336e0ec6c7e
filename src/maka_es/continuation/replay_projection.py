"""Model-history projection of one lineage segment
(docs/reference/continuation.md#composite-replay).

Why a module of its own: deciding which committed events become provider items, and which
problems make a segment's history unusable, is the part of the composite replay that mirrors
the reference's model-history projection rule by rule; the composite replay then only decides
what to trim and what to hash. Pure: no I/O, deterministic, never mutates its input.

Per event, in order: a partial row is diagnosed; hidden and content-less events are skipped;
of the non-visible ones, an empty model text (a step closer) and error content are skipped and
anything else is diagnosed; system text is skipped (the runner rebuilds it); a content kind in
the wrong role is diagnosed; signed thinking of an unpaired tool turn is skipped. What remains
becomes an item, and calls are paired with their results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from pydantic import JsonValue

from maka_es.continuation.replay_items import ToolOutputProjection, provider_replay_item
from maka_es.wire.events import (
    Content,
    ErrorContent,
    FunctionCallContent,
    FunctionResponseContent,
    RuntimeEvent,
    TextContent,
    ThinkingContent,
)
from maka_es.wire.report import ReportModel

__all__ = [
    "HistoryProjection",
    "ProjectedItem",
    "ReplayDiagnostic",
    "ReplayDiagnosticCode",
    "project_history",
]

#: Codes of the model-history projection (reference ``model-history.ts``) plus the two resolver
#: verdicts, so a blocked replay always names the fact that blocked it.
ReplayDiagnosticCode = Literal[
    "tool_recovery_corruption",
    "tool_recovery_unsettled",
    "partial_skipped",
    "unsupported_role",
    "unsupported_content",
    "unmatched_tool_result",
    "unmatched_tool_call",
    "tool_id_mismatch",
]

#: What the screening of one event decided, when it is not a diagnostic.
_Screened = Literal["skip", "project"]


class ReplayDiagnostic(ReportModel):
    """The fact that blocked a replay segment (``segmentIndex`` is on the replay itself)."""

    code: ReplayDiagnosticCode
    message: str
    event_id: str | None = None
    detail: dict[str, JsonValue] | None = None


@dataclass
class ProjectedItem:
    """A projected provider item and the ledger position of the event that produced it."""

    event_index: int
    event_id: str
    payload: dict[str, JsonValue]
    alive: bool = True


@dataclass
class HistoryProjection:
    """A segment's provider items and the projection problems found on the way."""

    items: list[ProjectedItem] = field(default_factory=list)
    diagnostics: list[ReplayDiagnostic] = field(default_factory=list)
    #: ``(event index, event id, tool call id)`` of calls without a matching result, in order.
    unmatched_calls: list[tuple[int, str, str]] = field(default_factory=list)


def _diagnostic(
    code: ReplayDiagnosticCode,
    message: str,
    event: RuntimeEvent,
    detail: dict[str, JsonValue] | None = None,
) -> ReplayDiagnostic:
    return ReplayDiagnostic(code=code, message=message, event_id=event.id, detail=detail)


def _unpaired_tool_turns(events: Sequence[RuntimeEvent]) -> frozenset[str]:
    """Turns with a visible call lacking ``refs.stepId``: their signed thinking cannot be
    reattached to a tool-use assistant message, so it is skipped (not blocked)."""
    unpaired: set[str] = set()
    for event in events:
        if event.partial or event.is_hidden or event.function_call is None:
            continue
        step_id = event.refs.step_id if event.refs is not None else None
        if not step_id:
            unpaired.add(event.turn_id)
    return frozenset(unpaired)


def _payload(
    event: RuntimeEvent, project_tool_output: ToolOutputProjection | None
) -> dict[str, JsonValue] | None:
    item = provider_replay_item(event.to_wire(), project_tool_output=project_tool_output)
    # provider_replay_item only copies strict-JSON values out of a wire dict
    return None if item is None else cast(dict[str, JsonValue], item)


def _screen_invisible(event: RuntimeEvent, content: Content) -> ReplayDiagnostic | _Screened:
    """A content the model does not see: a step closer or a failure fact is no conversation;
    anything else cannot be replayed."""
    if isinstance(content, TextContent) and event.role == "model":
        return "skip"  # empty step closer of a thinking/tool-only step
    if isinstance(content, ErrorContent):
        return "skip"  # a failure fact, never conversation
    return _diagnostic(
        "unsupported_content",
        "RuntimeEvent content is not model-replayable",
        event,
        {"kind": content.kind},
    )


def _wrong_role(event: RuntimeEvent, content: Content) -> bool:
    return (
        (isinstance(content, TextContent) and event.role == "tool")
        or (isinstance(content, ThinkingContent | FunctionCallContent) and event.role != "model")
        or (isinstance(content, FunctionResponseContent) and event.role != "tool")
    )


def _screen(event: RuntimeEvent, unpaired_turns: frozenset[str]) -> ReplayDiagnostic | _Screened:
    """Whether ``event`` is projected, silently skipped, or diagnosed (module docstring)."""
    if event.partial:
        return _diagnostic("partial_skipped", "partial RuntimeEvent skipped for replay", event)
    content = event.content
    if event.is_hidden or content is None:
        return "skip"
    if not event.is_model_visible:
        return _screen_invisible(event, content)
    if event.role == "system":
        return "skip"  # system notes are rebuilt by the runner, never replayed
    if _wrong_role(event, content):
        return _diagnostic(
            "unsupported_role",
            f"{content.kind} RuntimeEvent role is not model-replayable",
            event,
            {"role": event.role},
        )
    if (
        isinstance(content, ThinkingContent)
        and content.signature
        and event.turn_id in unpaired_turns
    ):
        return "skip"  # legacy tool turn: reasoning cannot be paired to its tool-use message
    return "project"


def _pair(
    event: RuntimeEvent, item: ProjectedItem, open_calls: dict[str, tuple[str, ProjectedItem]]
) -> ReplayDiagnostic | None:
    """Open a call, or close the open call a result answers (a result without its call, or
    naming another tool, is diagnosed; the result stays an item either way)."""
    content = event.content
    if isinstance(content, FunctionCallContent):
        open_calls[content.id] = (content.name, item)
        return None
    if not isinstance(content, FunctionResponseContent):
        return None
    opened = open_calls.pop(content.id, None)
    if opened is None:
        return _diagnostic(
            "unmatched_tool_result",
            "function_response has no prior matching function_call",
            event,
            {"toolCallId": content.id},
        )
    if opened[0] != content.name:
        return _diagnostic(
            "tool_id_mismatch",
            "function_response name differs from matching function_call",
            event,
            {
                "toolCallId": content.id,
                "callName": opened[0],
                "resultName": content.name,
                "callEventId": opened[1].event_id,
            },
        )
    return None


def project_history(
    events: Sequence[RuntimeEvent], project_tool_output: ToolOutputProjection | None
) -> HistoryProjection:
    """Provider items of a segment and the projection problems found on the way.

    Mirrors the reference model-history projection (module docstring); calls that never got a
    result are removed from the items and reported as ``unmatched_tool_call``.
    """
    out = HistoryProjection()
    unpaired_turns = _unpaired_tool_turns(events)
    open_calls: dict[str, tuple[str, ProjectedItem]] = {}  # call id -> (tool name, call item)
    for index, event in enumerate(events):
        screened = _screen(event, unpaired_turns)
        if isinstance(screened, ReplayDiagnostic):
            out.diagnostics.append(screened)
            continue
        if screened == "skip":
            continue
        payload = _payload(event, project_tool_output)
        if payload is None:  # unreachable after the checks above; fail closed anyway
            out.diagnostics.append(
                _diagnostic("unsupported_content", "RuntimeEvent has no provider projection", event)
            )
            continue
        item = ProjectedItem(index, event.id, payload)
        paired = _pair(event, item, open_calls)
        if paired is not None:
            out.diagnostics.append(paired)
        out.items.append(item)
    for call_id, (_name, item) in open_calls.items():
        item.alive = False  # a tool call without its result is a provider error; never replay it
        out.unmatched_calls.append((item.event_index, item.event_id, call_id))
    return out
