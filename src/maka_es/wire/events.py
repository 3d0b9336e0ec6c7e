"""``RuntimeEvent``: the one fact type, wire-compatible with the Maka runtime's JSON.

The shape is docs/reference/wire.md#envelope (content, actions and refs below it).

Why so strict: a crash-recovery decision is only as good as the facts it reads. A key the
reference decoder would reject, a ``null`` where a key must be absent, or a NaN timestamp must
never become a committed fact, because the reference runtime (and any later reader) would then
disagree with us about what happened. Every model here has the exact key set of the reference
runtime, camelCase on the wire and snake_case in Python.

This module holds the whole event model, one concept (issue 22, part 1): the shared field
types, the ``actions`` payloads, the envelope, the content kinds and the refs, and the semantic
lanes of tool facts, in that order.

Derived predicates (terminal, partial, model-visible) live next to the model because every
layer needs the same answer; so does the lane classification, at the end of this module.

Value models: frozen, exact-key values shared by every capability's pure models (plans,
diagnostics, decisions, host observations).

Why not ``WireModel``: that base refuses explicit ``None`` because absent and ``null`` differ on
the RuntimeEvent wire; a value instead always carries every key (``null`` when absent), so a
reader never has to distinguish "missing" from "not applicable". (Not "report": that word is
the HTML run report's, :mod:`maka_es.report`.)

A RuntimeEvent read from verified stored bytes by the models' own schema, compiled without
the two generic Python validators every wire model runs (ADR 0045).

Why: a committed event's payload is the canonical JSON that passed every boundary check when it
was written, and a row whose payload still hashes to the ``payload_digest`` stored with it is
those very bytes (ADR 0025, ADR 0037). The trusted parse of ADR 0025 still ran, per model, the
Python before-validator that refuses an explicit ``null`` (which makes pydantic build a Python
dict of every object first) and the Python after-validator that shares ``fields_set`` and
interns the spine ids: about two thirds of reading such a row. Here the same core schema (every
type, literal, length, pattern, range and the models' own validators) runs from the bytes in
Rust; the two are replaced by a check and a pass that give the same result:

* a payload holding ``null`` anywhere is read by the full trusted parse (explicit nulls are
  refused there, as before; ``args: null`` is read there too);
* after the parse each model gets the shared ``fields_set`` of its shape and the event its
  interned spine ids, exactly what the after-validator does (ADR 0034);
* a payload with a 16-digit number keeps ``loads_js``'s JavaScript number semantics by taking
  the full trusted path, as before;
* anything this parse refuses takes the full trusted path, which refuses it with the same typed
  error or reads it as before.

Only for verified stored bytes: appends, imports and rows whose digest does not match never
come here and are validated exactly as before.
"""

from __future__ import annotations

import math
import sys
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, ClassVar, Final, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import SchemaError, SchemaValidator

from maka_es.errors import InvalidRuntimeEventError, MakaError
from maka_es.wire.base import _FIELDS_SETS, WireModel, _share_fields_set

__all__ = [
    "Actions",
    "Author",
    "CompletedDecisionPayload",
    "Content",
    "ContinuationStartV2",
    "ErrorContent",
    "EventStatus",
    "FunctionCallContent",
    "FunctionResponseContent",
    "ImmediateSource",
    "JsonNumber",
    "JsonObject",
    "NonEmptyStr",
    "ParkedDecisionPayload",
    "PermissionClosureAccepted",
    "PermissionDecision",
    "RECONCILE_RESULT_KIND",
    "RECOVERY_DECISION_KIND",
    "ReconcileResultPayload",
    "Refs",
    "RequestIdentity",
    "Role",
    "RuntimeEvent",
    "RuntimeProtocolMarker",
    "RuntimeWireModel",
    "SafeNonNegativeInt",
    "SafePositiveInt",
    "Sha256Digest",
    "TERMINAL_EVENT_STATUSES",
    "TOOL_BOUNDARY_PROTOCOL_V1",
    "TextContent",
    "ThinkingContent",
    "ToolDispatch",
    "ToolPermissionRequest",
    "ToolRecovery",
    "ToolRecoveryMode",
    "as_runtime_event",
    "trusted_event",
]


