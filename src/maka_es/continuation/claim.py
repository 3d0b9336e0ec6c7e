"""ContinuationClaim: a source boundary is continued at most once, enforced by the store.

Why an aggregate of its own: "two resumers must not both win" cannot be an in-process lock
(the reference's guard is per process). The claim's stream id is derived from the source
boundary itself (session, source run, high-water, prefix digest), so two processes (or two
machines on one PostgreSQL database) that try to claim the same boundary both try to write
version 1 of the *same* stream; the store's ``(originator_id, originator_version)`` uniqueness
lets exactly one of them commit.

This module also builds the facts the claim's transaction carries: the target Run's header
(``continuationSource`` V2) and its event 1, the V2 continuation-start fact, and the record of
which writer committed that start (the claim is the authority on the start's kind).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from maka_es.continuation.boundary import PROVIDER_REPLAY_PROJECTION_VERSION
from maka_es.continuation.composite_replay import CompositeReplay
from maka_es.errors import ContinuationStartConflictError, StoreCorruptionError
from maka_es.ledger.facts import (
    ContinuationClaimed,
    ContinuationStartRecorded,
    SourceBoundary,
    StartKind,
    claim_id_for,
    claim_stream_id,
)
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import continuation_start_fact
from maka_es.wire.run_header import RunHeader

__all__ = [
    "ContinuationClaim",
    "ContinuationTarget",
    "SourceBoundary",
    "claim_id_for",
    "continuation_header",
    "continuation_start_event",
    "project_claim",
    "record_start_fact",
    "source_boundary",
]


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


@dataclass(frozen=True, slots=True)
class ContinuationTarget:
    """The fresh identity of the continuation run."""

    invocation_id: str
    run_id: str
    turn_id: str

    def spine(self, session_id: str) -> dict[str, str]:
        """The target's wire spine: a continuation stays in its source's session."""
        return {
            "sessionId": session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
        }


def continuation_header(
    source: RunHeader,
    boundary: SourceBoundary,
    target: ContinuationTarget,
    *,
    workspace_identity: str,
    claimed_at: float,
) -> RunHeader:
    """The target Run's header at claim time (docs/reference/continuation.md#target-header):
    status ``created``, parent ids, the V2 ``continuationSource``, execution settings copied from
    the source."""
    wire: dict[str, Any] = {
        "runId": target.run_id,
        "sessionId": boundary.session_id,
        "turnId": target.turn_id,
        "invocationId": target.invocation_id,
        "status": "created",
        "backendKind": source.backend_kind,
        "llmConnectionSlug": source.llm_connection_slug,
        "modelId": source.model_id,
        "cwd": source.cwd,
        "permissionMode": source.permission_mode,
        "createdAt": claimed_at,
        "updatedAt": claimed_at,
        "parentRunId": boundary.run_id,
        "parentTurnId": boundary.turn_id,
        "workspaceIdentity": workspace_identity,
        "continuationSource": {
            "protocol": "continuation_source_v2",
            "claimId": boundary.claim_id,
            "boundaryDigest": boundary.manifest_digest,
            "sourceInvocationId": boundary.invocation_id,
            "sourceRunId": boundary.run_id,
            "sourceTurnId": boundary.turn_id,
            "sourceRuntimeEventHighWater": boundary.high_water,
            "sourcePrefixDigest": boundary.prefix_digest,
            "replayManifestDigest": boundary.manifest_digest,
        },
    }
    return RunHeader.model_validate(wire)


def continuation_start_event(
    boundary: SourceBoundary,
    target: ContinuationTarget,
    *,
    event_id: str,
    ts: float,
    provenance: StartKind = "runtime_admission",
    tool_boundary_marker: bool = True,
) -> RuntimeEvent:
    """Event 1 of the continuation run for a claimed boundary: the V2 start fact
    (continuation.md#start-fact), spelled by :func:`maka_es.wire.facts.continuation_start_fact`.
    """
    return continuation_start_fact(
        target.spine(boundary.session_id),
        event_id=event_id,
        ts=ts,
        provenance=provenance,
        claim_id=boundary.claim_id,
        boundary_digest=boundary.manifest_digest,
        source_spine={
            "sessionId": boundary.session_id,
            "invocationId": boundary.invocation_id,
            "runId": boundary.run_id,
            "turnId": boundary.turn_id,
        },
        source_high_water=boundary.high_water,
        source_prefix_digest=boundary.prefix_digest,
        provider_replay_digest=boundary.provider_replay_digest,
        tool_boundary_marker=tool_boundary_marker,
    )


class ContinuationClaim:
    """A committed claim (read side): version 1 claims the boundary; version 2, when present,
    records the start fact that began the target and which writer committed it."""

    __slots__ = (
        "boundary",
        "claim_id",
        "claimed_at",
        "id",
        "planned_start_event_id",
        "provider_projection_version",
        "recorded_start",
        "target",
        "target_header_wire",
        "version",
    )

    def __init__(self, fact: ContinuationClaimed) -> None:
        self.id = fact.originator_id
        self.version = fact.originator_version
        self.claim_id = fact.claim_id
        self.boundary = fact.boundary
        self.target = dict(fact.target)
        self.planned_start_event_id = fact.start_event_id
        self.claimed_at = fact.claimed_at
        self.provider_projection_version = fact.provider_projection_version
        self.target_header_wire = fact.target_run_header
        self.recorded_start: ContinuationStartRecorded | None = None

    def apply_start(self, fact: ContinuationStartRecorded) -> None:
        if self.recorded_start is not None or fact.claim_id != self.claim_id:
            raise StoreCorruptionError(f"claim {self.claim_id}: unexpected start record")
        self.recorded_start = fact
        self.version = fact.originator_version

    @property
    def target_run_id(self) -> str:
        return str(self.target["runId"])

    @property
    def source_boundary(self) -> SourceBoundary:
        """The boundary this claim recorded (the typed stored model)."""
        return self.boundary

    @property
    def target_identity(self) -> ContinuationTarget:
        return ContinuationTarget(
            str(self.target["invocationId"]), self.target_run_id, str(self.target["turnId"])
        )

    @property
    def target_run_header(self) -> RunHeader | None:
        """The target's header as claimed (``None`` for claims written before it was kept)."""
        if self.target_header_wire is None:
            return None
        return RunHeader.model_validate(self.target_header_wire)

    @property
    def start_kind(self) -> StartKind | None:
        """Who committed the target's start (``None``: no start recorded with the claim)."""
        return None if self.recorded_start is None else self.recorded_start.start_kind

    @property
    def start_event_id(self) -> str:
        """The id the target's first event must have: the recorded start's, else the one the
        claimer planned."""
        if self.recorded_start is not None:
            return self.recorded_start.start_event_id
        return self.planned_start_event_id

    def expected_start(self) -> tuple[str, StartKind]:
        """``(event id, start kind)`` the target's first event must match.

        A claim with no start record was written either before start kinds were recorded
        (then its start, if any, is the executor's runtime admission, committed in the claim's
        own transaction under the id the claim names) or by a claimer that never started the
        target (then the target has no start and needs repair anyway).
        """
        if self.recorded_start is not None:
            return self.recorded_start.start_event_id, self.recorded_start.start_kind
        return self.planned_start_event_id, "runtime_admission"

    def record_start(self, start: RuntimeEvent, start_kind: StartKind) -> ContinuationStartRecorded:
        """The fact recording ``start`` as this claim's start, committed by a ``start_kind``
        writer; save it in the same transaction as the start. Refused (typed, nothing decided)
        when a start is already recorded or the start is not this claim's target start."""
        if self.recorded_start is not None:
            raise ContinuationStartConflictError(
                f"claim {self.claim_id} already recorded start "
                f"{self.recorded_start.start_event_id}",
                detail={"claimId": self.claim_id, "eventId": start.id},
            )
        target = self.target_identity
        if (start.session_id, start.invocation_id, start.run_id, start.turn_id) != (
            str(self.target["sessionId"]),
            target.invocation_id,
            target.run_id,
            target.turn_id,
        ):
            raise ContinuationStartConflictError(
                f"event {start.id} is not on the target of claim {self.claim_id}",
                detail={"claimId": self.claim_id, "eventId": start.id},
            )
        return record_start_fact(self.claim_id, start, start_kind, version=self.version + 1)

    @staticmethod
    def create(
        boundary: SourceBoundary,
        target: ContinuationTarget,
        start_event_id: str,
        claimed_at: float,
        *,
        target_run_header: RunHeader | None = None,
    ) -> ContinuationClaimed:
        return ContinuationClaimed(
            originator_id=claim_stream_id(boundary.claim_id),
            originator_version=1,
            claim_id=boundary.claim_id,
            boundary=boundary,
            target=target.spine(boundary.session_id),
            start_event_id=start_event_id,
            claimed_at=claimed_at,
            provider_projection_version=PROVIDER_REPLAY_PROJECTION_VERSION,
            target_run_header=None if target_run_header is None else target_run_header.to_wire(),
        )


def record_start_fact(
    claim_id: str, start: RuntimeEvent, start_kind: StartKind, *, version: int = 2
) -> ContinuationStartRecorded:
    """Record ``start`` as the start of claim ``claim_id``, committed by a ``start_kind``
    writer (``runtime_admission``: the executor, in the claim's own save; ``claim_repair``:
    startup recovery). The start must be a V2 start of this claim whose ``provenance`` mirror
    says the same kind."""
    fact = start.actions.continuation_start if start.actions is not None else None
    if fact is None or fact.claim_id != claim_id or fact.provenance != start_kind:
        raise ContinuationStartConflictError(
            f"event {start.id} is not a {start_kind} start of claim {claim_id}",
            detail={"claimId": claim_id, "eventId": start.id, "startKind": start_kind},
        )
    return ContinuationStartRecorded(
        originator_id=claim_stream_id(claim_id),
        originator_version=version,
        claim_id=claim_id,
        start_event_id=start.id,
        start_kind=start_kind,
    )


def project_claim(
    claim: ContinuationClaim | None, facts: Iterable[Any]
) -> ContinuationClaim | None:
    for fact in facts:
        if claim is None and isinstance(fact, ContinuationClaimed):
            claim = ContinuationClaim(fact)
        elif claim is not None and isinstance(fact, ContinuationStartRecorded):
            claim.apply_start(fact)
        else:
            raise StoreCorruptionError(f"unexpected fact {type(fact).__name__} in a claim stream")
    return claim
