"""AgentRun header: the operational summary of a run, wire-compatible with Maka.

The fields and rules: docs/reference/ledger.md#run-header and #header-rules.

Why it is separate from the ledger: the header is *derived* authority. Its terminal status may
only follow a durable terminal RuntimeEvent, and its admission identity never changes after
creation. The Run aggregate enforces both; this module only knows the shape and the rules that
depend on the header alone.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, JsonValue, StrictStr, field_validator, model_validator

from maka_es.errors import InvalidRunHeaderError, MakaError
from maka_es.wire.base import WireModel
from maka_es.wire.events import JsonNumber, NonEmptyStr, RuntimeEvent, Sha256Digest
from maka_es.wire.facts import terminal_fact

RunStatus = Literal["created", "running", "waiting_for_user", "completed", "failed", "cancelled"]
TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
SafeNonNegativeInt = Annotated[int, Field(ge=0, le=2**53 - 1, strict=True)]
SafePositiveInt = Annotated[int, Field(gt=0, le=2**53 - 1, strict=True)]

#: Header fields a patch may touch after creation (docs/reference/ledger.md#header-rules);
#: everything else is admission identity.
MUTABLE_HEADER_FIELDS: frozenset[str] = frozenset(
    {
        "status",
        "updatedAt",
        "completedAt",
        "runComposition",
        "failureClass",
        "failureMessage",
        "abortSource",
        "traceWriteError",
    }
)

_EVENT_TO_RUN_STATUS = {
    "completed": "completed",
    "failed": "failed",
    "aborted": "cancelled",
    "cancelled": "cancelled",
}


class HeaderWireModel(WireModel):
    error_class: ClassVar[type[MakaError]] = InvalidRunHeaderError


class ContinuationSourceV1(HeaderWireModel):
    """Original P1 continuation source: the boundary a continuation run was started from."""

    source_invocation_id: StrictStr
    source_run_id: StrictStr
    source_turn_id: StrictStr
    source_runtime_event_high_water: SafeNonNegativeInt


class ContinuationSourceV2(HeaderWireModel):
    """HEAD continuation source, bound to a durable claim and boundary digests."""

    protocol: Literal["continuation_source_v2"]
    claim_id: NonEmptyStr
    boundary_digest: Sha256Digest
    source_invocation_id: NonEmptyStr
    source_run_id: NonEmptyStr
    source_turn_id: NonEmptyStr
    source_runtime_event_high_water: SafePositiveInt
    source_prefix_digest: Sha256Digest
    replay_manifest_digest: Sha256Digest

    @model_validator(mode="after")
    def _manifest_is_boundary(self) -> ContinuationSourceV2:
        if self.replay_manifest_digest != self.boundary_digest:
            raise ValueError("replayManifestDigest must equal boundaryDigest")
        return self


def _finite_number(value: float | int) -> float | int:
    if isinstance(value, bool) or (isinstance(value, float) and value != value):
        raise ValueError("must be a finite number")
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        raise ValueError("must be a finite number")
    return value


class RunHeader(HeaderWireModel):
    """The AgentRun header. ``status`` ``waiting_permission`` (legacy) decodes as
    ``waiting_for_user``."""

    nullable_keys = frozenset()
    json_payload_keys = (
        "collaborationMode",
        "orchestrationMode",
        "orchestrationSource",
        "agentSwarmAuthorization",
        "toolMode",
        "runComposition",
    )

    run_id: NonEmptyStr
    session_id: NonEmptyStr
    turn_id: NonEmptyStr
    status: RunStatus
    backend_kind: Literal["ai-sdk", "fake"]
    llm_connection_slug: StrictStr
    model_id: StrictStr
    cwd: StrictStr
    permission_mode: StrictStr
    created_at: JsonNumber
    updated_at: JsonNumber
    invocation_id: NonEmptyStr | None = None
    completed_at: JsonNumber | None = None
    parent_run_id: StrictStr | None = None
    resumed_from_run_id: StrictStr | None = None
    retried_from_run_id: StrictStr | None = None
    agent_id: StrictStr | None = None
    agent_name: StrictStr | None = None
    parent_turn_id: StrictStr | None = None
    retried_from_turn_id: StrictStr | None = None
    regenerated_from_turn_id: StrictStr | None = None
    branch_of_turn_id: StrictStr | None = None
    parent_session_id: StrictStr | None = None
    workspace_identity: StrictStr | None = None
    continuation_source: ContinuationSourceV2 | ContinuationSourceV1 | None = None
    scheduled_task_id: StrictStr | None = None
    legacy_automation_id: StrictStr | None = None
    goal_id: StrictStr | None = None
    agent_graph_wake_id: StrictStr | None = None
    agent_graph_wake_attempt_id: StrictStr | None = None
    root_execution_kind: Literal["context_compact"] | None = None
    failure_class: StrictStr | None = None
    failure_message: StrictStr | None = None
    abort_source: StrictStr | None = None
    trace_write_error: StrictStr | None = None
    collaboration_mode: JsonValue = None
    orchestration_mode: JsonValue = None
    orchestration_source: JsonValue = None
    agent_swarm_authorization: JsonValue = None
    tool_mode: JsonValue = None
    run_composition: JsonValue = None

    @field_validator("status", mode="before")
    @classmethod
    def _waiting_permission_is_waiting_for_user(cls, value: Any) -> Any:
        return "waiting_for_user" if value == "waiting_permission" else value

    @field_validator("created_at", "updated_at", "completed_at")
    @classmethod
    def _finite(cls, value: float | int | None) -> float | int | None:
        return None if value is None else _finite_number(value)

    @model_validator(mode="after")
    def _one_authority(self) -> RunHeader:
        authorities = [
            self.scheduled_task_id,
            self.legacy_automation_id,
            self.goal_id,
            self.agent_graph_wake_id,
        ]
        if sum(value is not None for value in authorities) > 1:
            raise ValueError(
                "at most one of scheduledTaskId, legacyAutomationId, goalId, agentGraphWakeId"
            )
        return self

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES

    @property
    def spine(self) -> dict[str, str]:
        """``sessionId, invocationId, runId, turnId`` of the run's events (wire names)."""
        if self.invocation_id is None:
            raise InvalidRunHeaderError("the header has no invocationId", field="invocationId")
        return {
            "sessionId": self.session_id,
            "invocationId": self.invocation_id,
            "runId": self.run_id,
            "turnId": self.turn_id,
        }

    @property
    def is_session_inline(self) -> bool:
        """No parent, or a continuation (``continuationSource``) that is not an agent
        (docs/reference/ledger.md#session-inline)."""
        return self.parent_run_id is None or (
            self.continuation_source is not None and self.agent_id is None
        )


