"""The RecoveryResolver's verdict types: issues, per-operation decisions, Resolution.

The decisions are described in docs/reference/tool-journal.md#decisions. They live in the
tool journal, below the ledger, because the Run aggregate keeps the resolver's state to validate
tool facts online (ADR 0017).
"""

from __future__ import annotations

from typing import Literal

from maka_es.wire.report import ReportModel

ToolBoundaryProtocol = Literal["t1_after_preflight_v1"]

ResolverIssueCode = Literal[
    "protocol_marker_invalid",
    "duplicate_event_id",
    "invocation_identity_conflict",
    "semantic_lane_conflict",
    "duplicate_call",
    "duplicate_dispatch",
    "duplicate_operation",
    "identity_conflict",
    "canonical_args_hash_conflict",
    "event_order_conflict",
    "orphan_response",
    "duplicate_response",
]

DecisionStatus = Literal[
    "completed", "definitely_not_dispatched", "indeterminate", "parked", "corruption"
]

DecisionReason = Literal[
    "matching_response",
    "recovery_bundle_completed",
    "dispatch_without_response",
    "new_protocol_before_dispatch",
    "legacy_dispatch_unknown",
    "orphan_dispatch",
    "orphan_response",
    "duplicate_call",
    "duplicate_operation",
    "duplicate_dispatch",
    "duplicate_response",
    "canonical_args_hash_conflict",
    "identity_conflict",
    "event_order_conflict",
    "recovery_fact_corruption",
    "reconcile_matches_prior_state",
    "reconcile_diverged",
    "reconcile_unreadable",
]

SettlementOrigin = Literal["pre_t1_synthetic", "normal_t2", "recovery_bundle"]


class ResolverIssue(ReportModel):
    """A ledger-level defect found by the resolver (``{code, eventId}``)."""

    code: ResolverIssueCode
    event_id: str


class ToolDecision(ReportModel):
    """The resolver's verdict for one tool operation (one provider call key)."""

    tool_call_id: str
    tool_name: str | None = None
    operation_id: str | None = None
    status: DecisionStatus
    reason: DecisionReason
    settlement_origin: SettlementOrigin | None = None
    call_runtime_event_id: str | None = None
    dispatch_runtime_event_id: str | None = None
    response_runtime_event_id: str | None = None
    response_is_error: bool | None = None


class Resolution(ReportModel):
    """Everything the RecoveryResolver concludes about a ledger prefix
    (docs/reference/tool-journal.md#resolution)."""

    decisions: tuple[ToolDecision, ...]
    issues: tuple[ResolverIssue, ...]
    has_corruption: bool
    requires_reconciliation: bool
    tool_boundary_protocol: ToolBoundaryProtocol | None = None
