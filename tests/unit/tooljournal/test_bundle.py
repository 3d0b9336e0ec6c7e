"""The one recovery-bundle validator (``maka_es.tooljournal.model.bundle``): its table is the one of
docs/reference/tool-journal.md#bundle-codes, and the Run's bundle command and the resolver's
read side give the same verdict and the same code for the same bundle."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es.errors import MakaError, RecoveryBundleRejectedError
from maka_es.ledger.model.run import ToolCommandDecision
from maka_es.tooljournal.model.bundle import BUNDLE_CHECKS, BundleCode
from maka_es.tooljournal.model.resolver import ResolverState
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import Observation, bound_response
from tests.unit.ledger.support import bad_bundles, bundle, commit, op_of, prepared, with_changes


def test_the_checks_follow_the_documented_code_order() -> None:
    documented = list(typing.get_args(BundleCode))
    table = list(dict.fromkeys(check.code for check in BUNDLE_CHECKS))
    # 0 (shape) and 16 (physical order) need the scan; everything between is the table
    assert [documented[0], *table, documented[-1]] == documented


def test_the_command_runs_the_documented_checks_before_the_scan() -> None:
    assert [check.code for check in BUNDLE_CHECKS if check.before_scan] == [
        "recovery_mode_unsupported",
        "reconcile_fact_invalid",
        "decision_fact_invalid",
        "recovery_fact_identity_conflict",
        "operation_identity_conflict",
    ]


def _payload(event: RuntimeEvent, **changes: Any) -> RuntimeEvent:
    wire = event.to_wire()
    wire["actions"]["toolRecovery"]["payload"].update(changes)
    return RuntimeEvent.model_validate(wire)


#: a defect is drawn in about one case out of four, so that valid bundles and single defects
#: (each with its own code) are common, not only pile-ups of several defects
_rarely = st.sampled_from([False, False, False, True])


@st.composite
def bundles(draw: st.DrawFn, call_event: RuntimeEvent) -> dict[str, Any]:
    """A bundle with any mix of defects, its facts still routed to their slots by kind."""
    observation: Observation = draw(st.sampled_from(typing.get_args(Observation)))
    parts = bundle(call_event, observation)
    completed = bundle(call_event)
    outcome_choice = draw(st.sampled_from(["as_built"] * 5 + ["none", "ok", "error"]))
    if outcome_choice != "as_built":
        parts["outcome"] = {
            "none": None,
            "ok": completed["outcome"],
            "error": bound_response(
                call_event, op_of(call_event), ts=3000, result="x", is_error=True
            ),
        }[outcome_choice]
    decision = parts["decision_event"]
    payload = decision.to_wire()["actions"]["toolRecovery"]["payload"]
    evidence = list(payload["evidenceEventIds"])
    if draw(_rarely):
        evidence = draw(st.permutations(evidence))
    if draw(_rarely) and len(evidence) > 1:
        evidence = evidence[:-1]
    changes: dict[str, Any] = {"evidenceEventIds": evidence}
    if payload["disposition"] == "completed" and draw(_rarely):
        changes["outcomeEventId"] = "elsewhere"
    if payload["disposition"] == "parked" and draw(_rarely):
        changes["reasonCode"] = "reconcile_unreadable"
    parts["decision_event"] = _payload(decision, **changes)
    for slot in ("reconcile", "decision_event"):
        if draw(_rarely):
            refs = parts[slot].to_wire()["refs"]
            parts[slot] = with_changes(parts[slot], refs={**refs, "toolCallId": "c9"})
    return parts


@given(st.data(), st.sampled_from(["reconcile"] * 5 + ["never_auto_retry"]))
def test_the_command_accepts_exactly_what_the_resolver_reads_as_valid(
    data: st.DataObject, mode: str
) -> None:
    run, call_event, _ = prepared(mode)
    parts = data.draw(bundles(call_event))
    op = op_of(call_event)
    facts = [
        parts["reconcile"],
        *([parts["outcome"]] if parts["outcome"] else []),
        parts["decision_event"],
    ]
    state = ResolverState()
    state.feed_all(run.events)
    issues = state.feed_all(facts)
    reading = state.bundle_interpretation(op)
    assert reading is not None
    verdict: ToolCommandDecision | MakaError
    try:
        verdict = run.decide_recovery_bundle(op, **parts, committed_at=3000)
    except MakaError as error:
        verdict = error
    if isinstance(verdict, RecoveryBundleRejectedError):
        assert issues or reading.kind == "corruption"
        if not issues:  # the read side names the very defect the command refused
            assert reading.code == verdict.code
    elif isinstance(verdict, MakaError):
        assert issues  # any other refusal is a scanner issue the bundle would introduce
    else:
        assert not issues
        assert reading.kind == "valid"
        commit(run, verdict.facts)
        assert run.resolver.bundle_interpretation(op) == reading


@pytest.mark.parametrize("mode", ["reconcile", "never_auto_retry"])
def test_a_valid_bundle_reads_back_valid(mode: str) -> None:
    run, call_event, _ = prepared(mode)
    parts = bundle(call_event)
    state = ResolverState()
    state.feed_all([*run.events, parts["reconcile"], parts["outcome"], parts["decision_event"]])
    reading = state.bundle_interpretation(op_of(call_event))
    assert reading is not None
    expected: BundleCode | None = None if mode == "reconcile" else "recovery_mode_unsupported"
    assert reading.code == expected


#: Bad bundles whose facts the scan attaches to the operation in the slots the caller gave
#: (not a swapped kind, not a payload naming another operation): for these, the read side of
#: the committed bundle names the same code the command refused it with.
SAME_SLOT_CASES = [
    "reconcile-refs",
    "no-outcome",
    "error-outcome",
    "outcome-reference",
    "parked-with-outcome",
    "wrong-parked-reason",
    "evidence",
]


@pytest.mark.parametrize("case", SAME_SLOT_CASES)
def test_command_and_read_side_name_the_same_code(case: str) -> None:
    run, call_event, _ = prepared()
    parts, code = bad_bundles(call_event)[case]
    with pytest.raises(RecoveryBundleRejectedError) as refusal:
        run.decide_recovery_bundle(op_of(call_event), **parts, committed_at=3000)
    state = ResolverState()
    state.feed_all(run.events)
    outcome = [parts["outcome"]] if parts["outcome"] is not None else []
    assert state.feed_all([parts["reconcile"], *outcome, parts["decision_event"]]) == ()
    reading = state.bundle_interpretation(op_of(call_event))
    assert reading is not None
    assert (refusal.value.code, reading.code) == (code, code)
    assert state.resolution().decisions[0].reason == "recovery_fact_corruption"
