"""RecoveryResolver (docs/reference/tool-journal.md#resolver): scanner issues, per-operation
decisions and their priority."""

from __future__ import annotations

from typing import Any

import pytest

from maka_es.errors import InvalidRuntimeEventError
from maka_es.testing.builders import Events, Spine
from maka_es.tooljournal.model.resolver import (
    OPERATION_ISSUE_PRIORITY,
    Resolution,
    resolve_tool_operations,
)
from maka_es.wire.codec import canonical_args_hash
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1
from maka_es.wire.events import RuntimeEvent

SPINE = Spine("session-1", "invocation-1", "run-1", "turn-1")
EV = Events.decoded(SPINE, ts=1)
W = Events.wire(SPINE, ts=1)


def decision(
    *,
    status: str,
    reason: str,
    tool_call_id: str = "call-1",
    tool_name: str | None = "Bash",
    operation_id: str | None = None,
    settlement_origin: str | None = None,
    call_id: str | None = None,
    dispatch_id: str | None = None,
    response_id: str | None = None,
    response_is_error: bool | None = None,
) -> dict[str, Any]:
    """Expected decision dump (every key present, null when absent)."""
    return {
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "operationId": operation_id,
        "status": status,
        "reason": reason,
        "settlementOrigin": settlement_origin,
        "callRuntimeEventId": call_id,
        "dispatchRuntimeEventId": dispatch_id,
        "responseRuntimeEventId": response_id,
        "responseIsError": response_is_error,
    }


def dumped_decisions(resolution: Resolution) -> list[dict[str, Any]]:
    return [d.model_dump(mode="json", by_alias=True) for d in resolution.decisions]


def codes(resolution: Resolution) -> list[str]:
    return [issue.code for issue in resolution.issues]


def initial(marker: str | None = T1) -> RuntimeEvent:
    return EV.user("run it", event_id="initial-1", marker=marker)


def fcall(**kw: Any) -> RuntimeEvent:
    return EV.call("call-1", event_id="function-call-1", **kw)


def fdispatch(**kw: Any) -> RuntimeEvent:
    return EV.dispatch("call-1", event_id="dispatch-1", operation_id="operation-1", **kw)


def fresponse(is_error: bool | None = None, operation_id: str | None = None) -> RuntimeEvent:
    return EV.response(
        "call-1",
        "Bash",
        "permission denied" if is_error else "ok",
        event_id="function-response-1",
        is_error=is_error,
        operation_id=operation_id,
    )


# --- reference recovery-resolver.test.ts --------------------------------------------------------


def test_new_protocol_call_without_dispatch_was_never_dispatched() -> None:
    resolution = resolve_tool_operations([initial(), fcall()])
    assert dumped_decisions(resolution) == [
        decision(
            status="definitely_not_dispatched",
            reason="new_protocol_before_dispatch",
            call_id="function-call-1",
        )
    ]
    assert resolution.has_corruption is False
    assert resolution.requires_reconciliation is False
    assert resolution.tool_boundary_protocol == T1


def test_dispatch_without_response_requires_reconciliation() -> None:
    resolution = resolve_tool_operations([initial(), fcall(), fdispatch()])
    assert dumped_decisions(resolution) == [
        decision(
            status="indeterminate",
            reason="dispatch_without_response",
            operation_id="operation-1",
            call_id="function-call-1",
            dispatch_id="dispatch-1",
        )
    ]
    assert resolution.has_corruption is False
    assert resolution.requires_reconciliation is True


def test_matching_response_without_dispatch_is_pre_t1_synthetic_completion() -> None:
    resolution = resolve_tool_operations([initial(), fcall(), fresponse(is_error=True)])
    assert dumped_decisions(resolution) == [
        decision(
            status="completed",
            reason="matching_response",
            settlement_origin="pre_t1_synthetic",
            call_id="function-call-1",
            response_id="function-response-1",
            response_is_error=True,
        )
    ]
    assert resolution.requires_reconciliation is False


