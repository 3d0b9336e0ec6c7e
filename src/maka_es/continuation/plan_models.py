"""The continuation plan's inputs and outputs (docs/reference/continuation.md#plan).

Why apart from the gates: hosts, the planner, the executor and the telemetry all read these
models, while only the plan builder needs the gates; keeping them here lets every reader import
the contract without the gate logic. This is also the one place that says how a blocked
composite replay parks (:data:`REPLAY_PARK_REASONS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal

from pydantic import (
    Field,
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictStr,
    field_serializer,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from maka_es.continuation.composite_replay import ReplayBlockReason
from maka_es.resume.models import Diagnostic, ResumeRejectionReason
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.report import ReportModel
from maka_es.wire.run_header import RunHeader

__all__ = [
    "REPLAY_PARK_REASONS",
    "ContinuationBoundary",
    "ContinuationDisposition",
    "ContinuationFacts",
    "ContinuationIdentity",
    "ContinuationPlan",
    "ContinuationSafetySnapshot",
    "CwdPolicy",
    "RuntimeContinuation",
    "SnapshotCheckpoint",
    "TerminalPolicy",
    "WorkspaceCheckpointFact",
    "replay_park_reason",
]

ContinuationDisposition = Literal["continue", "park"]
CwdPolicy = Literal["strict", "relocatable"]
TerminalPolicy = Literal["strict", "status_only"]
_HighWater = Annotated[int, Field(ge=0, le=2**53 - 1, strict=True)]

#: The park reason of each composite replay block reason (docs/reference/continuation.md#gates):
#: unsettled or corrupt tool facts mean the durable ledger cannot be trusted as a boundary at
#: all; the provider-history reasons park under their own names. The only copy of this mapping.
REPLAY_PARK_REASONS: Final[Mapping[ReplayBlockReason, ResumeRejectionReason]] = MappingProxyType(
    {
        "provider_replay_non_suffix_gap": "provider_replay_non_suffix_gap",
        "provider_replay_unsupported": "provider_replay_unsupported",
        "tool_recovery_corruption": "runtime_ledger_unreadable",
        "tool_recovery_unsettled": "runtime_ledger_unreadable",
    }
)


def replay_park_reason(reason: ReplayBlockReason) -> ResumeRejectionReason:
    """The single park reason a composite replay blocked for ``reason`` reports."""
    return REPLAY_PARK_REASONS[reason]


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------
class ContinuationIdentity(ReportModel):
    """The fresh execution identity the continuation Run will use."""

    invocation_id: StrictStr
    run_id: StrictStr
    turn_id: StrictStr


class WorkspaceCheckpointFact(ReportModel):
    """A host-reported workspace checkpoint (Phase 4 is design-only; this is a trusted fact)."""

    ref: StrictStr | None = None
    restored: StrictBool
    runtime_event_high_water: _HighWater


class ContinuationFacts(ReportModel):
    """Host observations the ledger cannot prove (docs/reference/continuation.md#gates; the
    inspector that reports them: docs/reference/continuation.md#host-facts).

    Accepts snake_case attributes or camelCase keys (``sourceCwd``, ``continuationIdentity``
    ``{invocationId, runId, turnId}``, ``workspaceCheckpoint {ref, restored,
    runtimeEventHighWater}``, ...).

    ``source_header``: when given, gate (h) also checks the header against the ledger's
    terminal fact (see ``terminal_policy``); when absent, gate (h) relies on
    ``terminal_repair_succeeded`` alone (the host's own verdict). ``source_cwd`` and the
    workspace identities are always taken from these facts, never from the header.
    A missing (``None``) workspace identity on either side is a missing fact and parks with
    ``workspace_identity_missing`` at gate (j).
    """

    ledger_readable: StrictBool = True
    terminal_repair_succeeded: StrictBool = True
    source_cwd: StrictStr
    current_cwd: StrictStr
    source_workspace_identity: StrictStr | None
    current_workspace_identity: StrictStr | None
    background_operations_settled: StrictBool
    available_tool_names: list[StrictStr]
    continuation_identity: ContinuationIdentity
    workspace_checkpoint: WorkspaceCheckpointFact | None = None
    expected_runtime_event_high_water: _HighWater | None = None
    cwd_policy: CwdPolicy = "strict"
    terminal_policy: TerminalPolicy = "strict"
    source_header: RunHeader | None = None


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


class SnapshotCheckpoint(ReportModel):
    """The checkpoint a continuation was planned against (ref + covered high-water)."""

    ref: str
    runtime_event_high_water: int


class ContinuationSafetySnapshot(ReportModel):
    """The host facts the plan relied on; execution revalidates them
    (docs/reference/continuation.md#revalidation)."""

    workspace_identity: str
    background_operations_settled: Literal[True]
    available_tool_names: tuple[str, ...]
    workspace_checkpoint: SnapshotCheckpoint | None = None


class ContinuationBoundary(ReportModel):
    """The boundary cursor a continuation is bound to (docs/reference/wire.md#boundary-digests):
    every lineage segment (``runtime_prefix_segment_v1``, oldest → source) and their manifest
    digest. Execution re-reads exactly these segments before it claims anything."""

    protocol: Literal["runtime_boundary_cursor_v1"] = "runtime_boundary_cursor_v1"
    segments: tuple[dict[str, JsonValue], ...]
    manifest_digest: str


#: Fields only a composite (HEAD) plan has; a legacy plan omits them from its dump.
_COMPOSITE_ONLY_FIELDS = (
    "claim_id",
    "source_runtime_context",
    "boundary",
    "provider_replay_digest",
    "provider_projection_version",
)


class RuntimeContinuation(ReportModel):
    """Fresh target identity, the source boundary and the validated replay context.

    A composite (HEAD) plan also carries what execution must find unchanged and what the claim
    will record (docs/reference/continuation.md#plan): ``claimId`` (derived from the source
    boundary, so every planner of one boundary names the same claim), ``boundary``,
    ``providerReplayDigest``, ``providerProjectionVersion`` and, when there are ancestors,
    ``sourceRuntimeContext`` (the source segment's own replay events). A legacy plan has none of
    them and its dump omits the keys.
    """

    invocation_id: str
    run_id: str
    turn_id: str
    source_invocation_id: str
    source_run_id: str
    source_turn_id: str
    source_runtime_event_high_water: int
    claim_id: str | None = None
    source_runtime_context: tuple[RuntimeEvent, ...] | None = None
    runtime_context: tuple[RuntimeEvent, ...]
    boundary: ContinuationBoundary | None = None
    provider_replay_digest: str | None = None
    provider_projection_version: int | None = None
    safety_snapshot: ContinuationSafetySnapshot

    @field_serializer("runtime_context", "source_runtime_context")
    def _events_as_wire(
        self, events: tuple[RuntimeEvent, ...] | None
    ) -> list[dict[str, Any]] | None:
        return None if events is None else [event.to_wire() for event in events]

    @model_serializer(mode="wrap")
    def _omit_absent_composite_fields(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in _COMPOSITE_ONLY_FIELDS:
            if getattr(self, name) is None:
                data.pop(to_camel(name) if info.by_alias else name, None)
        return data


class ContinuationPlan(ReportModel):
    """``continue`` with a :class:`RuntimeContinuation`, or ``park`` with stable reasons."""

    disposition: ContinuationDisposition
    rejection_reasons: tuple[ResumeRejectionReason, ...]
    diagnostics: tuple[Diagnostic, ...]
    continuation: RuntimeContinuation | None = None
