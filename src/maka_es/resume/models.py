"""Output models of the pure projections (resolver decisions, resume plans) and input coercion.

Why separate models instead of plain dicts: the resume plan and the resolution are contracts that
hosts and later phases consume by key (``toolCallId``, ``settlementOrigin`` ...). Frozen pydantic
models give one exact key set, snake_case in Python and camelCase on the wire, and make it
impossible for a consumer to edit a decision after the fact. Unlike the ``RuntimeEvent`` wire
models, absent optionals dump as ``null``: a value always has every key, so a reader never has
to distinguish "missing" from "not applicable".
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import JsonValue, field_serializer

from maka_es.tooljournal.model.resolver import (
    DecisionReason,
    DecisionStatus,
    Resolution,
    SettlementOrigin,
    ToolDecision,
)
from maka_es.tooljournal.model.scanner import ResolverIssue, ResolverIssueCode, ToolBoundaryProtocol
from maka_es.wire.events import RuntimeEvent, RuntimeEventInput, ValueModel, decode_events

__all__ = [
    "DecisionReason",
    "DecisionStatus",
    "Diagnostic",
    "Resolution",
    "ResolverIssue",
    "ResolverIssueCode",
    "ResumePlan",
    "RuntimeEventInput",
    "SettlementOrigin",
    "ToolBoundaryProtocol",
    "ToolDecision",
    "ToolOperation",
    "decode_events",
]


ToolOperationStatus = Literal[
    "succeeded", "failed", "indeterminate", "not_dispatched", "parked", "corruption"
]

ResumeDisposition = Literal["safe_replay", "blocked"]

#: Every park reason of the resume contract (docs/reference/codes.md#park-reasons). Phase 0
#: only emits the first two.
ResumeRejectionReason = Literal[
    "runtime_offset_mismatch",
    "dangling_tool_state",
    "pending_permission",
    "workspace_identity_mismatch",
    "background_operation_pending",
    "tool_catalog_mismatch",
    "runtime_ledger_unreadable",
    "terminal_repair_failed",
    "workspace_cwd_mismatch",
    "runtime_ledger_empty",
    "runtime_identity_mismatch",
    "continuation_identity_reused",
    "provider_resume_head_unsupported",
    "provider_resume_boundary_unsupported",
    "provider_replay_non_suffix_gap",
    "provider_replay_unsupported",
    "runtime_lineage_cycle",
    "runtime_lineage_depth_exceeded",
    "runtime_lineage_missing",
    "runtime_lineage_start_mismatch",
    "runtime_lineage_replay_mismatch",
    "runtime_lineage_claim_mismatch",
    "source_prefix_digest_mismatch",
    "workspace_ref_missing",
    "checkpoint_restore_failed",
    "source_run_unreadable",
    "continuation_already_exists",
    "continuation_authority_unavailable",
    "continuation_claim_repair_required",
    "continuation_started_indeterminate",
    "continuation_end_in_progress",
    "workspace_identity_missing",
    "safety_observation_unavailable",
    "resume_feature_disabled",
    "resume_candidate_missing",
]

#: The diagnostic-only codes (docs/reference/codes.md#diagnostic-codes); with the park reasons
#: they make ``DiagnosticCode``, so later phases reuse ``Diagnostic``.
DiagnosticOnlyCode = Literal[
    "operator_attested",
    "pending_tool_result",
    "unmatched_tool_result",
    "tool_name_mismatch",
    "workspace_location_changed",
    "tool_not_dispatched",
    "tool_recovery_parked",
    "tool_recovery_corruption",
    "tool_ledger_corruption",
    "duplicate_event_id",
    "semantic_lane_conflict",
    "protocol_marker_invalid",
]
DiagnosticCode = ResumeRejectionReason | DiagnosticOnlyCode


class ToolOperation(ValueModel):
    """Model-facing view of one visible tool call (docs/reference/phase0.md#tool-operation)."""

    tool_call_id: str
    tool_name: str
    args: JsonValue
    status: ToolOperationStatus
    call_runtime_event_id: str
    response_runtime_event_id: str | None = None
    response_is_error: bool | None = None


class Diagnostic(ValueModel):
    """One reason (or observation) behind a plan, with a stable machine code."""

    code: DiagnosticCode
    message: str
    event_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    detail: dict[str, JsonValue] | None = None


class ResumePlan(ValueModel):
    """Phase 0 crash-contract verdict over a committed prefix
    (docs/reference/phase0.md#resume-plan).

    ``runtime_events`` / ``replay_runtime_events`` hold decoded events; they serialise as exact
    RuntimeEvent wire dicts (only the keys each event carries), never as model dumps with nulls.
    """

    disposition: ResumeDisposition
    operations: tuple[ToolOperation, ...]
    diagnostics: tuple[Diagnostic, ...]
    rejection_reasons: tuple[ResumeRejectionReason, ...]
    requires_verification: bool
    source_runtime_event_high_water: int
    directive: str | None = None
    runtime_events: tuple[RuntimeEvent, ...]
    replay_runtime_events: tuple[RuntimeEvent, ...]

    @field_serializer("runtime_events", "replay_runtime_events")
    def _events_as_wire(self, events: tuple[RuntimeEvent, ...]) -> list[dict[str, Any]]:
        return [event.to_wire() for event in events]
