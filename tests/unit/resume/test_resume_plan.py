"""Phase 0 ResumePlan (docs/reference/phase0.md#resume-plan), mirroring the reference
runtime-resume tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from maka_es.resume.plan import (
    RESUME_DIRECTIVE,
    build_resume_plan,
    project_tool_operations,
    provider_replay_subset,
)
from maka_es.testing.builders import Events, Spine, event_ids
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1
from maka_es.wire.events import RuntimeEvent

EV = Events.decoded(Spine("session-1", "invocation-1", "run-1", "turn-1"), ts=1)

EXEC_CODE = {"code": "await tools.Read({})"}


def codes(plan: Any) -> list[str]:
    return [d.code for d in plan.diagnostics]


# --- reference runtime-resume.test.ts (phase 0 + items 10, 25) ---------------------------------


def test_tool_operation_projection_is_deterministic() -> None:
    events = [
        EV.call("tool-1", "Bash", {"command": "npm test"}, event_id="call-1", with_refs=True),
        EV.response(
            "tool-1", "Bash", {"ok": False}, event_id="result-1", is_error=True, with_refs=True
        ),
        EV.call("tool-2", "Read", {"file_path": "README.md"}, event_id="call-2", with_refs=True),
    ]
    first = project_tool_operations(events)
    assert first == project_tool_operations(events)
    assert [
        (
            op.tool_call_id,
            op.tool_name,
            op.status,
            op.call_runtime_event_id,
            op.response_runtime_event_id,
        )
        for op in first
    ] == [
        ("tool-1", "Bash", "failed", "call-1", "result-1"),
        ("tool-2", "Read", "indeterminate", "call-2", None),
    ]
    assert first[0].args == {"command": "npm test"}
    assert first[0].response_is_error is True


def test_committed_failed_result_versus_missing_result() -> None:
    failed = build_resume_plan(
        [
            EV.call("tool-1", "Bash", {"command": "exit 1"}, event_id="call-1", with_refs=True),
            EV.response(
                "tool-1",
                "Bash",
                {"exitCode": 1},
                event_id="result-1",
                is_error=True,
                with_refs=True,
            ),
        ]
    )
    indeterminate = build_resume_plan(
        [EV.call("tool-2", "Bash", {"command": "touch m"}, event_id="call-2", with_refs=True)]
    )

    assert failed.disposition == "safe_replay"
    assert failed.operations[0].status == "failed"
    assert failed.directive is None
    assert indeterminate.disposition == "blocked"
    assert indeterminate.operations[0].status == "indeterminate"
    assert indeterminate.requires_verification is True
    assert indeterminate.rejection_reasons == ("dangling_tool_state",)
    assert indeterminate.source_runtime_event_high_water == 1
    assert indeterminate.directive == RESUME_DIRECTIVE
    assert "Do not retry" in indeterminate.directive
    assert "read-only" in indeterminate.directive


def test_directive_exact_text() -> None:
    assert RESUME_DIRECTIVE == (
        "Tool execution was interrupted before a matching committed tool result was found. "
        "The side effects may or may not have occurred. Do not retry the tool call immediately. "
        "Use read-only inspection tools to verify the current state before deciding the next "
        "step."
    )


def test_unresolved_call_is_excluded_from_replay() -> None:
    events = [
        EV.text("hello", event_id="user-1", role="user"),
        EV.call("tool-1", "Bash", {"command": "touch marker"}, event_id="call-1", with_refs=True),
        EV.text("diagnostic", event_id="system-1", role="system"),
    ]
    assert event_ids(provider_replay_subset(events)) == ["user-1", "system-1"]
    assert event_ids(build_resume_plan(events).replay_runtime_events) == ["user-1", "system-1"]


def test_hidden_nested_codemode_operations_are_never_replayed() -> None:
    events = [
        EV.text("inspect", event_id="user-1", role="user"),
        EV.call("nested-1", "Read", {}, event_id="nested-call", hidden=True, with_refs=True),
        EV.response(
            "nested-1",
            "Read",
            {"ok": True},
            event_id="nested-result",
            is_error=False,
            hidden=True,
            with_refs=True,
        ),
    ]
    assert project_tool_operations(events) == ()
    assert event_ids(provider_replay_subset(events)) == ["user-1"]
    plan = build_resume_plan(events)
    assert plan.disposition == "safe_replay"
    assert plan.operations == ()
    assert plan.diagnostics == ()


def test_hidden_nested_operation_still_indeterminate_blocks() -> None:
    events = [
        EV.user("run the workflow", event_id="user-1", marker=T1),
        EV.call("exec-1", "exec", EXEC_CODE, event_id="outer-call", operation_id="outer-op"),
        EV.dispatch(
            "exec-1", "exec", EXEC_CODE, event_id="outer-dispatch", operation_id="outer-op"
        ),
        EV.response(
            "exec-1",
            "exec",
            {"status": "interrupted"},
            event_id="outer-response",
            is_error=True,
            operation_id="outer-op",
        ),
        EV.call(
            "nested-1",
            "Read",
            {},
            event_id="nested-call",
            operation_id="nested-op",
            hidden=True,
            parent=("outer-op", "exec-1"),
        ),
        EV.dispatch(
            "nested-1",
            "Read",
            {},
            event_id="nested-dispatch",
            operation_id="nested-op",
            hidden=True,
            parent=("outer-op", "exec-1"),
        ),
    ]
    plan = build_resume_plan(events)
    assert plan.disposition == "blocked"
    assert plan.requires_verification is True
    assert plan.directive == RESUME_DIRECTIVE
    assert [op.status for op in plan.operations] == ["failed"]  # only the visible outer op
    assert codes(plan) == ["pending_tool_result"]
    pending = plan.diagnostics[0]
    assert (pending.event_id, pending.tool_call_id, pending.tool_name) == (
        "nested-call",
        "nested-1",
        "Read",
    )
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert event_ids(plan.replay_runtime_events) == [
        "user-1",
        "outer-call",
        "outer-dispatch",
        "outer-response",
    ]


def test_unmatched_tool_result_blocks_without_verification() -> None:
    plan = build_resume_plan(
        [
            EV.response(
                "tool-1", "Bash", {"ok": True}, event_id="result-1", is_error=False, with_refs=True
            )
        ]
    )
    assert plan.disposition == "blocked"
    assert plan.requires_verification is False
    assert plan.directive is None
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert codes(plan) == ["tool_ledger_corruption", "unmatched_tool_result"]
    assert plan.diagnostics[0].detail == {"issueCode": "orphan_response"}
    assert provider_replay_subset(plan.runtime_events) == []
    assert plan.replay_runtime_events == ()


def test_expected_high_water_mismatch_is_only_runtime_offset_mismatch() -> None:
    plan = build_resume_plan(
        [EV.text("hello", event_id="user-1", role="user")], expected_high_water=2
    )
    assert plan.disposition == "blocked"
    assert plan.rejection_reasons == ("runtime_offset_mismatch",)
    assert codes(plan) == ["runtime_offset_mismatch"]
    assert plan.diagnostics[0].detail == {
        "expectedRuntimeEventHighWater": 2,
        "actualRuntimeEventHighWater": 1,
    }
    assert plan.requires_verification is False


def test_expected_high_water_match_is_accepted() -> None:
    plan = build_resume_plan(
        [EV.text("hello", event_id="user-1", role="user")], expected_high_water=1
    )
    assert plan.disposition == "safe_replay"
    assert plan.diagnostics == ()


def test_offset_mismatch_comes_first_and_reasons_are_deduplicated() -> None:
    plan = build_resume_plan(
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.call("tool-2", event_id="c2", with_refs=True),
        ],
        expected_high_water=7,
    )
    assert codes(plan) == ["runtime_offset_mismatch", "pending_tool_result", "pending_tool_result"]
    assert plan.rejection_reasons == ("runtime_offset_mismatch", "dangling_tool_state")


def test_new_protocol_call_without_dispatch_is_not_dispatched() -> None:
    plan = build_resume_plan(
        [
            EV.user("run it", event_id="user-1", marker=T1),
            EV.call("tool-1", event_id="call-1", with_refs=True),
        ]
    )
    assert plan.disposition == "blocked"
    assert plan.operations[0].status == "not_dispatched"
    assert plan.requires_verification is False
    assert plan.directive is None
    assert codes(plan) == ["tool_not_dispatched"]
    assert plan.rejection_reasons == ("dangling_tool_state",)


def test_partial_event_counts_in_high_water_but_is_not_replayed() -> None:
    partial = EV.text("streaming", event_id="partial-1", partial=True)
    plan = build_resume_plan([EV.text("continue", event_id="user-1", role="user"), partial])
    assert plan.disposition == "safe_replay"
    assert plan.source_runtime_event_high_water == 2
    assert event_ids(plan.replay_runtime_events) == ["user-1"]
    assert event_ids(plan.runtime_events) == ["user-1", "partial-1"]


# --- further diagnostics ------------------------------------------------------------------------


def test_tool_name_mismatch_diagnostic() -> None:
    plan = build_resume_plan(
        [
            EV.user(text="run it"),
            EV.call("tool-1", "Bash", event_id="c1", with_refs=True),
            EV.response("tool-1", "Read", "ok", event_id="r1", with_refs=True),
        ]
    )
    assert codes(plan) == [
        "tool_recovery_corruption",
        "tool_ledger_corruption",
        "tool_name_mismatch",
    ]
    mismatch = plan.diagnostics[-1]
    assert mismatch.detail == {"callToolName": "Bash", "responseToolName": "Read"}
    assert (mismatch.event_id, mismatch.tool_call_id, mismatch.tool_name) == (
        "r1",
        "tool-1",
        "Read",
    )
    # an unpaired (name-mismatched) exchange is not replayed
    assert event_ids(plan.replay_runtime_events) == ["user-1"]


def test_orphan_dispatch_gets_a_recovery_corruption_diagnostic() -> None:
    plan = build_resume_plan(
        [
            EV.user("run it", event_id="u", marker=T1),
            EV.dispatch("call-1", event_id="dispatch-1", operation_id="operation-1"),
        ]
    )
    assert codes(plan) == ["tool_ledger_corruption", "tool_recovery_corruption"]
    orphan = plan.diagnostics[1]
    assert (orphan.event_id, orphan.tool_call_id, orphan.tool_name) == (
        "dispatch-1",
        "call-1",
        "Bash",
    )
    assert plan.operations == ()
    assert plan.disposition == "blocked"


def test_self_named_issue_diagnostics() -> None:
    late = EV.event(event_id="late", actions={"runtimeProtocol": {"toolBoundary": T1}})
    plan = build_resume_plan(
        [
            EV.user(text="run it"),
            late,
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.call("tool-1", event_id="c1", with_refs=True),
            EV.call("t2", event_id="c2", with_refs=True, partial=True),
        ]
    )
    assert codes(plan) == [
        "pending_tool_result",
        "protocol_marker_invalid",
        "duplicate_event_id",
        "semantic_lane_conflict",
    ]
    assert [d.event_id for d in plan.diagnostics[1:]] == ["late", "c1", "c2"]
    assert all(d.detail is None for d in plan.diagnostics)
    assert plan.rejection_reasons == ("dangling_tool_state",)


def test_corruption_alone_blocks_even_without_rejection_reasons() -> None:
    # a hidden nested operation whose recovery facts are corrupt: no visible operation, no
    # ledger issue, hence no diagnostic -- but the resolver reports corruption, so it blocks
    nested_args: dict[str, Any] = {}
    events = [
        EV.user(text="run it"),
        EV.call("nested-1", "Read", nested_args, event_id="nested-call", hidden=True),
        EV.dispatch(
            "nested-1",
            "Read",
            nested_args,
            event_id="nested-dispatch",
            operation_id="op-n",
            recovery_mode="reconcile",
        ),
        EV.reconcile("nested-1", event_id="nested-reconcile", operation_id="op-n"),
    ]
    plan = build_resume_plan(events)
    assert plan.diagnostics == ()
    assert plan.rejection_reasons == ()
    assert plan.requires_verification is False
    assert plan.disposition == "blocked"


# --- shape, determinism and purity --------------------------------------------------------------


def test_dump_keys() -> None:
    plan = build_resume_plan(
        [
            EV.user(text="run it"),
            EV.call("tool-1", "Bash", event_id="c1", with_refs=True),
            EV.response("tool-1", "Read", "ok", event_id="r1", with_refs=True),
        ],
        expected_high_water=9,
    )
    dumped = plan.model_dump(mode="json", by_alias=True)
    assert list(dumped) == [
        "disposition",
        "operations",
        "diagnostics",
        "rejectionReasons",
        "requiresVerification",
        "sourceRuntimeEventHighWater",
        "directive",
        "runtimeEvents",
        "replayRuntimeEvents",
    ]
    assert list(dumped["operations"][0]) == [
        "toolCallId",
        "toolName",
        "args",
        "status",
        "callRuntimeEventId",
        "responseRuntimeEventId",
        "responseIsError",
    ]
    for diagnostic in dumped["diagnostics"]:
        assert list(diagnostic) == [
            "code",
            "message",
            "eventId",
            "toolCallId",
            "toolName",
            "detail",
        ]
        assert isinstance(diagnostic["message"], str)
        assert diagnostic["message"]
    # events serialise as exact wire dicts, not model dumps with nulls
    assert dumped["runtimeEvents"][0] == EV.user(text="run it").to_wire()
    assert "branch" not in dumped["runtimeEvents"][0]


def test_plan_is_deterministic_and_does_not_mutate_input() -> None:
    wire_events: list[Any] = [
        EV.user("run it", event_id="u", marker=T1).to_wire(),
        EV.call(
            "tool-1", "Write", {"path": "a", "content": "b"}, event_id="c1", with_refs=True
        ).to_wire(),
        EV.dispatch(
            "tool-1", "Write", {"path": "a", "content": "b"}, event_id="d1", operation_id="op-1"
        ),
        EV.response(
            "tool-1", "Write", {"nested": [1, 2]}, event_id="r1", operation_id="op-1"
        ).to_wire(),
        EV.call("tool-2", "Bash", event_id="c2", with_refs=True).to_wire(),
        EV.terminal(status="failed", error_code=None),
    ]
    before = copy.deepcopy([e if isinstance(e, dict) else e.to_wire() for e in wire_events])
    before_list = list(wire_events)

    first = build_resume_plan(wire_events, expected_high_water=6)
    second = build_resume_plan(wire_events, expected_high_water=6)
    assert first == second
    assert first.model_dump(mode="json", by_alias=True) == second.model_dump(
        mode="json", by_alias=True
    )
    assert wire_events == before_list
    assert [e if isinstance(e, dict) else e.to_wire() for e in wire_events] == before

    # mutating the plan's args does not reach the input
    dumped = first.model_dump(mode="json", by_alias=True)
    assert dumped["runtimeEvents"] == before
    assert first.operations[0].args is not wire_events[1]["content"]["args"]


def test_model_and_wire_inputs_give_equal_plans() -> None:
    models: list[RuntimeEvent] = [
        EV.user(text="run it"),
        EV.call("tool-1", event_id="c1", with_refs=True),
        EV.response("tool-1", "Bash", "ok", event_id="r1", with_refs=True),
        EV.terminal(status="failed", error_code=None),
    ]
    assert build_resume_plan(models) == build_resume_plan([m.to_wire() for m in models])


@pytest.mark.parametrize("count", [0, 1])
def test_trivial_ledgers_are_safe(count: int) -> None:
    plan = build_resume_plan([EV.user(text="run it")][:count])
    assert plan.disposition == "safe_replay"
    assert plan.source_runtime_event_high_water == count
