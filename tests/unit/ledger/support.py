"""Store-free harness for the Run aggregate: a run is built by folding the facts its own
commands return, exactly as the store would after a successful save, and nothing else.

Local to these tests: ``maka_es.testing.builders`` has no builder for tool-journal facts yet, so the
bundle facts come from ``maka_es.wire.facts`` (the constructors the runtime writes with).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from maka_es.ledger.model.facts import RuntimeEventRecorded, StoredFact
from maka_es.ledger.model.run import Run, project_run
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.wire.codec import operation_id_for
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import (
    PARKED_REASON_FOR_OBSERVATION,
    Observation,
    bound_response,
    completed_decision_fact,
    dispatch_fact,
    parked_decision_fact,
    reconcile_result_fact,
)
from maka_es.wire.run_header import RunHeader

SPINE = Spine()
CREATED_AT = 1000
DIGEST = "sha256:" + "cd" * 32
WRITE_ARGS = {"path": "notes.txt", "content": "after"}


def header(**overrides: Any) -> RunHeader:
    """A running header for :data:`SPINE`."""
    return RunHeader.model_validate(run_header(SPINE, **overrides))


def new_run(**overrides: Any) -> tuple[Run, list[StoredFact]]:
    """A fresh run and the facts that made it (only ``RunCreated``)."""
    created = Run.create(header(**overrides), CREATED_AT)
    run = project_run(None, [created])
    assert run is not None
    return run, [created]


def commit(run: Run, facts: Iterable[StoredFact], log: list[StoredFact] | None = None) -> None:
    """What a successful save does to the aggregate: fold the facts in order."""
    for fact in facts:
        run.apply(fact)
        if log is not None:
            log.append(fact)


def state_of(run: Run) -> tuple[Any, ...]:
    """Everything observable about a run's state (for 'a command mutates nothing')."""
    return (
        run.version,
        run.header.to_wire(),
        [run.payload_at(seq) for seq in range(1, run.high_water + 1)],
        run.sealed_by,
        run.tool_operations,
        run.resolution(),
    )


def recorded(facts: Iterable[StoredFact]) -> list[RuntimeEventRecorded]:
    """``facts``, each of which must record a RuntimeEvent."""
    given = list(facts)
    result = [fact for fact in given if isinstance(fact, RuntimeEventRecorded)]
    assert len(result) == len(given)
    return result


def events(builder: LedgerBuilder) -> list[RuntimeEvent]:
    return builder.decoded()


def ledger() -> LedgerBuilder:
    """A builder whose first event declares the T1 protocol."""
    builder = LedgerBuilder(spine=SPINE)
    builder.user(marker=True)
    return builder


def call(builder: LedgerBuilder, call_id: str = "c1", name: str = "Write") -> RuntimeEvent:
    return RuntimeEvent.model_validate(builder.call(call_id, name, WRITE_ARGS))


def op_of(call_event: RuntimeEvent) -> str:
    assert call_event.function_call is not None
    return operation_id_for(call_event.invocation_id, call_event.function_call.id)


def prepared(mode: str = "reconcile") -> tuple[Run, RuntimeEvent, list[StoredFact]]:
    """A run with the protocol marker and one call that crossed T1 in ``mode``."""
    run, log = new_run()
    builder = ledger()
    commit(run, run.decide_append(events(builder), committed_at=1001).facts, log)
    call_event = call(builder)
    decision = run.decide_tool_prepared(call_event, recovery_mode=mode, committed_at=1002)
    commit(run, decision.facts, log)
    return run, call_event, log


def bundle(
    call_event: RuntimeEvent, observation: Observation = "matches_expected_state"
) -> dict[str, Any]:
    """The keyword arguments of a valid bundle for ``call_event``'s operation."""
    op = op_of(call_event)
    reconcile = reconcile_result_fact(
        call_event, op, ts=3000, observation=observation, observation_digest=DIGEST
    )
    evidence = [call_event.id, dispatch_fact(call_event, op, "reconcile").id, reconcile.id]
    if observation != "matches_expected_state":
        reason = PARKED_REASON_FOR_OBSERVATION[observation]
        decision = parked_decision_fact(
            call_event, op, ts=3000, reason_code=reason, evidence_event_ids=evidence
        )
        return {"reconcile": reconcile, "decision_event": decision, "outcome": None}
    outcome = bound_response(call_event, op, ts=3000, result="reconciled")
    decision = completed_decision_fact(
        call_event,
        op,
        ts=3000,
        outcome_event_id=outcome.id,
        evidence_event_ids=[*evidence, outcome.id],
    )
    return {"reconcile": reconcile, "decision_event": decision, "outcome": outcome}


def with_changes(event: RuntimeEvent, **wire_changes: Any) -> RuntimeEvent:
    """``event`` with top-level wire keys replaced (``None`` removes the key)."""
    wire = {**event.to_wire(), **wire_changes}
    return RuntimeEvent.model_validate({k: v for k, v in wire.items() if v is not None})


def _decision_with(parts: dict[str, Any], **payload: Any) -> RuntimeEvent:
    wire = parts["decision_event"].to_wire()
    wire["actions"]["toolRecovery"]["payload"].update(payload)
    return RuntimeEvent.model_validate(wire)


def _refs_to(event: RuntimeEvent, tool_call_id: str) -> RuntimeEvent:
    refs = event.to_wire()["refs"]
    return with_changes(event, refs={**refs, "toolCallId": tool_call_id})


def bad_bundles(call_event: RuntimeEvent) -> dict[str, tuple[dict[str, Any], str]]:
    """case -> (bundle, code) for every bundle code the command reaches before or after the
    scan on a healthy ledger, in the order of tool-journal.md#bundle-codes."""
    parts = bundle(call_event)
    parked = bundle(call_event, "diverged")
    cases = [
        ("reconcile-slot-holds-decision", {**parts, "reconcile": with_changes(
            parts["decision_event"], id="d0")}, "reconcile_fact_invalid"),
        ("decision-slot-holds-reconcile", {**parked, "decision_event": with_changes(
            parked["reconcile"], id="r2")}, "decision_fact_invalid"),
        ("reconcile-refs", {**parts, "reconcile": _refs_to(parts["reconcile"], "c9")},
         "recovery_fact_identity_conflict"),
        ("payload-operation", {**parts, "decision_event": _decision_with(
            parts, operationId="toolop_other")}, "operation_identity_conflict"),
        ("no-outcome", {**parts, "outcome": None}, "outcome_required"),
        ("error-outcome", {**parts, "outcome": bound_response(
            call_event, op_of(call_event), ts=3000, result="x", is_error=True)},
         "outcome_not_successful"),
        ("outcome-reference", {**parts, "decision_event": _decision_with(
            parts, outcomeEventId="elsewhere")}, "outcome_reference_conflict"),
        ("parked-with-outcome", {**parked, "outcome": parts["outcome"]}, "outcome_for_parked"),
        ("wrong-parked-reason", {**parked, "decision_event": _decision_with(
            parked, reasonCode="reconcile_unreadable")}, "reconcile_decision_conflict"),
        ("evidence", {**parts, "decision_event": _decision_with(
            parts, evidenceEventIds=["x"])}, "evidence_order_conflict"),
    ]  # fmt: skip
    return {name: (parts, code) for name, parts, code in cases}
