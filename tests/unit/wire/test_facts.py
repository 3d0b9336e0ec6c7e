"""Typed fact constructors (``maka_es.wire.facts``): each returns a validated RuntimeEvent in
the lane its readers expect, deterministic ids and refs, and ledgers built from them read back
exactly as docs/reference/tool-journal.md says."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.continuation.claims import (
    ContinuationTarget,
    SourceBoundary,
    continuation_start_event,
)
from maka_es.errors import InvalidRuntimeEventError
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.strategies import json_values
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.codec import canonical_args_hash, canonical_json, operation_id_for
from maka_es.wire.events import RuntimeEvent, classify_lane
from maka_es.wire.facts import (
    PARKED_REASON_FOR_OBSERVATION,
    Observation,
    bound_response,
    completed_decision_fact,
    continuation_start_fact,
    dispatch_fact,
    parked_decision_fact,
    pre_t1_refusal_response,
    reconcile_result_fact,
    terminal_fact,
)
from maka_es.wire.run_header import RunHeader, header_matches_terminal, terminal_event

DIGEST = "sha256:" + "ab" * 32
WRITE_ARGS = {"path": "notes.txt", "content": "after"}


def _ledger() -> LedgerBuilder:
    builder = LedgerBuilder()
    builder.user(marker=True)
    return builder


def _call(builder: LedgerBuilder, **kw: Any) -> RuntimeEvent:
    wire = builder.call("call-1", "Write", WRITE_ARGS, **kw)
    return RuntimeEvent.model_validate(wire)


def _op(call: RuntimeEvent) -> str:
    assert call.function_call is not None
    return operation_id_for(call.invocation_id, call.function_call.id)


def assert_valid_in_lane(event: RuntimeEvent, lane: str) -> None:
    """The fact survives a wire round trip unchanged and classifies to ``lane`` cleanly."""
    assert RuntimeEvent.model_validate(event.to_wire()) == event
    classification = classify_lane(event)
    assert classification.lane == lane
    assert not classification.is_conflict, classification.conflict


def test_dispatch_fact_is_the_t1_fact_of_its_call() -> None:
    call = _call(_ledger(), origin="provider")
    op = _op(call)
    dispatch = dispatch_fact(call, op, "reconcile")
    assert_valid_in_lane(dispatch, "tool_dispatch")
    assert dispatch.id == f"{op}_dispatch"
    assert dispatch.identity == call.identity
    assert (dispatch.ts, dispatch.origin) == (call.ts, "provider")
    assert dispatch.refs is not None
    assert (dispatch.refs.operation_id, dispatch.refs.tool_call_id) == (op, "call-1")
    payload = dispatch.actions.tool_dispatch if dispatch.actions else None
    assert payload is not None
    assert payload.canonical_args_hash == canonical_args_hash("Write", WRITE_ARGS)
    assert (payload.operation_id, payload.provider_tool_call_id) == (op, "call-1")
    assert (payload.tool_name, payload.recovery_mode) == ("Write", "reconcile")
    # deterministic: a T1 retry rebuilds the byte-identical fact
    assert canonical_json(dispatch_fact(call, op, "reconcile")) == canonical_json(dispatch)


@given(args=json_values)
def test_dispatch_fact_hash_authenticates_any_strict_json_args(args: Any) -> None:
    builder = _ledger()
    call = RuntimeEvent.model_validate(builder.call("call-1", "Bash", args))
    dispatch = dispatch_fact(call, _op(call), "never_auto_retry")
    resolution = resolve_tool_operations([*builder.decoded(), dispatch])
    assert resolution.issues == ()
    assert [d.reason for d in resolution.decisions] == ["dispatch_without_response"]


def test_constructors_refuse_an_event_that_is_not_a_call() -> None:
    user = _ledger().decoded()[0]
    with pytest.raises(InvalidRuntimeEventError):
        dispatch_fact(user, "toolop_x", "reconcile")
    with pytest.raises(InvalidRuntimeEventError):
        bound_response(user, "toolop_x", ts=1, result="ok")


def test_bound_response_is_the_t2_fact_of_its_operation() -> None:
    builder = _ledger()
    call = _call(builder)
    op = _op(call)
    ok = bound_response(call, op, ts=2000, result={"kind": "text", "text": "ok"}, duration_ms=7)
    assert_valid_in_lane(ok, "function_response")
    assert ok.id == f"{op}_response"
    assert ok.identity == call.identity
    assert ok.ts == 2000
    assert ok.refs is not None
    assert (ok.refs.operation_id, ok.refs.tool_call_id) == (op, "call-1")
    assert "isError" not in ok.to_wire()["content"]
    assert ok.to_wire()["actions"] == {"stateDelta": {"durationMs": 7}}
    failed = bound_response(call, op, ts=2000, result="boom", is_error=True)
    assert failed.to_wire()["content"]["isError"] is True
    assert "actions" not in failed.to_wire()
    resolution = resolve_tool_operations(
        [*builder.decoded(), dispatch_fact(call, op, "never_auto_retry"), ok]
    )
    assert [(d.status, d.settlement_origin) for d in resolution.decisions] == [
        ("completed", "normal_t2")
    ]


def test_pre_t1_refusal_reads_as_a_synthetic_completion() -> None:
    builder = _ledger()
    call = _call(builder)
    refusal = pre_t1_refusal_response(call, ts=2000, result={"kind": "text", "text": "no"})
    assert_valid_in_lane(refusal, "function_response")
    assert refusal.id == f"{call.id}_refused"
    assert refusal.refs is None
    assert refusal.to_wire()["content"]["isError"] is True
    resolution = resolve_tool_operations([*builder.decoded(), refusal])
    assert resolution.issues == ()
    assert [(d.status, d.settlement_origin) for d in resolution.decisions] == [
        ("completed", "pre_t1_synthetic")
    ]


def _bundle_ledger(observation: Observation) -> tuple[list[RuntimeEvent], RuntimeEvent]:
    """A reconcile operation settled by a bundle built only from the constructors."""
    builder = _ledger()
    call = _call(builder)
    op = _op(call)
    dispatch = dispatch_fact(call, op, "reconcile")
    reconcile = reconcile_result_fact(
        call, op, ts=3000, observation=observation, observation_digest=DIGEST
    )
    evidence = [call.id, dispatch.id, reconcile.id]
    if observation == "matches_expected_state":
        outcome = bound_response(call, op, ts=3000, result="reconciled")
        decision = completed_decision_fact(
            call,
            op,
            ts=3000,
            outcome_event_id=outcome.id,
            evidence_event_ids=[*evidence, outcome.id],
        )
        facts = [reconcile, outcome, decision]
    else:
        reason = PARKED_REASON_FOR_OBSERVATION[observation]
        decision = parked_decision_fact(
            call, op, ts=3000, reason_code=reason, evidence_event_ids=evidence
        )
        facts = [reconcile, decision]
    return [*builder.decoded(), dispatch, *facts], decision


def test_recovery_facts_classify_to_their_lanes() -> None:
    ledger, decision = _bundle_ledger("matches_expected_state")
    assert_valid_in_lane(ledger[-3], "reconcile_result")
    assert_valid_in_lane(decision, "recovery_decision")
    op = _op(ledger[1])
    assert (ledger[-3].id, decision.id) == (f"{op}_reconcile", f"{op}_decision")
    for fact in (ledger[-3], decision):
        assert fact.refs is not None
        assert fact.refs.operation_id == op
        assert fact.identity == ledger[1].identity


@pytest.mark.parametrize(
    ("observation", "status", "reason"),
    [
        ("matches_expected_state", "completed", "recovery_bundle_completed"),
        ("matches_prior_state", "parked", "reconcile_matches_prior_state"),
        ("diverged", "parked", "reconcile_diverged"),
        ("unreadable", "parked", "reconcile_unreadable"),
    ],
)
def test_a_bundle_built_from_the_constructors_reads_back_valid(
    observation: Observation, status: str, reason: str
) -> None:
    ledger, _ = _bundle_ledger(observation)
    resolution = resolve_tool_operations(ledger)
    assert resolution.issues == ()
    assert [(d.status, d.reason, d.settlement_origin) for d in resolution.decisions] == [
        (status, reason, "recovery_bundle")
    ]


def test_parked_reason_mapping_covers_every_non_matching_observation() -> None:
    assert dict(PARKED_REASON_FOR_OBSERVATION) == {
        "matches_prior_state": "reconcile_matches_prior_state",
        "diverged": "reconcile_diverged",
        "unreadable": "reconcile_unreadable",
    }


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled", "aborted"])
def test_terminal_fact_is_terminal_and_backs_its_header(status: str) -> None:
    header = RunHeader.model_validate(run_header(Spine()))
    failure = "provider_error" if status == "failed" else None
    event = terminal_fact(
        header.spine, event_id="end", ts=5000, status=status, failure_class=failure
    )
    assert event.is_terminal
    assert classify_lane(event).lane == "ordinary"
    assert RuntimeEvent.model_validate(event.to_wire()) == event
    if failure is not None:
        assert event.to_wire()["content"]["code"] == failure
        assert event.to_wire()["actions"]["stateDelta"] == {"failureClass": failure}
    run_status = {"aborted": "cancelled"}.get(status, status)
    patch: dict[str, Any] = {"status": run_status, "updatedAt": 5000, "completedAt": 5000}
    if run_status == "failed":
        patch["failureClass"] = failure
    if run_status == "cancelled":
        patch["abortSource"] = "unknown"
    terminal_header = RunHeader.model_validate({**header.to_wire(), **patch})
    assert header_matches_terminal(terminal_header, event)
    assert terminal_event is terminal_fact  # one spelling, the old name kept for its callers


BOUNDARY = SourceBoundary(
    session_id="s1",
    invocation_id="i1",
    run_id="r1",
    turn_id="t1",
    high_water=6,
    prefix_digest="sha256:" + "11" * 32,
    manifest_digest="sha256:" + "22" * 32,
    provider_replay_digest="sha256:" + "33" * 32,
)
TARGET = ContinuationTarget(invocation_id="i2", run_id="r2", turn_id="t2")


@pytest.mark.parametrize("provenance", ["runtime_admission", "claim_repair"])
def test_continuation_start_fact_matches_the_claims_start_event(provenance: Any) -> None:
    """Byte-equal to what the continuation layer writes today, so it can switch over."""
    fact = continuation_start_fact(
        {"sessionId": "s1", "invocationId": "i2", "runId": "r2", "turnId": "t2"},
        event_id="r2-start",
        ts=6000,
        provenance=provenance,
        claim_id=BOUNDARY.claim_id,
        boundary_digest=BOUNDARY.manifest_digest,
        source_spine={"sessionId": "s1", "invocationId": "i1", "runId": "r1", "turnId": "t1"},
        source_high_water=BOUNDARY.high_water,
        source_prefix_digest=BOUNDARY.prefix_digest,
        provider_replay_digest=BOUNDARY.provider_replay_digest,
    )
    expected = continuation_start_event(
        BOUNDARY, TARGET, event_id="r2-start", ts=6000, provenance=provenance
    )
    assert canonical_json(fact) == canonical_json(expected)
    assert classify_lane(fact).lane == "ordinary"
    marker = "t1_after_preflight_v1" if provenance == "runtime_admission" else None
    assert fact.protocol_marker == marker
    start = fact.actions.continuation_start if fact.actions else None
    assert start is not None
    assert start.replay_manifest_digest == start.boundary_digest


@given(st.sampled_from(["runtime_admission", "claim_repair"]), st.integers(1, 2**53 - 1))
def test_continuation_start_fact_validates_for_any_positive_high_water(
    provenance: Any, high_water: int
) -> None:
    fact = continuation_start_fact(
        {"sessionId": "s", "invocationId": "i", "runId": "r", "turnId": "t"},
        event_id="start",
        ts=1,
        provenance=provenance,
        claim_id="claim-1",
        boundary_digest=DIGEST,
        source_spine={"sessionId": "s", "invocationId": "i0", "runId": "r0", "turnId": "t0"},
        source_high_water=high_water,
        source_prefix_digest=DIGEST,
        provider_replay_digest=DIGEST,
    )
    assert RuntimeEvent.model_validate(fact.to_wire()) == fact
