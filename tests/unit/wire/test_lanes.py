"""Semantic lanes (docs/reference/wire.md#lanes): one lane per event, or a
semantic_lane_conflict."""

from __future__ import annotations

from typing import Any

import pytest

from maka_es.testing.builders import Events, Spine
from maka_es.wire.events import RuntimeEvent, classify_lane

SPINE = Spine()
EV = Events.decoded(SPINE, ts=1)
H = "sha256:" + "cd" * 32
DISPATCH = {
    "protocol": "t1_after_preflight_v1",
    "operationId": "op",
    "providerToolCallId": "c1",
    "toolName": "Bash",
    "canonicalArgsHash": H,
    "recoveryMode": "never_auto_retry",
}
RECONCILE = {
    "kind": "maka.tool.reconcile_result",
    "version": 1,
    "payload": {
        "protocol": "tool_reconcile_v1",
        "operationId": "op",
        "observation": "diverged",
        "observationSchema": "state_identity_v1",
        "observationDigest": H,
    },
}
DECISION = {
    "kind": "maka.tool.recovery_decision",
    "version": 1,
    "payload": {
        "protocol": "tool_recovery_v1",
        "operationId": "op",
        "disposition": "parked",
        "reasonCode": "reconcile_diverged",
        "evidenceEventIds": ["a", "b", "c"],
    },
}
CALL = {"kind": "function_call", "id": "c1", "name": "Bash", "args": {}}
RESPONSE = {"kind": "function_response", "id": "c1", "name": "Bash", "result": "ok"}
REFS = {"operationId": "op", "toolCallId": "c1"}


def ev(role: str, author: str, **fields: Any) -> RuntimeEvent:
    return EV.event(event_id="e", role=role, author=author, **fields)


VALID = [
    ("ordinary text", ev("user", "user", content={"kind": "text", "text": "hi"}), "ordinary"),
    (
        "terminal",
        ev("system", "system", status="failed", actions={"endInvocation": True}),
        "ordinary",
    ),
    ("call", ev("model", "agent", content=CALL), "function_call"),
    (
        "call with activity",
        ev(
            "model",
            "agent",
            content=CALL,
            actions={"stateDelta": {"intent": "", "displayName": "x"}},
        ),
        "function_call",
    ),
    ("response", ev("tool", "tool", content=RESPONSE), "function_response"),
    (
        "response with duration",
        ev("tool", "tool", content=RESPONSE, actions={"stateDelta": {"durationMs": 1.5}}),
        "function_response",
    ),
    (
        "dispatch",
        ev("system", "system", actions={"toolDispatch": DISPATCH}, refs=REFS),
        "tool_dispatch",
    ),
    (
        "nested dispatch",
        ev(
            "system",
            "system",
            actions={"toolDispatch": DISPATCH},
            refs={**REFS, "parentToolCallId": "p", "parentOperationId": "pop"},
        ),
        "tool_dispatch",
    ),
    (
        "reconcile",
        ev("system", "system", actions={"toolRecovery": RECONCILE}, refs=REFS),
        "reconcile_result",
    ),
    (
        "decision",
        ev("system", "system", actions={"toolRecovery": DECISION}, refs=REFS),
        "recovery_decision",
    ),
]

CONFLICTS = [
    ("partial call", ev("model", "agent", partial=True, content=CALL)),
    ("call with status", ev("model", "agent", status="completed", content=CALL)),
    ("call on a branch", ev("model", "agent", branch="b", content=CALL)),
    ("call by the tool", ev("tool", "tool", content=CALL)),
    ("call with empty delta", ev("model", "agent", content=CALL, actions={"stateDelta": {}})),
    (
        "call with artifactDelta",
        ev("model", "agent", content=CALL, actions={"artifactDelta": {"a": 1}}),
    ),
    (
        "call with other delta key",
        ev("model", "agent", content=CALL, actions={"stateDelta": {"x": "y"}}),
    ),
    (
        "call that is also a dispatch",
        ev("system", "system", content=CALL, actions={"toolDispatch": DISPATCH}, refs=REFS),
    ),
    (
        "response ending the invocation",
        ev("tool", "tool", content=RESPONSE, actions={"endInvocation": True}),
    ),
    (
        "response with continuation delta",
        ev("tool", "tool", content=RESPONSE, actions={"stateDelta": {"continuationStart": True}}),
    ),
    ("response as model", ev("model", "agent", content=RESPONSE)),
    (
        "terminal dispatch",
        ev("system", "system", status="failed", actions={"toolDispatch": DISPATCH}, refs=REFS),
    ),
    (
        "dispatch ending invocation",
        ev(
            "system", "system", actions={"toolDispatch": DISPATCH, "endInvocation": True}, refs=REFS
        ),
    ),
    ("dispatch without refs", ev("system", "system", actions={"toolDispatch": DISPATCH})),
    (
        "dispatch with extra ref",
        ev("system", "system", actions={"toolDispatch": DISPATCH}, refs={**REFS, "stepId": "s"}),
    ),
    ("dispatch by the agent", ev("model", "agent", actions={"toolDispatch": DISPATCH}, refs=REFS)),
    (
        "recovery with content",
        ev(
            "system",
            "system",
            content={"kind": "text", "text": "x"},
            actions={"toolRecovery": RECONCILE},
            refs=REFS,
        ),
    ),
    (
        "recovery with nested refs",
        ev(
            "system",
            "system",
            actions={"toolRecovery": DECISION},
            refs={**REFS, "parentToolCallId": "p", "parentOperationId": "q"},
        ),
    ),
    (
        "partial recovery",
        ev("system", "system", partial=True, actions={"toolRecovery": RECONCILE}, refs=REFS),
    ),
]


@pytest.mark.parametrize(("case", "event", "lane"), VALID, ids=[c[0] for c in VALID])
def test_valid_lanes(case: str, event: RuntimeEvent, lane: str) -> None:
    result = classify_lane(event)
    assert result.lane == lane
    assert result.conflict is None


@pytest.mark.parametrize(("case", "event"), CONFLICTS, ids=[c[0] for c in CONFLICTS])
def test_lane_conflicts(case: str, event: RuntimeEvent) -> None:
    result = classify_lane(event)
    assert result.is_conflict, case
    assert result.is_tool_lane
