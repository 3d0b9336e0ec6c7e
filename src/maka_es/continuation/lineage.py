"""A run's lineage: its ancestors through earlier continuations, pinned and checked.

Why a library of its own: the planner, execution revalidation and startup recovery all need the
same answer to "which committed prefixes does this run continue, and are they still the ones
its continuation recorded?". Reading it in one place keeps the checks and their order single
(docs/reference/continuation.md#lineage): each failure is a :class:`LineagePark` with one
stable code that the planner turns into a park and revalidation into a refusal. Store faults
are not a verdict about the data: they propagate unchanged, and the caller decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from maka_es.continuation.claims import RunReader
from maka_es.continuation.model.boundary import build_segment
from maka_es.continuation.model.replay import build_composite_replay
from maka_es.errors import LineagePark, MakaError
from maka_es.ledger.ports import STORE_FAULTS
from maka_es.wire.codec import CodecInputError
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import ContinuationSourceV1, ContinuationSourceV2, RunHeader

__all__ = [
    "MAX_LINEAGE_SEGMENTS",
    "Lineage",
    "LineagePark",
    "check_v2_replay",
    "prefix_segment",
    "read_lineage",
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
