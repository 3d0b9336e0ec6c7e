"""The tool journal's commands on a run: T1, T2 and the recovery bundle (tool-journal.md#t1-t2).

Why they are Run commands: the call, its dispatch, its outcome and its recovery facts all live in
one run's ledger, so each transition is validated against that run's state alone and saved in
one transaction. Every command is pure: it reads a
:class:`~maka_es.ledger.run_state.RunState` and returns the facts to save (or ``created=False``
for an exact retry, which tells the caller that someone else owns the operation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from maka_es.errors import (
    RecoveryBundleRejectedError,
    ToolLedgerRejectionError,
    ToolOperationConflictError,
    ToolOperationNotFoundError,
    ToolOperationSettledError,
    ToolOutcomeConflictError,
)
from maka_es.ledger.facts import StoredFact, ToolMetadataRecorded
from maka_es.ledger.run_append import (
    check_tool_ledger,
    event_facts,
    refuse_issue,
    require_healthy_tool_ledger,
)
from maka_es.ledger.run_state import RunState
from maka_es.tooljournal.bundle import BundleCode, BundleFacts, first_bundle_problem
from maka_es.tooljournal.operation import ToolOperationState
from maka_es.wire.codec import canonical_json, operation_id_for
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import dispatch_fact

__all__ = [
    "ToolCommandDecision",
    "decide_recovery_bundle",
    "decide_tool_outcome",
    "decide_tool_prepared",
]


@dataclass(frozen=True, slots=True)
class ToolCommandDecision:
    """Facts of a T1 / T2 / recovery-bundle command; ``created=False`` for an exact retry."""

    facts: tuple[StoredFact, ...]
    operation_id: str
    created: bool


def decide_tool_prepared(
    run: RunState,
    call: RuntimeEvent,
    *,
    recovery_mode: str,
    committed_at: float,
    metadata: Mapping[str, Any] | None = None,
) -> ToolCommandDecision:
    """T1 (tool-journal.md#t1): the call (unless the identical call is already committed), the
    dispatch fact ``<op>_dispatch`` with the args hash recomputed from the call, and the tool's
    metadata, in one transaction. An identical T1 that already committed returns
    ``created=False``: another dispatcher owns the operation and the tool must not run again.
    ``metadata`` must be strict JSON (``non_strict_json`` otherwise: no NaN, no lone
    surrogates)."""
    if metadata:
        canonical_json(dict(metadata))
    content = call.function_call
    if content is None:
        raise ToolLedgerRejectionError(
            f"event {call.id} is not a function_call",
            code="semantic_lane_conflict",
            detail={"eventId": call.id},
        )
    operation_id = operation_id_for(call.invocation_id, content.id)
    args_hash = run.resolver.args_hash_of(content)
    dispatch = dispatch_fact(call, operation_id, recovery_mode, args_hash=args_hash)
    require_healthy_tool_ledger(run)
    if run.tool_operation(operation_id) is not None:
        if _all_committed(run, (call, dispatch)):
            return ToolCommandDecision((), operation_id, created=False)
        raise ToolOperationConflictError(
            f"operation {operation_id} was already prepared with other facts",
            detail={"operationId": operation_id},
        )
    decision = event_facts(run, [call, dispatch], committed_at)
    check_tool_ledger(run, decision.appended)
    facts: list[StoredFact] = list(decision.facts)
    if metadata:
        facts.append(
            ToolMetadataRecorded(
                originator_id=run.id,
                originator_version=run.version + len(facts) + 1,
                operation_id=operation_id,
                metadata=dict(metadata),
            )
        )
    return ToolCommandDecision(tuple(facts), operation_id, created=True)


def decide_tool_outcome(
    run: RunState, response: RuntimeEvent, *, committed_at: float
) -> ToolCommandDecision:
    """T2 (tool-journal.md#t2): the response bound to its operation (``refs.operationId``,
    ``refs.toolCallId``). An exact retry returns ``created=False``; a different second outcome
    is refused."""
    require_healthy_tool_ledger(run)
    operation = _bound_operation(run, response)
    if operation.result_event_id is not None or operation.state != "prepared":
        if _all_committed(run, (response,)):
            return ToolCommandDecision((), operation.operation_id, created=False)
        error = (
            ToolOutcomeConflictError
            if operation.state == "outcome_committed"
            else ToolOperationSettledError
        )
        raise error(
            f"operation {operation.operation_id} is already {operation.state}",
            detail={"operationId": operation.operation_id, "state": operation.state},
        )
    decision = event_facts(run, [response], committed_at)
    check_tool_ledger(run, decision.appended)
    return ToolCommandDecision(decision.facts, operation.operation_id, created=True)


def decide_recovery_bundle(
    run: RunState,
    operation_id: str,
    reconcile: RuntimeEvent,
    decision_event: RuntimeEvent,
    outcome: RuntimeEvent | None,
    *,
    committed_at: float,
) -> ToolCommandDecision:
    """Reconcile fact, optional outcome and decision in one transaction (tool-journal.md#bundles).
    Only an operation with a durable dispatch and no outcome can be settled this way; parked is
    final (only an exact retry of the same bundle succeeds). The refusal order is the one of
    tool-journal.md#bundle-codes: known, fail-stop, settled, fresh ids, the bundle validator's
    pre-scan checks, the scanner, then the validator's full reading of the prospective ledger."""
    operation = run.tool_operation(operation_id)
    if operation is None:
        raise ToolOperationNotFoundError(
            f"run {run.run_id} has no prepared operation {operation_id}",
            detail={"operationId": operation_id},
        )
    require_healthy_tool_ledger(run)
    bundle = (reconcile, *((outcome,) if outcome is not None else ()), decision_event)
    if operation.state != "prepared":
        if _all_committed(run, bundle):
            return ToolCommandDecision((), operation_id, created=False)
        raise ToolOperationSettledError(
            f"operation {operation_id} is already {operation.state}",
            detail={"operationId": operation_id, "state": operation.state},
        )
    decision = event_facts(run, bundle, committed_at)
    if len(decision.appended) != len(bundle):
        raise _bundle_refused(
            operation_id, "recovery_fact_identity_conflict", "it reuses committed event ids"
        )
    declared = _declared_bundle(run, operation, reconcile, decision_event, outcome)
    code = first_bundle_problem(declared, stage="declared")
    if code is not None:
        raise _bundle_refused(operation_id, code)
    issues, interpretation = run.resolver.prospect(
        bundle, lambda state: state.bundle_interpretation(operation_id)
    )
    if issues:
        raise refuse_issue(issues[0])
    if interpretation is None or interpretation.kind != "valid":
        code = interpretation.code if interpretation is not None else None
        raise _bundle_refused(operation_id, code or "recovery_fact_shape_conflict")
    return ToolCommandDecision(decision.facts, operation_id, created=True)


def _declared_bundle(
    run: RunState,
    operation: ToolOperationState,
    reconcile: RuntimeEvent,
    decision: RuntimeEvent,
    outcome: RuntimeEvent | None,
) -> BundleFacts:
    """The bundle as the caller declared it, attached to the operation's committed facts."""
    dispatch = run.committed_event(operation.dispatch_event_id)
    assert dispatch is not None  # the journal only knows operations whose dispatch committed
    return BundleFacts(
        operation_id=operation.operation_id,
        tool_call_id=operation.tool_call_id,
        tool_name=operation.tool_name,
        call=run.committed_event(operation.call_event_id or ""),
        dispatch=dispatch,
        reconcile=reconcile,
        decision=decision,
        outcome=outcome,
    )


def _bundle_refused(
    operation_id: str, code: BundleCode, why: str | None = None
) -> RecoveryBundleRejectedError:
    return RecoveryBundleRejectedError(
        f"recovery bundle for {operation_id} is invalid: {code}" + (f" ({why})" if why else ""),
        code=code,
        detail={"operationId": operation_id},
    )


def _all_committed(run: RunState, events: tuple[RuntimeEvent, ...]) -> bool:
    """Every event is already committed byte-identically: the command is an exact retry."""
    return all(run.committed_payload(e.id) == canonical_json(e) for e in events)


def _bound_operation(run: RunState, response: RuntimeEvent) -> ToolOperationState:
    content = response.function_response
    refs = response.refs
    if content is None or refs is None or refs.operation_id is None:
        raise ToolLedgerRejectionError(
            f"event {response.id} is not a function_response bound to an operation",
            code="identity_conflict",
            detail={"eventId": response.id},
        )
    if refs.tool_call_id != content.id:
        raise ToolLedgerRejectionError(
            f"event {response.id}: refs.toolCallId must equal the response id",
            code="identity_conflict",
            detail={"eventId": response.id},
        )
    operation = run.tool_operation(refs.operation_id)
    if operation is None:
        raise ToolOperationNotFoundError(
            f"run {run.run_id} has no prepared operation {refs.operation_id}",
            detail={"operationId": refs.operation_id, "eventId": response.id},
        )
    return operation
