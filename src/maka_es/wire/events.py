"""``RuntimeEvent``: the one fact type, wire-compatible with the Maka runtime's JSON (spec §1).

Why so strict: a crash-recovery decision is only as good as the facts it reads. A key the
reference decoder would reject, a ``null`` where a key must be absent, or a NaN timestamp must
never become a committed fact, because the reference runtime (and any later reader) would then
disagree with us about what happened. Every model here has the exact key set of the reference
runtime, camelCase on the wire and snake_case in Python.

Derived predicates (terminal, partial, model-visible) live next to the model because every
layer needs the same answer; the lane classification has its own module (``lanes``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    Field,
    JsonValue,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from maka_es.errors import InvalidRuntimeEventError, MakaError
from maka_es.wire.base import WireModel

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]
Sha256Digest = Annotated[StrictStr, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
SafeNonNegativeInt = Annotated[int, Field(ge=0, le=2**53 - 1, strict=True)]
SafePositiveInt = Annotated[int, Field(gt=0, le=2**53 - 1, strict=True)]
JsonObject = dict[str, JsonValue]
JsonNumber = StrictInt | StrictFloat

Role = Literal["user", "model", "tool", "system"]
Author = Literal["user", "host", "agent", "tool", "system"]
EventStatus = Literal["streaming", "completed", "failed", "aborted", "cancelled"]
TERMINAL_EVENT_STATUSES: frozenset[str] = frozenset({"completed", "failed", "aborted", "cancelled"})
ToolRecoveryMode = Literal[
    "replay_safe", "idempotent", "reconcile", "reattach", "outcome_unknown", "never_auto_retry"
]
TOOL_BOUNDARY_PROTOCOL_V1 = "t1_after_preflight_v1"


def _finite(value: float | int, field: str) -> float | int:
    if isinstance(value, bool):
        raise ValueError(f"{field} must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{field} must be a finite number")
    return value


class RuntimeWireModel(WireModel):
    """Wire model whose validation failures are ``InvalidRuntimeEventError``."""

    error_class: ClassVar[type[MakaError]] = InvalidRuntimeEventError


# --- content (§1.2) ---------------------------------------------------------------------------


class TextContent(RuntimeWireModel):
    json_payload_keys = ("origin", "attachments", "quotes", "inlineReferences", "providerOptions")

    kind: Literal["text"]
    text: StrictStr
    display_text: StrictStr | None = None
    origin: JsonObject | None = None
    attachments: list[JsonValue] | None = None
    quotes: list[JsonValue] | None = None
    inline_references: list[JsonValue] | None = None
    steering: Literal[True] | None = None
    provider_options: JsonObject | None = None


class ThinkingContent(RuntimeWireModel):
    json_payload_keys = ("providerOptions",)

    kind: Literal["thinking"]
    text: StrictStr
    signature: StrictStr | None = None
    provider_options: JsonObject | None = None


class FunctionCallContent(RuntimeWireModel):
    nullable_keys = frozenset({"args"})
    json_payload_keys = ("args", "providerOptions")

    kind: Literal["function_call"]
    id: NonEmptyStr
    name: NonEmptyStr
    args: JsonValue = Field(...)
    provider_options: JsonObject | None = None
    provider_executed: StrictBool | None = None


class FunctionResponseContent(RuntimeWireModel):
    nullable_keys = frozenset({"result", "providerOutput"})
    json_payload_keys = ("result", "providerOutput")

    kind: Literal["function_response"]
    id: NonEmptyStr
    name: NonEmptyStr
    result: JsonValue = Field(...)
    is_error: StrictBool | None = None
    provider_executed: StrictBool | None = None
    provider_output: JsonValue = None


class ErrorContent(RuntimeWireModel):
    json_payload_keys = ("details",)

    kind: Literal["error"]
    message: StrictStr
    code: StrictStr | None = None
    reason: StrictStr | None = None
    bounded_provider_message: StrictBool | None = None
    details: list[StrictStr] | JsonObject | None = None


Content = Annotated[
    TextContent | ThinkingContent | FunctionCallContent | FunctionResponseContent | ErrorContent,
    Field(discriminator="kind"),
]


# --- actions (§1.3) ---------------------------------------------------------------------------


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
    """Recovery fact envelope ``{kind, version: 1, payload}`` (spec §5.4)."""

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
    """HEAD continuation-start fact (spec §4.4): event 1 of a continuation run."""

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


# --- refs (§1.4) ------------------------------------------------------------------------------


class Refs(RuntimeWireModel):
    stored_message_id: StrictStr | None = None
    trace_event_id: StrictStr | None = None
    tool_call_id: StrictStr | None = None
    provider_event_id: StrictStr | None = None
    source_message_digest: Sha256Digest | None = None
    provider_request_trace_id: StrictStr | None = None
    artifact_id: StrictStr | None = None
    operation_id: StrictStr | None = None
    parent_tool_call_id: StrictStr | None = None
    parent_operation_id: StrictStr | None = None
    step_id: StrictStr | None = None
    source_invocation_id: StrictStr | None = None
    source_run_id: StrictStr | None = None
    source_turn_id: StrictStr | None = None
    source_runtime_event_high_water: SafeNonNegativeInt | None = None


# --- envelope (§1.1) --------------------------------------------------------------------------


class RuntimeEvent(RuntimeWireModel):
    """The canonical runtime fact. ``RuntimeEvent.model_validate(maka_json)`` decodes it;
    ``to_wire()`` / ``canonical_json(event)`` encode it back byte-compatibly."""

    id: NonEmptyStr
    invocation_id: NonEmptyStr
    run_id: NonEmptyStr
    session_id: NonEmptyStr
    turn_id: NonEmptyStr
    ts: JsonNumber
    partial: StrictBool
    role: Role
    author: Author
    branch: StrictStr | None = None
    origin: Literal["provider", "code_mode"] | None = None
    model_visibility: Literal["visible", "hidden"] | None = None
    status: EventStatus | None = None
    content: Content | None = None
    actions: Actions | None = None
    refs: Refs | None = None

    @field_validator("ts")
    @classmethod
    def _finite_ts(cls, value: int | float) -> int | float:
        return _finite(value, "ts")

    # -- derived predicates (spec §1.1) --------------------------------------------------------

    @property
    def is_terminal(self) -> bool:
        """Terminal iff a terminal ``status`` or ``actions.endInvocation is True``."""
        if self.status in TERMINAL_EVENT_STATUSES:
            return True
        return self.actions is not None and self.actions.end_invocation is True

    @property
    def is_hidden(self) -> bool:
        return self.model_visibility == "hidden"

    @property
    def is_model_visible(self) -> bool:
        """Model-visible content: not hidden, and non-empty text, thinking, call or response."""
        if self.is_hidden or self.content is None:
            return False
        content = self.content
        if isinstance(content, TextContent):
            return content.text != ""
        return isinstance(content, ThinkingContent | FunctionCallContent | FunctionResponseContent)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """``(sessionId, invocationId, runId, turnId)``: the execution spine of the event."""
        return (self.session_id, self.invocation_id, self.run_id, self.turn_id)

    @property
    def spine(self) -> dict[str, str]:
        """The identity keys every event of the same run carries (wire names): the starting
        point of any fact the runtime writes into this run."""
        return {
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
        }

    @property
    def function_call(self) -> FunctionCallContent | None:
        return self.content if isinstance(self.content, FunctionCallContent) else None

    @property
    def function_response(self) -> FunctionResponseContent | None:
        return self.content if isinstance(self.content, FunctionResponseContent) else None

    @property
    def protocol_marker(self) -> str | None:
        """``actions.runtimeProtocol.toolBoundary`` if present (validity is the resolver's job)."""
        if self.actions is None or self.actions.runtime_protocol is None:
            return None
        return self.actions.runtime_protocol.tool_boundary


def as_runtime_event(value: RuntimeEvent | Mapping[str, Any]) -> RuntimeEvent:
    """Accept either a decoded event or a plain wire dict (projections take both)."""
    if isinstance(value, RuntimeEvent):
        return value
    return RuntimeEvent.model_validate(value)
