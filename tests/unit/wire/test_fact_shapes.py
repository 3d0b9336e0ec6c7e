"""The shared wire spelling (``maka_es.wire.facts``): the store's constructors and the
public builders write the same facts because both spell them here."""

from __future__ import annotations

from maka_es.testing.builders import Events, Spine
from maka_es.wire.codec import operation_id_for
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import (
    completed_decision_fact,
    continuation_start_fact,
    decision_payload,
    dispatch_fact,
    parked_decision_fact,
    reconcile_result_fact,
    response_wire,
    terminal_fact,
    terminal_wire,
    tool_refs,
)

DIGEST = "sha256:" + "c" * 64
SPINE = Spine("s", "i", "r", "t")


def _call() -> RuntimeEvent:
    return Events.decoded(SPINE, 3).call("c1", "Write", {"path": "a"}, t1=True)


def test_builders_and_constructors_write_the_same_tool_facts() -> None:
    call, kit = _call(), Events.wire(SPINE, 3)
    op = operation_id_for("i", "c1")
    evidence = kit.evidence("c1", call_event_id=call.id)
    assert dispatch_fact(call, op, "reconcile").to_wire() == kit.dispatch(
        "c1", "Write", {"path": "a"}, recovery_mode="reconcile"
    )
    reconcile = reconcile_result_fact(
        call, op, ts=3, observation="diverged", observation_digest=DIGEST
    )
    assert reconcile.to_wire() == kit.reconcile("c1", "diverged", digest=DIGEST)
    parked = parked_decision_fact(
        call, op, ts=3, reason_code="reconcile_diverged", evidence_event_ids=evidence
    )
    assert parked.to_wire() == kit.parked_decision("c1", evidence=evidence)
    outcome = SPINE.fact_id("c1", "response")
    completed = completed_decision_fact(
        call, op, ts=3, outcome_event_id=outcome, evidence_event_ids=[*evidence, outcome]
    )
    assert completed.to_wire() == kit.completed_decision(
        "c1", evidence=[*evidence, outcome], outcome_event_id=outcome
    )


def test_builders_and_constructors_write_the_same_terminal_and_start() -> None:
    kit = Events.wire(SPINE, 3)
    failed = terminal_fact(SPINE.identity, event_id="x", ts=3, status="failed", failure_class="f")
    assert failed.to_wire() == kit.terminal(
        "failed", event_id="x", error_code="f", message="f", failure_class="f"
    )
    source = Spine("s", "i0", "r0", "t0")
    start = continuation_start_fact(
        SPINE.identity,
        event_id="r-start",
        ts=3,
        provenance="runtime_admission",
        claim_id="claim-1",
        boundary_digest=DIGEST,
        source_spine=source.identity,
        source_high_water=2,
        source_prefix_digest=DIGEST,
        provider_replay_digest=DIGEST,
    )
    assert start.to_wire() == kit.continuation_start(
        source, 2, boundary_digest=DIGEST, prefix_digest=DIGEST, provider_replay_digest=DIGEST
    )


def test_spelling_keeps_what_the_caller_gives() -> None:
    """``isError`` false is written when given (a builder's legacy response), refs are
    copied, a completed decision's outcome precedes its evidence, and an empty ``stateDelta``
    is left out."""
    wire = response_wire(
        SPINE.identity,
        event_id="e",
        ts=1,
        call_id="c",
        tool_name="Bash",
        result=None,
        is_error=False,
        refs=tool_refs("c", "op", ("op0", "c0")),
    )
    assert wire["content"]["isError"] is False
    assert wire["refs"] == {
        "toolCallId": "c",
        "operationId": "op",
        "parentOperationId": "op0",
        "parentToolCallId": "c0",
    }
    payload = decision_payload("op", "completed", "r", ["a", "o"], "o")
    assert list(payload)[-2:] == ["outcomeEventId", "evidenceEventIds"]
    ended = terminal_wire(SPINE.identity, event_id="e", ts=1, status="completed", state_delta={})
    assert ended["actions"] == {"endInvocation": True}
    assert "content" not in ended
