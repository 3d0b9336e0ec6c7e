"""Read-side interpretation of recovery bundles (docs/reference/tool-journal.md#bundles) and its
effect on resume plans."""

from __future__ import annotations

from typing import Any

import pytest

from maka_es.resume.plan import build_resume_plan
from maka_es.testing.builders import Events, Spine
from maka_es.tooljournal.model.resolver import ResolverState, resolve_tool_operations
from maka_es.wire.codec import canonical_args_hash
from maka_es.wire.events import RuntimeEvent

EV = Events.decoded(Spine("session-1", "invocation-1", "run-1", "turn-1"), ts=1)

WRITE_ARGS = {"path": "notes.txt", "content": "after"}
EVIDENCE = ["call-event-1", "dispatch-event-1", "reconcile-event-1"]
COMPLETED_EVIDENCE = [*EVIDENCE, "outcome-event-1"]


def call_event() -> RuntimeEvent:
    return EV.call("provider-call-1", "Write", WRITE_ARGS, event_id="call-event-1")


def dispatch_event(recovery_mode: str = "reconcile") -> RuntimeEvent:
    return EV.dispatch(
        "provider-call-1",
        "Write",
        WRITE_ARGS,
        event_id="dispatch-event-1",
        operation_id="operation-1",
        recovery_mode=recovery_mode,
    )


def reconcile_event(observation: str = "matches_expected_state", **kw: Any) -> RuntimeEvent:
    return EV.reconcile(
        "provider-call-1",
        observation,
        event_id="reconcile-event-1",
        operation_id="operation-1",
        **kw,
    )


def outcome_event(is_error: bool = False) -> RuntimeEvent:
    return EV.response(
        "provider-call-1",
        "Write",
        "failed" if is_error else "ok",
        event_id="outcome-event-1",
        is_error=is_error,
        operation_id="operation-1",
    )


def decision_event(
    evidence: list[str] | None = None, outcome_id: str = "outcome-event-1"
) -> RuntimeEvent:
    return EV.completed_decision(
        "provider-call-1",
        evidence=COMPLETED_EVIDENCE if evidence is None else evidence,
        outcome_event_id=outcome_id,
        event_id="decision-event-1",
        operation_id="operation-1",
    )


def parked_event(
    reason_code: str = "reconcile_diverged", evidence: list[str] | None = None
) -> RuntimeEvent:
    return EV.parked_decision(
        "provider-call-1",
        reason_code,
        evidence=EVIDENCE if evidence is None else evidence,
        event_id="decision-event-1",
        operation_id="operation-1",
    )


def completed_bundle() -> list[RuntimeEvent]:
    return [call_event(), dispatch_event(), reconcile_event(), outcome_event(), decision_event()]


def parked_bundle(
    observation: str = "diverged", reason: str = "reconcile_diverged"
) -> list[RuntimeEvent]:
    return [call_event(), dispatch_event(), reconcile_event(observation), parked_event(reason)]


def bundle_code(events: list[RuntimeEvent]) -> str | None:
    state = ResolverState()
    state.feed_all(events)
    interpretation = state.recovery_bundle_interpretations()["operation-1"]
    return interpretation.code if interpretation.kind == "corruption" else interpretation.kind


def test_write_args_hash_matches_frozen_vector() -> None:
    assert canonical_args_hash("Write", WRITE_ARGS) == (
        "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"
    )


def test_valid_completed_bundle() -> None:
    events = completed_bundle()
    resolution = resolve_tool_operations(events)
    assert [d.model_dump(mode="json", by_alias=True) for d in resolution.decisions] == [
        {
            "toolCallId": "provider-call-1",
            "toolName": "Write",
            "operationId": "operation-1",
            "status": "completed",
            "reason": "recovery_bundle_completed",
            "settlementOrigin": "recovery_bundle",
            "callRuntimeEventId": "call-event-1",
            "dispatchRuntimeEventId": "dispatch-event-1",
            "responseRuntimeEventId": "outcome-event-1",
            "responseIsError": False,
        }
    ]
    assert resolution.has_corruption is False
    assert resolution.requires_reconciliation is False
    assert bundle_code(events) == "valid"
    plan = build_resume_plan(events)
    assert plan.disposition == "safe_replay"
    assert [op.status for op in plan.operations] == ["succeeded"]


def test_valid_parked_bundle_is_terminal_and_blocks() -> None:
    events = parked_bundle()
    resolution = resolve_tool_operations(events)
    assert [d.model_dump(mode="json", by_alias=True) for d in resolution.decisions] == [
        {
            "toolCallId": "provider-call-1",
            "toolName": "Write",
            "operationId": "operation-1",
            "status": "parked",
            "reason": "reconcile_diverged",
            "settlementOrigin": "recovery_bundle",
            "callRuntimeEventId": "call-event-1",
            "dispatchRuntimeEventId": "dispatch-event-1",
            "responseRuntimeEventId": None,
            "responseIsError": None,
        }
    ]
    assert resolution.has_corruption is False
    assert resolution.requires_reconciliation is False

    plan = build_resume_plan(events)
    assert plan.disposition == "blocked"
    assert plan.requires_verification is False
    assert plan.directive is None
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert [d.code for d in plan.diagnostics] == ["tool_recovery_parked"]
    assert [op.status for op in plan.operations] == ["parked"]


@pytest.mark.parametrize(
    ("observation", "reason"),
    [
        ("matches_prior_state", "reconcile_matches_prior_state"),
        ("diverged", "reconcile_diverged"),
        ("unreadable", "reconcile_unreadable"),
    ],
)
def test_each_parked_reason_matches_its_observation(observation: str, reason: str) -> None:
    resolution = resolve_tool_operations(parked_bundle(observation, reason))
    assert (resolution.decisions[0].status, resolution.decisions[0].reason) == ("parked", reason)


