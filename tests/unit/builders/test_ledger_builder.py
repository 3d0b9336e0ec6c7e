"""LedgerBuilder, run_header and Spine: ledgers that read like committed ones.

The builder numbers the events a host names (``<prefix><n>``, ``ts = base_ts + n``) and gives
the facts the store authors the store's own names, so the resolver reads a built ledger exactly
as it reads a committed one (docs/reference/tool-journal.md#resolver).
"""

from __future__ import annotations

import pytest

from maka_es.testing.builders import Events, LedgerBuilder, Spine, event_ids, run_header
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.codec import canonical_args_hash, operation_id_for
from maka_es.wire.events import RuntimeEvent, classify_lane
from maka_es.wire.facts import dispatch_fact as build_dispatch_event
from maka_es.wire.run_header import RunHeader

WRITE = {"path": "notes.txt", "content": "after"}


def t1_ledger(recovery_mode: str = "reconcile") -> LedgerBuilder:
    ledger = LedgerBuilder()
    ledger.user(marker=True)
    ledger.t1_call("c1", "Write", WRITE, recovery_mode=recovery_mode)
    return ledger


def decision_of(ledger: LedgerBuilder) -> tuple[str, str, str | None]:
    (decision,) = resolve_tool_operations(ledger.decoded()).decisions
    return decision.status, decision.reason, decision.settlement_origin


def test_events_are_numbered_and_timed_in_order() -> None:
    ledger = LedgerBuilder(prefix="x-", base_ts=100)
    ledger.user()
    ledger.text()
    ledger.thinking()
    ledger.terminal("failed")
    assert event_ids(ledger.events) == ["x-1", "x-2", "x-3", "x-4"]
    assert [event["ts"] for event in ledger.events] == [101, 102, 103, 104]
    assert [classify_lane(e).lane for e in ledger.decoded()] == ["ordinary"] * 4
    assert ledger.decoded()[-1].is_terminal


def test_t1_call_is_what_the_store_commits() -> None:
    """The call is bound to its operation; the dispatch is the store's own fact for it
    (id ``<op>_dispatch``, same ts, args hash recomputed from the call)."""
    ledger = t1_ledger()
    call, dispatch = ledger.decoded()[1:]
    op = operation_id_for("i1", "c1")
    assert call.refs is not None
    assert (call.id, call.refs.operation_id, call.refs.tool_call_id) == ("e2", op, "c1")
    assert dispatch.to_wire() == build_dispatch_event(call, op, "reconcile").to_wire()
    assert dispatch.actions is not None
    assert dispatch.actions.tool_dispatch is not None
    assert dispatch.actions.tool_dispatch.canonical_args_hash == canonical_args_hash("Write", WRITE)
    assert decision_of(ledger) == ("indeterminate", "dispatch_without_response", None)


def test_bound_response_completes_the_operation() -> None:
    ledger = t1_ledger()
    ledger.bound_response("c1", "Write", "ok")
    assert ledger.events[-1]["id"] == Spine().fact_id("c1", "response")
    assert decision_of(ledger) == ("completed", "matching_response", "normal_t2")


def test_completed_recovery_bundle_settles_the_operation() -> None:
    ledger = t1_ledger()
    ledger.reconcile("c1")
    ledger.bound_response("c1", "Write", "ok")
    ledger.completed_decision("c1")
    payload = ledger.events[-1]["actions"]["toolRecovery"]["payload"]
    spine = Spine()
    assert payload["evidenceEventIds"] == [
        "e2",
        spine.fact_id("c1", "dispatch"),
        spine.fact_id("c1", "reconcile"),
        spine.fact_id("c1", "response"),
    ]
    assert decision_of(ledger) == ("completed", "recovery_bundle_completed", "recovery_bundle")


@pytest.mark.parametrize("observation", ["matches_prior_state", "diverged", "unreadable"])
def test_parked_recovery_bundle_parks_the_operation(observation: str) -> None:
    ledger = t1_ledger()
    ledger.reconcile("c1", observation)
    ledger.parked_decision("c1", f"reconcile_{observation}")
    assert decision_of(ledger) == ("parked", f"reconcile_{observation}", "recovery_bundle")


def test_pre_t1_refusal_is_a_synthetic_completion() -> None:
    ledger = LedgerBuilder()
    ledger.user(marker=True)
    ledger.call("c1")
    ledger.refusal("c1")
    assert decision_of(ledger) == ("completed", "matching_response", "pre_t1_synthetic")


def test_permission_and_continuation_facts_append_in_order() -> None:
    target = Spine("s1", "i2", "r2", "t2")
    ledger = LedgerBuilder(target, prefix="r2-")
    ledger.continuation_start(Spine(), 3)
    request = ledger.permission_request(tool_name="Write")
    ledger.permission_decision(request["id"], "deny")
    start, asked, answered = ledger.decoded()
    assert start.id == "r2-start"
    assert start.protocol_marker is not None
    assert asked.actions is not None
    assert asked.actions.permission_request is not None
    assert answered.actions is not None
    assert answered.actions.permission_decision is not None
    assert answered.actions.permission_decision.request_id == "r2-2"


def test_state_delta_start_carries_its_source_refs() -> None:
    ledger = LedgerBuilder(Spine("s1", "i2", "r2", "t2"))
    (start,) = [ledger.state_delta_continuation_start(source=Spine(), high_water=4, ts=5000)]
    assert (start["id"], start["ts"]) == ("r2-start", 5000)
    assert start["refs"] == {
        "sourceInvocationId": "i1",
        "sourceRunId": "r1",
        "sourceTurnId": "t1",
        "sourceRuntimeEventHighWater": 4,
    }
    assert RuntimeEvent.model_validate(start).actions is not None


def test_decoded_models_are_the_wire_events() -> None:
    ledger = t1_ledger()
    assert [event.to_wire() for event in ledger.decoded()] == ledger.events
    assert event_ids(ledger.decoded()) == event_ids(ledger.events)


def test_run_header_validates_with_defaults_and_overrides() -> None:
    header = RunHeader.model_validate(run_header())
    assert (header.run_id, header.session_id, header.status) == ("r1", "s1", "running")
    spine = Spine("s9", "i9", "r9", "t9")
    failed = RunHeader.model_validate(
        run_header(spine, status="failed", failureClass="provider_error", cwd="/repo")
    )
    assert (failed.run_id, failed.invocation_id, failed.turn_id) == ("r9", "i9", "t9")
    assert (failed.status, failed.failure_class, failed.cwd) == (
        "failed",
        "provider_error",
        "/repo",
    )


def test_run_header_agrees_with_the_events_of_its_spine() -> None:
    spine = Spine("s9", "i9", "r9", "t9")
    header = RunHeader.model_validate(run_header(spine))
    event = Events.decoded(spine).user()
    assert (event.session_id, event.invocation_id, event.run_id, event.turn_id) == (
        header.session_id,
        header.invocation_id,
        header.run_id,
        header.turn_id,
    )


def test_spine_names_follow_the_store() -> None:
    spine = Spine("s", "inv-7", "r", "t")
    op = operation_id_for("inv-7", "call_a")
    assert spine.operation_id("call_a") == op
    assert [spine.fact_id("call_a", kind) for kind in ("dispatch", "response")] == [
        f"{op}_dispatch",
        f"{op}_response",
    ]
    assert spine.identity == {
        "sessionId": "s",
        "invocationId": "inv-7",
        "runId": "r",
        "turnId": "t",
    }
