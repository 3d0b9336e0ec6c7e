"""The safe-boundary continuation plan and its models (docs/reference/continuation.md#plan and
#gates).

Why a separate plan from Phase 0: a ``safe_replay`` prefix only says the committed ledger can be
shown to the provider again. Continuing it as a *new* Run additionally needs inputs the ledger
cannot prove — the workspace is the same one, nothing is still running in the background, every
historical tool still exists, a supplied checkpoint was restored — and a provider history that
ends where a new model turn may legally start. Every gate (:mod:`maka_es.continuation.model.gates`)
is evaluated and every failure is reported (reasons in gate order, de-duplicated), so a host
can show all blockers at once; the plan says ``continue`` only when no gate fired. Uncertainty
is never converted into a retry.

Pure and deterministic: the host supplies its observations as :class:`ContinuationInputs`
(including the fresh continuation ids), the function reads no clock, store or filesystem and
never mutates its inputs. Hosts, the planner, the executor and the telemetry read the plan's
models from here; this is also the one place that says how a blocked composite replay parks
(:data:`REPLAY_PARK_REASONS`).

Where HEAD and Original P1 differ (docs/reference/index.md#conventions) the original Phase 1
contract decides the default and the other behaviour is an explicit option (ADR 0008):

* cwd: default ``cwd_policy="strict"`` parks a normalised cwd change with
  ``workspace_cwd_mismatch`` (Original P1); ``"relocatable"`` continues with the HEAD
  diagnostic ``workspace_location_changed``.
* terminal boundary (when ``source_header`` is given): default ``terminal_policy="strict"`` is
  HEAD's rule — header terminal, exactly one non-partial terminal event matching the header's
  session/run/turn, carrying a derivable fact, being the last event, and matching the header.
  It is a superset of Original P1's "exactly one matching, non-partial terminal RuntimeEvent".
  ``"status_only"`` is Original P1's weaker rule (one terminal event whose status maps to the
  header status, anywhere in the ledger).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import (
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from maka_es.continuation.model.gates import (
    ContinuationIdentity,
    ContinuationInputs,
    CwdPolicy,
    GateVerdicts,
    HistoryEdges,
    TerminalPolicy,
    WorkspaceCheckpoint,
    background_operation_gate,
    checkpoint_restore_gate,
    continuation_identity_reused_gate,
    cwd_gate,
    js_sorted,
    ledger_empty_gate,
    ledger_readable_gate,
    normalize_cwd,
    pending_permission_gate,
    provider_boundary_gate,
    provider_history_start_gate,
    provider_item_edges,
    resume_plan_gate,
    runtime_context_edges,
    runtime_identity_gate,
    runtime_offset_gate,
    terminal_boundary_consistent,
    terminal_repair_gate,
    tool_catalog_gate,
    workspace_identity_gate,
    workspace_ref_gate,
)
from maka_es.continuation.model.replay import (
    CompositeReplay,
    ReplayBlockReason,
    ReplayDiagnostic,
    source_boundary,
)
from maka_es.resume.models import Diagnostic, ResumeRejectionReason
from maka_es.resume.plan import build_resume_plan
from maka_es.wire.events import RuntimeEvent, RuntimeEventInput, ValueModel, decode_events

__all__ = [
    "REPLAY_PARK_REASONS",
    "ContinuationBoundary",
    "ContinuationDisposition",
    "ContinuationInputs",
    "ContinuationIdentity",
    "ContinuationPlan",
    "ContinuationSafetySnapshot",
    "CwdPolicy",
    "RuntimeContinuation",
    "SnapshotCheckpoint",
    "TerminalPolicy",
    "WorkspaceCheckpoint",
    "build_continuation_plan",
    "normalize_cwd",
    "replay_blocked_plan",
    "replay_park_reason",
    "terminal_boundary_consistent",
]

ContinuationDisposition = Literal["continue", "park"]

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
# The plan's output
# --------------------------------------------------------------------------------------------


class SnapshotCheckpoint(ValueModel):
    """The checkpoint a continuation was planned against (ref + covered high-water)."""

    ref: str
    runtime_event_high_water: int


class ContinuationSafetySnapshot(ValueModel):
    """The host inputs the plan relied on; execution revalidates them
    (docs/reference/continuation.md#revalidation)."""

    workspace_identity: str
    background_operations_settled: Literal[True]
    available_tool_names: tuple[str, ...]
    workspace_checkpoint: SnapshotCheckpoint | None = None


class ContinuationBoundary(ValueModel):
    """The boundary cursor a continuation is bound to (docs/reference/wire.md#boundary-digests):
    every lineage segment (``runtime_prefix_segment_v1``, oldest → source) and their manifest
    digest. Execution re-reads exactly these segments before it claims anything."""

    protocol: Literal["runtime_boundary_cursor_v1"] = "runtime_boundary_cursor_v1"
    segments: tuple[dict[str, JsonValue], ...]
    manifest_digest: str


#: Fields only a lineage plan (``replay=`` given) has; a single-run plan omits them from its dump.
_LINEAGE_ONLY_FIELDS = (
    "claim_id",
    "source_runtime_context",
    "boundary",
    "provider_replay_digest",
    "provider_projection_version",
)


class RuntimeContinuation(ValueModel):
    """Fresh target identity, the source boundary and the validated replay context.

    A lineage plan (``replay=`` given) also carries what execution must find unchanged and
    what the claim will record (docs/reference/continuation.md#plan): ``claimId`` (derived
    from the source boundary, so every planner of one boundary names the same claim),
    ``boundary``, ``providerReplayDigest``, ``providerProjectionVersion`` and, when there are
    ancestors, ``sourceRuntimeContext`` (the source segment's own replay events). A single-run
    plan has none of them and its dump omits the keys.
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
    def _omit_absent_lineage_fields(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in _LINEAGE_ONLY_FIELDS:
            if getattr(self, name) is None:
                data.pop(to_camel(name) if info.by_alias else name, None)
        return data


class ContinuationPlan(ValueModel):
    """``continue`` with a :class:`RuntimeContinuation`, or ``park`` with stable reasons."""

    disposition: ContinuationDisposition
    rejection_reasons: tuple[ResumeRejectionReason, ...]
    diagnostics: tuple[Diagnostic, ...]
    continuation: RuntimeContinuation | None = None


# --------------------------------------------------------------------------------------------
# A blocked replay's park
# --------------------------------------------------------------------------------------------


def replay_blocked_plan(replay: CompositeReplay) -> ContinuationPlan:
    """The single-reason park of a blocked composite replay (step 4 of
    docs/reference/continuation.md#planner-steps). The park
    code stays the reference's (``runtime_ledger_unreadable`` for unsettled tool facts); the
    diagnostic also names the unsettled operation and its tool, when the replay names them."""
    assert replay.blocked_reason is not None
    reason = replay_park_reason(replay.blocked_reason)
    first = replay.diagnostics[0] if replay.diagnostics else None
    named = _unsettled_operation(first)
    tool_call_id = _str_or_none(named.pop("toolCallId", None))
    message = (
        f"continuation replay segment {replay.blocked_segment_index} is not "
        f"replayable: {replay.blocked_reason}"
    )
    if named:
        message += ": " + _may_have_run(named, tool_call_id)
    return ContinuationPlan(
        disposition="park",
        rejection_reasons=(reason,),
        diagnostics=(
            Diagnostic(
                code=reason,
                message=message,
                event_id=first.event_id if first is not None else None,
                tool_call_id=tool_call_id,
                tool_name=_str_or_none(named.get("toolName")),
                detail={
                    "segmentIndex": replay.blocked_segment_index,
                    "replayReason": replay.blocked_reason,
                    **named,
                },
            ),
        ),
    )


def _unsettled_operation(diagnostic: ReplayDiagnostic | None) -> dict[str, JsonValue]:
    """``operationId``, ``toolName`` and ``toolCallId`` of a ``tool_recovery_unsettled``
    replay diagnostic (empty for any other block)."""
    if diagnostic is None or diagnostic.code != "tool_recovery_unsettled" or not diagnostic.detail:
        return {}
    keys = ("operationId", "toolName", "toolCallId")
    return {key: diagnostic.detail.get(key) for key in keys}


def _may_have_run(named: dict[str, JsonValue], tool_call_id: str | None) -> str:
    """Plain words for the park over an interrupted call: the tool may have run, which
    operation and tool, and what settles it (an operator's attestation, or its recovery)."""
    operation = named["operationId"]
    where = f"operation {operation}, " if operation else ""
    return (
        f"tool {named['toolName']} ({where}call {tool_call_id}) may have run and its outcome "
        "is unknown; settle it (recovery, or an operator's attestation) or fork before it"
    )


def _str_or_none(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------


def build_continuation_plan(
    events: Sequence[RuntimeEventInput],
    inputs: ContinuationInputs,
    *,
    ancestors: Sequence[Sequence[RuntimeEventInput]] = (),
    replay: CompositeReplay | None = None,
) -> ContinuationPlan:
    """Evaluate the safe-boundary gates (docs/reference/continuation.md#gates) over the source
    run's ``events``.

    ``events`` is everything the store returned for the source run (partial snapshots included:
    the single-run high-water is the input count). ``ancestors`` is the lineage context inherited
    from continuation ancestors, oldest first, each already reduced to its trimmed replay
    events (e.g. ``build_composite_replay([...]).segments[i].replay_runtime_events``); it is
    prepended to the source replay for the tool-catalog gate (n), the head/tail gates (o, p)
    and the planned ``runtimeContext``. The source ledger itself is checked by Phase 0
    (gate a), which is what makes this the *single-run* path.

    ``replay`` selects the *lineage* path instead: pass the
    :func:`build_composite_replay` of the lineage whose last segment is ``events``. A blocked
    replay parks with a single reason (``runtime_ledger_unreadable`` for unsettled or corrupt
    tool facts); otherwise gate (a) is replaced by the replay, gate (c) compares the expected
    high-water with the source segment's ``lastEventSeq``, and gates (n-p) read its runtime
    context and provider items. ``ancestors`` must then be empty (the replay carries them).

    The gates, all evaluated, reasons in this order: (a) Phase 0 not ``safe_replay`` → its
    reasons; (b) ``pending_permission``; (c) ``runtime_offset_mismatch`` (lineage path only);
    (d) ``runtime_ledger_empty``; (e) ``runtime_identity_mismatch``;
    (f) ``continuation_identity_reused``; (g) ``runtime_ledger_unreadable``;
    (h) ``terminal_repair_failed``; (i) cwd (see module docstring);
    (j) ``workspace_identity_missing`` / ``workspace_identity_mismatch``;
    (k) ``background_operation_pending``; (l) ``workspace_ref_missing``;
    (m) ``checkpoint_restore_failed``; (n) ``tool_catalog_mismatch``;
    (o) ``provider_resume_head_unsupported``; (p) ``provider_resume_boundary_unsupported``
    (o and p only for a non-empty single-identity ledger).
    """
    if replay is None:
        return _single_run_plan(events, inputs, ancestors)
    if ancestors:
        raise ValueError("ancestors are part of the composite replay; pass one or the other")
    return _lineage_plan(events, inputs, replay)


def _expected_high_water(inputs: ContinuationInputs) -> int | None:
    """The checkpoint's high-water when a checkpoint is given, else the caller's."""
    checkpoint = inputs.workspace_checkpoint
    if checkpoint is not None:
        return checkpoint.runtime_event_high_water
    return inputs.expected_runtime_event_high_water


def _single_run_plan(
    events: Sequence[RuntimeEventInput],
    inputs: ContinuationInputs,
    ancestors: Sequence[Sequence[RuntimeEventInput]],
) -> ContinuationPlan:
    """Gates a, b, d-p: Phase 0 judges the source ledger; the context is the ancestors'
    trimmed events followed by the source's replay events."""
    decoded = decode_events(events)
    resume_plan = build_resume_plan(decoded, _expected_high_water(inputs))
    gates = GateVerdicts()
    resume_plan_gate(gates, resume_plan)  # (a)
    pending_permission_gate(gates, decoded)  # (b)
    inherited = [event for segment in ancestors for event in decode_events(segment)]
    runtime_context = (*inherited, *resume_plan.replay_runtime_events)
    _shared_gates(gates, decoded, inputs, runtime_context, runtime_context_edges(runtime_context))
    return _verdict(gates, decoded, inputs, runtime_context, len(decoded), {})


def _lineage_plan(
    events: Sequence[RuntimeEventInput], inputs: ContinuationInputs, replay: CompositeReplay
) -> ContinuationPlan:
    """A blocked replay parks alone; otherwise gates b-p, with gate c comparing the expected
    high-water with the source segment's ``lastEventSeq`` and n-p reading the replay."""
    if replay.blocked_reason is not None:
        return replay_blocked_plan(replay)
    decoded = decode_events(events)
    gates = GateVerdicts()
    pending_permission_gate(gates, decoded)  # (b)
    last_seq = source_boundary(replay).high_water
    runtime_offset_gate(gates, _expected_high_water(inputs), last_seq)  # (c)
    runtime_context = replay.runtime_context
    _shared_gates(gates, decoded, inputs, runtime_context, provider_item_edges(replay))
    return _verdict(gates, decoded, inputs, runtime_context, last_seq, _lineage_fields(replay))


def _shared_gates(
    gates: GateVerdicts,
    decoded: Sequence[RuntimeEvent],
    inputs: ContinuationInputs,
    runtime_context: Sequence[RuntimeEvent],
    edges: HistoryEdges,
) -> None:
    """The gates both paths share, in order (o and p only for a non-empty ledger of one
    execution identity)."""
    source = decoded[0] if decoded else None
    ledger_empty_gate(gates, source)  # (d)
    runtime_identity_gate(gates, decoded, source)  # (e)
    continuation_identity_reused_gate(gates, inputs, source)  # (f)
    ledger_readable_gate(gates, inputs)  # (g)
    terminal_repair_gate(gates, inputs, decoded)  # (h)
    cwd_gate(gates, inputs)  # (i)
    workspace_identity_gate(gates, inputs)  # (j)
    background_operation_gate(gates, inputs)  # (k)
    workspace_ref_gate(gates, inputs.workspace_checkpoint)  # (l)
    checkpoint_restore_gate(gates, inputs.workspace_checkpoint)  # (m)
    tool_catalog_gate(gates, inputs, runtime_context)  # (n)
    if source is not None and not gates.fired("runtime_identity_mismatch"):
        provider_history_start_gate(gates, edges)  # (o)
        provider_boundary_gate(gates, edges)  # (p)


def _verdict(
    gates: GateVerdicts,
    decoded: Sequence[RuntimeEvent],
    inputs: ContinuationInputs,
    runtime_context: Sequence[RuntimeEvent],
    source_high_water: int,
    lineage_fields: dict[str, Any],
) -> ContinuationPlan:
    """``park`` with every reason, or ``continue`` with the planned continuation."""
    source = decoded[0] if decoded else None
    if gates.reasons or source is None:
        return ContinuationPlan(
            disposition="park",
            rejection_reasons=tuple(gates.reasons),
            diagnostics=tuple(gates.diagnostics),
        )
    return ContinuationPlan(
        disposition="continue",
        rejection_reasons=(),
        diagnostics=tuple(gates.diagnostics),
        continuation=RuntimeContinuation(
            invocation_id=inputs.continuation_identity.invocation_id,
            run_id=inputs.continuation_identity.run_id,
            turn_id=inputs.continuation_identity.turn_id,
            source_invocation_id=source.invocation_id,
            source_run_id=source.run_id,
            source_turn_id=source.turn_id,
            source_runtime_event_high_water=source_high_water,
            runtime_context=tuple(runtime_context),
            **lineage_fields,
            safety_snapshot=_safety_snapshot(inputs),
        ),
    )


def _safety_snapshot(inputs: ContinuationInputs) -> ContinuationSafetySnapshot:
    """The host inputs a continuing plan relied on (execution revalidates them)."""
    assert inputs.current_workspace_identity is not None  # gate (j) parks otherwise
    checkpoint = inputs.workspace_checkpoint
    snapshot_checkpoint = (
        SnapshotCheckpoint(
            ref=checkpoint.ref, runtime_event_high_water=checkpoint.runtime_event_high_water
        )
        if checkpoint is not None and checkpoint.ref
        else None
    )
    return ContinuationSafetySnapshot(
        workspace_identity=inputs.current_workspace_identity,
        background_operations_settled=True,
        available_tool_names=js_sorted(set(inputs.available_tool_names)),
        workspace_checkpoint=snapshot_checkpoint,
    )


def _lineage_fields(replay: CompositeReplay) -> dict[str, Any]:
    """The lineage-only plan fields of a replayable composite replay (a single-run plan has
    none)."""
    source = replay.segments[-1]
    assert replay.manifest_digest is not None
    return {
        "claim_id": source_boundary(replay).claim_id,
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
