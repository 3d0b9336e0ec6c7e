"""The ``actions`` object of a RuntimeEvent and the facts it carries.

Why a module of its own: the envelope says *who* wrote an event and *where* it belongs; the
actions say what the runtime decided. Most of the crash-safety protocol is spelled here: the
T1 ``toolDispatch`` fact, the ``toolRecovery`` envelope of reconcile results and recovery
decisions, the ``runtimeProtocol`` marker and the ``continuationStart`` fact of a continuation
run. Each model keeps the reference runtime's exact key set, as the rest of the wire model does.
See docs/reference/wire.md#actions.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Self

from pydantic import (
    Field,
    JsonValue,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from maka_es.wire.event_fields import (
    JsonObject,
    NonEmptyStr,
    RuntimeWireModel,
    SafePositiveInt,
    Sha256Digest,
)

__all__ = [
    "RECONCILE_RESULT_KIND",
    "RECOVERY_DECISION_KIND",
    "TOOL_BOUNDARY_PROTOCOL_V1",
    "Actions",
    "CompletedDecisionPayload",
    "ContinuationStartV2",
    "ImmediateSource",
    "ParkedDecisionPayload",
    "PermissionClosureAccepted",
    "PermissionDecision",
    "ReconcileResultPayload",
    "RequestIdentity",
    "RuntimeProtocolMarker",
    "ToolDispatch",
    "ToolPermissionRequest",
    "ToolRecovery",
    "ToolRecoveryMode",
]

ToolRecoveryMode = Literal[
    "replay_safe", "idempotent", "reconcile", "reattach", "outcome_unknown", "never_auto_retry"
]
TOOL_BOUNDARY_PROTOCOL_V1 = "t1_after_preflight_v1"


class ToolPermissionRequest(RuntimeWireModel):
    json_payload_keys = ("args", "hint")
    nullable_keys = frozenset({"args"})

    kind: Literal["tool_permission"]
    request_id: NonEmptyStr
    tool_use_id: NonEmptyStr
    tool_name: NonEmptyStr
    category: StrictStr
    reason: StrictStr
    args: JsonValue = Field(...)
    hint: JsonValue = None
    remember_for_turn_allowed: StrictBool


class PermissionDecision(RuntimeWireModel):
    json_payload_keys = ("reviewer",)

    request_id: NonEmptyStr
    decision: Literal["allow", "deny"]
    remember_for_turn: StrictBool | None = None
    reviewer: JsonValue = None
    rationale: StrictStr | None = None
    risk_level: StrictStr | None = None
    tool_name: StrictStr | None = None


class RequestIdentity(RuntimeWireModel):
    """``permissionAnswerAccepted`` / ``userQuestionAnswerAccepted``: ``{requestId}``."""

    request_id: NonEmptyStr


class PermissionClosureAccepted(RuntimeWireModel):
    request_id: NonEmptyStr
    reason: Literal["timed_out"]


class ToolDispatch(RuntimeWireModel):
    """T1 fact: the runtime crossed the durable dispatch boundary (the tool may have started)."""

    protocol: Literal["t1_after_preflight_v1"]
    operation_id: NonEmptyStr
    provider_tool_call_id: NonEmptyStr
    tool_name: NonEmptyStr
    canonical_args_hash: Sha256Digest
    recovery_mode: ToolRecoveryMode


class RuntimeProtocolMarker(RuntimeWireModel):
    tool_boundary: StrictStr


class ReconcileResultPayload(RuntimeWireModel):
    protocol: Literal["tool_reconcile_v1"]
    operation_id: NonEmptyStr
    observation: Literal["matches_expected_state", "matches_prior_state", "diverged", "unreadable"]
    observation_schema: Literal["state_identity_v1"]
    observation_digest: Sha256Digest


def _evidence(value: list[str]) -> list[str]:
    if not value or any(not item for item in value) or len(set(value)) != len(value):
        raise ValueError("evidenceEventIds must be non-empty distinct non-empty strings")
    return value


class CompletedDecisionPayload(RuntimeWireModel):
    protocol: Literal["tool_recovery_v1"]
    operation_id: NonEmptyStr
    disposition: Literal["completed"]
    reason_code: Literal["reconcile_matches_expected_state"]
    outcome_event_id: NonEmptyStr
    evidence_event_ids: list[StrictStr]

    _check_evidence = field_validator("evidence_event_ids")(_evidence)


class ParkedDecisionPayload(RuntimeWireModel):
    protocol: Literal["tool_recovery_v1"]
    operation_id: NonEmptyStr
    disposition: Literal["parked"]
    reason_code: Literal[
        "reconcile_matches_prior_state", "reconcile_diverged", "reconcile_unreadable"
    ]
    evidence_event_ids: list[StrictStr]

    _check_evidence = field_validator("evidence_event_ids")(_evidence)


RECONCILE_RESULT_KIND = "maka.tool.reconcile_result"
RECOVERY_DECISION_KIND = "maka.tool.recovery_decision"


class ToolRecovery(RuntimeWireModel):
    """Recovery fact envelope ``{kind, version: 1, payload}``
    (docs/reference/tool-journal.md#recovery-facts)."""

    kind: Literal["maka.tool.reconcile_result", "maka.tool.recovery_decision"]
    version: Literal[1]
    payload: ReconcileResultPayload | CompletedDecisionPayload | ParkedDecisionPayload

    @model_validator(mode="before")
    @classmethod
    def _payload_for_kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("payload"), dict):
            kind = data.get("kind")
            payload = data["payload"]
            if kind == RECONCILE_RESULT_KIND:
                return {**data, "payload": ReconcileResultPayload.model_validate(payload)}
            if kind == RECOVERY_DECISION_KIND:
                model: type[RuntimeWireModel] = (
                    CompletedDecisionPayload
                    if payload.get("disposition") == "completed"
                    else ParkedDecisionPayload
                )
                return {**data, "payload": model.model_validate(payload)}
        return data


