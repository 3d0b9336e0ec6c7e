"""Recovery bundles through the store command (docs/reference/tool-journal.md#bundles): one
transaction of reconcile fact, optional outcome and decision, for an operation with a durable
dispatch in ``reconcile`` mode.

Mirrors the bundle items of recovery-persistence-authority and tool-recovery-authority (reference
suites): completed and parked bundles, parked is final, exact retries, and every validation code
(docs/reference/tool-journal.md#bundle-codes) the command can reach, each with the exact code and an
unchanged store.

Bundle codes that the command cannot reach on a healthy ledger (documented, not tested):
``call_identity_conflict``, ``canonical_args_hash_conflict`` and ``dispatch_identity_conflict``
(the call and dispatch are authored and validated by T1, and a hand-made dispatch is a reserved
fact); ``reconcile_fact_invalid`` / ``decision_fact_invalid`` (facts are routed by their
``kind``, so a swapped fact is a ``recovery_fact_shape_conflict``, tested below);
``outcome_identity_conflict`` (a mis-bound outcome is first a resolver ``identity_conflict``
or ``orphan_response`` and is refused as such, tested below).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.errors import (
    EventIdConflictError,
    MakaError,
    RecoveryBundleRejectedError,
    RunSealedError,
    ToolLedgerRejectionError,
    ToolOperationNotFoundError,
    ToolOperationSettledError,
)
from maka_es.ledger.model.facts import RuntimeEventRecorded
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.model.operation import ToolJournal, expected_journal_state

SPINE = Spine()
RUN = SPINE.run_id
EV = Events.wire()
WRITE_ARGS: dict[str, Any] = {"path": "notes.txt", "content": "after"}
#: parked observation -> the only reason code a parked decision may carry for it
PARKED_REASON = {
    "matches_prior_state": "reconcile_matches_prior_state",
    "diverged": "reconcile_diverged",
    "unreadable": "reconcile_unreadable",
}


def open_run(app: RuntimeApplication) -> None:
    """Session s1, run r1 and its first (user) event, declaring the T1 protocol."""
    app.open_session(SPINE.session_id, "/workspace")
    app.ledger.create_run(run_header(SPINE))
    app.ledger.append_event(RUN, EV.user(marker=True))


def ids(app: RuntimeApplication) -> list[str]:
    return [event.id for event in app.read_run_events(RUN)]


OP = SPINE.operation_id("c1")
RECONCILE_ID = f"{OP}_reconcile"
DECISION_ID = f"{OP}_decision"
OUTCOME_ID = SPINE.fact_id("c1", "response")
EVIDENCE = EV.evidence("c1")
COMPLETED_EVIDENCE = [*EVIDENCE, OUTCOME_ID]


def refused(
    app: RuntimeApplication, command: Callable[[], object], error: type[MakaError], code: str
) -> MakaError:
    """Run ``command``, expect ``error`` with ``code``, and prove nothing was written."""
    before = store_snapshot(app)
    with pytest.raises(error) as info:
        command()
    assert info.value.code == code, info.value
    assert store_snapshot(app) == before
    return info.value


def prepared(app: RuntimeApplication, mode: str = "reconcile") -> None:
    """Run r1 with the prepared operation c1 (T1 in ``mode``) and nothing after it."""
    open_run(app)
    app.tool_journal.commit_tool_prepared(
        RUN, EV.call("c1", "Write", WRITE_ARGS), recovery_mode=mode
    )


def bundle(app: RuntimeApplication, parts: dict[str, Any], operation_id: str = OP) -> Any:
    return app.tool_journal.commit_tool_recovery_bundle(RUN, operation_id, **parts)


def test_valid_completed_bundle(store_app: RuntimeApplication, store_url: str) -> None:
    """reconcile ``matches_expected_state`` + outcome bound to the operation + completed decision
    with evidence [call, dispatch, reconcile, outcome] and outcomeEventId: the three events land
    in ONE save in that order; journal ``recovery_completed`` (observation kept, result = the
    outcome, version 4); resolver ``completed / recovery_bundle_completed / recovery_bundle``;
    the plan may replay; the same after reopening."""
    prepared(store_app)
    parts = EV.completed_bundle("c1", "Write", "ok")
    before = store_snapshot(store_app)

    commit = bundle(store_app, parts)

    assert (commit.operation_id, commit.created) == (OP, True)
    new = [row for row in store_snapshot(store_app).rows if row not in before.rows]
    assert [row[3] for row in new] == [RuntimeEventRecorded.TOPIC] * 3
    assert ids(store_app)[-3:] == [RECONCILE_ID, OUTCOME_ID, DECISION_ID]
    (operation,) = store_app.tool_journal.tool_operations(RUN)
    assert (operation.state, operation.version) == ("recovery_completed", 4)
    assert (operation.observation, operation.result_event_id) == (
        "matches_expected_state",
        OUTCOME_ID,
    )
    resolution = store_app.tool_journal.resolve_run(RUN)
    (decision,) = resolution.decisions
    assert (decision.status, decision.reason, decision.settlement_origin) == (
        "completed",
        "recovery_bundle_completed",
        "recovery_bundle",
    )
    assert decision.response_runtime_event_id == OUTCOME_ID
    assert decision.response_is_error is False
    assert (resolution.has_corruption, resolution.requires_reconciliation) == (False, False)
    assert expected_journal_state(decision) == "recovery_completed"
    plan = store_app.plan_resume(RUN)
    assert plan.disposition == "safe_replay"
    assert [op.status for op in plan.operations] == ["succeeded"]

    with RuntimeApplication.open(store_url) as reopened:
        assert reopened.tool_journal.tool_operations(RUN) == store_app.tool_journal.tool_operations(
            RUN
        )
        assert reopened.tool_journal.resolve_run(RUN) == resolution
        rebuilt = ToolJournal.rebuild(reopened.read_run_events(RUN))
        assert rebuilt.operations == store_app.tool_journal.tool_operations(RUN)


@pytest.mark.parametrize("observation", sorted(PARKED_REASON))
def test_valid_parked_bundle(
    store_app: RuntimeApplication, store_url: str, observation: str
) -> None:
    """reconcile ``observation`` + parked decision with the matching reason and evidence
    [call, dispatch, reconcile], no outcome: journal ``recovery_parked``; resolver
    ``parked / <reason> / recovery_bundle``; the plan blocks with ``tool_recovery_parked``;
    the same after reopening."""
    prepared(store_app)
    commit = bundle(store_app, EV.parked_bundle("c1", observation))
    assert commit.created is True
    assert ids(store_app)[-2:] == [RECONCILE_ID, DECISION_ID]
    (operation,) = store_app.tool_journal.tool_operations(RUN)
    assert (operation.state, operation.observation, operation.version) == (
        "recovery_parked",
        observation,
        3,
    )
    assert operation.result_event_id is None
    resolution = store_app.tool_journal.resolve_run(RUN)
    (decision,) = resolution.decisions
    assert (decision.status, decision.reason, decision.settlement_origin) == (
        "parked",
        PARKED_REASON[observation],
        "recovery_bundle",
    )
    assert (resolution.has_corruption, resolution.requires_reconciliation) == (False, False)
    assert expected_journal_state(decision) == "recovery_parked"
    plan = store_app.plan_resume(RUN)
    assert plan.disposition == "blocked"
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert [d.code for d in plan.diagnostics] == ["tool_recovery_parked"]
    with RuntimeApplication.open(store_url) as reopened:
        assert reopened.tool_journal.tool_operations(RUN) == store_app.tool_journal.tool_operations(
            RUN
        )
        assert reopened.tool_journal.resolve_run(RUN) == resolution


def test_parked_is_final(store_app: RuntimeApplication) -> None:
    """After a parked bundle only its exact retry succeeds (``created=False``, nothing written);
    a completed bundle, another parked bundle, a T2 and a second T1 for the operation are
    refused, and the operation stays parked."""
    prepared(store_app)
    parts = EV.parked_bundle("c1", "diverged")
    bundle(store_app, parts)
    before = store_snapshot(store_app)
    assert bundle(store_app, parts).created is False
    assert store_snapshot(store_app) == before

    other_parked = EV.parked_bundle("c1", "unreadable")
    for parts_ in (EV.completed_bundle("c1", "Write", "ok"), other_parked):
        error = refused(
            store_app,
            partial(bundle, store_app, parts_),
            ToolOperationSettledError,
            "tool_operation_settled",
        )
        assert error.detail == {"operationId": OP, "state": "recovery_parked"}
    refused(
        store_app,
        lambda: store_app.tool_journal.commit_tool_outcome(
            RUN, EV.bound_response("c1", "Write", "ok")
        ),
        ToolOperationSettledError,
        "tool_operation_settled",
    )
    refused(
        store_app,
        lambda: store_app.tool_journal.commit_tool_outcome(
            RUN, EV.bound_response("c1", "Write", "failed", is_error=True)
        ),
        ToolOperationSettledError,
        "tool_operation_settled",
    )
    # the identical T1 is an exact retry: another dispatcher owns it, it must not run again
    retry = store_app.tool_journal.commit_tool_prepared(
        RUN, EV.call("c1", "Write", WRITE_ARGS), recovery_mode="reconcile"
    )
    assert retry.created is False
    assert store_snapshot(store_app) == before
    assert [op.state for op in store_app.tool_journal.tool_operations(RUN)] == ["recovery_parked"]


def test_completed_is_final(store_app: RuntimeApplication) -> None:
    """After a completed bundle: exact retry ``created=False``; a parked bundle and a different
    outcome are ``tool_operation_settled``; the bundle's own outcome resent as T2 is an exact
    retry (``created=False``)."""
    prepared(store_app)
    parts = EV.completed_bundle("c1", "Write", "ok")
    bundle(store_app, parts)
    before = store_snapshot(store_app)
    assert bundle(store_app, parts).created is False
    assert store_app.tool_journal.commit_tool_outcome(RUN, parts["outcome"]).created is False
    assert store_snapshot(store_app) == before
    refused(
        store_app,
        lambda: bundle(store_app, EV.parked_bundle("c1", "diverged")),
        ToolOperationSettledError,
        "tool_operation_settled",
    )
    refused(
        store_app,
        lambda: store_app.tool_journal.commit_tool_outcome(
            RUN, EV.bound_response("c1", "Write", "other")
        ),
        ToolOperationSettledError,
        "tool_operation_settled",
    )


def test_bundle_after_t2_is_refused(store_app: RuntimeApplication) -> None:
    """An operation settled by T2 is not recoverable any more: ``tool_operation_settled``."""
    prepared(store_app)
    store_app.tool_journal.commit_tool_outcome(RUN, EV.bound_response("c1", "Write", "ok"))
    for parts in (EV.parked_bundle("c1"), EV.completed_bundle("c1", "Write", "ok")):
        refused(
            store_app,
            partial(bundle, store_app, parts),
            ToolOperationSettledError,
            "tool_operation_settled",
        )


def test_bundle_for_an_unknown_operation_is_refused(any_app: RuntimeApplication) -> None:
    """No durable dispatch, no bundle: an unknown operation id and an operation whose call is
    committed but never crossed T1 are ``tool_operation_not_found``."""
    open_run(any_app)
    any_app.ledger.append_event(
        RUN, EV.call("c1", "Write", WRITE_ARGS)
    )  # a call without its dispatch
    for operation_id in ("toolop_unknown", OP):
        refused(
            any_app,
            partial(bundle, any_app, EV.parked_bundle("c1"), operation_id),
            ToolOperationNotFoundError,
            "tool_operation_not_found",
        )


def test_bundle_rollback_leaves_nothing(store_app: RuntimeApplication) -> None:
    """A failure inside the bundle transaction leaves none of its three events and the
    operation ``prepared``; the same bundle then commits."""
    prepared(store_app)
    before = store_snapshot(store_app)

    def fail(name: str) -> None:
        raise RuntimeError(f"simulated failure at {name}")

    failpoints.arm(failpoints.INSIDE_SAVE_BEFORE_COMMIT, fail)
    try:
        with pytest.raises(RuntimeError, match="simulated failure"):
            bundle(store_app, EV.completed_bundle("c1", "Write", "ok"))
    finally:
        failpoints.disarm()
    assert store_snapshot(store_app) == before
    assert [op.state for op in store_app.tool_journal.tool_operations(RUN)] == ["prepared"]
    assert bundle(store_app, EV.completed_bundle("c1", "Write", "ok")).created is True


def test_bundle_after_the_terminal_is_run_sealed(store_app: RuntimeApplication) -> None:
    """Recovery facts are ledger events: after the run's terminal they are ``run_sealed``."""
    prepared(store_app)
    store_app.ledger.append_event(RUN, EV.terminal(status="failed"))
    refused(
        store_app,
        lambda: bundle(store_app, EV.parked_bundle("c1")),
        RunSealedError,
        "run_sealed",
    )


