"""Small event builders for the projection tests (wire dicts in, decoded RuntimeEvents out).

Defaults mirror the reference tests: one execution spine (session-1 / invocation-1 / run-1 /
turn-1), ts 1, non-partial, role/author system. Keyword overrides use wire (camelCase) keys.
"""

from __future__ import annotations

from typing import Any

from maka_es.wire.codec import canonical_args_hash
from maka_es.wire.events import RuntimeEvent

T1 = "t1_after_preflight_v1"
DIGEST = "sha256:" + "a" * 64


def wire(event_id: str, **overrides: Any) -> dict[str, Any]:
    """A RuntimeEvent wire dict with the default spine; ``overrides`` replace top-level keys."""
    base: dict[str, Any] = {
        "id": event_id,
        "invocationId": "invocation-1",
        "runId": "run-1",
        "sessionId": "session-1",
        "turnId": "turn-1",
        "ts": 1,
        "partial": False,
        "role": "system",
        "author": "system",
    }
    base.update(overrides)
    return base


def event(event_id: str, **overrides: Any) -> RuntimeEvent:
    return RuntimeEvent.model_validate(wire(event_id, **overrides))


def user(
    event_id: str = "user-1", text: str = "run it", *, marker: str | None = None
) -> RuntimeEvent:
    extra: dict[str, Any] = {}
    if marker is not None:
        extra["actions"] = {"runtimeProtocol": {"toolBoundary": marker}}
    return event(
        event_id, role="user", author="user", content={"kind": "text", "text": text}, **extra
    )


def text(event_id: str, role: str, body: str, **overrides: Any) -> RuntimeEvent:
    author = {"user": "user", "model": "agent", "system": "system"}[role]
    return event(
        event_id, role=role, author=author, content={"kind": "text", "text": body}, **overrides
    )


def _refs(
    operation_id: str | None, tool_call_id: str, parent: tuple[str, str] | None = None
) -> dict[str, Any]:
    refs: dict[str, Any] = {"toolCallId": tool_call_id}
    if operation_id is not None:
        refs["operationId"] = operation_id
    if parent is not None:
        refs["parentOperationId"], refs["parentToolCallId"] = parent
    return refs


def _visibility(hidden: bool) -> dict[str, Any]:
    return {"origin": "code_mode", "modelVisibility": "hidden"} if hidden else {}


def call(
    event_id: str,
    tool_call_id: str = "call-1",
    name: str = "Bash",
    args: Any = None,
    *,
    operation_id: str | None = None,
    hidden: bool = False,
    parent: tuple[str, str] | None = None,
    with_refs: bool = True,
    **overrides: Any,
) -> RuntimeEvent:
    fields: dict[str, Any] = {
        "role": "model",
        "author": "agent",
        "content": {
            "kind": "function_call",
            "id": tool_call_id,
            "name": name,
            "args": {"command": "do-it"} if args is None else args,
        },
        **_visibility(hidden),
    }
    if with_refs:
        fields["refs"] = _refs(operation_id, tool_call_id, parent)
    fields.update(overrides)
    return event(event_id, **fields)


def response(
    event_id: str,
    tool_call_id: str = "call-1",
    name: str = "Bash",
    result: Any = "ok",
    *,
    is_error: bool | None = None,
    operation_id: str | None = None,
    hidden: bool = False,
    with_refs: bool = True,
    **overrides: Any,
) -> RuntimeEvent:
    content: dict[str, Any] = {
        "kind": "function_response",
        "id": tool_call_id,
        "name": name,
        "result": result,
    }
    if is_error is not None:
        content["isError"] = is_error
    fields: dict[str, Any] = {"role": "tool", "author": "tool", "content": content}
    fields.update(_visibility(hidden))
    if with_refs:
        fields["refs"] = _refs(operation_id, tool_call_id)
    fields.update(overrides)
    return event(event_id, **fields)


def dispatch(
    event_id: str,
    operation_id: str = "operation-1",
    tool_call_id: str = "call-1",
    tool_name: str = "Bash",
    args: Any = None,
    *,
    args_hash: str | None = None,
    recovery_mode: str = "never_auto_retry",
    hidden: bool = False,
    parent: tuple[str, str] | None = None,
    refs: dict[str, Any] | None = None,
    **overrides: Any,
) -> RuntimeEvent:
    hashed_args = {"command": "do-it"} if args is None else args
    fields: dict[str, Any] = {
        "actions": {
            "toolDispatch": {
                "protocol": T1,
                "operationId": operation_id,
                "providerToolCallId": tool_call_id,
                "toolName": tool_name,
                "canonicalArgsHash": args_hash or canonical_args_hash(tool_name, hashed_args),
                "recoveryMode": recovery_mode,
            }
        },
        "refs": refs if refs is not None else _refs(operation_id, tool_call_id, parent),
        **_visibility(hidden),
    }
    fields.update(overrides)
    return event(event_id, **fields)


def reconcile(
    event_id: str,
    operation_id: str = "operation-1",
    tool_call_id: str = "call-1",
    observation: str = "matches_expected_state",
    **overrides: Any,
) -> RuntimeEvent:
    fields: dict[str, Any] = {
        "actions": {
            "toolRecovery": {
                "kind": "maka.tool.reconcile_result",
                "version": 1,
                "payload": {
                    "protocol": "tool_reconcile_v1",
                    "operationId": operation_id,
                    "observation": observation,
                    "observationSchema": "state_identity_v1",
                    "observationDigest": DIGEST,
                },
            }
        },
        "refs": {"operationId": operation_id, "toolCallId": tool_call_id},
    }
    fields.update(overrides)
    return event(event_id, **fields)


def completed_decision(
    event_id: str,
    evidence: list[str],
    outcome_event_id: str,
    operation_id: str = "operation-1",
    tool_call_id: str = "call-1",
) -> RuntimeEvent:
    return event(
        event_id,
        actions={
            "toolRecovery": {
                "kind": "maka.tool.recovery_decision",
                "version": 1,
                "payload": {
                    "protocol": "tool_recovery_v1",
                    "operationId": operation_id,
                    "disposition": "completed",
                    "reasonCode": "reconcile_matches_expected_state",
                    "outcomeEventId": outcome_event_id,
                    "evidenceEventIds": evidence,
                },
            }
        },
        refs={"operationId": operation_id, "toolCallId": tool_call_id},
    )


def parked_decision(
    event_id: str,
    evidence: list[str],
    reason_code: str = "reconcile_diverged",
    operation_id: str = "operation-1",
    tool_call_id: str = "call-1",
) -> RuntimeEvent:
    return event(
        event_id,
        actions={
            "toolRecovery": {
                "kind": "maka.tool.recovery_decision",
                "version": 1,
                "payload": {
                    "protocol": "tool_recovery_v1",
                    "operationId": operation_id,
                    "disposition": "parked",
                    "reasonCode": reason_code,
                    "evidenceEventIds": evidence,
                },
            }
        },
        refs={"operationId": operation_id, "toolCallId": tool_call_id},
    )


def terminal(event_id: str = "terminal-1", status: str = "failed") -> RuntimeEvent:
    return event(event_id, status=status, actions={"endInvocation": True})


def ids(events: Any) -> list[str]:
    """Event ids of a list of events (models or wire dicts)."""
    return [e["id"] if isinstance(e, dict) else e.id for e in events]