def test_normal_t2_completion() -> None:
    resolution = resolve_tool_operations(
        [initial(), fcall(), fdispatch(), fresponse(operation_id="operation-1")]
    )
    assert dumped_decisions(resolution) == [
        decision(
            status="completed",
            reason="matching_response",
            operation_id="operation-1",
            settlement_origin="normal_t2",
            call_id="function-call-1",
            dispatch_id="dispatch-1",
            response_id="function-response-1",
            response_is_error=False,
        )
    ]
    assert resolution.has_corruption is False
    assert resolution.issues == ()


def test_dispatch_without_call_is_orphan_dispatch() -> None:
    resolution = resolve_tool_operations([initial(), fdispatch()])
    assert dumped_decisions(resolution) == [
        decision(
            status="corruption",
            reason="orphan_dispatch",
            operation_id="operation-1",
            dispatch_id="dispatch-1",
        )
    ]
    assert codes(resolution) == ["event_order_conflict"]
    assert resolution.has_corruption is True
    assert resolution.requires_reconciliation is False


def test_response_without_call_is_orphan_response() -> None:
    resolution = resolve_tool_operations([initial(), fresponse()])
    assert dumped_decisions(resolution) == [
        decision(
            status="corruption",
            reason="orphan_response",
            response_id="function-response-1",
            response_is_error=False,
        )
    ]
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("orphan_response", "function-response-1")
    ]
    assert resolution.has_corruption is True


def test_dispatch_tool_name_drift_is_identity_conflict() -> None:
    # the hash still authenticates the Bash call: only the dispatch's tool name drifts
    drift = fdispatch(name="Write", args_hash=canonical_args_hash("Bash", {"command": "do-it"}))
    resolution = resolve_tool_operations([initial(), fcall(), drift])
    assert dumped_decisions(resolution) == [
        decision(
            status="corruption",
            reason="identity_conflict",
            operation_id="operation-1",
            call_id="function-call-1",
            dispatch_id="dispatch-1",
        )
    ]
    assert codes(resolution) == ["identity_conflict"]
    assert resolution.has_corruption is True


def test_repeated_dispatch_is_duplicate_dispatch() -> None:
    resolution = resolve_tool_operations(
        [
            initial(),
            fcall(),
            fdispatch(),
            EV.dispatch("call-1", event_id="dispatch-2", operation_id="operation-1"),
        ]
    )
    assert dumped_decisions(resolution) == [
        decision(
            status="corruption",
            reason="duplicate_dispatch",
            operation_id="operation-1",
            call_id="function-call-1",
            dispatch_id="dispatch-1",
        )
    ]
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("duplicate_dispatch", "dispatch-2")
    ]
    assert resolution.requires_reconciliation is False


def test_repeated_response_is_duplicate_response() -> None:
    second = EV.response(
        "call-1", "Bash", "ok", event_id="function-response-2", operation_id="operation-1"
    )
    resolution = resolve_tool_operations(
        [initial(), fcall(), fdispatch(), fresponse(operation_id="operation-1"), second]
    )
    assert dumped_decisions(resolution) == [
        decision(
            status="corruption",
            reason="duplicate_response",
            operation_id="operation-1",
            call_id="function-call-1",
            dispatch_id="dispatch-1",
            response_id="function-response-1",
            response_is_error=False,
        )
    ]
    assert codes(resolution) == ["duplicate_response"]
    assert resolution.requires_reconciliation is False


def test_protocol_marker_after_first_event_is_invalid() -> None:
    late = EV.event(event_id="late-marker", actions={"runtimeProtocol": {"toolBoundary": T1}})
    resolution = resolve_tool_operations([initial(marker=None), late])
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("protocol_marker_invalid", "late-marker")
    ]
    assert resolution.tool_boundary_protocol is None
    assert resolution.has_corruption is True


def test_unknown_first_marker_is_unmarked_and_corrupt_without_reconciliation() -> None:
    resolution = resolve_tool_operations([initial(marker="future_protocol"), fcall()])
    assert resolution.tool_boundary_protocol is None
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("protocol_marker_invalid", "initial-1")
    ]
    assert resolution.decisions[0].status == "indeterminate"
    assert resolution.decisions[0].reason == "legacy_dispatch_unknown"
    assert resolution.has_corruption is True
    assert resolution.requires_reconciliation is False


