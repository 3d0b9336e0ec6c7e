"""A plan's operation args are the plan's own: no caller can change an event or another plan
through them (ADR 0034: the plan no longer deep-copies; validation copies JSON containers)."""

from __future__ import annotations

import copy
from typing import Any

from maka_es import RuntimeEvent, build_resume_plan
from maka_es.testing.builders import LedgerBuilder, Spine

_ARGS = {"path": "a.txt", "edits": [{"line": 1, "text": "x"}, [2, 3]], "opts": {"deep": {"k": 1}}}


def _events() -> list[RuntimeEvent]:
    b = LedgerBuilder(spine=Spine(run_id="run-alias"))
    b.user("go", marker=True)
    b.t1_call("c1", "Edit", copy.deepcopy(_ARGS))
    b.bound_response("c1", "Edit", {"kind": "text", "text": "ok"})
    b.t1_call("c2", "Edit", copy.deepcopy(_ARGS))  # indeterminate: no response
    return [RuntimeEvent.model_validate(event) for event in b.events]


def test_mutating_a_plans_args_changes_neither_the_events_nor_another_plan() -> None:
    events = _events()
    plan = build_resume_plan(events)
    before = plan.model_dump_json(by_alias=True)
    assert [op.args for op in plan.operations] == [_ARGS, _ARGS]
    for operation in plan.operations:
        args: Any = operation.args
        assert isinstance(args, dict)
        args["edits"][0]["text"] = "changed"
        args["edits"][1].append(4)
        args["opts"]["deep"]["k"] = 2
        args["new"] = True
    calls = [e.function_call for e in events if e.function_call is not None]
    assert [call.args for call in calls] == [_ARGS, _ARGS]
    again = build_resume_plan(events)
    assert again.model_dump_json(by_alias=True) == before
    assert [op.args for op in again.operations] == [_ARGS, _ARGS]


def test_mutating_an_events_args_after_planning_leaves_the_plan_alone() -> None:
    events = _events()
    plan = build_resume_plan(events)
    for event in events:
        call = event.function_call
        if call is not None:
            args: Any = call.args
            assert isinstance(args, dict)
            args["edits"][0]["line"] = 99
            args["opts"]["deep"].clear()
    assert [op.args for op in plan.operations] == [_ARGS, _ARGS]
