"""Typed constructors of the runtime's own facts: the one place that spells them on the wire.

Why one place: a dispatch fact, a bound response, a recovery bundle's reconcile result and
decision, a terminal event and a continuation start are read back by the resolver, the planners
and startup recovery, which compare them field by field. A camelCase dict spelled by hand in
several layers drifts (a missing ``refs`` key, another ``ts``); a constructor here takes typed
arguments, derives the deterministic parts (ids, refs, spine) and returns a validated
``RuntimeEvent``, so every writer produces the exact shape the readers expect.

Every constructor is pure: no clock, no ids invented here. The caller passes the timestamp,
and ids are either passed in or derived deterministically (so a retry rebuilds the same fact).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from maka_es.errors import InvalidRuntimeEventError
from maka_es.wire.codec import canonical_args_hash
from maka_es.wire.events import (
    RECONCILE_RESULT_KIND,
    RECOVERY_DECISION_KIND,
    TOOL_BOUNDARY_PROTOCOL_V1,
    FunctionCallContent,
    RuntimeEvent,
)

__all__ = [
    "PARKED_REASON_FOR_OBSERVATION",
    "Observation",
    "ParkedReason",
    "StartProvenance",
    "bound_response",
    "completed_decision_fact",
    "continuation_start_fact",
    "dispatch_fact",
    "parked_decision_fact",
    "pre_t1_refusal_response",
    "reconcile_result_fact",
    "terminal_fact",
    "unbound_response",
]

Observation = Literal["matches_expected_state", "matches_prior_state", "diverged", "unreadable"]
ParkedReason = Literal[
    "reconcile_matches_prior_state", "reconcile_diverged", "reconcile_unreadable"
]
StartProvenance = Literal["runtime_admission", "claim_repair"]

#: The parked decision each non-matching observation requires (tool-journal.md#bundles).
#: ``matches_expected_state`` is absent: it requires a completed decision instead.
PARKED_REASON_FOR_OBSERVATION: Mapping[str, ParkedReason] = {
    "matches_prior_state": "reconcile_matches_prior_state",
    "diverged": "reconcile_diverged",
    "unreadable": "reconcile_unreadable",
}

_SPINE_KEYS = ("sessionId", "invocationId", "runId", "turnId")


def _call_content(call: RuntimeEvent) -> FunctionCallContent:
    """Every operation fact is derived from its call; anything else is refused, typed."""
    content = call.function_call
    if content is None:
        raise InvalidRuntimeEventError(f"event {call.id} is not a function_call", field="content")
    return content


def _operation_refs(operation_id: str, call: FunctionCallContent) -> dict[str, str]:
    return {"operationId": operation_id, "toolCallId": call.id}


def dispatch_fact(call: RuntimeEvent, operation_id: str, recovery_mode: str) -> RuntimeEvent:
    """The T1 dispatch fact of ``call`` (tool-journal.md#t1, wire.md#tool-dispatch-payload).

    Id ``<operationId>_dispatch``, the call's spine, ``ts`` and ``origin``, refs binding the
    operation, and the args hash recomputed from the call's args: deterministic, so a T1
    retry rebuilds byte-identical facts."""
    content = _call_content(call)
    wire: dict[str, Any] = {
        "id": f"{operation_id}_dispatch",
        **call.spine,
        "ts": call.ts,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "toolDispatch": {
                "protocol": TOOL_BOUNDARY_PROTOCOL_V1,
                "operationId": operation_id,
                "providerToolCallId": content.id,
                "toolName": content.name,
                "canonicalArgsHash": canonical_args_hash(content.name, content.args),
                "recoveryMode": recovery_mode,
            }
        },
        "refs": _operation_refs(operation_id, content),
    }
    if call.origin is not None:
        wire["origin"] = call.origin
    return RuntimeEvent.model_validate(wire)


def _response(
    call: RuntimeEvent,
    *,
    event_id: str,
    ts: float,
    result: Any,
    is_error: bool,
    operation_id: str | None,
    duration_ms: int | None,
) -> RuntimeEvent:
    content = _call_content(call)
    body: dict[str, Any] = {
        "kind": "function_response",
        "id": content.id,
        "name": content.name,
        "result": result,
    }
    if is_error:
        body["isError"] = True
    wire: dict[str, Any] = {
        "id": event_id,
        **call.spine,
        "ts": ts,
        "partial": False,
        "role": "tool",
        "author": "tool",
        "content": body,
    }
    if duration_ms is not None:
        wire["actions"] = {"stateDelta": {"durationMs": duration_ms}}
    if operation_id is not None:
        wire["refs"] = _operation_refs(operation_id, content)
    return RuntimeEvent.model_validate(wire)


def bound_response(
    call: RuntimeEvent,
    operation_id: str,
    *,
    ts: float,
    result: Any,
    is_error: bool = False,
    duration_ms: int | None = None,
) -> RuntimeEvent:
    """The outcome of an operation that crossed T1: the T2 response, or the synthesized
    outcome of a completed recovery bundle (tool-journal.md#t2, tool-journal.md#ids).

    Id ``<operationId>_response``, the call's spine, refs binding the operation, ``isError``
    only when true, and ``stateDelta.durationMs`` when the tool was timed."""
    return _response(
        call,
        event_id=f"{operation_id}_response",
        ts=ts,
        result=result,
        is_error=is_error,
        operation_id=operation_id,
        duration_ms=duration_ms,
    )


def pre_t1_refusal_response(call: RuntimeEvent, *, ts: float, result: Any) -> RuntimeEvent:
    """The error response of a call refused before T1 (tool-journal.md#pre-t1): id
    ``<callEventId>_refused``, ``isError`` true and no operation refs, so the resolver reads
    it as a ``pre_t1_synthetic`` completion."""
    return unbound_response(
        call, event_id=f"{call.id}_refused", ts=ts, result=result, is_error=True
    )


def unbound_response(
    call: RuntimeEvent, *, event_id: str, ts: float, result: Any, is_error: bool = False
) -> RuntimeEvent:
    """A response bound to no operation, as a run without the tool-boundary marker records it
    (tool-journal.md#protocol-marker; the crash harness's ledger, phase0.md#harness-ledger):
    the call's spine, the caller's id, ``isError`` only when true, no refs and no duration."""
    return _response(
        call,
        event_id=event_id,
        ts=ts,
        result=result,
        is_error=is_error,
        operation_id=None,
        duration_ms=None,
    )


def _recovery_fact(
    call: RuntimeEvent, operation_id: str, *, suffix: str, ts: float, recovery: dict[str, Any]
) -> RuntimeEvent:
    content = _call_content(call)
    return RuntimeEvent.model_validate(
        {
            "id": f"{operation_id}_{suffix}",
            **call.spine,
            "ts": ts,
            "partial": False,
            "role": "system",
            "author": "system",
            "actions": {"toolRecovery": recovery},
            "refs": _operation_refs(operation_id, content),
        }
    )


def reconcile_result_fact(
    call: RuntimeEvent,
    operation_id: str,
    *,
    ts: float,
    observation: Observation,
    observation_digest: str,
) -> RuntimeEvent:
    """A recovery bundle's reconcile result (tool-journal.md#recovery-facts): id
    ``<operationId>_reconcile``, the call's spine, refs binding the operation."""
    payload = {
        "protocol": "tool_reconcile_v1",
        "operationId": operation_id,
        "observation": observation,
        "observationSchema": "state_identity_v1",
        "observationDigest": observation_digest,
    }
    recovery = {"kind": RECONCILE_RESULT_KIND, "version": 1, "payload": payload}
    return _recovery_fact(call, operation_id, suffix="reconcile", ts=ts, recovery=recovery)


def completed_decision_fact(
    call: RuntimeEvent,
    operation_id: str,
    *,
    ts: float,
    outcome_event_id: str,
    evidence_event_ids: Sequence[str],
) -> RuntimeEvent:
    """A completed recovery decision (tool-journal.md#recovery-facts): id
    ``<operationId>_decision``; evidence is ``[call, dispatch, reconcile, outcome]``
    (tool-journal.md#bundles)."""
    extra = {"outcomeEventId": outcome_event_id}
    return _decision_fact(
        call,
        operation_id,
        ts,
        "completed",
        "reconcile_matches_expected_state",
        extra,
        evidence_event_ids,
    )


def parked_decision_fact(
    call: RuntimeEvent,
    operation_id: str,
    *,
    ts: float,
    reason_code: ParkedReason,
    evidence_event_ids: Sequence[str],
) -> RuntimeEvent:
    """A parked recovery decision (tool-journal.md#recovery-facts): id
    ``<operationId>_decision``, no outcome; evidence is ``[call, dispatch, reconcile]``.
    ``reason_code`` follows the observation (:data:`PARKED_REASON_FOR_OBSERVATION`)."""
    return _decision_fact(call, operation_id, ts, "parked", reason_code, {}, evidence_event_ids)


def _decision_fact(
    call: RuntimeEvent,
    operation_id: str,
    ts: float,
    disposition: Literal["completed", "parked"],
    reason_code: str,
    extra: Mapping[str, str],
    evidence_event_ids: Sequence[str],
) -> RuntimeEvent:
    """The recovery decision both dispositions share; ``extra`` (a completed decision's
    ``outcomeEventId``) goes before the evidence, where the payload has always had it."""
    payload = {
        "protocol": "tool_recovery_v1",
        "operationId": operation_id,
        "disposition": disposition,
        "reasonCode": reason_code,
        **extra,
        "evidenceEventIds": list(evidence_event_ids),
    }
    recovery = {"kind": RECOVERY_DECISION_KIND, "version": 1, "payload": payload}
    return _recovery_fact(call, operation_id, suffix="decision", ts=ts, recovery=recovery)


def terminal_fact(
    spine: Mapping[str, Any],
    *,
    event_id: str,
    ts: float,
    status: str,
    failure_class: str | None = None,
    state_delta: Mapping[str, Any] | None = None,
    message: str | None = None,
) -> RuntimeEvent:
    """A terminal fact for the run of ``spine`` (``sessionId, invocationId, runId, turnId``;
    ledger.md#terminal-rules). A failed one carries its failure class both as error content
    and as ``stateDelta.failureClass``, so the header derived from it matches it; the error
    content's ``message`` defaults to the failure class."""
    actions: dict[str, Any] = {"endInvocation": True}
    delta = dict(state_delta or {})
    wire: dict[str, Any] = {
        "id": event_id,
        **{key: spine[key] for key in _SPINE_KEYS},
        "ts": ts,
        "partial": False,
        "role": "system",
        "author": "system",
        "status": status,
    }
    if failure_class is not None:
        wire["content"] = {
            "kind": "error",
            "code": failure_class,
            "reason": failure_class,
            "message": failure_class if message is None else message,
        }
        delta["failureClass"] = failure_class
    if delta:
        actions["stateDelta"] = delta
    wire["actions"] = actions
    return RuntimeEvent.model_validate(wire)


def continuation_start_fact(
    target_spine: Mapping[str, str],
    *,
    event_id: str,
    ts: float,
    provenance: StartProvenance,
    claim_id: str,
    boundary_digest: str,
    source_spine: Mapping[str, str],
    source_high_water: int,
    source_prefix_digest: str,
    provider_replay_digest: str,
    tool_boundary_marker: bool = True,
) -> RuntimeEvent:
    """Event 1 of a continuation run, the V2 start fact (continuation.md#start-fact).

    ``replayManifestDigest`` equals ``boundaryDigest``. A runtime-admission start also
    declares the tool-boundary protocol, so a call of the continuation that never crossed T1
    is provably undispatched; a claim-repair start runs nothing and carries no marker.
    ``tool_boundary_marker=False`` builds an admission start without its marker: a claim's
    classification accepts that form too (continuation.md#existing-claims)."""
    actions: dict[str, Any] = {
        "continuationStart": {
            "protocol": "continuation_start_v2",
            "provenance": provenance,
            "claimId": claim_id,
            "boundaryDigest": boundary_digest,
            "immediateSource": {
                **{key: source_spine[key] for key in _SPINE_KEYS},
                "highWater": source_high_water,
                "prefixDigest": source_prefix_digest,
            },
            "replayManifestDigest": boundary_digest,
            "providerProjectionVersion": 1,
            "providerReplayDigest": provider_replay_digest,
        }
    }
    if provenance == "runtime_admission" and tool_boundary_marker:
        actions["runtimeProtocol"] = {"toolBoundary": TOOL_BOUNDARY_PROTOCOL_V1}
    return RuntimeEvent.model_validate(
        {
            "id": event_id,
            **{key: target_spine[key] for key in _SPINE_KEYS},
            "ts": ts,
            "partial": False,
            "role": "system",
            "author": "system",
            "actions": actions,
        }
    )