def test_marker_issues_precede_scanner_issues() -> None:
    resolution = resolve_tool_operations(
        [
            initial(marker="future_protocol"),
            fresponse(),
            EV.event(event_id="late-marker", actions={"runtimeProtocol": {"toolBoundary": T1}}),
        ]
    )
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("protocol_marker_invalid", "initial-1"),
        ("protocol_marker_invalid", "late-marker"),
        ("orphan_response", "function-response-1"),
    ]


def test_response_linked_to_another_operation_is_identity_conflict() -> None:
    resolution = resolve_tool_operations(
        [initial(), fcall(), fdispatch(), fresponse(operation_id="another-operation")]
    )
    first = resolution.decisions[0]
    assert (first.status, first.reason) == ("corruption", "identity_conflict")
    assert first.response_runtime_event_id == "function-response-1"
    assert resolution.has_corruption is True


def test_empty_ledger_resolves_to_nothing() -> None:
    resolution = resolve_tool_operations([])
    assert resolution.model_dump(mode="json", by_alias=True) == {
        "decisions": [],
        "issues": [],
        "hasCorruption": False,
        "requiresReconciliation": False,
        "toolBoundaryProtocol": None,
    }


# --- every scanner issue code -------------------------------------------------------------------


def test_duplicate_event_id_is_reported_and_skipped() -> None:
    resolution = resolve_tool_operations([fcall(), fcall()])
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("duplicate_event_id", "function-call-1")
    ]
    # the duplicate was skipped: one operation, no duplicate_call
    assert len(resolution.decisions) == 1
    assert resolution.decisions[0].reason == "legacy_dispatch_unknown"
    assert resolution.has_corruption is True


def test_duplicate_id_and_lane_conflict_are_both_reported() -> None:
    invalid = EV.event(
        event_id="outcome-1",
        role="tool",
        author="tool",
        content={"kind": "function_response", "id": "call-1", "name": "Bash", "result": "ok"},
        actions=fdispatch().to_wire()["actions"],
    )
    resolution = resolve_tool_operations([fcall(), fcall(), invalid])
    assert codes(resolution) == ["duplicate_event_id", "semantic_lane_conflict"]
    assert resolution.has_corruption is True
    assert resolution.requires_reconciliation is False


def test_invocation_spanning_two_spines_is_invocation_identity_conflict() -> None:
    other_run = EV.call(
        "call-2",
        "Read",
        {},
        event_id="call-event-2",
        with_refs=True,
        runId="run-2",
        turnId="turn-2",
    )
    resolution = resolve_tool_operations([fcall(), other_run])
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("invocation_identity_conflict", "call-event-2")
    ]
    # the event itself is still scanned (it is not skipped)
    assert [d.tool_call_id for d in resolution.decisions] == ["call-1", "call-2"]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(
            EV.call("call-1", event_id="c", with_refs=True, partial=True), id="partial-call"
        ),
        pytest.param(
            EV.response("call-1", "Bash", "ok", event_id="r", with_refs=True, partial=True),
            id="partial-response",
        ),
        pytest.param(
            EV.dispatch("call-1", event_id="d", operation_id="operation-1", partial=True),
            id="partial-dispatch",
        ),
        pytest.param(
            EV.call("call-1", event_id="c", with_refs=True, branch="child-1"), id="branch-call"
        ),
        pytest.param(
            EV.call("call-1", event_id="c", with_refs=True, status="completed"),
            id="terminal-status-call",
        ),
        pytest.param(
            EV.call("call-1", event_id="c", with_refs=True, role="tool"), id="call-wrong-role"
        ),
        pytest.param(
            EV.call("call-1", event_id="c", with_refs=True, actions={"artifactDelta": {"a": 1}}),
            id="call-with-artifact-delta",
        ),
        pytest.param(
            EV.response(
                "call-1",
                "Bash",
                "ok",
                event_id="r",
                with_refs=True,
                actions={"endInvocation": True},
            ),
            id="response-with-end-invocation",
        ),
        pytest.param(
            EV.dispatch(
                "call-1",
                event_id="d",
                operation_id="operation-1",
                content={"kind": "text", "text": "x"},
            ),
            id="dispatch-with-content",
        ),
        pytest.param(
            EV.dispatch(
                "call-1",
                event_id="d",
                operation_id="operation-1",
                refs={"operationId": "operation-1"},
            ),
            id="dispatch-refs",
        ),
    ],
)
def test_lane_violations_are_semantic_lane_conflicts(bad: RuntimeEvent) -> None:
    resolution = resolve_tool_operations([bad])
    assert [(i.code, i.event_id) for i in resolution.issues] == [("semantic_lane_conflict", bad.id)]
    assert resolution.decisions == ()  # skipped: no operation is created


