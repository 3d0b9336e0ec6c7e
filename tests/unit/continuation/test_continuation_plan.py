"""Phase 1 safe-boundary continuation plan (docs/reference/continuation.md#plan, #gates), mirroring
runtime-resume.test.ts items 9-25 plus every gate a-p, both cwd policies and both terminal
policies."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from maka_es.continuation.model.plan import (
    ContinuationInputs,
    ContinuationPlan,
    build_continuation_plan,
    normalize_cwd,
    terminal_boundary_consistent,
)
from maka_es.continuation.model.replay import build_composite_replay
from maka_es.testing.builders import Events, Spine, event_ids, run_header
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1 as T1
from maka_es.wire.run_header import RunHeader

SPINE = Spine("session-1", "invocation-1", "run-1", "turn-1")
EV = Events.decoded(SPINE, ts=1)
CHILD = {
    "sessionId": "session-1",
    "invocationId": "invocation-2",
    "runId": "run-2",
    "turnId": "turn-2",
}


def facts(**overrides: Any) -> ContinuationInputs:
    """The reference ``safeBoundaryFacts()`` with camelCase overrides."""
    base: dict[str, Any] = {
        "ledgerReadable": True,
        "terminalRepairSucceeded": True,
        "sourceCwd": "/workspace/repo",
        "currentCwd": "/workspace/repo",
        "sourceWorkspaceIdentity": "workspace-1",
        "currentWorkspaceIdentity": "workspace-1",
        "backgroundOperationsSettled": True,
        "availableToolNames": ["Bash", "Write"],
        "continuationIdentity": {
            "invocationId": "invocation-3",
            "runId": "run-3",
            "turnId": "turn-3",
        },
    }
    base.update(overrides)
    return ContinuationInputs.model_validate(base)


def header(status: str = "failed", **overrides: Any) -> RunHeader:
    """The source run header; a failed one carries ``failureClass: test_failure``."""
    fields: dict[str, Any] = {"status": status, "cwd": "/workspace/repo"}
    if status == "failed":
        fields["failureClass"] = "test_failure"
    fields.update(overrides)
    return RunHeader.model_validate(run_header(SPINE, **fields))


def permission_request(event_id: str, tool_call_id: str = "tool-1") -> Any:
    return EV.permission_request(
        event_id=event_id,
        tool_call_id=tool_call_id,
        tool_name="Write",
        category="file_write",
        args={"path": "README.md"},
        remember_for_turn_allowed=True,
    )


def codes(plan: ContinuationPlan) -> list[str]:
    return [d.code for d in plan.diagnostics]


def diagnostic(plan: ContinuationPlan, code: str) -> Any:
    return next(d for d in plan.diagnostics if d.code == code)


def on_child(e: Any) -> dict[str, Any]:
    return {**e.to_wire(), **CHILD}


def plan_of(events: list[Any], **overrides: Any) -> ContinuationPlan:
    return build_continuation_plan(events, facts(**overrides))


# --- runtime-resume.test.ts phase 1 items ------------------------------------------------------


def test_item9_ancestor_prefix_trimmed_then_full_child_segment() -> None:
    root = [
        EV.user("finish the task", event_id="root-user"),
        EV.event(
            event_id="root-interrupted-thinking",
            role="model",
            author="agent",
            content={"kind": "thinking", "text": "unfinished", "signature": "signed-root"},
        ),
        EV.text("I was interrupted", event_id="root-interrupted-text"),
        EV.terminal("failed", event_id="root-terminal", error_code=None),
    ]
    child = [
        on_child(EV.state_delta_continuation_start(event_id="continuation-start")),
        on_child(
            EV.call(
                "tool-2", "Bash", {"command": "npm test"}, event_id="child-call", with_refs=True
            )
        ),
        on_child(
            EV.response(
                "tool-2",
                "Bash",
                {"exitCode": 0},
                event_id="child-result",
                is_error=False,
                with_refs=True,
            )
        ),
        on_child(EV.terminal("failed", event_id="child-terminal", error_code=None)),
    ]
    replay = build_composite_replay([root, child])
    expected = [
        "root-user",
        "root-terminal",
        "continuation-start",
        "child-call",
        "child-result",
        "child-terminal",
    ]
    child_header = RunHeader.model_validate(
        run_header(
            Spine("session-1", "invocation-2", "run-2", "turn-2"),
            status="failed",
            failureClass="test_failure",
            parentRunId="run-1",
            continuationSource={
                "sourceInvocationId": "invocation-1",
                "sourceRunId": "run-1",
                "sourceTurnId": "turn-1",
                "sourceRuntimeEventHighWater": 4,
            },
        )
    )
    f = facts(availableToolNames=["Bash"], sourceHeader=child_header)

    single_run = build_continuation_plan(
        child, f, ancestors=[replay.segments[0].replay_runtime_events]
    )
    assert single_run.disposition == "continue", single_run.rejection_reasons
    assert single_run.continuation is not None
    assert event_ids(single_run.continuation.runtime_context) == expected
    assert event_ids(single_run.continuation.runtime_context[2:]) == event_ids(
        child
    )  # source segment, whole
    assert single_run.continuation.source_run_id == "run-2"
    assert single_run.continuation.source_runtime_event_high_water == 4

    composite = build_continuation_plan(child, f, replay=replay)
    assert composite.disposition == "continue", composite.rejection_reasons
    assert composite.continuation is not None
    assert event_ids(composite.continuation.runtime_context) == expected


def test_item10_pre_t1_call_is_not_dispatched_dangling_state() -> None:
    plan = plan_of(
        [EV.user(text="run it", marker=T1), EV.call("tool-1", "Bash", event_id="call-1")]
    )
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert codes(plan) == ["tool_not_dispatched"]
    assert plan.continuation is None


def test_item11_composite_replay_trims_pre_t1_call_and_continues() -> None:
    events = [
        EV.user(text="run it", marker=T1),
        EV.call("tool-1", "Bash", {"command": "touch marker"}, event_id="call-1"),
        EV.terminal("failed", event_id="terminal-1", error_code=None),
    ]
    replay = build_composite_replay([events])
    assert replay.replayable
    plan = build_continuation_plan(events, facts(), replay=replay)
    assert plan.disposition == "continue"
    assert plan.rejection_reasons == ()
    assert plan.continuation is not None
    assert event_ids(plan.continuation.runtime_context) == ["user-1", "terminal-1"]
    assert plan.continuation.source_runtime_event_high_water == 3


def test_item12_fully_committed_boundary_exact_continuation() -> None:
    events = [
        EV.user("run the tests", event_id="user-1"),
        EV.call("tool-1", "Bash", {"command": "npm test"}, event_id="call-1", with_refs=True),
        EV.response(
            "tool-1", "Bash", {"exitCode": 0}, event_id="result-1", is_error=False, with_refs=True
        ),
    ]
    plan = plan_of(
        events,
        availableToolNames=["Bash"],
        continuationIdentity={"invocationId": "invocation-2", "runId": "run-2", "turnId": "turn-2"},
    )
    assert plan.model_dump(by_alias=True) == {
        "disposition": "continue",
        "rejectionReasons": (),
        "diagnostics": (),
        "continuation": {
            "invocationId": "invocation-2",
            "runId": "run-2",
            "turnId": "turn-2",
            "sourceInvocationId": "invocation-1",
            "sourceRunId": "run-1",
            "sourceTurnId": "turn-1",
            "sourceRuntimeEventHighWater": 3,
            "runtimeContext": [e.to_wire() for e in events],
            "safetySnapshot": {
                "workspaceIdentity": "workspace-1",
                "backgroundOperationsSettled": True,
                "availableToolNames": ("Bash",),
                "workspaceCheckpoint": None,
            },
        },
    }


def test_item13_unanswered_permission_request_parks() -> None:
    plan = plan_of(
        [EV.user("edit the file", event_id="user-1"), permission_request("permission-1")]
    )
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("pending_permission",)
    assert plan.continuation is None
    pending = diagnostic(plan, "pending_permission")
    assert pending.event_id == "permission-1"
    assert pending.detail == {"requestId": "permission-1"}


def test_item14_accepted_answer_clears_pending_permission() -> None:
    answer = EV.event(
        event_id="permission-answer-1",
        author="user",
        actions={"permissionAnswerAccepted": {"requestId": "permission-1"}},
        refs={"toolCallId": "tool-1"},
    )
    plan = plan_of(
        [EV.user("edit the file", event_id="user-1"), permission_request("permission-1"), answer]
    )
    assert "pending_permission" not in codes(plan)
    assert plan.disposition == "continue"


def test_item15_timed_out_closure_clears_pending_permission() -> None:
    closure = EV.event(
        event_id="permission-closure-1",
        actions={"permissionClosureAccepted": {"requestId": "permission-1", "reason": "timed_out"}},
        refs={"toolCallId": "tool-1"},
    )
    events = [
        EV.user("edit the file", event_id="user-1"),
        permission_request("permission-1"),
        closure,
    ]
    plan = plan_of(events)
    assert plan.disposition == "continue"
    assert plan.rejection_reasons == ()
    assert plan.continuation is not None
    assert plan.continuation.runtime_context == tuple(events)


def test_permission_decision_clears_and_each_pending_request_is_reported() -> None:
    decision = EV.event(
        event_id="decision-1",
        actions={"permissionDecision": {"requestId": "permission-1", "decision": "allow"}},
    )
    plan = plan_of(
        [
            EV.user(text="run it"),
            permission_request("permission-1"),
            decision,
            permission_request("permission-2"),
            permission_request("permission-3"),
        ]
    )
    assert plan.rejection_reasons == ("pending_permission",)  # de-duplicated
    assert [(d.code, d.detail) for d in plan.diagnostics] == [
        ("pending_permission", {"requestId": "permission-2"}),
        ("pending_permission", {"requestId": "permission-3"}),
    ]


def test_partial_permission_request_does_not_count() -> None:
    partial = permission_request("permission-1").to_wire() | {"partial": True}
    assert plan_of([EV.user(text="run it"), partial]).disposition == "continue"


def test_item16_workspace_identity_mismatch() -> None:
    plan = plan_of([EV.user("inspect", event_id="user-1")], currentWorkspaceIdentity="workspace-2")
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("workspace_identity_mismatch",)
    assert diagnostic(plan, "workspace_identity_mismatch").detail == {
        "sourceWorkspaceIdentity": "workspace-1",
        "currentWorkspaceIdentity": "workspace-2",
    }


@pytest.mark.parametrize(
    ("source", "current"), [(None, "workspace-1"), ("workspace-1", None), (None, None)]
)
def test_missing_workspace_identity_parks(source: str | None, current: str | None) -> None:
    plan = plan_of(
        [EV.user(text="run it")], sourceWorkspaceIdentity=source, currentWorkspaceIdentity=current
    )
    assert plan.rejection_reasons == ("workspace_identity_missing",)
    assert diagnostic(plan, "workspace_identity_missing").detail == {
        "sourceWorkspaceIdentity": source,
        "currentWorkspaceIdentity": current,
    }


def test_item17_path_change_relocatable_continues_with_diagnostic() -> None:
    plan = plan_of(
        [EV.user("inspect", event_id="user-1")],
        currentCwd="/fresh-sandbox/repo",
        cwdPolicy="relocatable",
    )
    assert plan.disposition == "continue"
    assert plan.rejection_reasons == ()
    assert [d.model_dump(by_alias=True) for d in plan.diagnostics] == [
        {
            "code": "workspace_location_changed",
            "message": "workspace location differs from the source resume boundary",
            "eventId": None,
            "toolCallId": None,
            "toolName": None,
            "detail": {"sourceCwd": "/workspace/repo", "currentCwd": "/fresh-sandbox/repo"},
        }
    ]


def test_path_change_strict_default_parks_cwd_mismatch() -> None:
    plan = plan_of([EV.user("inspect", event_id="user-1")], currentCwd="/fresh-sandbox/repo")
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("workspace_cwd_mismatch",)
    assert [(d.code, d.detail) for d in plan.diagnostics] == [
        (
            "workspace_cwd_mismatch",
            {"sourceCwd": "/workspace/repo", "currentCwd": "/fresh-sandbox/repo"},
        )
    ]


@pytest.mark.parametrize(
    ("source", "current"),
    [
        ("/workspace/repo/", "/workspace/repo"),
        ("/workspace/repo///", "/workspace/repo"),
        ("C:\\Users\\Dev\\Repo\\", "c:/users/dev/repo"),
        ("D:/Work", "d:\\work"),
    ],
)
def test_cwd_normalisation_equal(source: str, current: str) -> None:
    assert normalize_cwd(source) == normalize_cwd(current)
    assert (
        plan_of([EV.user(text="run it")], sourceCwd=source, currentCwd=current).disposition
        == "continue"
    )


@pytest.mark.parametrize(
    ("source", "current"),
    [("/Workspace/Repo", "/workspace/repo"), ("/workspace/a", "/workspace/b"), ("1:/x", "1:/X")],
)
def test_cwd_normalisation_different(source: str, current: str) -> None:
    assert normalize_cwd(source) != normalize_cwd(current)
    assert plan_of(
        [EV.user(text="run it")], sourceCwd=source, currentCwd=current
    ).rejection_reasons == ("workspace_cwd_mismatch",)


def test_item18_unsettled_background_operation_parks() -> None:
    plan = plan_of(
        [
            EV.user("start the service", event_id="user-1"),
            EV.call(
                "tool-1",
                "Bash",
                {"command": "npm start", "background": True},
                event_id="call-1",
                with_refs=True,
            ),
            EV.response(
                "tool-1",
                "Bash",
                {
                    "kind": "shell_run",
                    "ref": "maka://runtime/background-tasks/run-1",
                    "status": "running",
                },
                event_id="result-1",
                is_error=False,
                with_refs=True,
            ),
        ],
        backgroundOperationsSettled=False,
    )
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("background_operation_pending",)


def test_item19_historical_tool_missing_from_catalog() -> None:
    plan = plan_of(
        [
            EV.user("fetch the page", event_id="user-1"),
            EV.call(
                "tool-1",
                "Fetch",
                {"url": "https://example.test"},
                event_id="call-1",
                with_refs=True,
            ),
            EV.response(
                "tool-1",
                "Fetch",
                {"status": 200},
                event_id="result-1",
                is_error=False,
                with_refs=True,
            ),
        ]
    )
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("tool_catalog_mismatch",)
    assert plan.diagnostics[0].detail == {"unavailableToolNames": ["Fetch"]}


def test_tool_catalog_covers_ancestors_sorted_and_deduplicated() -> None:
    ancestor = [
        EV.user("run it", event_id="root-user"),
        EV.call("root-tool-1", "Zeta", event_id="root-call-1", with_refs=True),
        EV.response("root-tool-1", "Zeta", "ok", event_id="root-result-1", with_refs=True),
        EV.call("root-tool-2", "Alpha", event_id="root-call-2", with_refs=True),
        EV.response("root-tool-2", "Alpha", "ok", event_id="root-result-2", with_refs=True),
    ]
    source = [
        on_child(EV.user("run it", event_id="child-user")),
        on_child(EV.call("child-tool", "Zeta", event_id="child-call", with_refs=True)),
        on_child(EV.response("child-tool", "Zeta", "ok", event_id="child-result", with_refs=True)),
    ]
    plan = build_continuation_plan(source, facts(), ancestors=[ancestor])
    assert plan.rejection_reasons == ("tool_catalog_mismatch",)
    assert plan.diagnostics[0].detail == {"unavailableToolNames": ["Alpha", "Zeta"]}


def test_item20_missing_external_facts() -> None:
    events = [EV.user("continue the task", event_id="user-1")]
    assert plan_of(events, ledgerReadable=False).rejection_reasons == ("runtime_ledger_unreadable",)
    assert plan_of(events, terminalRepairSucceeded=False).rejection_reasons == (
        "terminal_repair_failed",
    )


def test_item21_empty_mixed_and_reused_identity() -> None:
    empty = plan_of([])
    assert empty.rejection_reasons == ("runtime_ledger_empty",)
    assert codes(empty) == ["runtime_ledger_empty"]  # head/tail gates skipped
    assert empty.continuation is None

    mixed = plan_of(
        [
            EV.user("continue", event_id="user-1"),
            EV.event(
                event_id="other-run", runId="run-other", content={"kind": "text", "text": "other"}
            ),
        ]
    )
    assert mixed.rejection_reasons == ("dangling_tool_state", "runtime_identity_mismatch")
    assert diagnostic(mixed, "runtime_identity_mismatch").event_id == "other-run"
    assert "provider_resume_boundary_unsupported" not in codes(mixed)  # (o)/(p) skipped

    reused = plan_of(
        [EV.user("continue", event_id="user-1")],
        continuationIdentity={"invocationId": "invocation-1", "runId": "run-1", "turnId": "turn-1"},
    )
    assert reused.rejection_reasons == ("continuation_identity_reused",)
    for partial_reuse in (
        {"invocationId": "invocation-1", "runId": "run-9", "turnId": "turn-9"},
        {"invocationId": "invocation-9", "runId": "run-1", "turnId": "turn-9"},
        {"invocationId": "invocation-9", "runId": "run-9", "turnId": "turn-1"},
    ):
        assert plan_of(
            [EV.user(text="run it")], continuationIdentity=partial_reuse
        ).rejection_reasons == ("continuation_identity_reused",)


def test_item22_history_ending_with_model_text() -> None:
    plan = plan_of(
        [
            EV.user("write a summary", event_id="user-1"),
            EV.text("partial but committed answer", event_id="assistant-1"),
        ]
    )
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("provider_resume_boundary_unsupported",)
    tail = diagnostic(plan, "provider_resume_boundary_unsupported")
    assert (tail.event_id, tail.detail) == ("assistant-1", {"lastRole": "model"})


def test_item23_history_not_starting_with_user() -> None:
    plan = plan_of(
        [
            EV.state_delta_continuation_start(event_id="continuation-start"),
            EV.call("tool-1", "Bash", {"command": "npm test"}, event_id="call-1", with_refs=True),
            EV.response(
                "tool-1",
                "Bash",
                {"exitCode": 0},
                event_id="result-1",
                is_error=False,
                with_refs=True,
            ),
        ]
    )
    assert plan.disposition == "park"
    assert plan.rejection_reasons == ("provider_resume_head_unsupported",)
    head = plan.diagnostics[0]
    assert head.code == "provider_resume_head_unsupported"
    assert (head.event_id, head.detail) == ("call-1", {"firstRole": "model"})


def test_history_without_model_visible_content() -> None:
    plan = plan_of(
        [
            EV.event(event_id="start", actions={"stateDelta": {"x": 1}}),
            EV.terminal(status="failed", error_code=None),
        ]
    )
    assert plan.rejection_reasons == (
        "provider_resume_head_unsupported",
        "provider_resume_boundary_unsupported",
    )
    assert [(d.event_id, d.detail) for d in plan.diagnostics] == [
        (None, {"firstRole": None}),
        (None, {"lastRole": None}),
    ]


def test_empty_model_text_does_not_break_head_or_tail() -> None:
    closer = EV.event(
        event_id="closer", role="model", author="agent", content={"kind": "text", "text": ""}
    )
    assert plan_of(
        [closer, EV.user(text="run it"), closer.model_copy(update={"id": "closer-2"})]
    ).disposition == ("continue")


def test_item24_checkpoint_gates() -> None:
    events = [EV.user("continue", event_id="user-1")]
    missing_ref = plan_of(
        events, workspaceCheckpoint={"restored": True, "runtimeEventHighWater": 1}
    )
    assert missing_ref.rejection_reasons == ("workspace_ref_missing",)
    assert diagnostic(missing_ref, "workspace_ref_missing").detail is None
    empty_ref = plan_of(
        events, workspaceCheckpoint={"ref": "", "restored": True, "runtimeEventHighWater": 1}
    )
    assert empty_ref.rejection_reasons == ("workspace_ref_missing",)

    restore_failed = plan_of(
        events,
        workspaceCheckpoint={"ref": "checkpoint-1", "restored": False, "runtimeEventHighWater": 1},
    )
    assert restore_failed.rejection_reasons == ("checkpoint_restore_failed",)
    assert diagnostic(restore_failed, "checkpoint_restore_failed").detail == {
        "workspaceRef": "checkpoint-1"
    }

    offset = plan_of(
        events,
        workspaceCheckpoint={"ref": "checkpoint-1", "restored": True, "runtimeEventHighWater": 2},
    )
    assert offset.rejection_reasons == ("runtime_offset_mismatch",)
    assert diagnostic(offset, "runtime_offset_mismatch").detail == {
        "expectedRuntimeEventHighWater": 2,
        "actualRuntimeEventHighWater": 1,
    }

    restored = plan_of(
        events,
        workspaceCheckpoint={"ref": "checkpoint-1", "restored": True, "runtimeEventHighWater": 1},
    )
    assert restored.continuation is not None
    assert restored.continuation.safety_snapshot.model_dump(by_alias=True)[
        "workspaceCheckpoint"
    ] == {
        "ref": "checkpoint-1",
        "runtimeEventHighWater": 1,
    }


def test_checkpoint_high_water_takes_precedence_over_expected() -> None:
    events = [EV.user(text="run it")]
    assert plan_of(events, expectedRuntimeEventHighWater=5).rejection_reasons == (
        "runtime_offset_mismatch",
    )
    both = plan_of(
        events,
        expectedRuntimeEventHighWater=5,
        workspaceCheckpoint={"ref": "c", "restored": True, "runtimeEventHighWater": 1},
    )
    assert both.disposition == "continue"


def test_item25_partial_excluded_from_context_but_counted_in_high_water() -> None:
    partial = EV.event(
        event_id="partial-1",
        partial=True,
        role="model",
        author="agent",
        content={"kind": "text", "text": "s"},
    )
    plan = plan_of([EV.user("continue", event_id="user-1"), partial])
    assert plan.disposition == "continue"
    assert plan.continuation is not None
    assert plan.continuation.source_runtime_event_high_water == 2
    assert event_ids(plan.continuation.runtime_context) == ["user-1"]


# --- gate (h): terminal boundary consistency --------------------------------------------------


def test_header_terminal_boundary_consistent_passes() -> None:
    events = [EV.user(text="run it"), EV.terminal(status="failed", error_code=None)]
    assert plan_of(events, sourceHeader=header()).disposition == "continue"
    assert terminal_boundary_consistent(header(), events)


@pytest.mark.parametrize(
    ("events", "status", "strict_ok", "status_only_ok"),
    [
        # runtime-continuation.test.ts 7: header still running
        (
            [EV.user(text="run it"), EV.terminal(status="failed", error_code=None)],
            "running",
            False,
            False,
        ),
        # 8: header completed vs failed terminal
        (
            [EV.user(text="run it"), EV.terminal(status="failed", error_code=None)],
            "completed",
            False,
            False,
        ),
        # 9: output committed after the terminal
        (
            [
                EV.user(text="run it"),
                EV.terminal(status="failed", error_code=None),
                EV.text("late", event_id="late"),
            ],
            "failed",
            False,
            True,
        ),
        # two terminal facts
        (
            [
                EV.user(text="run it"),
                EV.terminal("failed", event_id="t1", error_code=None),
                EV.terminal("failed", event_id="t2", error_code=None),
            ],
            "failed",
            False,
            False,
        ),
        # no terminal at all
        ([EV.user(text="run it")], "failed", False, False),
        # failure class of the fact differs from the header's
        (
            [
                EV.user(text="run it"),
                EV.terminal(status="failed", error_code=None).to_wire()
                | {"actions": {"endInvocation": True, "stateDelta": {"failureClass": "other"}}},
            ],
            "failed",
            False,
            True,
        ),
        # terminal of another run than the header names
        (
            [
                EV.user(text="run it"),
                EV.terminal(status="failed", error_code=None).to_wire() | {"turnId": "turn-x"},
            ],
            "failed",
            False,
            True,
        ),
        # endInvocation without a terminal status: no derivable fact
        (
            [EV.user(text="run it"), EV.event(event_id="end", actions={"endInvocation": True})],
            "failed",
            False,
            False,
        ),
    ],
)
def test_terminal_boundary_policies(
    events: list[Any], status: str, strict_ok: bool, status_only_ok: bool
) -> None:
    h = header(status)
    assert terminal_boundary_consistent(h, events) is strict_ok
    assert terminal_boundary_consistent(h, events, "status_only") is status_only_ok
    strict = build_continuation_plan(events, facts(sourceHeader=h))
    assert ("terminal_repair_failed" in strict.rejection_reasons) is not strict_ok
    relaxed = build_continuation_plan(events, facts(sourceHeader=h, terminalPolicy="status_only"))
    assert ("terminal_repair_failed" in relaxed.rejection_reasons) is not status_only_ok


def test_cancelled_terminal_needs_matching_abort_source() -> None:
    aborted = EV.terminal("aborted", event_id="t").to_wire() | {
        "actions": {"endInvocation": True, "stateDelta": {"abortSource": "user"}}
    }
    events: list[Any] = [EV.user(text="run it"), aborted]
    ok = header("cancelled", abortSource="user")
    other = header("cancelled", abortSource="timeout")
    assert terminal_boundary_consistent(ok, events)
    assert not terminal_boundary_consistent(other, events)
    assert terminal_boundary_consistent(other, events, "status_only")


def test_terminal_repair_flag_fails_even_with_consistent_header() -> None:
    plan = plan_of(
        [EV.user(text="run it"), EV.terminal(status="failed", error_code=None)],
        sourceHeader=header(),
        terminalRepairSucceeded=False,
    )
    assert plan.rejection_reasons == ("terminal_repair_failed",)
    assert codes(plan) == ["terminal_repair_failed"]


# --- gate order, de-duplication, lineage path -------------------------------------------------


def test_all_gates_accumulate_in_order() -> None:
    events = [
        EV.text("hello", event_id="assistant-0"),
        EV.call("tool-1", "Fetch", {"url": "x"}, event_id="call-1", with_refs=True),
        EV.response("tool-1", "Fetch", {"status": 200}, event_id="result-1", with_refs=True),
        EV.call("tool-2", "Bash", event_id="call-2", with_refs=True),
        permission_request("permission-1", "tool-2"),
        EV.text("waiting", event_id="assistant-1"),
    ]
    plan = plan_of(
        events,
        continuationIdentity={"invocationId": "invocation-9", "runId": "run-1", "turnId": "turn-9"},
        ledgerReadable=False,
        terminalRepairSucceeded=False,
        currentCwd="/elsewhere",
        currentWorkspaceIdentity="workspace-2",
        backgroundOperationsSettled=False,
        workspaceCheckpoint={"restored": True, "runtimeEventHighWater": 99},
    )
    assert plan.disposition == "park"
    assert plan.continuation is None
    assert plan.rejection_reasons == (
        "runtime_offset_mismatch",
        "dangling_tool_state",
        "pending_permission",
        "continuation_identity_reused",
        "runtime_ledger_unreadable",
        "terminal_repair_failed",
        "workspace_cwd_mismatch",
        "workspace_identity_mismatch",
        "background_operation_pending",
        "workspace_ref_missing",
        "tool_catalog_mismatch",
        "provider_resume_head_unsupported",
        "provider_resume_boundary_unsupported",
    )
    assert codes(plan) == [
        "runtime_offset_mismatch",
        "pending_tool_result",
        "pending_permission",
        "continuation_identity_reused",
        "runtime_ledger_unreadable",
        "terminal_repair_failed",
        "workspace_cwd_mismatch",
        "workspace_identity_mismatch",
        "background_operation_pending",
        "workspace_ref_missing",
        "tool_catalog_mismatch",
        "provider_resume_head_unsupported",
        "provider_resume_boundary_unsupported",
    ]
    assert diagnostic(plan, "provider_resume_head_unsupported").detail == {"firstRole": "model"}
    assert diagnostic(plan, "tool_catalog_mismatch").detail == {"unavailableToolNames": ["Fetch"]}


def test_dangling_reason_is_deduplicated() -> None:
    plan = plan_of(
        [
            EV.user(text="run it"),
            EV.call("tool-1", event_id="call-1", with_refs=True),
            EV.call("tool-2", event_id="call-2", with_refs=True),
        ]
    )
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert codes(plan).count("pending_tool_result") == 2


def test_composite_blocked_replay_parks_with_mapped_single_reason() -> None:
    unsettled = [EV.user(text="run it"), EV.call("tool-1", event_id="call-1", with_refs=True)]
    plan = build_continuation_plan(unsettled, facts(), replay=build_composite_replay([unsettled]))
    assert plan.rejection_reasons == ("runtime_ledger_unreadable",)
    (diagnostic,) = plan.diagnostics
    assert diagnostic.detail == {
        "segmentIndex": 0,
        "replayReason": "tool_recovery_unsettled",
        "operationId": None,
        "toolName": "Bash",
    }
    assert (diagnostic.event_id, diagnostic.tool_call_id, diagnostic.tool_name) == (
        "call-1",
        "tool-1",
        "Bash",
    )

    gap = [
        EV.user(text="run it", marker=T1),
        EV.call("tool-1", "Read", {}, event_id="call-1"),
        EV.text("x", event_id="a"),
    ]
    plan = build_continuation_plan(gap, facts(), replay=build_composite_replay([gap]))
    assert plan.rejection_reasons == ("provider_replay_non_suffix_gap",)
    assert plan.diagnostics[0].event_id == "call-1"


def test_composite_offset_gate_uses_last_event_seq() -> None:
    events = [EV.user(text="run it"), EV.terminal(status="failed", error_code=None)]
    plan = build_continuation_plan(
        events, facts(expectedRuntimeEventHighWater=3), replay=build_composite_replay([events])
    )
    assert plan.rejection_reasons == ("runtime_offset_mismatch",)
    assert plan.diagnostics[0].detail == {"expected": 3, "actual": 2}


def test_lineage_path_head_and_tail_read_provider_items() -> None:
    start_only = [
        EV.event(event_id="start", actions={"stateDelta": {"x": 1}}),
        EV.terminal(status="failed", error_code=None),
    ]
    plan = build_continuation_plan(start_only, facts(), replay=build_composite_replay([start_only]))
    assert plan.rejection_reasons == (
        "provider_resume_head_unsupported",
        "provider_resume_boundary_unsupported",
    )
    assert [d.detail for d in plan.diagnostics] == [{"firstRole": None}, {"lastRole": None}]


def test_composite_and_ancestors_are_exclusive() -> None:
    events = [EV.user(text="run it")]
    with pytest.raises(ValueError, match="ancestors"):
        build_continuation_plan(
            events,
            facts(),
            ancestors=[[EV.user("run it", event_id="x")]],
            replay=build_composite_replay([events]),
        )


# --- facts, dump shape, determinism -------------------------------------------------------------


def test_facts_accept_camel_and_snake_case() -> None:
    camel = facts(workspaceCheckpoint={"ref": "c", "restored": True, "runtimeEventHighWater": 1})
    snake = ContinuationInputs.model_validate(
        {
            "source_cwd": "/workspace/repo",
            "current_cwd": "/workspace/repo",
            "source_workspace_identity": "workspace-1",
            "current_workspace_identity": "workspace-1",
            "background_operations_settled": True,
            "available_tool_names": ["Bash", "Write"],
            "continuation_identity": {
                "invocation_id": "invocation-3",
                "run_id": "run-3",
                "turn_id": "turn-3",
            },
            "workspace_checkpoint": {"ref": "c", "restored": True, "runtime_event_high_water": 1},
        }
    )
    assert camel == snake
    assert snake.ledger_readable
    assert snake.terminal_repair_succeeded
    assert snake.cwd_policy == "strict"
    assert snake.terminal_policy == "strict"
    assert snake.expected_runtime_event_high_water is None
    assert snake.source_header is None
    with pytest.raises(ValidationError):
        facts(unknownFact=True)
    with pytest.raises(ValidationError):
        facts(cwdPolicy="lenient")
    with pytest.raises(ValidationError):
        facts(backgroundOperationsSettled="yes")
    with pytest.raises(ValidationError):
        snake.ledger_readable = False  # type: ignore[misc]


def test_park_dump_keys() -> None:
    dumped = plan_of([]).model_dump(by_alias=True)
    assert list(dumped) == ["disposition", "rejectionReasons", "diagnostics", "continuation"]
    assert dumped["continuation"] is None


def test_continue_dump_keys() -> None:
    dumped = plan_of([EV.user(text="run it")]).model_dump(by_alias=True)
    assert list(dumped["continuation"]) == [
        "invocationId",
        "runId",
        "turnId",
        "sourceInvocationId",
        "sourceRunId",
        "sourceTurnId",
        "sourceRuntimeEventHighWater",
        "runtimeContext",
        "safetySnapshot",
    ]
    assert list(dumped["continuation"]["safetySnapshot"]) == [
        "workspaceIdentity",
        "backgroundOperationsSettled",
        "availableToolNames",
        "workspaceCheckpoint",
    ]
    assert dumped["continuation"]["runtimeContext"] == [EV.user(text="run it").to_wire()]


def test_snapshot_tool_names_are_deduplicated_and_sorted() -> None:
    plan = plan_of([EV.user(text="run it")], availableToolNames=["Write", "Bash", "Write", "Read"])
    assert plan.continuation is not None
    assert plan.continuation.safety_snapshot.available_tool_names == ("Bash", "Read", "Write")


def test_deterministic_and_does_not_mutate_inputs() -> None:
    ancestor = [
        EV.user("run it", event_id="root-user").to_wire(),
        EV.terminal("failed", event_id="root-terminal", error_code=None).to_wire(),
    ]
    events = [
        on_child(EV.user("run it", event_id="child-user")),
        on_child(EV.call("tool-1", "Bash", event_id="call-1", with_refs=True)),
        on_child(EV.response("tool-1", "Bash", "ok", event_id="result-1", with_refs=True)),
    ]
    f = facts(availableToolNames=["Bash", "Bash"], cwdPolicy="relocatable", currentCwd="/moved")
    before = copy.deepcopy((ancestor, events, f.model_dump()))
    first = build_continuation_plan(events, f, ancestors=[ancestor])
    second = build_continuation_plan(events, f, ancestors=[ancestor])
    assert first == second
    assert first.model_dump(by_alias=True) == second.model_dump(by_alias=True)
    assert (ancestor, events, f.model_dump()) == before
    assert first.disposition == "continue"
