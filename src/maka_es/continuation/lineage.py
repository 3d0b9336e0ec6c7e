"""A run's lineage: its ancestors through earlier continuations, pinned and checked.

Why a library of its own: the planner, execution revalidation and startup recovery all need the
same answer to "which committed prefixes does this run continue, and are they still the ones
its continuation recorded?". Reading it in one place keeps the checks and their order single
(docs/reference/continuation.md#lineage): each failure is a :class:`LineagePark` with one
stable code that the planner turns into a park and revalidation into a refusal. Store faults
are not a verdict about the data: they propagate unchanged, and the caller decides.

A session's conversation so far: what a turn's model is shown before its own run (ADR 0038).

Why: a turn's replay is its own run (a first turn: its user message; a continuation: its
lineage's composite replay), so without more a session's second turn knows nothing of its
first. The history is a separate prefix (``ProviderRequest.history``), rendered before the
replay context and never part of it: the continuation's replay, its items and its digests are
unchanged (docs/reference/continuation.md#session-history).

The history of a turn (given by one run of its lineage, or none for a new turn):

1. only the session-inline runs created **before the turn's first run** (the root of its
   lineage) count, and never a run of the turn's own lineage: a continuation or fork of turn
   N therefore sees exactly the earlier turns the original turn N saw;
2. a turn of that slice is a run no run of the slice continues (the end of its lineage); it
   counts when it ``completed``. A ``cancelled`` turn does not (the host withdrew it; a host
   that wants it kept continues it, and the completed continuation then counts), nor does a
   ``failed`` one nobody continued, nor a run that is not finished;
3. a counted turn's conversation is what its model saw, then its answer: a first turn's
   events; a continuation's or fork's lineage replay (the same composite replay its start
   recorded, checked against that record) followed by its own events after its start; each
   through the provider-replay projection, keeping only model-visible events. A resumed turn
   is therefore there once, never as its failed source plus its continuation;
4. the counted turns go in the order their first runs were created, the newest ``max_turns``
   of them (``None``: all). An older turn that uses a tool call id a newer one (or the
   replay, ``reserved_call_ids``) uses ends the history there: the exporters pair calls and
   results by bare id and refuse a repeated one.

Pure: committed headers and events in, events out; ``events_of`` is only asked for the runs
of the turns kept. A subagent's turn (not session-inline) has no session history. A lineage
that no longer replays as recorded, or a run that is not the session's, raises
:class:`SessionHistoryError` (``session_history_unreplayable``) rather than showing the model
something it never saw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from maka_es.continuation.claims import RunReader
from maka_es.continuation.model.boundary import build_segment
from maka_es.continuation.model.replay import build_composite_replay
from maka_es.errors import (
    InvalidPlanRequestError,
    LineagePark,
    MakaError,
    RunNotFoundError,
    SessionHistoryError,
)
from maka_es.ledger.ports import STORE_FAULTS
from maka_es.providers.replay_items import provider_replay_item
from maka_es.resume.plan import provider_replay_subset
from maka_es.wire.codec import CodecInputError
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import ContinuationSourceV1, ContinuationSourceV2, RunHeader

__all__ = [
    "EventsOf",
    "Lineage",
    "LineagePark",
    "MAX_LINEAGE_SEGMENTS",
    "SessionHistoryError",
    "check_v2_replay",
    "checked_history_turns",
    "prefix_segment",
    "read_lineage",
    "session_history",
]


#: Segments a lineage may hold before another hop is refused (continuation.md#lineage).
MAX_LINEAGE_SEGMENTS = 64

_Edge = ContinuationSourceV1 | ContinuationSourceV2


@dataclass(frozen=True)
class Lineage:
    """Segments oldest -> immediate source, and the headers they came from."""

    segments: tuple[tuple[RuntimeEvent, ...], ...]
    headers: tuple[RunHeader, ...]


def read_lineage(
    reader: RunReader, source: RunHeader, source_events: Sequence[RuntimeEvent]
) -> Lineage:
    """Follow ``continuationSource`` edges from the source run to the root, pinning every
    ancestor at the high-water its child recorded (continuation.md#lineage)."""
    segments: list[tuple[RuntimeEvent, ...]] = [tuple(source_events)]
    headers: list[RunHeader] = [source]
    seen = {source.run_id}
    child = source
    while child.continuation_source is not None:
        edge = child.continuation_source
        if len(segments) >= MAX_LINEAGE_SEGMENTS:
            raise LineagePark(
                "runtime_lineage_depth_exceeded",
                f"lineage of {source.run_id} is deeper than {MAX_LINEAGE_SEGMENTS} segments",
                {"maxSegments": MAX_LINEAGE_SEGMENTS},
            )
        if edge.source_run_id in seen:
            raise LineagePark(
                "runtime_lineage_cycle",
                f"run {edge.source_run_id} appears twice in the lineage of {source.run_id}",
                {"runId": edge.source_run_id},
            )
        ancestor, committed = _read_ancestor(reader, child, edge)
        prefix = _pinned_prefix(source, edge, committed)
        _check_edge_start(child, segments[-1], edge, prefix)
        segments.append(prefix)
        headers.append(ancestor)
        seen.add(ancestor.run_id)
        child = ancestor
    segments.reverse()
    headers.reverse()
    return Lineage(tuple(segments), tuple(headers))


def _read_ancestor(
    reader: RunReader, child: RunHeader, edge: _Edge
) -> tuple[RunHeader, list[RuntimeEvent]]:
    """The ancestor an edge names, header and committed events; unreadable is
    ``runtime_lineage_missing`` (a store fault is not "missing": it propagates)."""
    try:
        return reader.header(edge.source_run_id), reader.events(edge.source_run_id)
    except STORE_FAULTS:
        raise  # could not read is not "missing": the caller parks source_run_unreadable
    except MakaError as exc:
        raise LineagePark(
            "runtime_lineage_missing",
            f"ancestor {edge.source_run_id} of {child.run_id} cannot be read: {exc.code}",
            {"runId": edge.source_run_id},
        ) from None


def _pinned_prefix(
    source: RunHeader, edge: _Edge, committed: Sequence[RuntimeEvent]
) -> tuple[RuntimeEvent, ...]:
    """The ancestor's first ``high-water`` events, which must all carry the identity the edge
    names and the source's session."""
    high_water = edge.source_runtime_event_high_water
    prefix = tuple(committed[:high_water])
    edge_identity = (edge.source_invocation_id, edge.source_run_id, edge.source_turn_id)
    if (
        high_water == 0
        or len(committed) < high_water
        or any(
            (e.invocation_id, e.run_id, e.turn_id) != edge_identity
            or e.session_id != source.session_id
            for e in prefix
        )
    ):
        raise LineagePark(
            "runtime_identity_mismatch",
            f"ancestor {edge.source_run_id} does not hold the recorded boundary "
            f"(high-water {high_water}, {len(committed)} committed)",
            {"runId": edge.source_run_id, "highWater": high_water},
        )
    return prefix


def _check_edge_start(
    child: RunHeader,
    child_events: Sequence[RuntimeEvent],
    edge: _Edge,
    ancestor_prefix: Sequence[RuntimeEvent],
) -> None:
    """A V2 edge is checked against its start fact; a V1 edge must not have one."""
    if isinstance(edge, ContinuationSourceV2):
        _check_v2_edge(child, child_events, edge, ancestor_prefix)
    elif _v2_start(child_events) is not None:
        raise LineagePark(
            "runtime_lineage_start_mismatch",
            f"run {child.run_id} starts with a V2 continuation fact but its header is V1",
            {"runId": child.run_id},
        )


def _v2_start(events: Sequence[RuntimeEvent]) -> Any:
    first = events[0] if events else None
    if first is None or first.actions is None:
        return None
    return first.actions.continuation_start


def _check_v2_edge(
    child: RunHeader,
    child_events: Sequence[RuntimeEvent],
    edge: ContinuationSourceV2,
    ancestor_prefix: Sequence[RuntimeEvent],
) -> None:
    """A V2 edge is bound to its start fact and to the ancestor's prefix digest."""
    first = ancestor_prefix[0]
    digest = prefix_segment(ancestor_prefix)["prefixDigest"]
    if digest != edge.source_prefix_digest:
        raise LineagePark(
            "source_prefix_digest_mismatch",
            f"ancestor {edge.source_run_id} prefix digest differs from the one {child.run_id} "
            "recorded",
            {"runId": edge.source_run_id},
        )
    start = _v2_start(child_events)
    source = start.immediate_source if start is not None else None
    if (
        start is None
        or start.claim_id != edge.claim_id
        or start.boundary_digest != edge.boundary_digest
        or start.replay_manifest_digest != edge.replay_manifest_digest
        or source is None
        or (source.session_id, source.invocation_id, source.run_id, source.turn_id)
        != first.identity
        or source.high_water != edge.source_runtime_event_high_water
        or source.prefix_digest != edge.source_prefix_digest
    ):
        raise LineagePark(
            "runtime_lineage_start_mismatch",
            f"run {child.run_id}: continuation start does not match its header's source",
            {"runId": child.run_id},
        )


def check_v2_replay(lineage: Lineage) -> None:
    """Each V2 child's start must carry the manifest and provider-replay digests of the
    ancestors' replay as it is recomputed now (continuation.md#lineage, replay mismatch)."""
    for index in range(1, len(lineage.segments)):
        child_header = lineage.headers[index]
        if not isinstance(child_header.continuation_source, ContinuationSourceV2):
            continue
        start = _v2_start(lineage.segments[index])
        try:
            replay = build_composite_replay(lineage.segments[:index])
        except CodecInputError:
            replay = None
        if (
            replay is None
            or not replay.replayable
            or start is None
            or replay.manifest_digest != start.replay_manifest_digest
            or replay.provider_replay_digest != start.provider_replay_digest
        ):
            raise LineagePark(
                "runtime_lineage_replay_mismatch",
                f"run {child_header.run_id}: its ancestors no longer replay as recorded",
                {"runId": child_header.run_id},
            )


def prefix_segment(events: Sequence[RuntimeEvent]) -> dict[str, Any]:
    """The boundary segment (identity, position, prefix digest) of one run's committed prefix;
    ``events[i]`` has ``eventSeq`` ``i + 1``."""
    rows = [(i + 1, e.to_wire()) for i, e in enumerate(events)]
    return build_segment(events[0].spine, rows)


#: A run's committed events, by run id (``Ledger.read_run_events``).
EventsOf = Callable[[str], Sequence[RuntimeEvent]]


def checked_history_turns(value: object) -> int | None:
    """A ``history_turns`` setting as given: ``None`` (every earlier turn) or an ``int`` >= 0
    (at most that many, ``0``: no history); anything else is ``invalid_plan_request``."""
    if value is None or (type(value) is int and value >= 0):
        return value
    raise InvalidPlanRequestError(
        "history_turns must be None or a non-negative integer",
        detail={"historyTurns": repr(value)},
    )


def session_history(
    runs: Sequence[RunHeader],
    events_of: EventsOf,
    *,
    turn_of: str | None = None,
    max_turns: int | None = None,
    reserved_call_ids: Iterable[str] = (),
) -> tuple[RuntimeEvent, ...]:
    """The history prefix of a turn (module docstring): ``runs`` are the session's headers
    in creation order (``Ledger.list_runs``), ``turn_of`` a run of the turn (``None``: a new
    turn after every run)."""
    inline = [header for header in runs if header.is_session_inline]
    by_id = {header.run_id: header for header in inline}
    if turn_of is not None and turn_of not in by_id:
        if any(header.run_id == turn_of for header in runs):
            return ()  # a subagent's turn: the session's conversation is not its context
        raise SessionHistoryError(
            f"run {turn_of} is not a run of this session",
            detail={"runId": turn_of, "reason": "run_not_in_session"},
        )
    earlier = _before_turn(inline, by_id, turn_of)
    continued = {_source_id(h) for h in earlier if h.continuation_source is not None}
    ends = [h for h in earlier if h.run_id not in continued and h.status == "completed"]
    position = {header.run_id: n for n, header in enumerate(earlier)}
    ends.sort(key=lambda header: position[_lineage(header, by_id)[-1]])
    if max_turns is not None:
        ends = ends[len(ends) - max_turns :] if max_turns else []
    reader = _reader(earlier, events_of)
    used = set(reserved_call_ids)
    kept: list[tuple[RuntimeEvent, ...]] = []
    for header in reversed(ends):
        conversation = _conversation(reader, header, tuple(events_of(header.run_id)))
        ids = {e.function_call.id for e in conversation if e.function_call is not None}
        if ids & used:
            break
        used |= ids
        kept.append(conversation)
    return tuple(event for conversation in reversed(kept) for event in conversation)


def _source_id(header: RunHeader) -> str:
    edge = header.continuation_source
    return "" if edge is None else edge.source_run_id


def _lineage(header: RunHeader, by_id: dict[str, RunHeader]) -> list[str]:
    """The run ids of ``header``'s lineage, itself first, its root last (edges followed
    within the session; a cycle or a source outside it stops the walk)."""
    chain = [header.run_id]
    current = header
    while current.continuation_source is not None:
        source = by_id.get(_source_id(current))
        if source is None or source.run_id in chain:
            break
        chain.append(source.run_id)
        current = source
    return chain


def _before_turn(
    inline: list[RunHeader], by_id: dict[str, RunHeader], turn_of: str | None
) -> list[RunHeader]:
    """The runs created before the turn's root, none of its lineage (step 1)."""
    if turn_of is None:
        return inline
    lineage = _lineage(by_id[turn_of], by_id)
    root = next(n for n, h in enumerate(inline) if h.run_id == lineage[-1])
    return [h for h in inline[:root] if h.run_id not in lineage]


def _reader(earlier: list[RunHeader], events_of: EventsOf) -> RunReader:
    """A lineage reader over the slice: a run outside it is "missing" to the lineage."""
    by_id = {header.run_id: header for header in earlier}

    def header(run_id: str) -> RunHeader:
        if run_id not in by_id:
            raise RunNotFoundError(f"run {run_id} is not an earlier run of the session")
        return by_id[run_id]

    return RunReader(header, lambda run_id: list(events_of(run_id)), lambda _: list(earlier))


def _conversation(
    reader: RunReader, header: RunHeader, events: tuple[RuntimeEvent, ...]
) -> tuple[RuntimeEvent, ...]:
    """A counted turn as its model saw it, then its answer (step 3)."""
    if header.continuation_source is None:
        return _visible(provider_replay_subset(events))
    try:
        lineage = read_lineage(reader, header, events)
        check_v2_replay(lineage)
        replay = build_composite_replay(lineage.segments[:-1])
    except (LineagePark, CodecInputError) as exc:
        raise _unreplayable(header, getattr(exc, "code", "prefix_invalid")) from None
    if not replay.replayable:
        raise _unreplayable(header, str(replay.blocked_reason))
    return _visible(replay.runtime_context + tuple(provider_replay_subset(events[1:])))


def _visible(events: Iterable[RuntimeEvent]) -> tuple[RuntimeEvent, ...]:
    """Only what a provider format renders (the exporters' own item projection)."""
    return tuple(e for e in events if provider_replay_item(e.to_wire()) is not None)


def _unreplayable(header: RunHeader, reason: str) -> SessionHistoryError:
    return SessionHistoryError(
        f"earlier turn {header.run_id} no longer replays as its continuation recorded: {reason}",
        detail={"runId": header.run_id, "reason": reason},
    )
