"""Phase 0 failpoint catalog and the required outcome of every committed prefix
(docs/reference/phase0.md#failpoints)."""

from __future__ import annotations

import pytest

from maka_es.resume.failpoint_catalog import (
    FAILPOINT_PREFIXES,
    RUNTIME_RESUME_FAILPOINTS,
    Failpoint,
    committed_event_count,
    harness_ledger,
)
from maka_es.resume.plan import build_resume_plan
from maka_es.testing.builders import event_ids

EXPECTED_CATALOG = [
    ("P0", "before tool preparation (T1)", "before_function_call"),
    ("P1", "function_call committed before prepared journal", "after_function_call"),
    ("P2", "prepared journal committed before implementation", "after_function_call"),
    ("P3", "tool implementation in progress", "after_function_call"),
    ("P4", "side effect completed before outcome transaction (T2)", "after_function_call"),
    ("P5", "function_response committed before outcome journal", "after_function_response"),
    ("P6", "outcome transaction committed before model result delivery", "after_function_response"),
    ("P7", "tool result delivered before the next provider step", "after_function_response"),
    ("P8", "terminal RuntimeEvent commit", "after_function_response"),
    ("P9", "terminal run header commit", "after_terminal_event"),
    ("P10", "recovery decision commit", "after_terminal_event"),
    ("P11", "continuation run creation", "after_terminal_event"),
]


def test_catalog_is_exact_and_ordered() -> None:
    assert [(f.id, f.boundary, f.committed_prefix) for f in RUNTIME_RESUME_FAILPOINTS] == (
        EXPECTED_CATALOG
    )
    assert [f.id for f in RUNTIME_RESUME_FAILPOINTS] == [f"P{i}" for i in range(12)]


def test_prefixes_in_first_appearance_order() -> None:
    assert FAILPOINT_PREFIXES == (
        "before_function_call",
        "after_function_call",
        "after_function_response",
        "after_terminal_event",
    )
    assert [committed_event_count(p) for p in FAILPOINT_PREFIXES] == [1, 2, 3, 4]


def test_failpoint_dump_keys_and_immutability() -> None:
    failpoint = RUNTIME_RESUME_FAILPOINTS[0]
    assert failpoint.model_dump(mode="json", by_alias=True) == {
        "id": "P0",
        "boundary": "before tool preparation (T1)",
        "committedPrefix": "before_function_call",
    }
    with pytest.raises(ValueError, match="frozen"):
        failpoint.id = "P99"  # type: ignore[misc]
    assert isinstance(failpoint, Failpoint)


def test_unknown_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown committed prefix"):
        harness_ledger("after_everything")


def test_harness_ledger_is_deterministic_and_has_no_marker() -> None:
    full = harness_ledger("after_terminal_event", "session-P9", "run-P9")
    assert full == harness_ledger("after_terminal_event", "session-P9", "run-P9")
    assert event_ids(full) == ["user", "call", "response", "terminal"]
    assert [e.ts for e in full] == [1, 2, 3, 4]
    assert all(e.protocol_marker is None for e in full)
    assert {e.identity for e in full} == {
        ("session-P9", "invocation-run-P9", "run-P9", "turn-run-P9")
    }
    assert full[-1].is_terminal
    assert full[-1].status == "failed"
    call = full[1].function_call
    assert call is not None
    assert (call.id, call.name) == ("tool-1", "Bash")


@pytest.mark.parametrize("failpoint", RUNTIME_RESUME_FAILPOINTS, ids=lambda f: f.id)
def test_required_outcome_for_every_failpoint(failpoint: Failpoint) -> None:
    events = harness_ledger(
        failpoint.committed_prefix, f"session-{failpoint.id}", f"run-{failpoint.id}"
    )
    snapshot = [e.to_wire() for e in events]
    plan = build_resume_plan(events)
    assert plan == build_resume_plan(events)  # deterministic
    assert [e.to_wire() for e in events] == snapshot  # the ledger is not mutated
    assert plan.source_runtime_event_high_water == len(events)

    prefix = failpoint.committed_prefix
    if prefix == "before_function_call":
        assert plan.disposition == "safe_replay"
        assert plan.operations == ()
        assert plan.rejection_reasons == ()
        assert event_ids(plan.replay_runtime_events) == ["user"]
    elif prefix == "after_function_call":
        assert plan.disposition == "blocked"
        assert [op.status for op in plan.operations] == ["indeterminate"]
        assert plan.requires_verification is True
        assert plan.directive is not None
        assert plan.rejection_reasons == ("dangling_tool_state",)
        assert event_ids(plan.replay_runtime_events) == ["user"]
    else:
        assert plan.disposition == "safe_replay"
        assert [op.status for op in plan.operations] == ["succeeded"]
        assert plan.rejection_reasons == ()
        assert plan.requires_verification is False
        assert plan.directive is None
        expected = ["user", "call", "response"]
        if prefix == "after_terminal_event":
            expected.append("terminal")
        assert event_ids(plan.replay_runtime_events) == expected
    assert event_ids(plan.runtime_events) == event_ids(events)


@pytest.mark.parametrize("prefix", ["after_function_response", "after_terminal_event"])
def test_failed_variant_when_result_is_error(prefix: str) -> None:
    plan = build_resume_plan(harness_ledger(prefix, response_is_error=True))
    assert plan.disposition == "safe_replay"
    assert [(op.status, op.response_is_error) for op in plan.operations] == [("failed", True)]
    assert plan.rejection_reasons == ()


def test_terminal_prefix_keeps_the_previous_tool_decision() -> None:
    before = build_resume_plan(harness_ledger("after_function_response"))
    after = build_resume_plan(harness_ledger("after_terminal_event"))
    assert after.operations == before.operations
