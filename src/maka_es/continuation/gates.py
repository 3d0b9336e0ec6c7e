"""Phase 1 safe-boundary continuation plan (spec §4.1, §4.3; seed: Phase 1 contract).

Why a separate plan from Phase 0: a ``safe_replay`` prefix only says the committed ledger can be
shown to the provider again. Continuing it as a *new* Run additionally needs facts the ledger
cannot prove — the workspace is the same one, nothing is still running in the background, every
historical tool still exists, a supplied checkpoint was restored — and a provider history that
ends where a new model turn may legally start. Every gate is evaluated and every failure is
reported (reasons in gate order, de-duplicated), so a host can show all blockers at once; the
plan says ``continue`` only when no gate fired. Uncertainty is never converted into a retry.

Pure and deterministic: the host supplies its observations as :class:`ContinuationFacts`
(including the fresh continuation ids), the function reads no clock, store or filesystem and
never mutates its inputs.

Where HEAD and Original P1 differ (spec **[DIFF]**) the Phase 1 contract (seed) decides the
default and the other behaviour is an explicit option:

* cwd: default ``cwd_policy="strict"`` parks a normalised cwd change with
  ``workspace_cwd_mismatch`` (Original P1 / seed); ``"relocatable"`` continues with the HEAD
  diagnostic ``workspace_location_changed``.
* terminal boundary (when ``source_header`` is given): default ``terminal_policy="strict"`` is
  HEAD's rule — header terminal, exactly one non-partial terminal event matching the header's
  session/run/turn, carrying a derivable fact, being the last event, and matching the header.
  It is a superset of the seed's "exactly one matching, non-partial terminal RuntimeEvent".
  ``"status_only"`` is Original P1's weaker rule (one terminal event whose status maps to the
  header status, anywhere in the ledger).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

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

from maka_es.continuation.claim import claim_id_for
from maka_es.continuation.composite_replay import CompositeReplay, provider_item_role
from maka_es.resume.models import Diagnostic, DiagnosticCode, ResumeRejectionReason
from maka_es.resume.plan import build_resume_plan
from maka_es.wire.codec import js_sort_key
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.report import ReportModel, RuntimeEventInput, decode_events
from maka_es.wire.run_header import (
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
)

__all__ = [
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
    "build_continuation_plan",
    "normalize_cwd",
    "replay_blocked_plan",
    "terminal_boundary_consistent",
]

ContinuationDisposition = Literal["continue", "park"]
CwdPolicy = Literal["strict", "relocatable"]
TerminalPolicy = Literal["strict", "status_only"]
_HighWater = Annotated[int, Field(ge=0, le=2**53 - 1, strict=True)]

#: Composite replay block reasons as planner park reasons (spec §4.3 step 4): unsettled or corrupt
#: tool facts mean the durable ledger cannot be trusted as a boundary at all.
_REPLAY_PARK_REASON: dict[str, ResumeRejectionReason] = {
    "provider_replay_non_suffix_gap": "provider_replay_non_suffix_gap",
    "provider_replay_unsupported": "provider_replay_unsupported",
    "tool_recovery_corruption": "runtime_ledger_unreadable",
    "tool_recovery_unsettled": "runtime_ledger_unreadable",
}


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
    """Host observations the ledger cannot prove (spec §4.3 facts, §4.10 inspector).

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
    """The host facts the plan relied on; execution revalidates them (spec §4.7 step 4)."""

    workspace_identity: str
    background_operations_settled: Literal[True]
    available_tool_names: tuple[str, ...]
    workspace_checkpoint: SnapshotCheckpoint | None = None