# ----------------------------------------------------------------------------------------------
# Field types and the base model shared by every part of a RuntimeEvent.
#
# Why defined first: the envelope and the action payloads below validate the same kinds of
# values (non-empty ids, ``sha256:`` digests, JavaScript-safe integers) and fail with the same
# typed error; defining them once keeps the two halves of the model from drifting apart.
# See docs/reference/wire.md#envelope.

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]
Sha256Digest = Annotated[StrictStr, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
SafeNonNegativeInt = Annotated[int, Field(ge=0, le=2**53 - 1, strict=True)]
SafePositiveInt = Annotated[int, Field(gt=0, le=2**53 - 1, strict=True)]
JsonObject = dict[str, JsonValue]
JsonNumber = StrictInt | StrictFloat


class RuntimeWireModel(WireModel):
    """Wire model whose validation failures are ``InvalidRuntimeEventError``."""

    error_class: ClassVar[type[MakaError]] = InvalidRuntimeEventError


# ----------------------------------------------------------------------------------------------
# The ``actions`` object of a RuntimeEvent and the facts it carries.
#
# Why a module of its own: the envelope says *who* wrote an event and *where* it belongs; the
# actions say what the runtime decided. Most of the crash-safety protocol is spelled here: the
# T1 ``toolDispatch`` fact, the ``toolRecovery`` envelope of reconcile results and recovery
# decisions, the ``runtimeProtocol`` marker and the ``continuationStart`` fact of a continuation
# run. Each model keeps the reference runtime's exact key set, as the rest of the wire model does.
# See docs/reference/wire.md#actions.

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


Role = Literal["user", "model", "tool", "system"]
Author = Literal["user", "host", "agent", "tool", "system"]
EventStatus = Literal["streaming", "completed", "failed", "aborted", "cancelled"]
TERMINAL_EVENT_STATUSES: frozenset[str] = frozenset({"completed", "failed", "aborted", "cancelled"})

#: The identity strings every event of a run repeats (``RuntimeEvent.spine``).
_SPINE_FIELDS = ("session_id", "invocation_id", "run_id", "turn_id")


def _finite(value: float | int, field: str) -> float | int:
    if isinstance(value, bool):
        raise ValueError(f"{field} must be a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{field} must be a finite number")
    return value


# --- content (docs/reference/wire.md#content) -------------------------------------------------


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


# --- refs (docs/reference/wire.md#refs) -------------------------------------------------------


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


# --- envelope (docs/reference/wire.md#envelope) -----------------------------------------------


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

    def _compact(self) -> None:
        """Every event of a run repeats the same four identity strings; a run held in memory
        keeps one copy of each instead of one per event (ADR 0034). Equal values, so equality,
        hashing and the canonical bytes are unchanged."""
        fields = self.__dict__
        for name in _SPINE_FIELDS:
            value = fields[name]
            if type(value) is str:  # a str subclass is kept as given
                fields[name] = sys.intern(value)

    # -- derived predicates (docs/reference/wire.md#predicates) ---------------------------------

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


# ----------------------------------------------------------------------------------------------
# Semantic lanes of tool facts: the one classification every writer and reader uses.
#
# The lanes and their envelopes: docs/reference/wire.md#lanes.
#
# Why strict: a tool fact with a sloppy envelope (a partial call, a dispatch that is also a
# terminal, a response carrying extra actions) is ambiguous evidence. Instead of guessing which
# reading was meant, the event is classified as a ``semantic_lane_conflict`` and treated as
# corruption by the resolver and refused by the store.

Lane = Literal[
    "function_call",
    "function_response",
    "tool_dispatch",
    "reconcile_result",
    "recovery_decision",
    "ordinary",
]

TOOL_LANES: frozenset[str] = frozenset(
    {"function_call", "function_response", "tool_dispatch", "reconcile_result", "recovery_decision"}
)

_CALL_STATE_KEYS = frozenset({"activityKind", "displayName", "intent"})
_DISPATCH_REF_SETS = (
    frozenset({"operationId", "toolCallId"}),
    frozenset({"operationId", "toolCallId", "parentToolCallId", "parentOperationId"}),
)
_RECOVERY_REF_SET = frozenset({"operationId", "toolCallId"})
_STATE_DELTA = frozenset({"stateDelta"})
_ONLY = {key: frozenset({key}) for key in ("toolDispatch", "toolRecovery")}


@dataclass(frozen=True, slots=True)
class LaneClassification:
    """The lane an event belongs to, or why it belongs to none (``conflict``)."""

    lane: Lane
    conflict: str | None = None

    @property
    def is_conflict(self) -> bool:
        return self.conflict is not None

    @property
    def is_tool_lane(self) -> bool:
        return self.lane in TOOL_LANES


def _triggers(event: RuntimeEvent) -> list[Lane]:
    lanes: list[Lane] = []
    if isinstance(event.content, FunctionCallContent):
        lanes.append("function_call")
    if isinstance(event.content, FunctionResponseContent):
        lanes.append("function_response")
    actions = event.actions
    if actions is not None:
        if actions.tool_dispatch is not None:
            lanes.append("tool_dispatch")
        if actions.tool_recovery is not None:
            kind = actions.tool_recovery.kind
            lanes.append(
                "reconcile_result" if kind == RECONCILE_RESULT_KIND else "recovery_decision"
            )
    return lanes


def _common_envelope_problem(event: RuntimeEvent) -> str | None:
    if event.partial:
        return "partial tool fact"
    if event.status is not None:
        return "tool fact carries a status"
    if event.branch is not None:
        return "branch-qualified tool fact"
    return None


def _set_keys(model: WireModel) -> frozenset[str]:
    """camelCase keys that were actually given on a wire model: the keys of its ``to_wire()``
    (which dumps exactly the set fields by alias), read from the fields without dumping, since
    every reload classifies every event."""
    aliases = _aliases(type(model))
    return frozenset(aliases[name] for name in model.model_fields_set)


def _given_exactly(model: WireModel, keys: frozenset[str]) -> bool:
    """``_set_keys(model) == keys``, compared on field names so no set is built per event
    (the fold classifies every tool event; ADR 0034)."""
    return model.model_fields_set == _field_names(type(model), keys)


@cache
def _field_names(model_type: type[WireModel], keys: frozenset[str]) -> frozenset[str]:
    """The field names whose wire keys are ``keys``; a key the model does not have makes a
    set no ``fields_set`` can equal (it holds field names only)."""
    aliases = _aliases(model_type)
    names = frozenset(name for name, alias in aliases.items() if alias in keys)
    return names if len(names) == len(keys) else frozenset({"<no such field>"})


@cache
def _aliases(model_type: type[WireModel]) -> dict[str, str]:
    """Field name -> wire key of one wire model class (fixed once the class exists)."""
    return {name: info.alias or name for name, info in model_type.model_fields.items()}


def _call_problem(event: RuntimeEvent) -> str | None:
    if event.role != "model" or event.author != "agent":
        return "function_call must be role=model author=agent"
    if event.actions is not None:
        if not _given_exactly(event.actions, _STATE_DELTA):
            return "function_call actions must be absent or exactly {stateDelta}"
        delta = event.actions.state_delta
        # The reference scanner: a non-empty delta of activityKind/displayName/intent strings.
        if (
            not delta
            or not set(delta) <= _CALL_STATE_KEYS
            or any(not isinstance(value, str) for value in delta.values())
        ):
            return (
                "function_call stateDelta must be non-empty activityKind/displayName/intent strings"
            )
    return None


def _response_problem(event: RuntimeEvent) -> str | None:
    if event.role != "tool" or event.author != "tool":
        return "function_response must be role=tool author=tool"
    if event.actions is not None:
        delta = event.actions.state_delta
        if (
            not _given_exactly(event.actions, _STATE_DELTA)
            or not isinstance(delta, dict)
            or set(delta) != {"durationMs"}
            or isinstance(delta["durationMs"], bool)
            or not isinstance(delta["durationMs"], int | float)
        ):
            return "function_response actions must be absent or exactly {stateDelta:{durationMs}}"
    return None


def _system_fact_problem(
    event: RuntimeEvent, action_key: str, ref_sets: tuple[frozenset[str], ...]
) -> str | None:
    if event.content is not None:
        return f"{action_key} fact carries content"
    if event.role != "system" or event.author != "system":
        return f"{action_key} fact must be role=system author=system"
    if event.actions is None or not _given_exactly(event.actions, _ONLY[action_key]):
        return f"{action_key} fact must carry no other action"
    refs = event.refs
    if refs is None or not any(_given_exactly(refs, keys) for keys in ref_sets):
        return f"{action_key} fact has the wrong refs"
    return None


_TOOL_CONTENT = (FunctionCallContent, FunctionResponseContent)

#: The classification of an event in a lane without conflict: one frozen instance per lane
#: (most events of a run are ordinary; the fold classifies every one).
_CLEAN: dict[str, LaneClassification] = {lane: LaneClassification(lane) for lane in get_args(Lane)}


def classify_lane(event: RuntimeEvent) -> LaneClassification:
    """Classify ``event`` into exactly one lane, or report a ``semantic_lane_conflict``."""
    if event.actions is None and not isinstance(event.content, _TOOL_CONTENT):
        return _CLEAN["ordinary"]  # no trigger can fire: most events of a run
    lanes = _triggers(event)
    if not lanes:
        return _CLEAN["ordinary"]
    lane = lanes[0]
    if len(lanes) > 1:
        return LaneClassification(lane, f"event matches several tool lanes: {', '.join(lanes)}")
    problem = _common_envelope_problem(event)
    if problem is None:
        if lane == "function_call":
            problem = _call_problem(event)
        elif lane == "function_response":
            problem = _response_problem(event)
        elif lane == "tool_dispatch":
            problem = _system_fact_problem(event, "toolDispatch", _DISPATCH_REF_SETS)
        else:
            problem = _system_fact_problem(event, "toolRecovery", (_RECOVERY_REF_SET,))
    return _CLEAN[lane] if problem is None else LaneClassification(lane, problem)


#: What the resolver and projections accept: decoded events or plain wire mappings.
RuntimeEventInput = RuntimeEvent | Mapping[str, Any]


class ValueModel(BaseModel):
    """Frozen, exact-shape value model: snake_case attributes, camelCase aliases.

    Not a ``WireModel``: that base refuses explicit ``None`` because absent and ``null`` differ
    on the RuntimeEvent wire; values instead always carry every key (``null`` when absent).
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
    )


def decode_events(events: Iterable[RuntimeEventInput]) -> tuple[RuntimeEvent, ...]:
    """Decode every input to a ``RuntimeEvent`` without touching the caller's objects.

    A mapping that is not a valid RuntimeEvent raises ``InvalidRuntimeEventError``: the
    projections only ever reason about well-formed facts, and a malformed committed row is a
    storage problem the reader must surface, not something to classify around.
    """
    return tuple(
        event if isinstance(event, RuntimeEvent) else as_runtime_event(dict(event))
        for event in events
    )


#: The validators of :class:`WireModel` that every wire model runs, which the trusted schema
#: leaves out (see the module docstring for what replaces each).
_GENERIC: Final = frozenset({"_refuse_explicit_null", "_strict_json_payloads"})


def _function_name(node: dict[str, Any]) -> str | None:
    function = node.get("function", {}).get("function")
    return getattr(function, "__name__", None)


def _without_generic(node: Any) -> Any:
    """A copy of a core schema without the generic validators' wrappers (a wrapper's ``ref``
    moves to what it wrapped, so references still resolve)."""
    if isinstance(node, list):
        return [_without_generic(item) for item in node]
    if not isinstance(node, dict):
        return node
    while node.get("type") in ("function-before", "function-after") and (
        _function_name(node) in _GENERIC
    ):
        inner = dict(node["schema"])
        if "ref" in node:
            inner["ref"] = node["ref"]
        node = inner
    return {key: _without_generic(value) for key, value in node.items()}


def _trusted_validator() -> SchemaValidator | None:
    """The trusted schema, or ``None`` (every verified row takes the full trusted parse) when
    this pydantic's schema does not hold the generic validators as this module expects."""
    stripped = _without_generic(RuntimeEvent.__pydantic_core_schema__)
    if repr(stripped).count("function-") == repr(RuntimeEvent.__pydantic_core_schema__).count(
        "function-"
    ):
        return None  # nothing was left out: not the schema this module was written for
    try:
        return SchemaValidator(stripped)
    except SchemaError:  # a schema this pydantic-core refuses: the full parse for all
        return None


