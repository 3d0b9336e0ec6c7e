"""Shared wire builders for the tool-journal store tests (no tests live here).

Every event is a wire dict (spec §1.6 shapes) on one execution spine (s1 / i1 / r1 / t1) with
deterministic ids: the call of provider call ``c`` is ``call-<c>``; the store-authored dispatch
is ``<op>_dispatch``; T2 and bundle outcomes are ``<op>_response``; recovery facts are
``<op>_reconcile`` / ``<op>_decision`` (spec §5.2 / §5.4), where ``<op>`` is the operation id
``operation_id_for("i1", c)``.
"""

from __future__ import annotations

from typing import Any

from maka_es.app import RuntimeApplication
from maka_es.builders import Spine, run_header
from maka_es.ledger.facts import RuntimeEventRecorded, run_stream_id
from maka_es.wire.codec import canonical_json, operation_id_for
from maka_es.wire.events import RuntimeEvent

__test__ = False  # helpers only

SPINE = Spine()
RUN = SPINE.run_id
T1_PROTOCOL = "t1_after_preflight_v1"
DIGEST = "sha256:" + "a" * 64
WRITE_ARGS: dict[str, Any] = {"path": "notes.txt", "content": "after"}
#: spec §5.2 frozen vector for ``Write {content:'after', path:'notes.txt'}``
WRITE_ARGS_HASH = "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"

#: parked observation → the only reason code a parked decision may carry for it (spec §5.4)
PARKED_REASON = {
    "matches_prior_state": "reconcile_matches_prior_state",
    "diverged": "reconcile_diverged",
    "unreadable": "reconcile_unreadable",
}


def envelope(event_id: str, role: str, author: str, ts: int = 1000) -> dict[str, Any]:
    return SPINE.envelope(event_id, ts, role, author)


def op_id(call_id: str) -> str:
    return operation_id_for(SPINE.invocation_id, call_id)


def dispatch_id(call_id: str) -> str:
    return f"{op_id(call_id)}_dispatch"


def response_id(call_id: str) -> str:
    return f"{op_id(call_id)}_response"


def user_event(event_id: str = "user-1", *, marker: str | None = T1_PROTOCOL) -> dict[str, Any]:
    event = envelope(event_id, "user", "user")
    event["content"] = {"kind": "text", "text": "fix the port"}
    if marker is not None:
        event["actions"] = {"runtimeProtocol": {"toolBoundary": marker}}
    return event


def text_event(event_id: str, text: str = "working on it") -> dict[str, Any]:
    event = envelope(event_id, "model", "agent")
    event["content"] = {"kind": "text", "text": text}
    return event


def call_event(
    call_id: str, name: str = "Write", args: Any = None, *, event_id: str | None = None
) -> dict[str, Any]:
    event = envelope(event_id or f"call-{call_id}", "model", "agent")
    event["content"] = {
        "kind": "function_call",
        "id": call_id,
        "name": name,
        "args": dict(WRITE_ARGS) if args is None else args,
    }
    return event


def bound_response(
    call_id: str,
    name: str = "Write",
    *,
    event_id: str | None = None,
    is_error: bool = False,
    result: Any = None,
) -> dict[str, Any]:
    """A T2 outcome: ``refs`` bind it to its operation."""
    event = envelope(event_id or response_id(call_id), "tool", "tool")
    event["content"] = {
        "kind": "function_response",
        "id": call_id,
        "name": name,
        "result": ("failed" if is_error else "ok") if result is None else result,
    }
    if is_error:
        event["content"]["isError"] = True
    event["refs"] = {"operationId": op_id(call_id), "toolCallId": call_id}
    return event


def synthetic_response(
    call_id: str, name: str = "Write", *, event_id: str | None = None
) -> dict[str, Any]:
    """A pre-T1 refusal outcome on the generic lane: an error response without refs."""
    event = envelope(event_id or f"refusal-{call_id}", "tool", "tool")
    event["content"] = {
        "kind": "function_response",
        "id": call_id,
        "name": name,
        "result": "permission denied",
        "isError": True,
    }
    return event


def _refs(call_id: str) -> dict[str, str]:
    return {"operationId": op_id(call_id), "toolCallId": call_id}


def reconcile_fact(
    call_id: str,
    observation: str = "matches_expected_state",
    *,
    event_id: str | None = None,
    payload_operation_id: str | None = None,
    refs: dict[str, str] | None = None,
) -> dict[str, Any]:
    event = envelope(event_id or f"{op_id(call_id)}_reconcile", "system", "system")
    event["actions"] = {
        "toolRecovery": {
            "kind": "maka.tool.reconcile_result",
            "version": 1,
            "payload": {
                "protocol": "tool_reconcile_v1",
                "operationId": payload_operation_id or op_id(call_id),
                "observation": observation,
                "observationSchema": "state_identity_v1",
                "observationDigest": DIGEST,
            },
        }
    }
    event["refs"] = refs if refs is not None else _refs(call_id)
    return event