class ContinuationBoundary(ReportModel):
    """The boundary cursor a continuation is bound to (spec §5.2): every lineage segment
    (``runtime_prefix_segment_v1``, oldest → source) and their manifest digest. Execution
    re-reads exactly these segments before it claims anything."""

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
    will record (spec §4.1): ``claimId`` (derived from the source boundary, so every planner of
    one boundary names the same claim), ``boundary``, ``providerReplayDigest``,
    ``providerProjectionVersion`` and, when there are ancestors, ``sourceRuntimeContext`` (the
    source segment's own replay events). A legacy plan has none of them and its dump omits
    the keys.
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


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def normalize_cwd(value: str) -> str:
    """Platform-neutral cwd: ``\\`` → ``/``, no trailing ``/``, drive-letter paths lowercased."""
    normalized = value.replace("\\", "/").rstrip("/")
    drive_letter = normalized[:1].isascii() and normalized[:1].isalpha()
    if drive_letter and normalized[1:3] == ":/":
        return normalized.lower()
    return normalized


def _js_sorted(values: set[str]) -> tuple[str, ...]:
    """Sorted like JavaScript's default ``Array.prototype.sort`` (UTF-16 code units)."""
    return tuple(sorted(values, key=js_sort_key))


def terminal_boundary_consistent(
    header: RunHeader, events: Sequence[RuntimeEventInput], policy: TerminalPolicy = "strict"
) -> bool:
    """Whether the source header and ledger agree on one terminal fact (gate h).

    ``strict`` (HEAD, default): the header is terminal; exactly one non-partial terminal event
    carries the header's session/run/turn; it has a terminal status with a derivable fact
    (failure class / abort source, spec §2); it is the last event; the header matches it.
    ``status_only`` (Original P1): the header is terminal and exactly one non-partial terminal
    event exists whose status maps to the header's status.
    """
    if not header.is_terminal:
        return False
    decoded = decode_events(events)
    if policy == "status_only":
        terminals = [event for event in decoded if not event.partial and event.is_terminal]
        return len(terminals) == 1 and run_status_for_terminal_event(terminals[0]) == header.status
    matching = [
        event
        for event in decoded
        if not event.partial
        and event.is_terminal
        and event.session_id == header.session_id
        and event.run_id == header.run_id
        and event.turn_id == header.turn_id
    ]
    if len(matching) != 1:
        return False
    terminal = matching[0]
    # header_matches_terminal refuses an incomplete fact (no status, class or abort source)
    return decoded[-1].id == terminal.id and header_matches_terminal(header, terminal)


def _pending_permissions(events: Sequence[RuntimeEvent]) -> list[Diagnostic]:
    """Gate (b): requests without a later decision, accepted answer or accepted closure."""
    pending: dict[str, RuntimeEvent] = {}
    for event in events:
        actions = event.actions
        if event.partial or actions is None:
            continue
        request_id = actions.permission_request_id
        if request_id is not None:
            pending[request_id] = event
        for resolved in (
            actions.permission_decision,
            actions.permission_answer_accepted,
            actions.permission_closure_accepted,
        ):
            if resolved is not None:
                pending.pop(resolved.request_id, None)
    return [
        Diagnostic(
            code="pending_permission",
            message="permission request has no committed decision",
            event_id=event.id,
            detail={"requestId": request_id},
        )
        for request_id, event in pending.items()
    ]


class _Gates:
    """Accumulates diagnostics and reasons in gate order."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.reasons: dict[ResumeRejectionReason, None] = {}

    def park(
        self,
        code: ResumeRejectionReason,
        message: str,
        *,
        event_id: str | None = None,
        detail: dict[str, JsonValue] | None = None,
    ) -> None:
        self.note(code, message, event_id=event_id, detail=detail)
        self.reasons.setdefault(code)

    def note(
        self,
        code: DiagnosticCode,
        message: str,
        *,
        event_id: str | None = None,
        detail: dict[str, JsonValue] | None = None,
    ) -> None:
        self.diagnostics.append(
            Diagnostic(code=code, message=message, event_id=event_id, detail=detail)
        )

    def fired(self, code: ResumeRejectionReason) -> bool:
        return code in self.reasons


def _first_visible(events: Sequence[RuntimeEvent]) -> RuntimeEvent | None:
    return next((event for event in events if event.is_model_visible), None)


def _last_visible(events: Sequence[RuntimeEvent]) -> RuntimeEvent | None:
    return next((event for event in reversed(events) if event.is_model_visible), None)


def replay_blocked_plan(replay: CompositeReplay) -> ContinuationPlan:
    """The single-reason park of a blocked composite replay (spec §4.3 step 4)."""
    assert replay.blocked_reason is not None
    reason = _REPLAY_PARK_REASON[replay.blocked_reason]
    return ContinuationPlan(
        disposition="park",
        rejection_reasons=(reason,),
        diagnostics=(
            Diagnostic(
                code=reason,
                message=(
                    f"continuation replay segment {replay.blocked_segment_index} is not "
                    f"replayable: {replay.blocked_reason}"
                ),
                event_id=replay.diagnostics[0].event_id if replay.diagnostics else None,
                detail={
                    "segmentIndex": replay.blocked_segment_index,
                    "replayReason": replay.blocked_reason,
                },
            ),
        ),
    )


# --------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------


def build_continuation_plan(
    events: Sequence[RuntimeEventInput],
    facts: ContinuationFacts,
    *,
    ancestors: Sequence[Sequence[RuntimeEventInput]] = (),
    replay: CompositeReplay | None = None,
) -> ContinuationPlan:
    """Evaluate the safe-boundary gates (spec §4.3 a-p) over the source run's ``events``.

    ``events`` is everything the store returned for the source run (partial snapshots included:
    the legacy high-water is the input count). ``ancestors`` is the lineage context inherited
    from continuation ancestors, oldest first, each already reduced to its trimmed replay
    events (e.g. ``build_composite_replay([...]).segments[i].replay_runtime_events``); it is
    prepended to the source replay for the tool-catalog gate (n), the head/tail gates (o, p)
    and the planned ``runtimeContext``. The source ledger itself is checked by Phase 0
    (gate a), which is what makes this the *legacy* path.

    ``replay`` selects the HEAD composite path instead: pass the
    :func:`build_composite_replay` of the lineage whose last segment is ``events``. A blocked
    replay parks with a single reason (``runtime_ledger_unreadable`` for unsettled or corrupt
    tool facts); otherwise gate (a) is replaced by the replay, gate (c) compares the expected
    high-water with the source segment's ``lastEventSeq``, and gates (n-p) read its runtime
    context and provider items. ``ancestors`` must then be empty (the replay carries them).

    The gates, all evaluated, reasons in this order: (a) Phase 0 not ``safe_replay`` → its
    reasons; (b) ``pending_permission``; (c) ``runtime_offset_mismatch`` (composite only);
    (d) ``runtime_ledger_empty``; (e) ``runtime_identity_mismatch``;
    (f) ``continuation_identity_reused``; (g) ``runtime_ledger_unreadable``;
    (h) ``terminal_repair_failed``; (i) cwd (see module docstring);
    (j) ``workspace_identity_missing`` / ``workspace_identity_mismatch``;
    (k) ``background_operation_pending``; (l) ``workspace_ref_missing``;
    (m) ``checkpoint_restore_failed``; (n) ``tool_catalog_mismatch``;
    (o) ``provider_resume_head_unsupported``; (p) ``provider_resume_boundary_unsupported``
    (o and p only for a non-empty single-identity ledger).
    """
    if replay is not None and ancestors:
        raise ValueError("ancestors are part of the composite replay; pass one or the other")
    if replay is not None and replay.blocked_reason is not None:
        return replay_blocked_plan(replay)

    decoded = decode_events(events)
    checkpoint = facts.workspace_checkpoint
    expected_high_water = (
        checkpoint.runtime_event_high_water
        if checkpoint is not None
        else facts.expected_runtime_event_high_water
    )
    gates = _Gates()

    # (a) legacy path: the Phase 0 verdict over the source ledger comes first
    legacy = None if replay is not None else build_resume_plan(decoded, expected_high_water)
    if legacy is not None:
        gates.diagnostics.extend(legacy.diagnostics)
        for reason in legacy.rejection_reasons:
            gates.reasons.setdefault(reason)
        if legacy.disposition != "safe_replay" and not legacy.rejection_reasons:
            gates.reasons.setdefault("dangling_tool_state")  # fail closed on a reasonless block

    # (b)
    pending = _pending_permissions(decoded)
    gates.diagnostics.extend(pending)
    if pending:
        gates.reasons.setdefault("pending_permission")

    # (c) composite path (the legacy path checked it inside Phase 0)
    source_high_water = len(decoded)
    if replay is not None:
        position = replay.segments[-1].boundary["position"]
        assert isinstance(position, dict)
        last_seq = position["lastEventSeq"]
        assert isinstance(last_seq, int)
        source_high_water = last_seq
        if expected_high_water is not None and expected_high_water != last_seq:
            gates.park(
                "runtime_offset_mismatch",
                "persisted runtime high-water does not match the immutable continuation boundary",
                detail={"expected": expected_high_water, "actual": last_seq},
            )

    # (d) / (e) / (f)
    source = decoded[0] if decoded else None
    if source is None:
        gates.park(
            "runtime_ledger_empty", "safe-boundary continuation requires at least one RuntimeEvent"
        )
    else:
        mismatched = next((e for e in decoded if e.identity != source.identity), None)
        if mismatched is not None:
            gates.park(
                "runtime_identity_mismatch",
                "RuntimeEvent ledger contains more than one source execution identity",
                event_id=mismatched.id,
            )
        fresh = facts.continuation_identity
        if (
            fresh.invocation_id == source.invocation_id
            or fresh.run_id == source.run_id
            or fresh.turn_id == source.turn_id
        ):
            gates.park(
                "continuation_identity_reused",
                "continuation must use fresh invocation, run, and turn identities",
            )

    # (g)
    if not facts.ledger_readable:
        gates.park("runtime_ledger_unreadable", "RuntimeEvent ledger could not be read reliably")

    # (h)
    if not facts.terminal_repair_succeeded:
        gates.park(
            "terminal_repair_failed", "source run terminal repair did not complete successfully"
        )
    elif facts.source_header is not None and not terminal_boundary_consistent(
        facts.source_header, decoded, facts.terminal_policy
    ):
        gates.park(
            "terminal_repair_failed",
            "source run header and its terminal RuntimeEvent do not form one consistent boundary",
        )

    # (i)
    if normalize_cwd(facts.source_cwd) != normalize_cwd(facts.current_cwd):
        cwd_detail: dict[str, JsonValue] = {
            "sourceCwd": facts.source_cwd,
            "currentCwd": facts.current_cwd,
        }
        if facts.cwd_policy == "strict":
            gates.park(
                "workspace_cwd_mismatch",
                "current cwd differs from the source resume boundary",
                detail=cwd_detail,
            )
        else:
            gates.note(
                "workspace_location_changed",
                "workspace location differs from the source resume boundary",
                detail=cwd_detail,
            )

    # (j)
    identity_detail: dict[str, JsonValue] = {
        "sourceWorkspaceIdentity": facts.source_workspace_identity,
        "currentWorkspaceIdentity": facts.current_workspace_identity,
    }
    if facts.source_workspace_identity is None or facts.current_workspace_identity is None:
        gates.park(
            "workspace_identity_missing",
            "workspace identity is unknown, so the source workspace cannot be proven",
            detail=identity_detail,
        )
    elif facts.source_workspace_identity != facts.current_workspace_identity:
        gates.park(
            "workspace_identity_mismatch",
            "current workspace identity differs from the source resume boundary",
            detail=identity_detail,
        )

    # (k)
    if not facts.background_operations_settled:
        gates.park("background_operation_pending", "a background or child operation is not settled")

    # (l) / (m)
    if checkpoint is not None:
        if not checkpoint.ref:
            gates.park(
                "workspace_ref_missing", "workspace checkpoint does not contain a restorable ref"
            )
        elif not checkpoint.restored:
            gates.park(
                "checkpoint_restore_failed",
                "workspace checkpoint ref could not be restored",
                detail={"workspaceRef": checkpoint.ref},
            )

    # (n)
    if replay is not None:
        runtime_context = replay.runtime_context
    else:
        assert legacy is not None
        inherited = [event for segment in ancestors for event in decode_events(segment)]
        runtime_context = (*inherited, *legacy.replay_runtime_events)
    available = set(facts.available_tool_names)
    unavailable = {
        call.name
        for event in runtime_context
        if (call := event.function_call) is not None and call.name not in available
    }
    if unavailable:
        gates.park(
            "tool_catalog_mismatch",
            "one or more tools from the source boundary are unavailable",
            detail={"unavailableToolNames": list(_js_sorted(unavailable))},
        )

    # (o) / (p)
    if source is not None and not gates.fired("runtime_identity_mismatch"):
        first_role, first_id, last_role, last_id = _head_and_tail(runtime_context, replay)
        if first_role != "user":
            gates.park(
                "provider_resume_head_unsupported",
                "provider replay must start at a user boundary for continuation",
                event_id=first_id,
                detail={"firstRole": first_role},
            )
        if last_role not in ("user", "tool"):
            gates.park(
                "provider_resume_boundary_unsupported",
                "provider replay must end at a user or tool boundary for continuation",
                event_id=last_id,
                detail={"lastRole": last_role},
            )

    if gates.reasons or source is None:
        return ContinuationPlan(
            disposition="park",
            rejection_reasons=tuple(gates.reasons),
            diagnostics=tuple(gates.diagnostics),
        )

    assert facts.current_workspace_identity is not None  # gate (j) parks otherwise
    snapshot_checkpoint = (
        SnapshotCheckpoint(
            ref=checkpoint.ref, runtime_event_high_water=checkpoint.runtime_event_high_water
        )
        if checkpoint is not None and checkpoint.ref
        else None
    )
    return ContinuationPlan(
        disposition="continue",
        rejection_reasons=(),
        diagnostics=tuple(gates.diagnostics),
        continuation=RuntimeContinuation(
            invocation_id=facts.continuation_identity.invocation_id,
            run_id=facts.continuation_identity.run_id,
            turn_id=facts.continuation_identity.turn_id,
            source_invocation_id=source.invocation_id,
            source_run_id=source.run_id,
            source_turn_id=source.turn_id,
            source_runtime_event_high_water=source_high_water,
            runtime_context=tuple(runtime_context),
            **_composite_fields(replay),
            safety_snapshot=ContinuationSafetySnapshot(
                workspace_identity=facts.current_workspace_identity,
                background_operations_settled=True,
                available_tool_names=_js_sorted(set(facts.available_tool_names)),
                workspace_checkpoint=snapshot_checkpoint,
            ),
        ),
    )


def _composite_fields(replay: CompositeReplay | None) -> dict[str, Any]:
    """The HEAD-only plan fields of a replayable composite replay (none for the legacy path)."""
    if replay is None:
        return {}
    source = replay.segments[-1]
    identity, position = source.boundary["identity"], source.boundary["position"]
    assert isinstance(identity, dict)
    assert isinstance(position, dict)
    assert replay.manifest_digest is not None
    return {
        "claim_id": claim_id_for(
            str(identity["sessionId"]),
            str(identity["runId"]),
            int(str(position["lastEventSeq"])),
            source.prefix_digest,
        ),
        "source_runtime_context": (
            source.replay_runtime_events if len(replay.segments) > 1 else None
        ),
        "boundary": ContinuationBoundary(
            segments=tuple(segment.boundary for segment in replay.segments),
            manifest_digest=replay.manifest_digest,
        ),
        "provider_replay_digest": replay.provider_replay_digest,
        "provider_projection_version": replay.provider_projection_version,
    }


def _head_and_tail(
    runtime_context: Sequence[RuntimeEvent], replay: CompositeReplay | None
) -> tuple[str | None, str | None, str | None, str | None]:
    """``(firstRole, firstEventId, lastRole, lastEventId)`` of the model-visible history.

    Legacy: the first/last model-visible event of the runtime context and its ledger role
    (``user``, ``model``, ``tool``, ``system``). Composite: the first/last provider item and
    its provider role (``user``, ``assistant``, ``system``, ``tool``).
    """
    if replay is not None:
        items = replay.provider_items
        first_item = items[0] if items else None
        last_item = items[-1] if items else None
        return (
            provider_item_role(first_item),
            _item_event_id(first_item),
            provider_item_role(last_item),
            _item_event_id(last_item),
        )
    first, last = _first_visible(runtime_context), _last_visible(runtime_context)
    return (
        first.role if first is not None else None,
        first.id if first is not None else None,
        last.role if last is not None else None,
        last.id if last is not None else None,
    )


def _item_event_id(item: dict[str, JsonValue] | None) -> str | None:
    event_id = item.get("eventId") if item is not None else None
    return event_id if isinstance(event_id, str) else None
