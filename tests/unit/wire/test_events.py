"""RuntimeEvent wire model: every docs/reference/wire.md#examples example decodes and re-encodes
exactly; generated events round-trip through canonical JSON; bad shapes raise typed errors naming
the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.errors import InvalidRuntimeEventError
from maka_es.testing.strategies import runtime_event_dicts, shuffled_keys
from maka_es.wire.base import loads_js
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent

S = {"sessionId": "s1", "invocationId": "i1", "runId": "r1", "turnId": "t1"}
H = "sha256:" + "ab" * 32

SPEC_EXAMPLES: list[dict[str, Any]] = [
    {
        "id": "e1",
        **S,
        "ts": 1000,
        "partial": False,
        "role": "user",
        "author": "user",
        "content": {"kind": "text", "text": "fix the port"},
        "actions": {"runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"}},
    },
    {
        "id": "e2",
        **S,
        "ts": 1001,
        "partial": False,
        "role": "model",
        "author": "agent",
        "content": {"kind": "text", "text": "I'll edit config.json"},
        "refs": {"providerEventId": "msg_1"},
    },
    {
        "id": "e2p",
        **S,
        "ts": 1001,
        "partial": True,
        "role": "model",
        "author": "agent",
        "content": {"kind": "text", "text": "I'll ed"},
        "refs": {"providerEventId": "msg_1"},
    },
    {
        "id": "toolop_X_call",
        **S,
        "ts": 1002,
        "partial": False,
        "role": "model",
        "author": "agent",
        "origin": "provider",
        "modelVisibility": "visible",
        "content": {
            "kind": "function_call",
            "id": "call_1",
            "name": "Write",
            "args": {"path": "config.json", "content": '{"port":4000}'},
        },
        "refs": {"operationId": "toolop_X", "toolCallId": "call_1", "stepId": "msg_1"},
    },
    {
        "id": "toolop_X_dispatch",
        **S,
        "ts": 1002,
        "partial": False,
        "role": "system",
        "author": "system",
        "origin": "provider",
        "modelVisibility": "visible",
        "actions": {
            "toolDispatch": {
                "protocol": "t1_after_preflight_v1",
                "operationId": "toolop_X",
                "providerToolCallId": "call_1",
                "toolName": "Write",
                "canonicalArgsHash": H,
                "recoveryMode": "never_auto_retry",
            }
        },
        "refs": {"operationId": "toolop_X", "toolCallId": "call_1"},
    },
    {
        "id": "toolop_X_response",
        **S,
        "ts": 1003,
        "partial": False,
        "role": "tool",
        "author": "tool",
        "origin": "provider",
        "modelVisibility": "visible",
        "content": {
            "kind": "function_response",
            "id": "call_1",
            "name": "Write",
            "result": {"kind": "text", "text": "ok"},
        },
        "refs": {"operationId": "toolop_X", "toolCallId": "call_1"},
        "actions": {"stateDelta": {"durationMs": 12}},
    },
    {
        "id": "e4",
        **S,
        "ts": 1004,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "permissionRequest": {
                "kind": "tool_permission",
                "requestId": "perm_1",
                "toolUseId": "call_1",
                "toolName": "Write",
                "category": "file_write",
                "reason": "file_write",
                "args": {"path": "config.json"},
                "rememberForTurnAllowed": True,
            }
        },
    },
    {
        "id": "e5",
        **S,
        "ts": 1005,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "permissionDecision": {"requestId": "perm_1", "decision": "deny", "toolName": "Write"}
        },
    },
    {
        "id": "e6",
        **S,
        "ts": 1006,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {"permissionAnswerAccepted": {"requestId": "perm_1"}},
    },
    {
        "id": "e7",
        **S,
        "ts": 1007,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {"permissionClosureAccepted": {"requestId": "perm_1", "reason": "timed_out"}},
    },
    {
        "id": "e9",
        **S,
        "ts": 1009,
        "partial": False,
        "role": "system",
        "author": "system",
        "status": "completed",
        "actions": {"endInvocation": True},
    },
    {
        "id": "rec",
        **S,
        "ts": 1010,
        "partial": False,
        "role": "system",
        "author": "system",
        "status": "failed",
        "content": {
            "kind": "error",
            "code": "app_restarted",
            "reason": "app_restarted",
            "message": "app_restarted",
        },
        "actions": {
            "endInvocation": True,
            "stateDelta": {
                "recovered": True,
                "recoveryReason": "tool_interrupted",
                "lastEventType": "tool_started",
                "failureClass": "app_restarted",
            },
        },
    },
    {
        "id": "cs2",
        "sessionId": "s1",
        "invocationId": "i2",
        "runId": "r2",
        "turnId": "t2",
        "ts": 2001,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"},
            "continuationStart": {
                "protocol": "continuation_start_v2",
                "provenance": "runtime_admission",
                "claimId": "c-9",
                "boundaryDigest": H,
                "immediateSource": {**S, "highWater": 9, "prefixDigest": H},
                "replayManifestDigest": H,
                "providerProjectionVersion": 1,
                "providerReplayDigest": H,
            },
        },
    },
    {
        "id": "cs1",
        "sessionId": "s1",
        "invocationId": "i2",
        "runId": "r2",
        "turnId": "t2",
        "ts": 2001,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "stateDelta": {"continuationStart": True},
            "runtimeProtocol": {"toolBoundary": "t1_after_preflight_v1"},
        },
        "refs": {
            "sourceInvocationId": "i1",
            "sourceRunId": "r1",
            "sourceTurnId": "t1",
            "sourceRuntimeEventHighWater": 9,
        },
    },
    {
        "id": "rc",
        **S,
        "ts": 1011,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "toolRecovery": {
                "kind": "maka.tool.reconcile_result",
                "version": 1,
                "payload": {
                    "protocol": "tool_reconcile_v1",
                    "operationId": "toolop_X",
                    "observation": "matches_expected_state",
                    "observationSchema": "state_identity_v1",
                    "observationDigest": H,
                },
            }
        },
        "refs": {"operationId": "toolop_X", "toolCallId": "call_1"},
    },
    {
        "id": "rd",
        **S,
        "ts": 1012,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "toolRecovery": {
                "kind": "maka.tool.recovery_decision",
                "version": 1,
                "payload": {
                    "protocol": "tool_recovery_v1",
                    "operationId": "toolop_X",
                    "disposition": "parked",
                    "reasonCode": "reconcile_diverged",
                    "evidenceEventIds": ["a", "b", "c"],
                },
            }
        },
        "refs": {"operationId": "toolop_X", "toolCallId": "call_1"},
    },
]


@pytest.mark.parametrize("example", SPEC_EXAMPLES, ids=[e["id"] for e in SPEC_EXAMPLES])
def test_spec_examples_decode_and_reencode_exactly(example: dict[str, Any]) -> None:
    original = copy.deepcopy(example)
    event = RuntimeEvent.model_validate(example)
    assert event.to_wire() == example
    assert example == original  # decoding does not mutate its input
    assert RuntimeEvent.model_validate_json(canonical_json(event)) == event


def test_predicates() -> None:
    terminal = RuntimeEvent.model_validate(SPEC_EXAMPLES[10])
    assert terminal.is_terminal
    assert not terminal.is_model_visible
    call = RuntimeEvent.model_validate(SPEC_EXAMPLES[3])
    assert call.is_model_visible
    assert call.function_call is not None
    assert not RuntimeEvent.model_validate(
        {**SPEC_EXAMPLES[1], "content": {"kind": "text", "text": ""}}
    ).is_model_visible
    hidden = RuntimeEvent.model_validate({**SPEC_EXAMPLES[3], "modelVisibility": "hidden"})
    assert hidden.is_hidden
    assert not hidden.is_model_visible
    assert RuntimeEvent.model_validate(SPEC_EXAMPLES[0]).protocol_marker == "t1_after_preflight_v1"


def test_recovery_fact_with_wrong_payload_for_its_kind_is_refused() -> None:
    bad = copy.deepcopy(SPEC_EXAMPLES[-1])
    bad["actions"]["toolRecovery"]["kind"] = "maka.tool.reconcile_result"
    with pytest.raises(InvalidRuntimeEventError):
        RuntimeEvent.model_validate(bad)


def test_evidence_must_be_distinct() -> None:
    bad = copy.deepcopy(SPEC_EXAMPLES[-1])
    bad["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = ["a", "a"]
    with pytest.raises(InvalidRuntimeEventError):
        RuntimeEvent.model_validate(bad)


@given(runtime_event_dicts())
def test_generated_events_round_trip(wire: dict[str, Any]) -> None:
    event = RuntimeEvent.model_validate(wire)
    text = canonical_json(event)
    assert RuntimeEvent.model_validate_json(text) == event
    assert RuntimeEvent.model_validate(loads_js(text)) == event
    assert canonical_json(RuntimeEvent.model_validate(loads_js(text))) == text


@given(runtime_event_dicts(), st.integers(min_value=0, max_value=50))
def test_canonical_json_ignores_key_order(wire: dict[str, Any], seed: int) -> None:
    reordered = shuffled_keys(wire, seed)
    assert canonical_json(reordered) == canonical_json(wire)
    assert canonical_json(RuntimeEvent.model_validate(reordered)) == canonical_json(wire)