def completed_decision(
    call_id: str,
    evidence: list[str],
    outcome_event_id: str,
    *,
    event_id: str | None = None,
    payload_operation_id: str | None = None,
    refs: dict[str, str] | None = None,
) -> dict[str, Any]:
    event = envelope(event_id or f"{op_id(call_id)}_decision", "system", "system")
    event["actions"] = {
        "toolRecovery": {
            "kind": "maka.tool.recovery_decision",
            "version": 1,
            "payload": {
                "protocol": "tool_recovery_v1",
                "operationId": payload_operation_id or op_id(call_id),
                "disposition": "completed",
                "reasonCode": "reconcile_matches_expected_state",
                "outcomeEventId": outcome_event_id,
                "evidenceEventIds": evidence,
            },
        }
    }
    event["refs"] = refs if refs is not None else _refs(call_id)
    return event


def parked_decision(
    call_id: str,
    evidence: list[str],
    reason_code: str = "reconcile_diverged",
    *,
    event_id: str | None = None,
    payload_operation_id: str | None = None,
) -> dict[str, Any]:
    event = envelope(event_id or f"{op_id(call_id)}_decision", "system", "system")
    event["actions"] = {
        "toolRecovery": {
            "kind": "maka.tool.recovery_decision",
            "version": 1,
            "payload": {
                "protocol": "tool_recovery_v1",
                "operationId": payload_operation_id or op_id(call_id),
                "disposition": "parked",
                "reasonCode": reason_code,
                "evidenceEventIds": evidence,
            },
        }
    }
    event["refs"] = _refs(call_id)
    return event


def evidence(call_id: str, *, call_event_id: str | None = None) -> list[str]:
    """``[callId, dispatchId, reconcileId]``: the evidence of a parked decision."""
    return [call_event_id or f"call-{call_id}", dispatch_id(call_id), f"{op_id(call_id)}_reconcile"]


def completed_bundle(call_id: str, name: str = "Write") -> dict[str, dict[str, Any]]:
    """A valid completed bundle for ``call_id`` (keyword arguments of the bundle command)."""
    outcome = bound_response(call_id, name)
    return {
        "reconcile": reconcile_fact(call_id),
        "outcome": outcome,
        "decision": completed_decision(call_id, [*evidence(call_id), outcome["id"]], outcome["id"]),
    }


def parked_bundle(call_id: str, observation: str = "diverged") -> dict[str, dict[str, Any]]:
    """A valid parked bundle for ``call_id`` (no outcome)."""
    return {
        "reconcile": reconcile_fact(call_id, observation),
        "decision": parked_decision(call_id, evidence(call_id), PARKED_REASON[observation]),
    }


def terminal_event(event_id: str = "terminal-1", status: str = "failed") -> dict[str, Any]:
    event = envelope(event_id, "system", "system")
    event["status"] = status
    event["actions"] = {"endInvocation": True}
    if status == "failed":
        event["content"] = {
            "kind": "error",
            "code": "provider_error",
            "reason": "provider_error",
            "message": "provider failed",
        }
    return event


def open_run(app: RuntimeApplication, *, marker: str | None = T1_PROTOCOL) -> None:
    """Session s1, run r1 and its first (user) event, declaring the T1 protocol by default."""
    app.open_session(SPINE.session_id, "/workspace")
    app.create_run(run_header(SPINE))
    app.append_event(RUN, user_event(marker=marker))


def save_unvalidated(app: RuntimeApplication, event: dict[str, Any]) -> None:
    """Append ``event`` to r1 bypassing every domain check, as an older writer without the
    transition validator would have: one ``RuntimeEventRecorded`` saved directly."""
    run = app._store.load_run(RUN)
    decoded = RuntimeEvent.model_validate(event)
    app.save(
        RuntimeEventRecorded(
            originator_id=run_stream_id(RUN),
            originator_version=run.version + 1,
            event_seq=run.high_water + 1,
            event_id=decoded.id,
            payload=canonical_json(decoded),
            committed_at=1.0,
        )
    )


def wires(app: RuntimeApplication) -> list[dict[str, Any]]:
    return [event.to_wire() for event in app.read_run_events(RUN)]


def ids(app: RuntimeApplication) -> list[str]:
    return [event.id for event in app.read_run_events(RUN)]