_VALIDATOR: Final = _trusted_validator()

#: An integer literal of 16+ digits may lie beyond 2**53 (read as a double by ``loads_js``):
#: found as 16 zeros once every digit is a zero and every other byte an ``x`` (a C
#: translation and a substring search: a fifth of a regular expression's cost).
_DIGITS: Final = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_SIXTEEN_DIGITS: Final = b"0" * 16

#: Per wire model, the fields that may hold a model (where the pass after the parse looks).
_MODEL_FIELDS: dict[type[BaseModel], tuple[str, ...]] = {}


def _model_fields(cls: type[BaseModel]) -> tuple[str, ...]:
    names = _MODEL_FIELDS.get(cls)
    if names is None:
        names = _MODEL_FIELDS[cls] = tuple(
            name for name, info in cls.model_fields.items() if _may_hold_model(info.annotation)
        )
    return names


def _may_hold_model(annotation: Any) -> bool:
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return any(_may_hold_model(arg) for arg in typing.get_args(annotation))


def _finish(model: BaseModel) -> None:
    """The shared ``fields_set`` of each nested model's shape, as its after-validator gives
    it (ADR 0034); the models that may hold a model are walked."""
    _share(model)
    names = _MODEL_FIELDS.get(type(model))
    if names is None:
        names = _model_fields(type(model))
    if names:
        values = model.__dict__
        for name in names:
            value = values[name]
            if isinstance(value, BaseModel):  # a field may also hold a JSON object
                _finish(value)