class ImmediateSource(RuntimeWireModel):
    session_id: NonEmptyStr
    invocation_id: NonEmptyStr
    run_id: NonEmptyStr
    turn_id: NonEmptyStr
    high_water: SafePositiveInt
    prefix_digest: Sha256Digest


class ContinuationStartV2(RuntimeWireModel):
    """HEAD continuation-start fact: event 1 of a continuation run
    (docs/reference/continuation.md#start-fact)."""

    protocol: Literal["continuation_start_v2"]
    provenance: Literal["runtime_admission", "claim_repair"]
    claim_id: NonEmptyStr
    boundary_digest: Sha256Digest
    immediate_source: ImmediateSource
    replay_manifest_digest: Sha256Digest
    provider_projection_version: Literal[1]
    provider_replay_digest: Sha256Digest


class Actions(RuntimeWireModel):
    json_payload_keys = (
        "stateDelta",
        "artifactDelta",
        "permissionRequest",
        "userQuestionRequest",
        "tokenUsage",
        "workspaceFact",
    )

    state_delta: JsonObject | None = None
    artifact_delta: dict[str, StrictStr | int | float | StrictBool] | None = None
    permission_request: ToolPermissionRequest | JsonObject | None = None
    permission_decision: PermissionDecision | None = None
    permission_answer_accepted: RequestIdentity | None = None
    permission_closure_accepted: PermissionClosureAccepted | None = None
    user_question_request: JsonObject | None = None
    user_question_answer_accepted: RequestIdentity | None = None
    transfer_to_agent: StrictStr | None = None
    end_invocation: StrictBool | None = None
    token_usage: JsonObject | None = None
    tool_dispatch: ToolDispatch | None = None
    tool_recovery: ToolRecovery | None = None
    runtime_protocol: RuntimeProtocolMarker | None = None
    continuation_start: ContinuationStartV2 | None = None
    workspace_fact: JsonObject | None = None

    @field_validator("permission_request", mode="before")
    @classmethod
    def _permission_request_variant(cls, value: Any) -> Any:
        if isinstance(value, dict):
            kind = value.get("kind")
            if kind == "tool_permission":
                return ToolPermissionRequest.model_validate(value)
            if not isinstance(kind, str) or not kind:
                raise ValueError("permissionRequest.kind must be a non-empty string")
            request_id = value.get("requestId")
            if not isinstance(request_id, str) or not request_id:
                raise ValueError("permissionRequest.requestId must be a non-empty string")
        return value

    @field_validator("user_question_request")
    @classmethod
    def _user_question_has_id(cls, value: JsonObject | None) -> JsonObject | None:
        if value is not None:
            request_id = value.get("requestId")
            if not isinstance(request_id, str) or not request_id:
                raise ValueError("userQuestionRequest.requestId must be a non-empty string")
        return value

    @field_validator("artifact_delta")
    @classmethod
    def _finite_artifact_numbers(
        cls, value: dict[str, str | int | float | bool] | None
    ) -> dict[str, str | int | float | bool] | None:
        if value is not None:
            for key, item in value.items():
                if isinstance(item, float) and not math.isfinite(item):
                    raise ValueError(f"artifactDelta.{key} must be finite")
        return value

    @model_validator(mode="after")
    def _closure_is_alone(self) -> Self:
        if self.permission_closure_accepted is not None and len(self.model_fields_set) != 1:
            raise ValueError("permissionClosureAccepted must be the only action on its event")
        return self

    @property
    def permission_request_id(self) -> str | None:
        """``requestId`` of the permission request carried here, whatever its variant."""
        request = self.permission_request
        if request is None:
            return None
        if isinstance(request, ToolPermissionRequest):
            return request.request_id
        value = request.get("requestId")
        return value if isinstance(value, str) else None
