"""The wire spelling of the runtime's own facts, as plain dicts: where their keys are written.

Why apart from :mod:`maka_es.wire.facts`: the constructors there derive ids, refs and hashes
from a call and return a validated ``RuntimeEvent``; the public builders (``maka_es.builders``)
hand back the same shapes as unvalidated wire dicts with whatever id, timestamp or deliberately
odd value a test needs. Both spell a dispatch, a response, a recovery fact, a terminal and a
continuation start through these functions, so a builder's event and the store's own fact
cannot drift apart (docs/reference/wire.md#examples). Pure: nothing here validates, reads a
clock or invents an id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from maka_es.wire.events import RECONCILE_RESULT_KIND, RECOVERY_DECISION_KIND

__all__ = [
    "SPINE_KEYS",
    "continuation_start_wire",
    "decision_payload",
    "dispatch_wire",
    "envelope",
    "reconcile_payload",
    "recovery_wire",
    "response_wire",
    "terminal_wire",
    "tool_refs",
]

#: The identity keys every event of one run carries, in wire order (wire.md#envelope).
SPINE_KEYS = ("sessionId", "invocationId", "runId", "turnId")


def envelope(
    spine: Mapping[str, Any], event_id: str, ts: float, role: str, author: str
) -> dict[str, Any]:
    """The required keys of a non-partial event on ``spine`` (its four identity keys)."""
    return {
        "id": event_id,
        **{key: spine[key] for key in SPINE_KEYS},
        "ts": ts,
        "partial": False,
        "role": role,
        "author": author,
    }


def tool_refs(
    call_id: str, operation_id: str | None = None, parent: tuple[str, str] | None = None
) -> dict[str, Any]:
    """``refs`` binding a tool fact to its call (and operation, and Code Mode parent given as
    ``(parentOperationId, parentToolCallId)``) (docs/reference/wire.md#refs)."""
    refs: dict[str, Any] = {"toolCallId": call_id}
    if operation_id is not None:
        refs["operationId"] = operation_id
    if parent is not None:
        refs["parentOperationId"], refs["parentToolCallId"] = parent
    return refs


def dispatch_wire(
    spine: Mapping[str, Any],
    *,
    event_id: str,
    ts: float,
    call_id: str,
    tool_name: str,
    operation_id: str,
    args_hash: str,
    recovery_mode: str,
    protocol: str,
    parent: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A T1 dispatch fact (docs/reference/wire.md#tool-dispatch-payload)."""
    payload = {
        "protocol": protocol,
        "operationId": operation_id,
        "providerToolCallId": call_id,
        "toolName": tool_name,
        "canonicalArgsHash": args_hash,
        "recoveryMode": recovery_mode,
    }
    return {
        **envelope(spine, event_id, ts, "system", "system"),
        "actions": {"toolDispatch": payload},
        "refs": tool_refs(call_id, operation_id, parent),
    }


def response_wire(
    spine: Mapping[str, Any],
    *,
    event_id: str,
    ts: float,
    call_id: str,
    tool_name: str,
    result: Any,
    is_error: bool | None = None,
    refs: Mapping[str, Any] | None = None,
    duration_ms: int | None = None,
) -> dict[str, Any]:
    """A function_response; ``isError`` is written whenever ``is_error`` is given (a fact
    gives it only when true), ``stateDelta.durationMs`` when the tool was timed."""
    content: dict[str, Any] = {
        "kind": "function_response",
        "id": call_id,
        "name": tool_name,
        "result": result,
    }
    if is_error is not None:
        content["isError"] = is_error
    wire: dict[str, Any] = {**envelope(spine, event_id, ts, "tool", "tool"), "content": content}
    if duration_ms is not None:
        wire["actions"] = {"stateDelta": {"durationMs": duration_ms}}
    if refs is not None:
        wire["refs"] = dict(refs)
    return wire


def reconcile_payload(
    operation_id: str, observation: str, observation_digest: str
) -> dict[str, Any]:
    """The payload of a reconcile result (docs/reference/tool-journal.md#recovery-facts)."""
    return {
        "protocol": "tool_reconcile_v1",
        "operationId": operation_id,
        "observation": observation,
        "observationSchema": "state_identity_v1",
        "observationDigest": observation_digest,
    }


def decision_payload(
    operation_id: str,
    disposition: str,
    reason_code: str,
    evidence_event_ids: Sequence[str],
    outcome_event_id: str | None = None,
) -> dict[str, Any]:
    """The payload of a recovery decision; a completed one's ``outcomeEventId`` goes before
    the evidence, where the payload has always had it."""
    payload: dict[str, Any] = {
        "protocol": "tool_recovery_v1",
        "operationId": operation_id,
        "disposition": disposition,
        "reasonCode": reason_code,
    }
    if outcome_event_id is not None:
        payload["outcomeEventId"] = outcome_event_id
    payload["evidenceEventIds"] = list(evidence_event_ids)
    return payload


def recovery_wire(
    spine: Mapping[str, Any],
    *,
    event_id: str,
    ts: float,
    call_id: str,
    operation_id: str,
    payload: Mapping[str, Any],
) -> dict[str, Any]:
    """A recovery fact ``toolRecovery {kind, version: 1, payload}``; the kind follows the
    payload's protocol (a reconcile result or a recovery decision)."""
    is_reconcile = payload.get("protocol") == "tool_reconcile_v1"
    kind = RECONCILE_RESULT_KIND if is_reconcile else RECOVERY_DECISION_KIND
    return {
        **envelope(spine, event_id, ts, "system", "system"),
        "actions": {"toolRecovery": {"kind": kind, "version": 1, "payload": dict(payload)}},
        "refs": tool_refs(call_id, operation_id),
    }


def terminal_wire(
    spine: Mapping[str, Any],
    *,
    event_id: str,
    ts: float,
    status: str,
    error_code: str | None = None,
    message: str | None = None,
    state_delta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An event ending the invocation (docs/reference/ledger.md#terminal-rules): error content
    ``error_code`` when given (``message`` defaults to the code), ``stateDelta`` when not
    empty."""
    actions: dict[str, Any] = {"endInvocation": True}
    if state_delta:
        actions["stateDelta"] = dict(state_delta)
    wire: dict[str, Any] = {
        **envelope(spine, event_id, ts, "system", "system"),
        "status": status,
        "actions": actions,
    }
    if error_code is not None:
        wire["content"] = {
            "kind": "error",
            "code": error_code,
            "reason": error_code,
            "message": error_code if message is None else message,
        }
    return wire


def continuation_start_wire(
    target_spine: Mapping[str, Any],
    *,
    event_id: str,
    ts: float,
    provenance: str,
    claim_id: str,
    boundary_digest: str,
    source_spine: Mapping[str, Any],
    source_high_water: int,
    source_prefix_digest: str,
    provider_replay_digest: str,
    tool_boundary: str | None,
) -> dict[str, Any]:
    """The V2 start fact (docs/reference/continuation.md#start-fact); ``tool_boundary`` is the
    protocol marker it declares, if any. ``replayManifestDigest`` equals ``boundaryDigest``."""
    actions: dict[str, Any] = {
        "continuationStart": {
            "protocol": "continuation_start_v2",
            "provenance": provenance,
            "claimId": claim_id,
            "boundaryDigest": boundary_digest,
            "immediateSource": {
                **{key: source_spine[key] for key in SPINE_KEYS},
                "highWater": source_high_water,
                "prefixDigest": source_prefix_digest,
            },
            "replayManifestDigest": boundary_digest,
            "providerProjectionVersion": 1,
            "providerReplayDigest": provider_replay_digest,
        }
    }
    if tool_boundary is not None:
        actions["runtimeProtocol"] = {"toolBoundary": tool_boundary}
    return {**envelope(target_spine, event_id, ts, "system", "system"), "actions": actions}
