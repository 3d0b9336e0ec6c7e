"""The authoritative continuation planner over the store (spec §4.2 and §4.3 steps 1-8).

Why separate from the pure gates: deciding *which* run to continue, reading its lineage through
earlier continuations, and asking the host for its facts are reads against the store and the
host. This module does those reads, turns every failure into a single stable park reason, and
then hands the committed evidence to the pure ``build_continuation_plan``. It never writes:
planning is not a lease, and two planners may plan the same boundary (execution arbitrates).

Order (spec §4.3): source header; lineage and identity; a blocked composite replay; a durable
claim on the boundary, checked against the recomputed plan and classified
(``continuation_claims``); an unclaimed run that already continues it; fresh ids; the gates. A
store that cannot be read parks (``source_run_unreadable``, or
``continuation_authority_unavailable`` for the claim lookup); it is never mistaken for a verdict
about the data, and nothing escapes raw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from maka_es.continuation.boundary import build_segment
from maka_es.continuation.claim import claim_id_for
from maka_es.continuation.composite_replay import CompositeReplay, build_composite_replay
from maka_es.continuation.existing_claims import (
    RunReader,
    continuations_of,
    durable_claim,
    is_continuation_start,
    park,
    unclaimed_continuation,
)
from maka_es.continuation.gates import (
    ContinuationFacts,
    ContinuationIdentity,
    ContinuationPlan,
    CwdPolicy,
    TerminalPolicy,
    build_continuation_plan,
    replay_blocked_plan,
)
from maka_es.continuation.host import HostInspector, HostObservation
from maka_es.errors import LineagePark, MakaError
from maka_es.ledger.faults import STORE_FAULTS, store_fault_class
from maka_es.wire.codec import CodecInputError, js_sort_key
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import ContinuationSourceV2, RunHeader

__all__ = [
    "FEATURE_FLAG",
    "MAX_LINEAGE_SEGMENTS",
    "ContinuationPlanner",
    "Lineage",
    "LineagePark",
    "PlannerSettings",
    "RunReader",
    "boundary_claim_id",
    "check_v2_replay",
    "continuations_of",
    "is_continuation_start",
    "park",
    "prefix_segment",
    "read_lineage",
]

FEATURE_FLAG = "MAKA_RUNTIME_SAFE_BOUNDARY_RESUME"
#: Segments a lineage may hold before another hop is refused (spec §4.3 step 2).
MAX_LINEAGE_SEGMENTS = 64
RESUMABLE_STATUSES = frozenset({"failed", "cancelled"})


@dataclass(frozen=True)
class Lineage:
    """Segments oldest -> immediate source, and the headers they came from."""

    segments: tuple[tuple[RuntimeEvent, ...], ...]
    headers: tuple[RunHeader, ...]


def _edge_identity(source: Any) -> tuple[str, str, str]:
    return (source.source_invocation_id, source.source_run_id, source.source_turn_id)


def read_lineage(
    reader: RunReader, source: RunHeader, source_events: Sequence[RuntimeEvent]
) -> Lineage:
    """Follow ``continuationSource`` edges from the source run to the root, pinning every
    ancestor at the high-water its child recorded (spec §4.3 step 2)."""
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
        try:
            ancestor = reader.header(edge.source_run_id)
            committed = reader.events(edge.source_run_id)
        except STORE_FAULTS:
            raise  # could not read is not "missing": the caller parks source_run_unreadable
        except MakaError as exc:
            raise LineagePark(
                "runtime_lineage_missing",
                f"ancestor {edge.source_run_id} of {child.run_id} cannot be read: {exc.code}",
                {"runId": edge.source_run_id},
            ) from None
        high_water = edge.source_runtime_event_high_water
        prefix = tuple(committed[:high_water])
        if (
            high_water == 0
            or len(committed) < high_water
            or any(
                (e.invocation_id, e.run_id, e.turn_id) != _edge_identity(edge)
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
        if isinstance(edge, ContinuationSourceV2):
            _check_v2_edge(child, segments[-1], edge, prefix)
        elif _v2_start(segments[-1]) is not None:
            raise LineagePark(
                "runtime_lineage_start_mismatch",
                f"run {child.run_id} starts with a V2 continuation fact but its header is V1",
                {"runId": child.run_id},
            )
        segments.append(prefix)
        headers.append(ancestor)
        seen.add(ancestor.run_id)
        child = ancestor
    segments.reverse()
    headers.reverse()
    return Lineage(tuple(segments), tuple(headers))


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
        != (first.session_id, first.invocation_id, first.run_id, first.turn_id)
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
    ancestors' replay as it is recomputed now (spec §4.3 step 2, replay mismatch)."""
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


