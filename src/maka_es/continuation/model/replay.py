"""Composite continuation replay: the provider history a continuation is planned from.

Three layers, in reading order: the provider replay item of one committed RuntimeEvent (how it
appears to the model; docs/reference/wire.md#replay-items; defined once in
``maka_es.providers.replay_items``), the model-history projection of one
lineage segment, and the composite replay over every segment of a lineage
(docs/reference/continuation.md#composite-replay; the digests:
docs/reference/wire.md#boundary-digests).

Why one definition of the items: the provider-replay digest a continuation claim is bound to is
computed over these items, and the provider exporters send exactly these items.

Why per segment: a continuation run never synthesises a user event, so its provider history is
the concatenation of every run in its lineage (oldest ancestor → immediate source). Each segment
is projected on its own and may lose only its *interrupted suffix* — the model output after its
last stable item (a user text or a tool result), which no provider request can continue from.
Trimming per segment means an ancestor's suffix can never re-enter a later generation's
history, and the digests pin exactly which immutable prefixes and which provider items a
continuation was planned from, so execution can detect any drift.

The projection of one segment mirrors the reference's model-history projection rule by rule.
Per event, in order: a partial row is diagnosed; hidden and content-less events are skipped;
of the non-visible ones, an empty model text (a step closer) and error content are skipped and
anything else is diagnosed; system text is skipped (the runner rebuilds it); a content kind in
the wrong role is diagnosed; signed thinking of an unpaired tool turn is skipped. What remains
becomes an item, and calls are paired with their results. The composite replay then only
decides what to trim and what to hash.

Fail closed: a segment whose tool facts are corrupt or unsettled, or whose provider projection
is not a clean suffix-trimmable history, blocks the whole replay with a stable reason instead of
being "repaired" into something the model never saw. Pure: no I/O, deterministic, never mutates
its input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import JsonValue, field_serializer

from maka_es.continuation.model.boundary import (
    PROVIDER_REPLAY_PROJECTION_VERSION,
    build_segment,
    manifest_digest,
    provider_replay_digest,
)
from maka_es.ledger.model.facts import SourceBoundary
from maka_es.providers.replay_items import ToolOutputProjection, provider_replay_item
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.codec import CodecInputError
from maka_es.wire.events import (
    Content,
    ErrorContent,
    FunctionCallContent,
    FunctionResponseContent,
    RuntimeEvent,
    RuntimeEventInput,
    TextContent,
    ThinkingContent,
    ValueModel,
    decode_events,
)

__all__ = [
    "CompositeReplay",
    "HistoryProjection",
    "ProjectedItem",
    "ReplayBlockReason",
    "ReplayDiagnostic",
    "ReplayDiagnosticCode",
    "ReplaySegment",
    "build_composite_replay",
    "project_history",
    "provider_item_role",
    "source_boundary",
]

# --------------------------------------------------------------------------------------------
# One segment's model history
# --------------------------------------------------------------------------------------------

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


class ReplayDiagnostic(ValueModel):
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
        return "skip"  # unpaired tool turn: reasoning cannot be paired to its tool-use message
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


# --------------------------------------------------------------------------------------------
# The composite replay: its models
# --------------------------------------------------------------------------------------------

#: Why a segment (and so the whole composite replay) cannot be replayed.
ReplayBlockReason = Literal[
    "tool_recovery_corruption",
    "tool_recovery_unsettled",
    "provider_replay_non_suffix_gap",
    "provider_replay_unsupported",
]

#: Projection diagnostics that make a segment's provider history unusable as a whole.
_BLOCKING_PROJECTION_CODES: frozenset[str] = frozenset(
    {
        "partial_skipped",
        "unmatched_tool_result",
        "tool_id_mismatch",
        "unsupported_role",
        "unsupported_content",
    }
)


class ReplaySegment(ValueModel):
    """One projected lineage segment.

    ``boundary`` is the ``runtime_prefix_segment_v1`` of the whole immutable prefix (trimming
    never changes what was committed); ``replay_runtime_events`` are its non-hidden events minus
    the trimmed suffix (terminal, continuation-start and permission facts survive);
    ``provider_items`` are the items this segment contributes to the provider request.
    """

    boundary: dict[str, JsonValue]
    prefix_digest: str
    replay_runtime_events: tuple[RuntimeEvent, ...]
    trimmed_suffix_event_ids: tuple[str, ...]
    provider_items: tuple[dict[str, JsonValue], ...]
    provider_replay_digest: str

    @field_serializer("replay_runtime_events")
    def _events_as_wire(self, events: tuple[RuntimeEvent, ...]) -> list[dict[str, Any]]:
        return [event.to_wire() for event in events]


class CompositeReplay(ValueModel):
    """The composite replay plan of a lineage, or why it is blocked
    (docs/reference/continuation.md#composite-replay).

    When ``blocked_reason`` is set, ``blocked_segment_index`` names the first blocking segment,
    ``diagnostics`` holds the blocking fact, and no segment, context, item or digest is
    reported (a partial plan must never be mistaken for a replayable one). Otherwise
    ``runtime_context`` is the concatenation of every segment's replay events, ``provider_items``
    the concatenation of their items, ``prefix_digests`` the per-segment prefix digests,
    ``manifest_digest`` the boundary-manifest digest over the ordered segments and
    ``provider_replay_digest`` the digest over the concatenated items
    (docs/reference/wire.md#provider-replay-digest).
    """

    blocked_reason: ReplayBlockReason | None
    blocked_segment_index: int | None
    diagnostics: tuple[ReplayDiagnostic, ...]
    provider_projection_version: int
    segments: tuple[ReplaySegment, ...]
    runtime_context: tuple[RuntimeEvent, ...]
    provider_items: tuple[dict[str, JsonValue], ...]
    prefix_digests: tuple[str, ...]
    manifest_digest: str | None
    provider_replay_digest: str | None

    @property
    def replayable(self) -> bool:
        return self.blocked_reason is None

    @field_serializer("runtime_context")
    def _events_as_wire(self, events: tuple[RuntimeEvent, ...]) -> list[dict[str, Any]]:
        return [event.to_wire() for event in events]


def provider_item_role(item: dict[str, JsonValue] | None) -> str | None:
    """The provider-message role an item lands in: its text role, ``tool`` for a tool result,
    ``assistant`` for thinking and tool calls (reference ``providerReplayItemRole``)."""
    if item is None:
        return None
    kind = item.get("kind")
    if kind == "text":
        role = item.get("role")
        return role if isinstance(role, str) else None
    if kind == "tool_result":
        return "tool"
    return "assistant"


# --------------------------------------------------------------------------------------------
# The composite replay: one segment
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Blocked:
    reason: ReplayBlockReason
    diagnostic: ReplayDiagnostic


def _check_prefix(events: Sequence[RuntimeEvent], segment_index: int) -> dict[str, str]:
    """The prefix identity; a segment must be a non-empty single-execution prefix."""
    if not events:
        raise CodecInputError(
            f"continuation replay segment {segment_index} is empty", code="prefix_invalid"
        )
    first = events[0]
    identity = first.spine
    for event in events:
        if event.identity != first.identity:
            raise CodecInputError(
                f"continuation replay segment {segment_index} mixes execution identities "
                f"at {event.id}",
                code="prefix_invalid",
                detail={"eventId": event.id, "segmentIndex": segment_index},
            )
    return identity


def _resolver_block(events: Sequence[RuntimeEvent]) -> _Blocked | None:
    resolution = resolve_tool_operations(events)
    statuses = {decision.status for decision in resolution.decisions}
    if resolution.has_corruption or "corruption" in statuses:
        return _Blocked(
            "tool_recovery_corruption",
            ReplayDiagnostic(
                code="tool_recovery_corruption",
                message="immutable RuntimeEvent segment contains corrupt tool recovery facts",
            ),
        )
    unsettled = [d for d in resolution.decisions if d.status in {"indeterminate", "parked"}]
    if unsettled:
        # name the first unsettled operation and its tool: what a host must settle (or which
        # tool its catalogue lacks) before this boundary can be continued
        first = unsettled[0]
        where = f"operation {first.operation_id}, " if first.operation_id else ""
        return _Blocked(
            "tool_recovery_unsettled",
            ReplayDiagnostic(
                code="tool_recovery_unsettled",
                message=(
                    f"tool {first.tool_name} ({where}call {first.tool_call_id}) may have run: "
                    f"its outcome is {first.status} ({first.reason}); attest what it did or "
                    "fork before it, then plan again"
                ),
                event_id=first.call_runtime_event_id,
                detail={
                    "operationId": first.operation_id,
                    "toolName": first.tool_name,
                    "toolCallId": first.tool_call_id,
                    "status": first.status,
                    "reason": first.reason,
                    "unsettledOperations": len(unsettled),
                },
            ),
        )
    return None


def _projection_block(
    projection: HistoryProjection, alive: Sequence[ProjectedItem]
) -> _Blocked | None:
    """A projection problem, or a result-less call followed by provider history: only an
    interrupted *suffix* may be dropped; history after a hole cannot be replayed."""
    for diagnostic in projection.diagnostics:
        if diagnostic.code in _BLOCKING_PROJECTION_CODES:
            return _Blocked("provider_replay_unsupported", diagnostic)
    for call_index, call_event_id, call_id in projection.unmatched_calls:
        if any(item.event_index > call_index for item in alive):
            return _Blocked(
                "provider_replay_non_suffix_gap",
                ReplayDiagnostic(
                    code="unmatched_tool_call",
                    message="function_call without a result is followed by provider history",
                    event_id=call_event_id,
                    detail={"toolCallId": call_id},
                ),
            )
    return None


def _is_anchor(item: ProjectedItem) -> bool:
    """A stable item a new model turn may follow: a tool result or a user text."""
    kind = item.payload.get("kind")
    return kind == "tool_result" or (kind == "text" and item.payload.get("role") == "user")


def _trimmed_suffix(
    alive: Sequence[ProjectedItem], unmatched_calls: Sequence[tuple[int, str, str]]
) -> set[int]:
    """Event indexes of the interrupted suffix after the last anchor (with the result-less
    calls after it); every model item when there is no anchor."""
    anchor = next(
        (position for position in range(len(alive) - 1, -1, -1) if _is_anchor(alive[position])),
        None,
    )
    if anchor is None:
        # A continuation segment has no user event of its own: without a tool result, all of
        # its model output is an interrupted suffix, not a new anchor.
        trimmed = {item.event_index for item in alive}
        trimmed.update(call_index for call_index, _id, _call in unmatched_calls)
        return trimmed
    anchor_index = alive[anchor].event_index
    trimmed = {item.event_index for item in alive[anchor + 1 :]}
    trimmed.update(
        call_index for call_index, _id, _call in unmatched_calls if call_index > anchor_index
    )
    return trimmed


def _replay_segment(
    events: Sequence[RuntimeEvent],
    identity: dict[str, str],
    alive: Sequence[ProjectedItem],
    trimmed: set[int],
) -> ReplaySegment:
    """The segment's boundary over the whole prefix, its kept events and items, its digest."""
    items = tuple(item.payload for item in alive if item.event_index not in trimmed)
    boundary = build_segment(
        identity, [(index + 1, event.to_wire()) for index, event in enumerate(events)]
    )
    prefix = boundary["prefixDigest"]
    assert isinstance(prefix, str)
    return ReplaySegment(
        boundary=boundary,
        prefix_digest=prefix,
        replay_runtime_events=tuple(
            event
            for index, event in enumerate(events)
            if not event.is_hidden and index not in trimmed
        ),
        trimmed_suffix_event_ids=tuple(events[index].id for index in sorted(trimmed)),
        provider_items=items,
        provider_replay_digest=provider_replay_digest(items),
    )


def _segment(
    events: Sequence[RuntimeEvent],
    segment_index: int,
    project_tool_output: ToolOutputProjection | None,
) -> ReplaySegment | _Blocked:
    """One segment: resolver verdicts first, then the projection, then the suffix trim."""
    identity = _check_prefix(events, segment_index)
    blocked = _resolver_block(events)
    if blocked is not None:
        return blocked
    projection = project_history(events, project_tool_output)
    alive = [item for item in projection.items if item.alive]
    blocked = _projection_block(projection, alive)
    if blocked is not None:
        return blocked
    return _replay_segment(
        events, identity, alive, _trimmed_suffix(alive, projection.unmatched_calls)
    )


# --------------------------------------------------------------------------------------------
# The composite replay: every segment of a lineage
# --------------------------------------------------------------------------------------------


def build_composite_replay(
    segments: Sequence[Sequence[RuntimeEventInput]],
    *,
    project_tool_output: ToolOutputProjection | None = None,
) -> CompositeReplay:
    """Project lineage ``segments`` (oldest ancestor first, immediate source last) for replay.

    Each segment is the full immutable prefix of one run as pinned by the lineage (the source
    at its latest committed event, each ancestor at the high-water its child recorded); event
    ``i`` has ``eventSeq`` ``i + 1``. Per segment, in order: resolver corruption →
    ``tool_recovery_corruption``; an indeterminate or parked operation →
    ``tool_recovery_unsettled``; partial rows, wrong roles, non-replayable content, a result
    without a call or with another tool name → ``provider_replay_unsupported``; a call without
    a result followed by any provider item → ``provider_replay_non_suffix_gap``. Otherwise the
    interrupted suffix after the last user text / tool result is trimmed (all model items when
    there is none), together with result-less calls after that anchor. The first blocked
    segment blocks the whole replay.

    ``project_tool_output(toolName, output)`` applies tool-specific result projections (the
    reference's Bash / Write / Edit summaries); without it results are replayed verbatim, which
    changes ``provider_replay_digest`` for those tools.

    Raises :class:`CodecInputError` when a segment is not an immutable prefix (empty, or mixing
    execution identities) or the segments are not one lineage (other session, a reused run,
    invocation or turn id): those are read errors upstream, not replay verdicts.
    """
    decoded = [decode_events(segment) for segment in segments]
    if not decoded:
        raise CodecInputError(
            "continuation replay needs at least one segment", code="boundary_invalid"
        )
    planned: list[ReplaySegment] = []
    for index, events in enumerate(decoded):
        result = _segment(events, index, project_tool_output)
        if isinstance(result, _Blocked):
            return _blocked_replay(result, index)
        planned.append(result)
    return _replayable(planned)


def _blocked_replay(blocked: _Blocked, segment_index: int) -> CompositeReplay:
    """A blocked replay reports the blocking fact and nothing a caller could replay."""
    return CompositeReplay(
        blocked_reason=blocked.reason,
        blocked_segment_index=segment_index,
        diagnostics=(blocked.diagnostic,),
        provider_projection_version=PROVIDER_REPLAY_PROJECTION_VERSION,
        segments=(),
        runtime_context=(),
        provider_items=(),
        prefix_digests=(),
        manifest_digest=None,
        provider_replay_digest=None,
    )


def _replayable(planned: Sequence[ReplaySegment]) -> CompositeReplay:
    """The concatenation of every segment and the digests over the whole lineage."""
    items = tuple(item for segment in planned for item in segment.provider_items)
    return CompositeReplay(
        blocked_reason=None,
        blocked_segment_index=None,
        diagnostics=(),
        provider_projection_version=PROVIDER_REPLAY_PROJECTION_VERSION,
        segments=tuple(planned),
        runtime_context=tuple(
            event for segment in planned for event in segment.replay_runtime_events
        ),
        provider_items=items,
        prefix_digests=tuple(segment.prefix_digest for segment in planned),
        manifest_digest=manifest_digest([segment.boundary for segment in planned]),
        provider_replay_digest=provider_replay_digest(items),
    )


def source_boundary(replay: CompositeReplay) -> SourceBoundary:
    """The boundary a replayable composite replay ends at (what a claim records): the source
    segment's identity, last event seq and prefix digest, and the lineage's digests."""
    source = replay.segments[-1]
    identity, position = source.boundary["identity"], source.boundary["position"]
    assert isinstance(identity, dict)
    assert isinstance(position, dict)
    assert replay.manifest_digest is not None
    assert replay.provider_replay_digest is not None
    return SourceBoundary(
        session_id=str(identity["sessionId"]),
        invocation_id=str(identity["invocationId"]),
        run_id=str(identity["runId"]),
        turn_id=str(identity["turnId"]),
        high_water=int(str(position["lastEventSeq"])),
        prefix_digest=source.prefix_digest,
        manifest_digest=replay.manifest_digest,
        provider_replay_digest=replay.provider_replay_digest,
    )