# -- validation codes (tool-journal.md#bundle-codes), each through the command on a real SQLite file


def _completed(**changes: Any) -> dict[str, Any]:
    parts = EV.completed_bundle("c1", "Write", "ok")
    parts.update(changes)
    return parts


def _parked(observation: str, reason: str, **changes: Any) -> dict[str, Any]:
    parts = {
        "reconcile": EV.reconcile("c1", observation),
        "decision": EV.parked_decision("c1", reason, evidence=EVIDENCE),
    }
    parts.update(changes)
    return parts


def _decision(evidence_ids: list[str], outcome_id: str = OUTCOME_ID) -> dict[str, Any]:
    return EV.completed_decision("c1", evidence=evidence_ids, outcome_event_id=outcome_id)


WRONG_CALL_REFS = {"operationId": OP, "toolCallId": "c2"}

VALIDATION_CASES: list[Any] = [
    pytest.param(
        "never_auto_retry", _completed(), "recovery_mode_unsupported", id="mode-never_auto_retry"
    ),
    pytest.param("idempotent", EV.parked_bundle("c1"), "recovery_mode_unsupported", id="mode-idem"),
    pytest.param(
        "reconcile",
        _completed(reconcile=EV.reconcile("c1", "diverged")),
        "reconcile_decision_conflict",
        id="completed-but-diverged",
    ),
    pytest.param(
        "reconcile",
        _parked("unreadable", "reconcile_diverged"),
        "reconcile_decision_conflict",
        id="parked-reason-disagrees",
    ),
    pytest.param(
        "reconcile",
        _parked("matches_expected_state", "reconcile_matches_prior_state"),
        "reconcile_decision_conflict",
        id="parked-but-expected-state",
    ),
    pytest.param(
        "reconcile",
        _completed(decision=_decision([*EVIDENCE[:2], OUTCOME_ID, EVIDENCE[2]])),
        "evidence_order_conflict",
        id="completed-evidence-order",
    ),
    pytest.param(
        "reconcile",
        _completed(decision=_decision(EVIDENCE)),
        "evidence_order_conflict",
        id="completed-evidence-without-outcome",
    ),
    pytest.param(
        "reconcile",
        _parked(
            "diverged",
            "reconcile_diverged",
            decision=EV.parked_decision("c1", evidence=[EVIDENCE[1], EVIDENCE[0], EVIDENCE[2]]),
        ),
        "evidence_order_conflict",
        id="parked-evidence-order",
    ),
    pytest.param(
        "reconcile",
        _parked(
            "diverged",
            "reconcile_diverged",
            decision=EV.parked_decision("c1", evidence=[*EVIDENCE, "extra"]),
        ),
        "evidence_order_conflict",
        id="parked-evidence-extra",
    ),
    pytest.param(
        "reconcile",
        {"reconcile": EV.reconcile("c1"), "decision": _decision(COMPLETED_EVIDENCE)},
        "outcome_required",
        id="completed-without-outcome",
    ),
    pytest.param(
        "reconcile",
        _parked("diverged", "reconcile_diverged", outcome=EV.bound_response("c1", "Write", "ok")),
        "outcome_for_parked",
        id="parked-with-outcome",
    ),
    pytest.param(
        "reconcile",
        _completed(outcome=EV.bound_response("c1", "Write", "failed", is_error=True)),
        "outcome_not_successful",
        id="error-outcome",
    ),
    pytest.param(
        "reconcile",
        _completed(decision=_decision(COMPLETED_EVIDENCE, "some-other-event")),
        "outcome_reference_conflict",
        id="outcome-reference",
    ),
    pytest.param(
        "reconcile",
        _completed(reconcile=EV.reconcile("c1", refs=WRONG_CALL_REFS)),
        "recovery_fact_identity_conflict",
        id="reconcile-refs",
    ),
    pytest.param(
        "reconcile",
        _completed(
            decision=EV.completed_decision(
                "c1", evidence=COMPLETED_EVIDENCE, outcome_event_id=OUTCOME_ID, refs=WRONG_CALL_REFS
            )
        ),
        "recovery_fact_identity_conflict",
        id="decision-refs",
    ),
    pytest.param(
        "reconcile",
        _completed(reconcile=EV.user(marker=True)),
        "recovery_fact_identity_conflict",
        id="reuses-a-committed-event",
    ),
    pytest.param(
        "reconcile",
        _parked("diverged", "reconcile_diverged", decision=EV.reconcile("c1", event_id="r2")),
        "decision_fact_invalid",
        id="two-reconciles-no-decision",
    ),
    pytest.param(
        "reconcile",
        _completed(reconcile=_decision(COMPLETED_EVIDENCE) | {"id": "d0"}),
        "reconcile_fact_invalid",
        id="decision-in-the-reconcile-slot",
    ),
]


