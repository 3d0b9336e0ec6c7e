"""The workspace and provider gates i-p of a continuation plan
(docs/reference/continuation.md#gates).

Why apart from the ledger gates: these judge what the ledger cannot prove - the host's
workspace (cwd, identity, checkpoint), its background work and tool catalog - and whether the
replayed history has a head and a tail a new model turn may continue from. Each gate only adds
to the :class:`~maka_es.continuation.gate_checks.GateVerdicts` it is given. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pydantic import JsonValue

from maka_es.continuation.composite_replay import CompositeReplay, provider_item_role
from maka_es.continuation.gate_checks import GateVerdicts
from maka_es.continuation.plan_models import ContinuationFacts, WorkspaceCheckpointFact
from maka_es.wire.codec import js_sort_key
from maka_es.wire.events import RuntimeEvent

__all__ = [
    "HistoryEdges",
    "background_operation_gate",
    "checkpoint_restore_gate",
    "composite_edges",
    "cwd_gate",
    "js_sorted",
    "legacy_edges",
    "normalize_cwd",
    "provider_boundary_gate",
    "provider_head_gate",
    "tool_catalog_gate",
    "workspace_identity_gate",
    "workspace_ref_gate",
]


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


def cwd_gate(gates: GateVerdicts, facts: ContinuationFacts) -> None:
    """(i) a changed cwd parks under ``strict`` and is only noted under ``relocatable``."""
    if normalize_cwd(facts.source_cwd) == normalize_cwd(facts.current_cwd):
        return
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


def workspace_identity_gate(gates: GateVerdicts, facts: ContinuationFacts) -> None:
    """(j) an unknown workspace identity is missing; a different one is a mismatch."""
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


def background_operation_gate(gates: GateVerdicts, facts: ContinuationFacts) -> None:
    """(k) ``background_operation_pending``: something the source started still runs."""
    if not facts.background_operations_settled:
        gates.park("background_operation_pending", "a background or child operation is not settled")


def workspace_ref_gate(gates: GateVerdicts, checkpoint: WorkspaceCheckpointFact | None) -> None:
    """(l) ``workspace_ref_missing``: a checkpoint without a restorable ref."""
    if checkpoint is not None and not checkpoint.ref:
        gates.park(
            "workspace_ref_missing", "workspace checkpoint does not contain a restorable ref"
        )


def checkpoint_restore_gate(
    gates: GateVerdicts, checkpoint: WorkspaceCheckpointFact | None
) -> None:
    """(m) ``checkpoint_restore_failed``: a checkpoint with a ref the host did not restore
    (a checkpoint without a ref already parked at gate l)."""
    if checkpoint is not None and checkpoint.ref and not checkpoint.restored:
        gates.park(
            "checkpoint_restore_failed",
            "workspace checkpoint ref could not be restored",
            detail={"workspaceRef": checkpoint.ref},
        )


def tool_catalog_gate(
    gates: GateVerdicts, facts: ContinuationFacts, runtime_context: Sequence[RuntimeEvent]
) -> None:
    """(n) ``tool_catalog_mismatch``: a replayed call names a tool the host no longer has."""
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
            detail={"unavailableToolNames": list(js_sorted(unavailable))},
        )


class HistoryEdges(NamedTuple):
    """Role and event id of the first and last model-visible entry of the replayed history."""

    first_role: str | None
    first_id: str | None
    last_role: str | None
    last_id: str | None


def legacy_edges(runtime_context: Sequence[RuntimeEvent]) -> HistoryEdges:
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


def composite_edges(replay: CompositeReplay) -> HistoryEdges:
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


def provider_head_gate(gates: GateVerdicts, edges: HistoryEdges) -> None:
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