def test_partial_ordinary_events_are_ignored() -> None:
    partial_text = EV.text("stream", event_id="p", partial=True)
    resolution = resolve_tool_operations([EV.user(text="run it"), partial_text, fcall()])
    assert resolution.issues == ()
    assert len(resolution.decisions) == 1


def test_duplicate_call_operation_and_order_are_reported_in_physical_order() -> None:
    other_call = EV.call("call-2", "Bash", event_id="call-other", with_refs=True)
    duplicate_operation = EV.dispatch(
        "call-2", event_id="dispatch-other", operation_id="operation-1"
    )
    resolution = resolve_tool_operations(
        [
            fdispatch(),
            fcall(),
            EV.call("call-1", event_id="call-dup", with_refs=True),
            other_call,
            duplicate_operation,
        ]
    )
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("event_order_conflict", "dispatch-1"),
        ("duplicate_call", "call-dup"),
        ("duplicate_operation", "dispatch-other"),
    ]
    first, second = resolution.decisions
    # the dispatch-first op then received its call: duplicate_call outranks the rest
    assert (first.status, first.reason) == ("corruption", "duplicate_call")
    assert (second.status, second.reason) == ("corruption", "duplicate_operation")
    assert second.operation_id is None  # the conflicting dispatch was not bound


def test_duplicate_operation_marks_both_operations() -> None:
    resolution = resolve_tool_operations(
        [
            EV.call("call-a", event_id="ca", with_refs=True),
            EV.dispatch("call-a", event_id="da", operation_id="operation-1"),
            EV.call("call-b", event_id="cb", with_refs=True),
            EV.dispatch("call-b", event_id="db", operation_id="operation-1"),
        ]
    )
    assert codes(resolution) == ["duplicate_operation"]
    assert [(d.tool_call_id, d.reason) for d in resolution.decisions] == [
        ("call-a", "duplicate_operation"),
        ("call-b", "duplicate_operation"),
    ]


def test_dispatch_hash_is_authenticated_against_call_args() -> None:
    wrong = fdispatch(args_hash="sha256:" + "0" * 64)
    resolution = resolve_tool_operations([fcall(), wrong])
    assert codes(resolution) == ["canonical_args_hash_conflict"]
    assert resolution.decisions[0].reason == "canonical_args_hash_conflict"


def test_non_strict_call_args_cannot_authenticate_a_dispatch() -> None:
    big = {"n": 2**53 + 1}  # not exactly representable as a JavaScript number
    wrong = fdispatch(args={"n": 1})
    resolution = resolve_tool_operations([fcall(args=big), wrong])
    assert codes(resolution) == ["canonical_args_hash_conflict"]


def test_dispatch_after_unbound_response_revalidates_the_response() -> None:
    resolution = resolve_tool_operations([fcall(), fresponse(), fdispatch()])
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("event_order_conflict", "dispatch-1"),
        ("identity_conflict", "function-response-1"),
    ]
    # identity_conflict outranks event_order_conflict
    assert resolution.decisions[0].reason == "identity_conflict"