@pytest.mark.parametrize(("mode", "parts", "code"), VALIDATION_CASES)
def test_bundle_validation_codes(
    store_app: RuntimeApplication, mode: str, parts: dict[str, Any], code: str
) -> None:
    """An invalid bundle is ``RecoveryBundleRejectedError`` with the bundle code (first failing
    wins), nothing written, the operation still ``prepared`` and resolvable as before."""
    prepared(store_app, mode)
    resolution = store_app.tool_journal.resolve_run(RUN)
    error = refused(store_app, lambda: bundle(store_app, parts), RecoveryBundleRejectedError, code)
    assert error.detail == {"operationId": OP}
    assert [op.state for op in store_app.tool_journal.tool_operations(RUN)] == ["prepared"]
    assert store_app.tool_journal.resolve_run(RUN) == resolution


@pytest.mark.parametrize(
    ("parts", "error", "code"),
    [
        pytest.param(
            _completed(reconcile=EV.reconcile("c1", payload_operation_id="toolop_unknown")),
            RecoveryBundleRejectedError,
            "operation_identity_conflict",
            id="reconcile-for-an-unknown-operation",
        ),
        pytest.param(
            _completed(
                outcome={
                    **EV.bound_response("c1", "Write", "ok"),
                    "refs": {"operationId": OP, "toolCallId": "c2"},
                }
            ),
            ToolLedgerRejectionError,
            "identity_conflict",
            id="outcome-refs",
        ),
        pytest.param(
            _completed(outcome=EV.bound_response("c2", "Write", "ok", event_id=OUTCOME_ID)),
            ToolLedgerRejectionError,
            "orphan_response",
            id="outcome-for-another-call",
        ),
        pytest.param(
            _completed(reconcile={**EV.reconcile("c1"), "id": SPINE.fact_id("c1", "dispatch")}),
            EventIdConflictError,
            "event_id_conflict",
            id="id-of-a-committed-event",
        ),
    ],
)
def test_bundles_that_would_corrupt_the_ledger_are_refused_by_the_transition_validator(
    store_app: RuntimeApplication, parts: dict[str, Any], error: type[MakaError], code: str
) -> None:
    """Bundle members that would introduce a resolver issue (or reuse a committed id with other
    content) are refused before bundle validation, with the issue's code."""
    prepared(store_app)
    refused(store_app, lambda: bundle(store_app, parts), error, code)
    assert [op.state for op in store_app.tool_journal.tool_operations(RUN)] == ["prepared"]