def run_status_for_terminal_event(event: RuntimeEvent) -> str | None:
    """Map a terminal event's status to the header status it implies
    (docs/reference/ledger.md#terminal-rules).

    ``endInvocation`` without a terminal status implies nothing: the fact is incomplete.
    """
    if event.status is None:
        return None
    return _EVENT_TO_RUN_STATUS.get(event.status)


def _first_string(*values: Any) -> str | None:
    for value in values:
        if isinstance(value, str):
            return value
    return None


def terminal_failure_class(event: RuntimeEvent, header: RunHeader | None = None) -> str | None:
    """The failure class a failed terminal fact carries (precedence:
    docs/reference/ledger.md#terminal-rules)."""
    delta: dict[str, Any] = {}
    if event.actions is not None and event.actions.state_delta is not None:
        delta = dict(event.actions.state_delta)
    content = event.content
    reason = getattr(content, "reason", None) if getattr(content, "kind", None) == "error" else None
    code = getattr(content, "code", None) if getattr(content, "kind", None) == "error" else None
    return _first_string(
        delta.get("failureClass"),
        delta.get("errorClass"),
        delta.get("reason"),
        delta.get("code"),
        reason,
        code,
        header.failure_class if header is not None else None,
    )


def terminal_abort_source(event: RuntimeEvent, header: RunHeader | None = None) -> str | None:
    """The abort source a cancelled terminal fact carries (precedence:
    docs/reference/ledger.md#terminal-rules)."""
    delta: dict[str, Any] = {}
    if event.actions is not None and event.actions.state_delta is not None:
        delta = dict(event.actions.state_delta)
    return _first_string(
        delta.get("abortSource"),
        delta.get("source"),
        header.abort_source if header is not None else None,
    )


def header_matches_terminal(header: RunHeader, event: RuntimeEvent) -> bool:
    """Whether the header matches the terminal fact (docs/reference/ledger.md#terminal-rules):
    same status, and the same failure class / abort source the fact carries. An incomplete fact
    (no derivable class/source) never matches."""
    status = run_status_for_terminal_event(event)
    if status is None or header.status != status:
        return False
    if status == "failed":
        fact_class = terminal_failure_class(event, header)
        return fact_class is not None and header.failure_class == fact_class
    if status == "cancelled":
        fact_source = terminal_abort_source(event, header)
        return fact_source is not None and header.abort_source == fact_source
    return True


def terminal_header_patch(header: RunHeader, event: RuntimeEvent) -> dict[str, Any] | None:
    """The header patch a terminal fact implies (docs/reference/ledger.md#terminal-rules): its
    status, ``updatedAt`` and ``completedAt`` = the fact's ``ts``, the failure class (failed;
    default ``unknown``) or the abort source (cancelled; default ``unknown``), and for a failed
    fact whose ``stateDelta.failureMessage`` is a string, that message as ``failureMessage``
    (so a header repaired from the fact says what went wrong too). ``None`` if the event
    implies no status."""
    status = run_status_for_terminal_event(event)
    if status is None:
        return None
    patch: dict[str, Any] = {"status": status, "updatedAt": event.ts, "completedAt": event.ts}
    if status == "failed":
        patch["failureClass"] = terminal_failure_class(event, header) or "unknown"
        delta = event.actions.state_delta if event.actions is not None else None
        message = (delta or {}).get("failureMessage")
        if isinstance(message, str):
            patch["failureMessage"] = message
    elif status == "cancelled":
        patch["abortSource"] = terminal_abort_source(event, header) or "unknown"
    return patch


#: A terminal fact for the run of a spine. Spelled once, in :mod:`maka_es.wire.facts`; the name
#: stays here for its existing callers.
terminal_event = terminal_fact
