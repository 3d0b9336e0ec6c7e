"""One committed event as a timeline row: its lane, a one-line summary, and its exact wire.

Why the lane comes from ``wire/lanes.py``: the report must classify an event exactly as the
store and the resolver do (docs/reference/wire.md#lanes), so a lane conflict the store would
refuse or the resolver would call corruption shows as one here too. Event text is hostile
input: it is kept as plain strings, and the templates escape it (ADR 0030).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from maka_es.report.view_models import EventRow, LaneColumn
from maka_es.wire.events import (
    ErrorContent,
    FunctionCallContent,
    FunctionResponseContent,
    RuntimeEvent,
    TextContent,
    ThinkingContent,
)
from maka_es.wire.lanes import classify_lane

__all__ = ["LANES", "event_anchor", "event_row", "format_ms"]

#: Timeline columns, left to right in the order a tool call crosses them.
LANES: tuple[LaneColumn, ...] = (
    LaneColumn("ordinary", "conversation"),
    LaneColumn("function_call", "call"),
    LaneColumn("tool_dispatch", "T1 dispatch"),
    LaneColumn("function_response", "T2 response"),
    LaneColumn("reconcile_result", "reconcile"),
    LaneColumn("recovery_decision", "recovery decision"),
)
_LANE_INDEX = {column.lane: index for index, column in enumerate(LANES)}
SUMMARY_LIMIT = 240
_MAX_MS = 10**14  # beyond year 5000: not a Unix time in milliseconds, shown as the number


def event_anchor(run_anchor: str, seq: int) -> str:
    """An element id made of safe characters only: event ids are arbitrary strings."""
    return f"{run_anchor}-e{seq}"


def format_ms(value: float) -> str:
    """Unix milliseconds as UTC ISO-8601 (a pure conversion, never the clock)."""
    if isinstance(value, bool) or not 0 <= value < _MAX_MS:
        return str(value)
    stamp = datetime.fromtimestamp(value / 1000, tz=UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _clip(text: str) -> str:
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


def _compact(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _content_summary(event: RuntimeEvent) -> str | None:
    content = event.content
    if isinstance(content, TextContent | ThinkingContent):
        prefix = "thinking: " if isinstance(content, ThinkingContent) else ""
        return prefix + content.text
    if isinstance(content, FunctionCallContent):
        return f"{content.name}({_compact(content.args)}) call {content.id}"
    if isinstance(content, FunctionResponseContent):
        error = " error" if content.is_error else ""
        return f"{content.name}{error} -> {_compact(content.result)}"
    if isinstance(content, ErrorContent):
        return f"error {content.code or ''}: {content.message}".replace("  ", " ")
    return None


def _actions_summary(event: RuntimeEvent) -> str | None:
    actions = event.actions
    if actions is None:
        return None
    if actions.tool_dispatch is not None:
        d = actions.tool_dispatch
        return f"T1 {d.tool_name} {d.operation_id} ({d.recovery_mode})"
    if actions.tool_recovery is not None:
        payload = actions.tool_recovery.payload.to_wire()
        detail = payload.get("observation") or payload.get("disposition")
        reason = payload.get("reasonCode")
        return " ".join(str(p) for p in (actions.tool_recovery.kind, detail, reason) if p)
    if actions.continuation_start is not None:
        source = actions.continuation_start.immediate_source
        return f"continues {source.run_id} at high-water {source.high_water}"
    return None


def _summary(event: RuntimeEvent) -> str:
    parts = [p for p in (_content_summary(event), _actions_summary(event)) if p]
    if event.status is not None:
        parts.append(f"status {event.status}")
    return _clip(" | ".join(parts) if parts else "(no content)")


def _operation_id(event: RuntimeEvent) -> str | None:
    if event.refs is not None and event.refs.operation_id is not None:
        return event.refs.operation_id
    actions = event.actions
    if actions is not None and actions.tool_dispatch is not None:
        return actions.tool_dispatch.operation_id
    return None


def event_row(run_anchor: str, seq: int, event: RuntimeEvent) -> EventRow:
    """The timeline row of the ``seq``-th committed event (1-based, the ledger's order)."""
    lane = classify_lane(event)
    return EventRow(
        seq=seq,
        anchor=event_anchor(run_anchor, seq),
        event_id=event.id,
        lane=lane.lane,
        lane_index=_LANE_INDEX[lane.lane],
        conflict=lane.conflict,
        role=event.role,
        author=event.author,
        time=format_ms(event.ts),
        summary=_summary(event),
        operation_id=_operation_id(event),
        status=event.status,
        wire_json=json.dumps(event.to_wire(), sort_keys=True, ensure_ascii=False, indent=2),
    )