def _second_operation(app: RuntimeApplication) -> None:
    app.tool_journal.commit_tool_prepared(
        RUN, EV.call("c2", "Write", WRITE_ARGS), recovery_mode="reconcile"
    )


@pytest.mark.parametrize("slot", ["reconcile", "decision"])
def test_payload_naming_another_operation_is_operation_identity_conflict(
    store_app: RuntimeApplication, slot: str
) -> None:
    """A recovery fact bound (refs) to c1 whose payload names the other prepared operation c2 is
    ``operation_identity_conflict`` (tool-journal.md#bundle-codes), and nothing is written."""
    prepared(store_app)
    _second_operation(store_app)
    parts = EV.completed_bundle("c1", "Write", "ok")
    if slot == "reconcile":
        parts["reconcile"] = EV.reconcile("c1", payload_operation_id=SPINE.operation_id("c2"))
    else:
        parts["decision"] = EV.completed_decision(
            "c1",
            evidence=COMPLETED_EVIDENCE,
            outcome_event_id=OUTCOME_ID,
            payload_operation_id=SPINE.operation_id("c2"),
        )
    refused(
        store_app,
        lambda: bundle(store_app, parts),
        RecoveryBundleRejectedError,
        "operation_identity_conflict",
    )


def test_facts_bound_to_another_operation_are_recovery_fact_identity_conflict(
    store_app: RuntimeApplication,
) -> None:
    """A valid bundle for c1 submitted under operation c2: ``recovery_fact_identity_conflict``."""
    prepared(store_app)
    _second_operation(store_app)
    refused(
        store_app,
        lambda: bundle(
            store_app, EV.completed_bundle("c1", "Write", "ok"), SPINE.operation_id("c2")
        ),
        RecoveryBundleRejectedError,
        "recovery_fact_identity_conflict",
    )


def test_facts_bound_to_another_operation_are_refused(store_app: RuntimeApplication) -> None:
    """Whatever the exact code, a bundle submitted under another operation's id is refused and
    writes nothing (both operations stay ``prepared``)."""
    prepared(store_app)
    _second_operation(store_app)
    before = store_snapshot(store_app)
    with pytest.raises(RecoveryBundleRejectedError):
        bundle(store_app, EV.completed_bundle("c1", "Write", "ok"), SPINE.operation_id("c2"))
    assert store_snapshot(store_app) == before
    assert [op.state for op in store_app.tool_journal.tool_operations(RUN)] == [
        "prepared",
        "prepared",
    ]