@dataclass(frozen=True)
class PlannerSettings:
    cwd_policy: CwdPolicy = "strict"
    terminal_policy: TerminalPolicy = "strict"


class ContinuationPlanner:
    """Plans a continuation of a session from the store and the host (reads only)."""

    def __init__(
        self,
        reader: RunReader,
        inspector: HostInspector | None,
        new_id: Callable[[], str],
        *,
        feature_enabled: bool,
        settings: PlannerSettings | None = None,
    ) -> None:
        self.reader = reader
        self.inspector = inspector
        self.new_id = new_id
        self.feature_enabled = feature_enabled
        self.settings = settings or PlannerSettings()

    def candidate(self, session_id: str) -> RunHeader | None:
        """Newest (createdAt desc, runId desc) failed/cancelled session-inline run."""
        candidates = [
            header
            for header in self.reader.runs_of_session(session_id)
            if header.status in RESUMABLE_STATUSES and header.is_session_inline
        ]
        if not candidates:
            return None
        return max(candidates, key=lambda h: (h.created_at, js_sort_key(h.run_id)))

    def candidate_or_none(self, session_id: str) -> RunHeader | None:
        """The candidate, or ``None`` when there is none or the session cannot be read."""
        try:
            return self._candidate(session_id)
        except STORE_FAULTS:
            return None

    def _candidate(self, session_id: str) -> RunHeader | None:
        """The candidate; store faults propagate (the caller parks them)."""
        try:
            return self.candidate(session_id)
        except STORE_FAULTS:
            raise
        except MakaError:
            return None

    def plan(
        self,
        session_id: str,
        session_cwd: str,
        source_run_id: str | None = None,
        *,
        expected_high_water: int | None = None,
    ) -> ContinuationPlan:
        """Spec §4.2: feature flag, candidate, host observation; then the planner (§4.3).

        Never raises for what the store holds or fails to deliver: a store that cannot be read
        parks ``source_run_unreadable`` (claims: ``continuation_authority_unavailable``).
        ``expected_high_water`` is the caller's view of the source run's committed
        high-water; a different one parks ``runtime_offset_mismatch``.
        """
        if not self.feature_enabled:
            return park("resume_feature_disabled", f"{FEATURE_FLAG} is not exactly '1'")
        try:
            return self._plan(session_id, session_cwd, source_run_id, expected_high_water)
        except STORE_FAULTS as exc:
            return park(
                "source_run_unreadable",
                f"the store could not be read: {type(exc).__name__}",
                {"sourceRunId": source_run_id or "", "errorClass": store_fault_class(exc)},
            )

    def _plan(
        self,
        session_id: str,
        session_cwd: str,
        source_run_id: str | None,
        expected_high_water: int | None,
    ) -> ContinuationPlan:
        if source_run_id is None:
            candidate = self._candidate(session_id)
            if candidate is None:
                return park(
                    "resume_candidate_missing",
                    f"session {session_id} has no failed or cancelled session-inline run",
                )
            source_run_id = candidate.run_id
        if self.inspector is None:
            return park("safety_observation_unavailable", "no host inspector is configured")
        try:
            header = self.reader.header(source_run_id)
        except STORE_FAULTS:
            raise
        except MakaError as exc:
            return park(
                "source_run_unreadable",
                f"run {source_run_id} cannot be read: {exc.code}",
                {"sourceRunId": source_run_id},
            )
        if header.workspace_identity is None:
            return park(
                "workspace_identity_missing",
                f"run {source_run_id} recorded no workspace identity",
                {"sourceRunId": source_run_id},
            )
        try:
            observation = self.inspector.inspect(session_id, session_cwd)
        except Exception as exc:  # the host could not produce its facts: fail closed
            return park(
                "safety_observation_unavailable",
                f"host inspection failed: {type(exc).__name__}",
                {"errorClass": getattr(exc, "code", type(exc).__name__)},
            )
        source = self._read_source(session_id, header)
        if isinstance(source, ContinuationPlan):
            return source
        events, replay = source
        try:  # steps 5 and 6: is this boundary already continued?
            existing = durable_claim(self.reader, replay) or unclaimed_continuation(
                self.reader, session_id, header.run_id, len(events)
            )
        except STORE_FAULTS as exc:
            return park(
                "continuation_authority_unavailable",
                f"continuation claims cannot be read: {type(exc).__name__}",
                {"errorClass": store_fault_class(exc)},
            )
        if existing is not None:
            return existing
        return self._gates(header, events, replay, session_cwd, observation, expected_high_water)

    def _read_source(
        self, session_id: str, header: RunHeader
    ) -> ContinuationPlan | tuple[list[RuntimeEvent], CompositeReplay]:
        """Spec §4.3 steps 2-4: lineage, identity, composite replay (single-reason parks)."""
        try:
            events = self.reader.events(header.run_id)
        except STORE_FAULTS:
            raise
        except MakaError as exc:
            return park(
                "runtime_ledger_unreadable",
                f"run {header.run_id} ledger cannot be read: {exc.code}",
            )
        if not events:
            return park("runtime_ledger_unreadable", f"run {header.run_id} has no events")
        try:
            lineage = read_lineage(self.reader, header, events)
            check_v2_replay(lineage)
        except LineagePark as parked:
            return park(parked.code, str(parked), parked.detail)
        first = events[0]
        if (first.session_id, first.run_id) != (session_id, header.run_id):
            return park(
                "runtime_identity_mismatch",
                f"run {header.run_id} ledger belongs to {first.session_id}/{first.run_id}",
            )
        try:
            replay: CompositeReplay = build_composite_replay(lineage.segments)
        except CodecInputError as exc:
            return park("runtime_ledger_unreadable", f"lineage is not one immutable chain: {exc}")
        if not replay.replayable:  # step 4 comes before any claim is looked at
            return replay_blocked_plan(replay)
        return events, replay

    def _gates(
        self,
        header: RunHeader,
        events: list[RuntimeEvent],
        replay: CompositeReplay,
        current_cwd: str,
        observation: HostObservation,
        expected_high_water: int | None,
    ) -> ContinuationPlan:
        """Steps 7 and 8: fresh ids, then every gate (multi-reason)."""
        identity = ContinuationIdentity(
            invocation_id=self.new_id(), run_id=self.new_id(), turn_id=self.new_id()
        )
        facts = ContinuationFacts(
            source_cwd=header.cwd,
            current_cwd=current_cwd,
            source_workspace_identity=header.workspace_identity,
            current_workspace_identity=observation.workspace_identity,
            background_operations_settled=observation.background_operations_settled,
            available_tool_names=list(observation.available_tool_names),
            continuation_identity=identity,
            workspace_checkpoint=observation.workspace_checkpoint,
            expected_runtime_event_high_water=expected_high_water,
            cwd_policy=self.settings.cwd_policy,
            terminal_policy=self.settings.terminal_policy,
            source_header=header,
        )
        return build_continuation_plan(events, facts, replay=replay)


def prefix_segment(events: Sequence[RuntimeEvent]) -> dict[str, Any]:
    """The boundary segment (identity, position, prefix digest) of one run's committed prefix;
    ``events[i]`` has ``eventSeq`` ``i + 1``."""
    first = events[0]
    identity = {
        "sessionId": first.session_id,
        "invocationId": first.invocation_id,
        "runId": first.run_id,
        "turnId": first.turn_id,
    }
    return build_segment(identity, [(i + 1, e.to_wire()) for i, e in enumerate(events)])


def boundary_claim_id(events: Sequence[RuntimeEvent]) -> str:
    """The claim id of the boundary at the end of ``events`` (one run's committed prefix)."""
    first = events[0]
    digest = str(prefix_segment(events)["prefixDigest"])
    return claim_id_for(first.session_id, first.run_id, len(events), digest)