def test_dispatch_after_bound_response_is_only_an_order_conflict() -> None:
    resolution = resolve_tool_operations(
        [fcall(), fresponse(operation_id="operation-1"), fdispatch()]
    )
    assert codes(resolution) == ["event_order_conflict"]
    assert resolution.decisions[0].reason == "event_order_conflict"


def test_recovery_fact_for_unknown_operation_is_top_level_order_conflict() -> None:
    orphan = EV.reconcile(
        "unknown-call", event_id="orphan-reconcile", operation_id="unknown-operation"
    )
    resolution = resolve_tool_operations([fcall(), fresponse(), orphan])
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("event_order_conflict", "orphan-reconcile")
    ]
    assert resolution.decisions[0].status == "completed"
    assert resolution.has_corruption is True


def test_response_name_mismatch_is_identity_conflict() -> None:
    resolution = resolve_tool_operations(
        [fcall(), EV.response("call-1", "Read", "ok", event_id="r", with_refs=True)]
    )
    assert codes(resolution) == ["identity_conflict"]
    assert resolution.decisions[0].reason == "identity_conflict"


def test_call_after_dispatch_with_other_name_is_identity_conflict() -> None:
    resolution = resolve_tool_operations([fdispatch(), fcall(name="Read")])
    assert codes(resolution) == ["event_order_conflict", "identity_conflict"]
    assert resolution.decisions[0].reason == "identity_conflict"


def test_tuple_call_keys_are_unambiguous() -> None:
    first = EV.call("c", "Read", {}, event_id="call-a", with_refs=True, invocationId="a\0b")
    second = EV.call("b\0c", "Read", {}, event_id="call-b", with_refs=True, invocationId="a")
    resolution = resolve_tool_operations([first, second])
    assert resolution.has_corruption is False
    assert len(resolution.decisions) == 2


def test_same_provider_id_in_two_invocations_is_two_operations() -> None:
    first = EV.call("call-1", "Read", {}, event_id="call-a", with_refs=True)
    second = EV.call(
        "call-1",
        "Read",
        {},
        event_id="call-b",
        with_refs=True,
        invocationId="invocation-2",
        turnId="turn-2",
    )
    resolution = resolve_tool_operations([first, second])
    assert resolution.issues == ()
    assert [d.call_runtime_event_id for d in resolution.decisions] == ["call-a", "call-b"]


# --- decision rows and priorities ---------------------------------------------------------------


def test_unmarked_call_only_is_indeterminate_never_not_dispatched() -> None:
    resolution = resolve_tool_operations([EV.user(text="run it"), fcall()])
    assert (resolution.decisions[0].status, resolution.decisions[0].reason) == (
        "indeterminate",
        "legacy_dispatch_unknown",
    )
    assert resolution.requires_reconciliation is True


def test_corruption_anywhere_disables_reconciliation() -> None:
    resolution = resolve_tool_operations(
        [
            EV.user(text="run it"),
            fcall(),
            EV.response("other", "X", "ok", event_id="r", with_refs=True),
        ]
    )
    assert resolution.decisions[0].status == "indeterminate"
    assert resolution.has_corruption is True
    assert resolution.requires_reconciliation is False


def test_orphan_response_later_completed_by_a_call_stays_orphan_response() -> None:
    resolution = resolve_tool_operations([fresponse(), fcall()])
    first = resolution.decisions[0]
    assert (first.status, first.reason) == ("corruption", "orphan_response")
    assert first.call_runtime_event_id == "function-call-1"


