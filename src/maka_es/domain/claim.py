"""ContinuationClaim: a source boundary is continued at most once, enforced by the store.

Why an aggregate of its own: "two resumers must not both win" cannot be an in-process lock
(the reference's guard is per process). The claim's stream id is derived from the source
boundary itself (session, source run, high-water, prefix digest), so two processes (or two
machines on one PostgreSQL database) that try to claim the same boundary both try to write
version 1 of the *same* stream; the store's ``(originator_id, originator_version)`` uniqueness
lets exactly one of them commit.

This module also builds the facts the claim's transaction carries: the target Run's header
(``continuationSource`` V2) and its event 1, the V2 continuation-start fact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from maka_es.domain.codec import canonical_json
from maka_es.domain.events import TOOL_BOUNDARY_PROTOCOL_V1, RuntimeEvent
from maka_es.domain.facts import ContinuationClaimed, claim_stream_id
from maka_es.domain.run_header import RunHeader
from maka_es.errors import StoreCorruptionError


def claim_id_for(session_id: str, run_id: str, high_water: int, prefix_digest: str) -> str:
    """``claim_<32 hex>`` of sha256 over the boundary's identity, position and prefix digest."""
    material = canonical_json([session_id, run_id, high_water, prefix_digest])
    return "claim_" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class SourceBoundary:
    """The committed boundary a continuation starts from, with its digests (spec §5.2)."""

    session_id: str
    invocation_id: str
    run_id: str
    turn_id: str
    high_water: int
    prefix_digest: str
    manifest_digest: str
    provider_replay_digest: str

    @property
    def claim_id(self) -> str:
        """Deterministic claim id: every claimer of this boundary computes the same one."""
        return claim_id_for(self.session_id, self.run_id, self.high_water, self.prefix_digest)

    def to_wire(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
            "highWater": self.high_water,
            "prefixDigest": self.prefix_digest,
            "manifestDigest": self.manifest_digest,
            "providerReplayDigest": self.provider_replay_digest,
        }


@dataclass(frozen=True, slots=True)
class ContinuationTarget:
    """The fresh identity of the continuation run."""

    invocation_id: str
    run_id: str
    turn_id: str


def continuation_header(
    source: RunHeader,
    boundary: SourceBoundary,
    target: ContinuationTarget,
    *,
    workspace_identity: str,
    claimed_at: float,
) -> RunHeader:
    """The target Run's header at claim time (spec §2): status ``created``, parent ids, the V2
    ``continuationSource``, execution settings copied from the source."""
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
    provenance: str = "runtime_admission",
) -> RuntimeEvent:
    """Event 1 of the continuation run: the V2 start fact (spec §4.4). A runtime-admission
    start also declares the tool-boundary protocol, so any call in the continuation that never
    crossed T1 is provably undispatched."""
    actions: dict[str, Any] = {
        "continuationStart": {
            "protocol": "continuation_start_v2",
            "provenance": provenance,
            "claimId": boundary.claim_id,
            "boundaryDigest": boundary.manifest_digest,
            "immediateSource": {
                "sessionId": boundary.session_id,
                "invocationId": boundary.invocation_id,
                "runId": boundary.run_id,
                "turnId": boundary.turn_id,
                "highWater": boundary.high_water,
                "prefixDigest": boundary.prefix_digest,
            },
            "replayManifestDigest": boundary.manifest_digest,
            "providerProjectionVersion": 1,
            "providerReplayDigest": boundary.provider_replay_digest,
        }
    }
    if provenance == "runtime_admission":
        actions["runtimeProtocol"] = {"toolBoundary": TOOL_BOUNDARY_PROTOCOL_V1}
    return RuntimeEvent.model_validate(
        {
            "id": event_id,
            "sessionId": boundary.session_id,
            "invocationId": target.invocation_id,
            "runId": target.run_id,
            "turnId": target.turn_id,
            "ts": ts,
            "partial": False,
            "role": "system",
            "author": "system",
            "actions": actions,
        }
    )


class ContinuationClaim:
    """A committed claim (read side)."""

    __slots__ = ("boundary", "claim_id", "claimed_at", "id", "start_event_id", "target", "version")

    def __init__(self, fact: ContinuationClaimed) -> None:
        self.id = fact.originator_id
        self.version = fact.originator_version
        self.claim_id = fact.claim_id
        self.boundary = dict(fact.boundary)
        self.target = dict(fact.target)
        self.start_event_id = fact.start_event_id
        self.claimed_at = fact.claimed_at

    @property
    def target_run_id(self) -> str:
        return str(self.target["runId"])

    @staticmethod
    def create(
        boundary: SourceBoundary, target: ContinuationTarget, start_event_id: str, claimed_at: float
    ) -> ContinuationClaimed:
        return ContinuationClaimed(
            originator_id=claim_stream_id(boundary.claim_id),
            originator_version=1,
            claim_id=boundary.claim_id,
            boundary=boundary.to_wire(),
            target={
                "sessionId": boundary.session_id,
                "invocationId": target.invocation_id,
                "runId": target.run_id,
                "turnId": target.turn_id,
            },
            start_event_id=start_event_id,
            claimed_at=claimed_at,
        )


def project_claim(
    claim: ContinuationClaim | None, facts: Iterable[Any]
) -> ContinuationClaim | None:
    for fact in facts:
        if claim is not None or not isinstance(fact, ContinuationClaimed):
            raise StoreCorruptionError(f"unexpected fact {type(fact).__name__} in a claim stream")
        claim = ContinuationClaim(fact)
    return claim
