"""The gates of a continuation plan and the host inputs they judge
(docs/reference/continuation.md#gates).

Why one function per gate: the plan reports *every* blocker, in gate order, so each gate is an
independent check that only adds to the :class:`GateVerdicts` it is given; the plan builder
(:mod:`maka_es.continuation.model.plan`) calls them in the documented order. The ledger gates judge
the source ledger itself (Phase 0's verdict, permissions, the boundary's high-water,
identities, the terminal fact) and the two host verdicts about it (readable, terminal repair).
The workspace and provider gates judge what the ledger cannot prove - the host's workspace
(cwd, identity, checkpoint), its background work and tool catalog - and whether the replayed
history has a head and a tail a new model turn may continue from.

The host's observations arrive as :class:`ContinuationInputs`; they are defined here, next to
the gates that read them, and re-exported by the plan module. ("Fact" is kept for what the
ledger commits; what the host supplies is an input.) Pure: no I/O, never mutates its inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal, NamedTuple

from pydantic import Field, JsonValue, StrictBool, StrictStr

from maka_es.continuation.model.replay import CompositeReplay, provider_item_role
from maka_es.resume.models import Diagnostic, DiagnosticCode, ResumePlan, ResumeRejectionReason
from maka_es.wire.codec import js_sort_key
from maka_es.wire.events import RuntimeEvent, RuntimeEventInput, ValueModel, decode_events
from maka_es.wire.run_header import (
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
)

__all__ = [
    "ContinuationInputs",
    "ContinuationIdentity",
    "CwdPolicy",
    "GateVerdicts",
    "HistoryEdges",
    "TerminalPolicy",
    "WorkspaceCheckpoint",
    "background_operation_gate",
    "checkpoint_restore_gate",
    "continuation_identity_reused_gate",
    "cwd_gate",
    "js_sorted",
    "ledger_empty_gate",
    "ledger_readable_gate",
    "normalize_cwd",
    "pending_permission_gate",
    "provider_boundary_gate",
    "provider_history_start_gate",
    "provider_item_edges",
    "resume_plan_gate",
    "runtime_context_edges",
    "runtime_identity_gate",
    "runtime_offset_gate",
    "terminal_boundary_consistent",
    "terminal_repair_gate",
    "tool_catalog_gate",
    "workspace_identity_gate",
    "workspace_ref_gate",
]

CwdPolicy = Literal["strict", "relocatable"]
TerminalPolicy = Literal["strict", "status_only"]
_HighWater = Annotated[int, Field(ge=0, le=2**53 - 1, strict=True)]


# --------------------------------------------------------------------------------------------
# The host inputs
# --------------------------------------------------------------------------------------------


class ContinuationIdentity(ValueModel):
    """The fresh execution identity the continuation Run will use."""

    invocation_id: StrictStr
    run_id: StrictStr
    turn_id: StrictStr


class WorkspaceCheckpoint(ValueModel):
    """A host-reported workspace checkpoint (Phase 4 is design-only; a trusted observation)."""

    ref: StrictStr | None = None
    restored: StrictBool
    runtime_event_high_water: _HighWater


class ContinuationInputs(ValueModel):
    """Host observations the ledger cannot prove (docs/reference/continuation.md#gates; the
    inspector that reports them: docs/reference/continuation.md#host-facts).

    Accepts snake_case attributes or camelCase keys (``sourceCwd``, ``continuationIdentity``
    ``{invocationId, runId, turnId}``, ``workspaceCheckpoint {ref, restored,
    runtimeEventHighWater}``, ...).

    ``source_header``: when given, gate (h) also checks the header against the ledger's
    terminal fact (see ``terminal_policy``); when absent, gate (h) relies on
    ``terminal_repair_succeeded`` alone (the host's own verdict). ``source_cwd`` and the
    workspace identities are always taken from these inputs, never from the header.
    A missing (``None``) workspace identity on either side is a missing input and parks with
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
    workspace_checkpoint: WorkspaceCheckpoint | None = None
    expected_runtime_event_high_water: _HighWater | None = None
    cwd_policy: CwdPolicy = "strict"
    terminal_policy: TerminalPolicy = "strict"
    source_header: RunHeader | None = None


# --------------------------------------------------------------------------------------------
# The ledger gates a-h
# --------------------------------------------------------------------------------------------


class GateVerdicts:
    """Accumulates diagnostics and reasons in gate order (reasons de-duplicated)."""

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


def terminal_boundary_consistent(
    header: RunHeader, events: Sequence[RuntimeEventInput], policy: TerminalPolicy = "strict"
) -> bool:
    """Whether the source header and ledger agree on one terminal fact (gate h).

    ``strict`` (HEAD, default): the header is terminal; exactly one non-partial terminal event
    carries the header's session/run/turn; it has a terminal status with a derivable fact
    (failure class / abort source, docs/reference/ledger.md#terminal-rules); it is the last
    event; the header matches it.
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
    """Requests without a later decision, accepted answer or accepted closure."""
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


def resume_plan_gate(gates: GateVerdicts, resume_plan: ResumePlan) -> None:
    """(a) single-run path: the Phase 0 verdict over the source ledger, its reasons first."""
    gates.diagnostics.extend(resume_plan.diagnostics)
    for reason in resume_plan.rejection_reasons:
        gates.reasons.setdefault(reason)
    if resume_plan.disposition != "safe_replay" and not resume_plan.rejection_reasons:
        gates.reasons.setdefault("dangling_tool_state")  # fail closed on a reasonless block


def pending_permission_gate(gates: GateVerdicts, events: Sequence[RuntimeEvent]) -> None:
    """(b) ``pending_permission``: a permission request nobody answered."""
    pending = _pending_permissions(events)
    gates.diagnostics.extend(pending)
    if pending:
        gates.reasons.setdefault("pending_permission")


def runtime_offset_gate(
    gates: GateVerdicts, expected_high_water: int | None, last_event_seq: int
) -> None:
    """(c) lineage path only (the single-run path checks it inside Phase 0)."""
    if expected_high_water is not None and expected_high_water != last_event_seq:
        gates.park(
            "runtime_offset_mismatch",
            "persisted runtime high-water does not match the immutable continuation boundary",
            detail={"expected": expected_high_water, "actual": last_event_seq},
        )


def ledger_empty_gate(gates: GateVerdicts, source: RuntimeEvent | None) -> None:
    """(d) ``runtime_ledger_empty``: nothing to continue from."""
    if source is None:
        gates.park(
            "runtime_ledger_empty", "safe-boundary continuation requires at least one RuntimeEvent"
        )


def runtime_identity_gate(
    gates: GateVerdicts, events: Sequence[RuntimeEvent], source: RuntimeEvent | None
) -> None:
    """(e) ``runtime_identity_mismatch``: the ledger holds more than one execution."""
    if source is None:
        return
    mismatched = next((e for e in events if e.identity != source.identity), None)
    if mismatched is not None:
        gates.park(
            "runtime_identity_mismatch",
            "RuntimeEvent ledger contains more than one source execution identity",
            event_id=mismatched.id,
        )


def continuation_identity_reused_gate(
    gates: GateVerdicts, inputs: ContinuationInputs, source: RuntimeEvent | None
) -> None:
    """(f) ``continuation_identity_reused``: the target must not reuse any source id."""
    if source is None:
        return
    fresh = inputs.continuation_identity
    if (
        fresh.invocation_id == source.invocation_id
        or fresh.run_id == source.run_id
        or fresh.turn_id == source.turn_id
    ):
        gates.park(
            "continuation_identity_reused",
            "continuation must use fresh invocation, run, and turn identities",
        )


def ledger_readable_gate(gates: GateVerdicts, inputs: ContinuationInputs) -> None:
    """(g) ``runtime_ledger_unreadable``: the host could not read the ledger reliably."""
    if not inputs.ledger_readable:
        gates.park("runtime_ledger_unreadable", "RuntimeEvent ledger could not be read reliably")


def terminal_repair_gate(
    gates: GateVerdicts, inputs: ContinuationInputs, events: Sequence[RuntimeEvent]
) -> None:
    """(h) ``terminal_repair_failed``: the host's repair failed, or (with a source header) the
    header and the ledger do not form one terminal boundary."""
    if not inputs.terminal_repair_succeeded:
        gates.park(
            "terminal_repair_failed", "source run terminal repair did not complete successfully"
        )
    elif inputs.source_header is not None and not terminal_boundary_consistent(
        inputs.source_header, events, inputs.terminal_policy
    ):
        gates.park(
            "terminal_repair_failed",
            "source run header and its terminal RuntimeEvent do not form one consistent boundary",
        )


# --------------------------------------------------------------------------------------------
# The workspace and provider gates i-p
# --------------------------------------------------------------------------------------------


def normalize_cwd(value: str) -> str:
    """Platform-neutral cwd: ``\\`` → ``/``, no trailing ``/``, drive-letter paths lowercased."""
    normalized = value.replace("\\", "/").rstrip("/")
    drive_letter = normalized[:1].isascii() and normalized[:1].isalpha()
    if drive_letter and normalized[1:3] == ":/":
        return normalized.lower()
    return normalized


def js_sorted(values: set[str]) -> tuple[str, ...]:
    """Sorted like JavaScript's default ``Array.prototype.sort`` (UTF-16 code units)."""
    return tuple(sorted(values, key=js_sort_key))


def cwd_gate(gates: GateVerdicts, inputs: ContinuationInputs) -> None:
    """(i) a changed cwd parks under ``strict`` and is only noted under ``relocatable``."""
    if normalize_cwd(inputs.source_cwd) == normalize_cwd(inputs.current_cwd):
        return
    cwd_detail: dict[str, JsonValue] = {
        "sourceCwd": inputs.source_cwd,
        "currentCwd": inputs.current_cwd,
    }
    if inputs.cwd_policy == "strict":
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


def workspace_identity_gate(gates: GateVerdicts, inputs: ContinuationInputs) -> None:
    """(j) an unknown workspace identity is missing; a different one is a mismatch."""
    identity_detail: dict[str, JsonValue] = {
        "sourceWorkspaceIdentity": inputs.source_workspace_identity,
        "currentWorkspaceIdentity": inputs.current_workspace_identity,
    }
    if inputs.source_workspace_identity is None or inputs.current_workspace_identity is None:
        gates.park(
            "workspace_identity_missing",
            "workspace identity is unknown, so the source workspace cannot be proven",
            detail=identity_detail,
        )
    elif inputs.source_workspace_identity != inputs.current_workspace_identity:
        gates.park(
            "workspace_identity_mismatch",
            "current workspace identity differs from the source resume boundary",
            detail=identity_detail,
        )


def background_operation_gate(gates: GateVerdicts, inputs: ContinuationInputs) -> None:
    """(k) ``background_operation_pending``: something the source started still runs."""
    if not inputs.background_operations_settled:
        gates.park("background_operation_pending", "a background or child operation is not settled")


def workspace_ref_gate(gates: GateVerdicts, checkpoint: WorkspaceCheckpoint | None) -> None:
    """(l) ``workspace_ref_missing``: a checkpoint without a restorable ref."""
    if checkpoint is not None and not checkpoint.ref:
        gates.park(
            "workspace_ref_missing", "workspace checkpoint does not contain a restorable ref"
        )


def checkpoint_restore_gate(gates: GateVerdicts, checkpoint: WorkspaceCheckpoint | None) -> None:
    """(m) ``checkpoint_restore_failed``: a checkpoint with a ref the host did not restore
    (a checkpoint without a ref already parked at gate l)."""
    if checkpoint is not None and checkpoint.ref and not checkpoint.restored:
        gates.park(
            "checkpoint_restore_failed",
            "workspace checkpoint ref could not be restored",
            detail={"workspaceRef": checkpoint.ref},
        )


def tool_catalog_gate(
    gates: GateVerdicts, inputs: ContinuationInputs, runtime_context: Sequence[RuntimeEvent]
) -> None:
    """(n) ``tool_catalog_mismatch``: a replayed call names a tool the host no longer has."""
    available = set(inputs.available_tool_names)
    unavailable = {
        call.name
        for event in runtime_context
        if (call := event.function_call) is not None and call.name not in available
    }
    if unavailable:
        gates.park(
            "tool_catalog_mismatch",
            "one or more tools from the source boundary are unavailable",
            detail={"unavailableToolNames": list(js_sorted(unavailable))},
        )


class HistoryEdges(NamedTuple):
    """Role and event id of the first and last model-visible entry of the replayed history."""

    first_role: str | None
    first_id: str | None
    last_role: str | None
    last_id: str | None


def runtime_context_edges(runtime_context: Sequence[RuntimeEvent]) -> HistoryEdges:
    """The first/last model-visible event of the runtime context and its ledger role
    (``user``, ``model``, ``tool``, ``system``)."""
    first = next((event for event in runtime_context if event.is_model_visible), None)
    last = next((event for event in reversed(runtime_context) if event.is_model_visible), None)
    return HistoryEdges(
        first.role if first is not None else None,
        first.id if first is not None else None,
        last.role if last is not None else None,
        last.id if last is not None else None,
    )


def provider_item_edges(replay: CompositeReplay) -> HistoryEdges:
    """The first/last provider item and its provider role (``user``, ``assistant``,
    ``system``, ``tool``)."""
    items = replay.provider_items
    first_item = items[0] if items else None
    last_item = items[-1] if items else None
    return HistoryEdges(
        provider_item_role(first_item),
        _item_event_id(first_item),
        provider_item_role(last_item),
        _item_event_id(last_item),
    )


def _item_event_id(item: dict[str, JsonValue] | None) -> str | None:
    event_id = item.get("eventId") if item is not None else None
    return event_id if isinstance(event_id, str) else None


def provider_history_start_gate(gates: GateVerdicts, edges: HistoryEdges) -> None:
    """(o) ``provider_resume_head_unsupported``: the history must start with the user."""
    if edges.first_role != "user":
        gates.park(
            "provider_resume_head_unsupported",
            "provider replay must start at a user boundary for continuation",
            event_id=edges.first_id,
            detail={"firstRole": edges.first_role},
        )


def provider_boundary_gate(gates: GateVerdicts, edges: HistoryEdges) -> None:
    """(p) ``provider_resume_boundary_unsupported``: the history must end where a new model
    turn may start (a user text or a tool result)."""
    if edges.last_role not in ("user", "tool"):
        gates.park(
            "provider_resume_boundary_unsupported",
            "provider replay must end at a user or tool boundary for continuation",
            event_id=edges.last_id,
            detail={"lastRole": edges.last_role},
        )