def _outcome_before_reconcile() -> list[RuntimeEvent]:
    return [call_event(), dispatch_event(), outcome_event(), reconcile_event(), decision_event()]


@pytest.mark.parametrize(
    ("events", "code"),
    [
        pytest.param(
            [
                call_event(),
                dispatch_event(),
                reconcile_event(),
                outcome_event(),
                decision_event(evidence=[*EVIDENCE[:2], "outcome-event-1", EVIDENCE[2]]),
            ],
            "evidence_order_conflict",
            id="wrong-evidence-order",
        ),
        pytest.param(
            [
                call_event(),
                dispatch_event(),
                reconcile_event(),
                outcome_event(),
                decision_event(evidence=EVIDENCE),
            ],
            "evidence_order_conflict",
            id="completed-evidence-without-outcome",
        ),
        pytest.param(_outcome_before_reconcile(), "event_order_conflict", id="wrong-event-order"),
        pytest.param(
            [call_event(), dispatch_event(), reconcile_event()],
            "recovery_fact_shape_conflict",
            id="missing-decision",
        ),
        pytest.param(
            [call_event(), dispatch_event(), parked_event()],
            "recovery_fact_shape_conflict",
            id="missing-reconcile",
        ),
        pytest.param(
            [
                call_event(),
                dispatch_event(),
                reconcile_event("diverged"),
                EV.reconcile(
                    "provider-call-1",
                    "diverged",
                    event_id="reconcile-event-2",
                    operation_id="operation-1",
                ),
                parked_event(),
            ],
            "recovery_fact_shape_conflict",
            id="two-reconciles",
        ),
        pytest.param(
            [
                call_event(),
                dispatch_event(),
                reconcile_event("diverged"),
                outcome_event(),
                decision_event(),
            ],
            "reconcile_decision_conflict",
            id="completed-but-diverged",
        ),
        pytest.param(
            parked_bundle("unreadable", "reconcile_diverged"),
            "reconcile_decision_conflict",
            id="parked-reason-disagrees",
        ),
        pytest.param(
            parked_bundle("matches_expected_state", "reconcile_diverged"),
            "reconcile_decision_conflict",
            id="parked-but-expected-state",
        ),
        pytest.param(
            [
                call_event(),
                dispatch_event("never_auto_retry"),
                reconcile_event(),
                outcome_event(),
                decision_event(),
            ],
            "recovery_mode_unsupported",
            id="non-reconcile-mode",
        ),
        pytest.param(
            [call_event(), dispatch_event(), reconcile_event(), decision_event()],
            "outcome_required",
            id="completed-without-outcome",
        ),
        pytest.param(
            [
                call_event(),
                dispatch_event(),
                reconcile_event(),
                outcome_event(is_error=True),
                decision_event(),
            ],
            "outcome_not_successful",
            id="error-outcome",
        ),
        pytest.param(
            [
                call_event(),
                dispatch_event(),
                reconcile_event(),
                outcome_event(),
                decision_event(outcome_id="some-other-event"),
            ],
            "outcome_reference_conflict",
            id="outcome-reference",
        ),
        pytest.param(
            [
                call_event(),
                dispatch_event(),
                reconcile_event("diverged"),
                outcome_event(),
                parked_event(),
            ],
            "outcome_for_parked",
            id="parked-with-outcome",
        ),
        pytest.param(
            [
                call_event(),
                dispatch_event(),
                reconcile_event(refs={"operationId": "operation-1", "toolCallId": "other"}),
                outcome_event(),
                decision_event(),
            ],
            "recovery_fact_identity_conflict",
            id="reconcile-refs",
        ),
    ],
)
def test_invalid_bundles_are_recovery_fact_corruption(
    events: list[RuntimeEvent], code: str
) -> None:
    assert bundle_code(events) == code
    resolution = resolve_tool_operations(events)
    first = resolution.decisions[0]
    assert (first.status, first.reason) == ("corruption", "recovery_fact_corruption")
    assert first.settlement_origin is None
    assert resolution.issues == ()  # decision-level corruption, not a ledger issue
    assert resolution.has_corruption is True

    plan = build_resume_plan(events)
    assert plan.disposition == "blocked"
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert [d.code for d in plan.diagnostics] == ["tool_recovery_corruption"]


def test_orphan_reconcile_is_top_level_corruption() -> None:
    orphan = EV.reconcile(
        "unknown-provider-call", event_id="orphan-reconcile-event", operation_id="unknown-operation"
    )
    events = [call_event(), outcome_event(), orphan]
    resolution = resolve_tool_operations(events)
    assert resolution.has_corruption is True
    assert resolution.decisions[0].status == "completed"

    plan = build_resume_plan(events)
    assert plan.disposition == "blocked"
    assert plan.rejection_reasons == ("dangling_tool_state",)
    assert [d.code for d in plan.diagnostics] == ["tool_ledger_corruption"]
    assert plan.diagnostics[0].detail == {"issueCode": "event_order_conflict"}
    assert plan.diagnostics[0].event_id == "orphan-reconcile-event"


def test_recovery_facts_before_dispatch_are_orphans() -> None:
    events = [call_event(), reconcile_event(), dispatch_event(), parked_event()]
    resolution = resolve_tool_operations(events)
    assert [(i.code, i.event_id) for i in resolution.issues] == [
        ("event_order_conflict", "reconcile-event-1")
    ]
    # only the decision attached: shape conflict
    assert bundle_code(events) == "recovery_fact_shape_conflict"


def test_no_interpretation_without_recovery_facts() -> None:
    state = ResolverState()
    state.feed_all([call_event(), dispatch_event()])
    assert state.recovery_bundle_interpretations() == {}
