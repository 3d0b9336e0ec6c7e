"""Store-free tests of the tool journal's Run commands: T1, T2 and the recovery bundle
(docs/reference/tool-journal.md#t1, #t2, #bundle-codes). Each returns facts without a store,
an exact retry is ``created=False``, and every refusal leaves the aggregate untouched."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from maka_es.errors import (
    MakaError,
    RecoveryBundleRejectedError,
    ToolLedgerCorruptionError,
    ToolLedgerRejectionError,
    ToolOperationConflictError,
    ToolOperationNotFoundError,
    ToolOperationSettledError,
    ToolOutcomeConflictError,
)
from maka_es.ledger.model.facts import RuntimeEventRecorded, ToolMetadataRecorded
from maka_es.ledger.model.run import Run
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import bound_response, dispatch_fact
from tests.unit.ledger.support import (
    bad_bundles,
    bundle,
    call,
    commit,
    events,
    ledger,
    new_run,
    op_of,
    prepared,
    recorded,
    state_of,
    with_changes,
)


def refused(run: Run, command: Callable[[], object], error: type[MakaError], code: str) -> None:
    before = state_of(run)
    with pytest.raises(error) as info:
        command()
    assert info.value.code == code, info.value
    assert state_of(run) == before


def test_t1_returns_call_dispatch_and_metadata_facts() -> None:
    run, _ = new_run()
    builder = ledger()
    commit(run, run.decide_append(events(builder), committed_at=1001).facts)
    call_event = call(builder)
    before = state_of(run)
    decision = run.decide_tool_prepared(
        call_event, recovery_mode="reconcile", committed_at=1002, metadata={"prior": "x"}
    )
    assert state_of(run) == before
    op = op_of(call_event)
    dispatch = dispatch_fact(call_event, op, "reconcile")
    assert (decision.operation_id, decision.created) == (op, True)
    recorded = [f for f in decision.facts if isinstance(f, RuntimeEventRecorded)]
    assert [f.event_id for f in recorded] == [call_event.id, dispatch.id]
    metadata = decision.facts[-1]
    assert isinstance(metadata, ToolMetadataRecorded)
    assert (metadata.originator_version, metadata.metadata) == (run.version + 3, {"prior": "x"})
    commit(run, decision.facts)
    (operation,) = run.tool_operations
    assert (operation.state, operation.metadata) == ("prepared", {"prior": "x"})
    assert run.resolution().decisions[0].reason == "dispatch_without_response"


def test_t1_exact_retry_is_not_created_and_a_different_t1_conflicts() -> None:
    run, call_event, _ = prepared()
    retry = run.decide_tool_prepared(call_event, recovery_mode="reconcile", committed_at=9)
    assert (retry.facts, retry.created) == ((), False)
    refused(
        run,
        lambda: run.decide_tool_prepared(call_event, recovery_mode="idempotent", committed_at=9),
        ToolOperationConflictError,
        "tool_operation_conflict",
    )


def test_t1_refuses_an_event_that_is_not_a_call() -> None:
    run, _ = new_run()
    user = events(ledger())[0]
    refused(
        run,
        lambda: run.decide_tool_prepared(user, recovery_mode="reconcile", committed_at=1),
        ToolLedgerRejectionError,
        "semantic_lane_conflict",
    )


def _outcome(call_event: RuntimeEvent, result: Any = "ok") -> RuntimeEvent:
    return bound_response(call_event, op_of(call_event), ts=2000, result=result)


def test_t2_binds_the_outcome_and_an_exact_retry_is_not_created() -> None:
    run, call_event, _ = prepared("never_auto_retry")
    outcome = _outcome(call_event)
    decision = run.decide_tool_outcome(outcome, committed_at=2000)
    assert decision.created
    assert [f.event_id for f in recorded(decision.facts)] == [outcome.id]
    commit(run, decision.facts)
    assert run.tool_operations[0].state == "outcome_committed"
    retry = run.decide_tool_outcome(outcome, committed_at=2001)
    assert (retry.facts, retry.created) == ((), False)
    refused(
        run,
        lambda: run.decide_tool_outcome(_outcome(call_event, "other"), committed_at=1),
        ToolOutcomeConflictError,
        "outcome_conflict",
    )


def test_t2_needs_a_bound_response_of_a_prepared_operation() -> None:
    run, call_event, _ = prepared("never_auto_retry")
    unbound = with_changes(_outcome(call_event), refs=None)
    refused(
        run,
        lambda: run.decide_tool_outcome(unbound, committed_at=1),
        ToolLedgerRejectionError,
        "identity_conflict",
    )
    stranger = with_changes(
        _outcome(call_event), refs={"operationId": "toolop_none", "toolCallId": "c1"}
    )
    refused(
        run,
        lambda: run.decide_tool_outcome(stranger, committed_at=1),
        ToolOperationNotFoundError,
        "tool_operation_not_found",
    )


@pytest.mark.parametrize(
    ("observation", "state"),
    [("matches_expected_state", "recovery_completed"), ("diverged", "recovery_parked")],
)
def test_a_valid_bundle_settles_the_operation(observation: Any, state: str) -> None:
    run, call_event, _ = prepared()
    parts = bundle(call_event, observation)
    op = op_of(call_event)
    decision = run.decide_recovery_bundle(op, **parts, committed_at=3000)
    assert decision.created
    commit(run, decision.facts)
    assert run.tool_operations[0].state == state
    assert run.resolution().decisions[0].settlement_origin == "recovery_bundle"
    retry = run.decide_recovery_bundle(op, **parts, committed_at=3001)
    assert (retry.facts, retry.created) == ((), False)
    other = bundle(call_event, "unreadable")
    refused(
        run,
        lambda: run.decide_recovery_bundle(op, **other, committed_at=3002),
        ToolOperationSettledError,
        "tool_operation_settled",
    )


BAD_BUNDLES = [
    "reconcile-slot-holds-decision",
    "decision-slot-holds-reconcile",
    "reconcile-refs",
    "payload-operation",
    "no-outcome",
    "error-outcome",
    "outcome-reference",
    "parked-with-outcome",
    "wrong-parked-reason",
    "evidence",
]


@pytest.mark.parametrize("case", BAD_BUNDLES)
def test_invalid_bundles_are_refused_with_their_code(case: str) -> None:
    run, call_event, _ = prepared()
    cases = bad_bundles(call_event)
    assert list(cases) == BAD_BUNDLES
    parts, code = cases[case]
    refused(
        run,
        lambda: run.decide_recovery_bundle(op_of(call_event), **parts, committed_at=3000),
        RecoveryBundleRejectedError,
        code,
    )


def test_a_bundle_for_a_non_reconcile_dispatch_is_mode_unsupported() -> None:
    run, call_event, _ = prepared("never_auto_retry")
    refused(
        run,
        lambda: run.decide_recovery_bundle(
            op_of(call_event), **bundle(call_event), committed_at=3000
        ),
        RecoveryBundleRejectedError,
        "recovery_mode_unsupported",
    )


def test_bundle_for_an_unknown_operation_and_on_a_corrupt_ledger() -> None:
    run, call_event, _ = prepared()
    refused(
        run,
        lambda: run.decide_recovery_bundle("toolop_none", **bundle(call_event), committed_at=1),
        ToolOperationNotFoundError,
        "tool_operation_not_found",
    )
    # a ledger that already holds a resolver issue refuses every tool write (fail-stop)
    corrupt, call_event, _ = prepared()
    stray = with_changes(_outcome(call_event), id="stray", refs=None)
    bad = RuntimeEventRecorded(
        originator_id=corrupt.id,
        originator_version=corrupt.version + 1,
        event_seq=corrupt.high_water + 1,
        event_id="stray",
        payload=stray.model_dump_json(by_alias=True, exclude_unset=True),
        committed_at=1,
    )
    commit(corrupt, [bad])
    assert corrupt.resolver.has_issues
    for command in (
        lambda: corrupt.decide_recovery_bundle(
            op_of(call_event), **bundle(call_event), committed_at=1
        ),
        lambda: corrupt.decide_tool_outcome(_outcome(call_event), committed_at=1),
        lambda: corrupt.decide_tool_prepared(call_event, recovery_mode="reconcile", committed_at=1),
    ):
        refused(corrupt, command, ToolLedgerCorruptionError, "tool_ledger_corruption")