@pytest.mark.parametrize(
    ("events", "reason"),
    [
        pytest.param(
            [
                fcall(),
                EV.call("call-1", event_id="dup", with_refs=True),
                fdispatch(),
                EV.dispatch("call-1", event_id="dispatch-2", operation_id="operation-1"),
            ],
            "duplicate_call",
            id="duplicate_call>duplicate_dispatch",
        ),
        pytest.param(
            [
                EV.call("call-a", event_id="ca", with_refs=True),
                EV.dispatch("call-a", event_id="da", operation_id="operation-1"),
                EV.call("call-b", event_id="cb", with_refs=True),
                EV.dispatch("call-b", event_id="db", operation_id="operation-1"),
                EV.dispatch("call-a", event_id="da2", operation_id="operation-1"),
            ],
            "duplicate_operation",
            id="duplicate_operation>duplicate_dispatch",
        ),
        pytest.param(
            [
                fcall(),
                fdispatch(),
                fresponse(operation_id="operation-1"),
                EV.response("call-1", "Bash", "ok", event_id="r2", operation_id="operation-1"),
                EV.dispatch("call-1", event_id="dispatch-2", operation_id="operation-1"),
            ],
            "duplicate_dispatch",
            id="duplicate_dispatch>duplicate_response",
        ),
        pytest.param(
            [
                fresponse(),
                EV.response("call-1", "Bash", "ok", event_id="r2", with_refs=True),
                fcall(),
            ],
            "duplicate_response",
            id="duplicate_response>orphan_response",
        ),
        pytest.param(
            [fresponse(), fcall(), fdispatch(args_hash="sha256:" + "0" * 64)],
            "orphan_response",
            id="orphan_response>canonical_args_hash_conflict",
        ),
        pytest.param(
            [fcall(), fdispatch(name="Write", args_hash="sha256:" + "0" * 64)],
            "canonical_args_hash_conflict",
            id="canonical_args_hash_conflict>identity_conflict",
        ),
        pytest.param(
            [fcall(), fresponse(), fdispatch()],
            "identity_conflict",
            id="identity_conflict>event_order_conflict",
        ),
    ],
)
def test_operation_issue_priority(events: list[RuntimeEvent], reason: str) -> None:
    resolution = resolve_tool_operations(events)
    first = resolution.decisions[0]
    assert (first.status, first.reason) == ("corruption", reason)


def test_priority_constant_matches_spec_order() -> None:
    assert OPERATION_ISSUE_PRIORITY == (
        "duplicate_call",
        "duplicate_operation",
        "duplicate_dispatch",
        "duplicate_response",
        "orphan_response",
        "canonical_args_hash_conflict",
        "identity_conflict",
        "event_order_conflict",
    )


def test_operations_are_in_first_appearance_order() -> None:
    resolution = resolve_tool_operations(
        [
            EV.call("call-2", "Read", {}, event_id="c2", with_refs=True),
            EV.call("call-1", event_id="c1", with_refs=True),
            EV.response("call-1", "Bash", "ok", event_id="r1", with_refs=True),
            EV.response("call-2", "Read", "ok", event_id="r2", with_refs=True),
            EV.terminal(status="failed", error_code=None),
        ]
    )
    assert [d.tool_call_id for d in resolution.decisions] == ["call-2", "call-1"]
    assert all(d.status == "completed" for d in resolution.decisions)


# --- input handling -----------------------------------------------------------------------------


def test_wire_mappings_and_models_resolve_identically() -> None:
    models = [initial(), fcall(), fdispatch(), fresponse(operation_id="operation-1")]
    dicts = [e.to_wire() for e in models]
    assert resolve_tool_operations(dicts) == resolve_tool_operations(models)


def test_invalid_wire_mapping_is_refused() -> None:
    with pytest.raises(InvalidRuntimeEventError):
        resolve_tool_operations([W.event(event_id="x", unknownKey=1)])


def test_resolution_dump_keys() -> None:
    resolution = resolve_tool_operations([initial(), fcall(), fresponse()])
    dumped = resolution.model_dump(mode="json", by_alias=True)
    assert list(dumped) == [
        "decisions",
        "issues",
        "hasCorruption",
        "requiresReconciliation",
        "toolBoundaryProtocol",
    ]
    assert list(dumped["decisions"][0]) == [
        "toolCallId",
        "toolName",
        "operationId",
        "status",
        "reason",
        "settlementOrigin",
        "callRuntimeEventId",
        "dispatchRuntimeEventId",
        "responseRuntimeEventId",
        "responseIsError",
    ]
    orphan = resolve_tool_operations([fresponse()]).model_dump(mode="json", by_alias=True)
    assert list(orphan["issues"][0]) == ["code", "eventId"]
