"""Typed constructors of the runtime's own facts: the one place that spells them on the wire.

Why one place: a dispatch fact, a bound response, a recovery bundle's reconcile result and
decision, a terminal event and a continuation start are read back by the resolver, the planners
and startup recovery, which compare them field by field. A camelCase dict spelled by hand in
several layers drifts (a missing ``refs`` key, another ``ts``); a constructor here takes typed
arguments, derives the deterministic parts (ids, refs, spine) and returns a validated
``RuntimeEvent``, so every writer produces the exact shape the readers expect.

Two layers, one spelling. The ``*_wire`` / ``*_payload`` functions write a fact's keys as a
plain dict, with whatever id and timestamp the caller gives and no validation; the ``*_fact``
constructors below derive ids, refs and hashes from a call, spell the fact through them and
validate it. The test kit's builders (``maka_es.testing.builders``) use the same dict layer, so
a built event and the store's own fact cannot drift apart (docs/reference/wire.md#examples).

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
    "SPINE_KEYS",
    "bound_response",
    "completed_decision_fact",
    "continuation_start_fact",
    "continuation_start_wire",
    "decision_payload",
    "dispatch_fact",
    "dispatch_wire",
    "envelope",
    "Observation",
    "parked_decision_fact",
    "ParkedReason",
    "pre_t1_refusal_response",
    "reconcile_payload",
    "reconcile_result_fact",
    "recovery_wire",
    "response_wire",
    "StartProvenance",
    "terminal_fact",
    "terminal_wire",
    "tool_refs",
    "unbound_response",
]

# --- The wire spelling: plain dicts, unvalidated ---------------------------------------

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


# --- The typed constructors: derived ids, validated RuntimeEvents -----------------------

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


def _call_content(call: RuntimeEvent) -> FunctionCallContent:
    """Every operation fact is derived from its call; anything else is refused, typed."""
    content = call.function_call
    if content is None:
        raise InvalidRuntimeEventError(f"event {call.id} is not a function_call", field="content")
    return content


def dispatch_fact(
    call: RuntimeEvent, operation_id: str, recovery_mode: str, *, args_hash: str | None = None
) -> RuntimeEvent:
    """The T1 dispatch fact of ``call`` (tool-journal.md#t1, wire.md#tool-dispatch-payload).

    Id ``<operationId>_dispatch``, the call's spine, ``ts`` and ``origin``, refs binding the
    operation, and the args hash recomputed from the call's args: deterministic, so a T1
    retry rebuilds byte-identical facts. ``args_hash`` is that same hash when the caller
    already computed it from this call (the run's scanner keeps it, ADR 0026)."""
    content = _call_content(call)
    wire = dispatch_wire(
        call.spine,
        event_id=f"{operation_id}_dispatch",
        ts=call.ts,
        call_id=content.id,
        tool_name=content.name,
        operation_id=operation_id,
        args_hash=args_hash or canonical_args_hash(content.name, content.args),
        recovery_mode=recovery_mode,
        protocol=TOOL_BOUNDARY_PROTOCOL_V1,
    )
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
    refs = None if operation_id is None else tool_refs(content.id, operation_id)
    wire = response_wire(
        call.spine,
        event_id=event_id,
        ts=ts,
        call_id=content.id,
        tool_name=content.name,
        result=result,
        is_error=True if is_error else None,
        refs=refs,
        duration_ms=duration_ms,
    )
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
    call: RuntimeEvent, operation_id: str, *, suffix: str, ts: float, payload: dict[str, Any]
) -> RuntimeEvent:
    wire = recovery_wire(
        call.spine,
        event_id=f"{operation_id}_{suffix}",
        ts=ts,
        call_id=_call_content(call).id,
        operation_id=operation_id,
        payload=payload,
    )
    return RuntimeEvent.model_validate(wire)


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
    payload = reconcile_payload(operation_id, observation, observation_digest)
    return _recovery_fact(call, operation_id, suffix="reconcile", ts=ts, payload=payload)


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
    payload = decision_payload(
        operation_id,
        "completed",
        "reconcile_matches_expected_state",
        evidence_event_ids,
        outcome_event_id,
    )
    return _recovery_fact(call, operation_id, suffix="decision", ts=ts, payload=payload)


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
    payload = decision_payload(operation_id, "parked", reason_code, evidence_event_ids)
    return _recovery_fact(call, operation_id, suffix="decision", ts=ts, payload=payload)


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
    delta = dict(state_delta or {})
    if failure_class is not None:
        delta["failureClass"] = failure_class
    wire = terminal_wire(
        spine,
        event_id=event_id,
        ts=ts,
        status=status,
        error_code=failure_class,
        message=message,
        state_delta=delta,
    )
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
    marker = provenance == "runtime_admission" and tool_boundary_marker
    wire = continuation_start_wire(
        target_spine,
        event_id=event_id,
        ts=ts,
        provenance=provenance,
        claim_id=claim_id,
        boundary_digest=boundary_digest,
        source_spine=source_spine,
        source_high_water=source_high_water,
        source_prefix_digest=source_prefix_digest,
        provider_replay_digest=provider_replay_digest,
        tool_boundary=TOOL_BOUNDARY_PROTOCOL_V1 if marker else None,
    )
    return RuntimeEvent.model_validate(wire)