def _share(model: BaseModel) -> None:
    shared = _FIELDS_SETS.get(frozenset(model.__pydantic_fields_set__))
    if shared is None:
        _share_fields_set(model)  # a new shape (or an unusual one, kept as it is)
    else:
        _set_fields_set(model, shared)


_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_intern = sys.intern


def _finish_event(event: RuntimeEvent) -> None:
    """What the after-validator does to the event and its models (ADR 0034): the spine ids
    interned (``RuntimeEvent._compact``) and the shared ``fields_set`` of each one's shape.
    Content and refs hold no model; actions may (walked by :func:`_finish`)."""
    values = event.__dict__
    values["session_id"] = _intern(values["session_id"])
    values["invocation_id"] = _intern(values["invocation_id"])
    values["run_id"] = _intern(values["run_id"])
    values["turn_id"] = _intern(values["turn_id"])
    sets = _FIELDS_SETS
    for model in (event, values["content"], values["refs"]):
        if model is not None:
            shared = sets.get(frozenset(model.__pydantic_fields_set__))
            if shared is None:
                _share_fields_set(model)
            else:
                _set_fields_set(model, shared)
    if values["actions"] is not None:
        _finish(values["actions"])


def trusted_event(payload: str) -> RuntimeEvent | None:
    """The RuntimeEvent of verified canonical ``payload`` bytes, or ``None`` (the caller takes
    the full trusted parse)."""
    if _VALIDATOR is None or "null" in payload:
        return None
    try:
        raw = payload.encode()
    except UnicodeEncodeError:  # a lone surrogate: the full parse reads it
        return None
    if _SIXTEEN_DIGITS in raw.translate(_DIGITS):
        return None
    try:
        event = _VALIDATOR.validate_json(raw)
    except (ValidationError, ValueError):
        return None
    if type(event) is not RuntimeEvent:
        return None
    _finish_event(event)
    return event
