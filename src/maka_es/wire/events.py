"""``RuntimeEvent``: the one fact type, wire-compatible with the Maka runtime's JSON.

The shape is docs/reference/wire.md#envelope (content, actions and refs below it).

Why so strict: a crash-recovery decision is only as good as the facts it reads. A key the
reference decoder would reject, a ``null`` where a key must be absent, or a NaN timestamp must
never become a committed fact, because the reference runtime (and any later reader) would then
disagree with us about what happened. Every model here has the exact key set of the reference
runtime, camelCase on the wire and snake_case in Python.

This module holds the envelope, the content kinds and the refs; the ``actions`` payloads live in
``maka_es.wire.actions`` and the shared field types in ``maka_es.wire.event_fields``. Their
names are re-exported here, where every reader of the wire model has always imported them.

Derived predicates (terminal, partial, model-visible) live next to the model because every
layer needs the same answer; the lane classification has its own module (``lanes``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, StrictBool, StrictStr, field_validator

from maka_es.wire.actions import (
    RECONCILE_RESULT_KIND,
    RECOVERY_DECISION_KIND,
    TOOL_BOUNDARY_PROTOCOL_V1,
    Actions,
    CompletedDecisionPayload,
    ContinuationStartV2,
    ImmediateSource,
    ParkedDecisionPayload,
    PermissionClosureAccepted,
    PermissionDecision,
    ReconcileResultPayload,
    RequestIdentity,
    RuntimeProtocolMarker,
    ToolDispatch,
    ToolPermissionRequest,
    ToolRecovery,
    ToolRecoveryMode,
)
from maka_es.wire.event_fields import (
    JsonNumber,
    JsonObject,
    NonEmptyStr,
    RuntimeWireModel,
    SafeNonNegativeInt,
    SafePositiveInt,
    Sha256Digest,
)

__all__ = [
    "RECONCILE_RESULT_KIND",
    "RECOVERY_DECISION_KIND",
    "TERMINAL_EVENT_STATUSES",
    "TOOL_BOUNDARY_PROTOCOL_V1",
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
    "TextContent",
    "ThinkingContent",
    "ToolDispatch",
    "ToolPermissionRequest",
    "ToolRecovery",
    "ToolRecoveryMode",
    "as_runtime_event",
]

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
