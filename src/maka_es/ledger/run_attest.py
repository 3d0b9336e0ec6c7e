"""An operator's attestation as a Run command (ADR 0022).

Why a Run command like T2: the attested outcome *is* the operation's T2 response
(docs/reference/tool-journal.md#t2), so it obeys the same write rules, is judged by the same
resolver and is committed in one save with its provenance fact. One winner comes from the
store: both facts are saved at the Run's next version, so of two attesters racing from the same
state only one save lands; the loser, retried, finds the committed attestation and gets
``created=False`` (same decision) or ``operator_attestation_conflict``. Pure.
"""

from __future__ import annotations

from maka_es.errors import (
    RunSealedError,
    ToolOperationNotFoundError,
    ToolOperationSettledError,
    ToolOutcomeConflictError,
)
from maka_es.ledger.facts import OperationAttested, StoredFact
from maka_es.ledger.run_append import check_tool_ledger, event_facts, require_healthy_tool_ledger
from maka_es.ledger.run_state import RunState
from maka_es.ledger.run_tools import ToolCommandDecision
from maka_es.tooljournal.attestation import OperatorAttestation, attested_response
from maka_es.wire.events import RuntimeEvent

__all__ = ["decide_attestation"]


def decide_attestation(
    run: RunState, attestation: OperatorAttestation, *, committed_at: float
) -> ToolCommandDecision:
    """Commit ``attestation`` of an indeterminate operation: the T2 response carrying the
    attested outcome, then the ``OperationAttested`` provenance fact, in one save.

    Refusals, in order: a corrupt ledger (``tool_ledger_corruption``), an operation that never
    crossed T1 (``tool_operation_not_found``), an operation already attested
    (``created=False`` for the same decision, else ``operator_attestation_conflict``), an
    operation that is not indeterminate (``operation_not_attestable``), then the write rules
    (a run sealed by its terminal or a claim: ``run_sealed``)."""
    require_healthy_tool_ledger(run)
    operation_id = attestation.operation_id
    operation = run.tool_operation(operation_id)
    if operation is None:
        raise ToolOperationNotFoundError(
            f"run {run.run_id} has no prepared operation {operation_id}",
            detail={"operationId": operation_id},
        )
    committed = run.attestation(operation_id)
    if committed is not None:
        if committed.same_decision(attestation):
            return ToolCommandDecision((), operation_id, created=False)
        raise ToolOutcomeConflictError(
            f"operation {operation_id} was already attested by {committed.actor}",
            code="operator_attestation_conflict",
            detail={"operationId": operation_id, "actor": committed.actor},
        )
    call = None if operation.call_event_id is None else run.committed_event(operation.call_event_id)
    if not operation.is_unsettled or call is None:
        raise ToolOperationSettledError(
            f"operation {operation_id} is {operation.state}, not indeterminate",
            code="operation_not_attestable",
            detail={"operationId": operation_id, "state": operation.state},
        )
    response = RuntimeEvent.model_validate(attested_response(call, operation, attestation))
    _require_unsealed(run, operation_id, response.id)
    decision = event_facts(run, [response], committed_at)
    check_tool_ledger(run, decision.appended)
    provenance = OperationAttested(
        originator_id=run.id,
        originator_version=run.version + len(decision.facts) + 1,
        operation_id=operation_id,
        applied=attestation.applied,
        result=attestation.result,
        actor=attestation.actor,
        note=attestation.note,
        attested_at=attestation.attested_at,
        response_event_id=attestation.response_event_id,
    )
    facts: tuple[StoredFact, ...] = (*decision.facts, provenance)
    return ToolCommandDecision(facts, operation_id, created=True)


def _require_unsealed(run: RunState, operation_id: str, response_id: str) -> None:
    """``run_sealed`` with the way on: a run ended before its operation was attested (a store
    recovered before ADR 0019's amendment of 2026-12-01 sealed such runs) takes no T2 any more,
    and history is never rewritten, so the operator forks it before the operation."""
    if run.sealed_by is None and run.terminal_event is None:
        return
    detail = {"eventId": response_id, "operationId": operation_id, "wayOn": "fork_run"}
    if run.sealed_by is not None:
        detail["claimId"] = run.sealed_by
    raise RunSealedError(
        f"run {run.run_id} was sealed before operation {operation_id} was attested; history is "
        "never rewritten, so fork it before the operation (fork_run, `maka-es fork RUN "
        "--before OP`) to go on",
        detail=detail,
    )
