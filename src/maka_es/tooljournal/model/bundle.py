"""The one recovery-bundle validator (tool-journal.md#bundle-codes), for command and resolver.

Why one validator: the Run's recovery-bundle command and the RecoveryResolver's read-side
interpretation must name the same defect with the same code, or a bundle the command accepted
could read back as corruption (or the reverse). Both therefore run the ordered checks of
:data:`BUNDLE_CHECKS`, first failing wins:

* the resolver (every rebuild) runs them all on the committed facts, between the shape check
  (0) and the physical-order check (16) that only the scan can judge (:func:`interpret_bundle`);
* the command runs, on the facts as the caller declared them and *before* the scanner judges
  the write, the checks marked ``before_scan`` (the dispatch's recovery mode, the two facts'
  kinds, their refs binding and payload operation ids). The envelope checks (lane, spine,
  session) are left to the scanner and the write rules, which refuse those with their own
  codes, and the rest to the interpretation of the prospective ledger
  (index.md#od-16 explains why the command checks these earlier than the reference does).

Pure: it reads events, never the store.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from maka_es.wire.codec import canonical_args_hash
from maka_es.wire.events import (
    RECONCILE_RESULT_KIND,
    RECOVERY_DECISION_KIND,
    CompletedDecisionPayload,
    ParkedDecisionPayload,
    ReconcileResultPayload,
    RuntimeEvent,
    ToolDispatch,
    classify_lane,
)
from maka_es.wire.facts import PARKED_REASON_FOR_OBSERVATION, ParkedReason

__all__ = [
    "BUNDLE_CHECKS",
    "BundleCheck",
    "BundleCode",
    "BundleFacts",
    "BundleInterpretation",
    "first_bundle_problem",
    "hash_or_none",
    "interpret_bundle",
]

#: Every bundle validation code, in check order (tool-journal.md#bundle-codes).
BundleCode = Literal[
    "recovery_fact_shape_conflict",
    "call_identity_conflict",
    "canonical_args_hash_conflict",
    "dispatch_identity_conflict",
    "recovery_mode_unsupported",
    "reconcile_fact_invalid",
    "decision_fact_invalid",
    "recovery_fact_identity_conflict",
    "operation_identity_conflict",
    "outcome_required",
    "outcome_identity_conflict",
    "outcome_not_successful",
    "outcome_reference_conflict",
    "reconcile_decision_conflict",
    "outcome_for_parked",
    "evidence_order_conflict",
    "event_order_conflict",
]


@dataclass(frozen=True, slots=True)
class BundleInterpretation:
    """Read-side reading of one operation's recovery facts (tool-journal.md#bundles).

    ``kind`` is ``absent`` (no recovery facts), ``valid`` (then ``disposition`` and
    ``reason_code`` come from the decision) or ``corruption`` (then ``code`` says why).
    """

    kind: Literal["absent", "valid", "corruption"]
    code: BundleCode | None = None
    disposition: Literal["completed", "parked"] | None = None
    reason_code: Literal["reconcile_matches_expected_state"] | ParkedReason | None = None


ABSENT = BundleInterpretation("absent")


@dataclass(frozen=True, slots=True)
class BundleFacts:
    """One operation's recovery bundle, each event in the role the bundle gives it.

    ``operation_id``, ``tool_call_id`` and ``tool_name`` are the operation's identity as the
    ledger established it at T1; every fact must agree with them. ``call`` is ``None`` only
    when the ledger has no call for the operation (then the bundle cannot be valid).
    """

    operation_id: str
    tool_call_id: str
    tool_name: str
    call: RuntimeEvent | None
    dispatch: RuntimeEvent
    reconcile: RuntimeEvent
    decision: RuntimeEvent
    outcome: RuntimeEvent | None

    @property
    def dispatch_payload(self) -> ToolDispatch | None:
        return self.dispatch.actions.tool_dispatch if self.dispatch.actions else None

    @property
    def reconcile_payload(self) -> ReconcileResultPayload | None:
        fact = self.reconcile.actions.tool_recovery if self.reconcile.actions else None
        if fact is None or fact.kind != RECONCILE_RESULT_KIND:
            return None
        payload = fact.payload
        return payload if isinstance(payload, ReconcileResultPayload) else None

    @property
    def decision_payload(self) -> CompletedDecisionPayload | ParkedDecisionPayload | None:
        fact = self.decision.actions.tool_recovery if self.decision.actions else None
        if fact is None or fact.kind != RECOVERY_DECISION_KIND:
            return None
        payload = fact.payload
        if isinstance(payload, CompletedDecisionPayload | ParkedDecisionPayload):
            return payload
        return None

    def on_spine(self, event: RuntimeEvent) -> bool:
        """Committed (not partial) on the dispatch's invocation, run and turn."""
        dispatch = self.dispatch
        return not event.partial and (event.invocation_id, event.run_id, event.turn_id) == (
            dispatch.invocation_id,
            dispatch.run_id,
            dispatch.turn_id,
        )

    def in_session(self, event: RuntimeEvent) -> bool:
        return self.call is not None and event.session_id == self.call.session_id

    def bound(self, event: RuntimeEvent) -> bool:
        """The event's refs name this operation and its call."""
        refs = event.refs
        return (
            refs is not None
            and refs.operation_id == self.operation_id
            and refs.tool_call_id == self.tool_call_id
        )

    def expected_evidence(self) -> list[str]:
        """``[call, dispatch, reconcile]`` plus the outcome for a completed bundle."""
        call_id = self.call.id if self.call is not None else ""
        evidence = [call_id, self.dispatch.id, self.reconcile.id]
        if self.outcome is not None and isinstance(self.decision_payload, CompletedDecisionPayload):
            evidence.append(self.outcome.id)
        return evidence


def hash_or_none(tool_name: str, args: object) -> str | None:
    """The canonical args hash, or ``None`` when the args cannot authenticate a T1 fact."""
    try:
        return canonical_args_hash(tool_name, args)
    except (ValueError, TypeError, RecursionError):  # NonStrictJsonError is a ValueError
        return None


# -- the checks, each true when the bundle FAILS it ---------------------------------------------


def _call_identity_broken(b: BundleFacts) -> bool:
    call = b.call.function_call if b.call is not None else None
    return (
        b.call is None
        or call is None
        or call.id != b.tool_call_id
        or call.name != b.tool_name
        or classify_lane(b.call).is_conflict
        or not b.on_spine(b.call)
    )


def _args_hash_broken(b: BundleFacts) -> bool:
    call = b.call.function_call if b.call is not None else None
    dispatch = b.dispatch_payload
    if call is None or dispatch is None:
        return True
    return hash_or_none(call.name, call.args) != dispatch.canonical_args_hash


def _dispatch_identity_broken(b: BundleFacts) -> bool:
    dispatch = b.dispatch_payload
    return (
        dispatch is None
        or dispatch.operation_id != b.operation_id
        or dispatch.provider_tool_call_id != b.tool_call_id
        or dispatch.tool_name != b.tool_name
        or classify_lane(b.dispatch).is_conflict
        or not b.on_spine(b.dispatch)
        or not b.in_session(b.dispatch)
        or not b.bound(b.dispatch)
    )


def _mode_unsupported(b: BundleFacts) -> bool:
    dispatch = b.dispatch_payload
    return dispatch is None or dispatch.recovery_mode != "reconcile"


def _facts_unbound(b: BundleFacts) -> bool:
    return not (b.bound(b.reconcile) and b.bound(b.decision))


def _facts_off_envelope(b: BundleFacts) -> bool:
    return any(
        classify_lane(event).is_conflict or not b.on_spine(event) or not b.in_session(event)
        for event in (b.reconcile, b.decision)
    )


def _payload_names_another_operation(b: BundleFacts) -> bool:
    reconcile, decision = b.reconcile_payload, b.decision_payload
    return (
        reconcile is None
        or decision is None
        or reconcile.operation_id != b.operation_id
        or decision.operation_id != b.operation_id
    )


def _completed(b: BundleFacts) -> bool:
    return isinstance(b.decision_payload, CompletedDecisionPayload)


def _outcome_missing(b: BundleFacts) -> bool:
    return _completed(b) and b.outcome is None


def _outcome_identity_broken(b: BundleFacts) -> bool:
    outcome_event = b.outcome
    if not _completed(b) or outcome_event is None:
        return False
    outcome = outcome_event.function_response
    return (
        not b.in_session(outcome_event)
        or classify_lane(outcome_event).is_conflict
        or not b.on_spine(outcome_event)
        or outcome is None
        or outcome.id != b.tool_call_id
        or outcome.name != b.tool_name
        or not b.bound(outcome_event)
    )


def _outcome_failed(b: BundleFacts) -> bool:
    outcome = b.outcome.function_response if b.outcome is not None else None
    return _completed(b) and outcome is not None and outcome.is_error is True


def _outcome_reference_broken(b: BundleFacts) -> bool:
    decision = b.decision_payload
    return (
        isinstance(decision, CompletedDecisionPayload)
        and b.outcome is not None
        and decision.outcome_event_id != b.outcome.id
    )


def _observation_mismatch(b: BundleFacts) -> bool:
    """The decision does not follow from the observation (tool-journal.md#bundles table)."""
    reconcile, decision = b.reconcile_payload, b.decision_payload
    if reconcile is None or decision is None:
        return True
    if isinstance(decision, CompletedDecisionPayload):
        return reconcile.observation != "matches_expected_state"
    if b.outcome is not None:
        return False  # a parked decision with an outcome is the next check's code
    return decision.reason_code != PARKED_REASON_FOR_OBSERVATION.get(reconcile.observation)


def _outcome_for_parked(b: BundleFacts) -> bool:
    return not _completed(b) and b.outcome is not None


def _evidence_mismatch(b: BundleFacts) -> bool:
    decision = b.decision_payload
    return decision is None or list(decision.evidence_event_ids) != b.expected_evidence()


@dataclass(frozen=True, slots=True)
class BundleCheck:
    """One row of the validation table: its code, the failing predicate, and whether the
    command runs it on the declared facts before the scanner judges the write."""

    code: BundleCode
    fails: Callable[[BundleFacts], bool]
    before_scan: bool = False


#: Checks 1-15 of tool-journal.md#bundle-codes in order (0 and 16 need the scan; see
#: :func:`interpret_bundle`). Code 7 has two rows: the refs binding (judged by the command
#: before the scan) and the envelope (lane, spine, session; judged after it).
BUNDLE_CHECKS: tuple[BundleCheck, ...] = (
    BundleCheck("call_identity_conflict", _call_identity_broken),
    BundleCheck("canonical_args_hash_conflict", _args_hash_broken),
    BundleCheck("dispatch_identity_conflict", _dispatch_identity_broken),
    BundleCheck("recovery_mode_unsupported", _mode_unsupported, before_scan=True),
    BundleCheck("reconcile_fact_invalid", lambda b: b.reconcile_payload is None, True),
    BundleCheck("decision_fact_invalid", lambda b: b.decision_payload is None, True),
    BundleCheck("recovery_fact_identity_conflict", _facts_unbound, before_scan=True),
    BundleCheck("recovery_fact_identity_conflict", _facts_off_envelope),
    BundleCheck("operation_identity_conflict", _payload_names_another_operation, True),
    BundleCheck("outcome_required", _outcome_missing),
    BundleCheck("outcome_identity_conflict", _outcome_identity_broken),
    BundleCheck("outcome_not_successful", _outcome_failed),
    BundleCheck("outcome_reference_conflict", _outcome_reference_broken),
    BundleCheck("reconcile_decision_conflict", _observation_mismatch),
    BundleCheck("outcome_for_parked", _outcome_for_parked),
    BundleCheck("evidence_order_conflict", _evidence_mismatch),
)


def first_bundle_problem(
    bundle: BundleFacts, *, stage: Literal["declared", "committed"] = "committed"
) -> BundleCode | None:
    """The first failing check's code (``None``: every check passes).

    ``declared``: only the checks the command runs before the scanner (``before_scan``);
    ``committed``: all of them, as the read side interprets a committed bundle."""
    for check in BUNDLE_CHECKS:
        if (stage == "committed" or check.before_scan) and check.fails(bundle):
            return check.code
    return None


def interpret_bundle(
    *,
    operation_id: str | None,
    tool_call_id: str,
    tool_name: str | None,
    call: RuntimeEvent | None,
    dispatch: RuntimeEvent | None,
    reconciles: Sequence[RuntimeEvent],
    decisions: Sequence[RuntimeEvent],
    outcome: RuntimeEvent | None,
    position: Callable[[str], int],
) -> BundleInterpretation:
    """How the recovery facts the scan attached to one operation read (codes 0-16).

    ``position`` gives an event id's physical index in the ledger (for the order check)."""
    if not reconciles and not decisions:
        return ABSENT
    dispatch_payload = dispatch.actions.tool_dispatch if dispatch and dispatch.actions else None
    if (
        len(reconciles) != 1
        or len(decisions) != 1
        or call is None
        or dispatch is None
        or not operation_id
        or dispatch_payload is None
    ):
        return BundleInterpretation("corruption", code="recovery_fact_shape_conflict")
    bundle = BundleFacts(
        operation_id=operation_id,
        tool_call_id=tool_call_id,
        tool_name=tool_name or dispatch_payload.tool_name,
        call=call,
        dispatch=dispatch,
        reconcile=reconciles[0],
        decision=decisions[0],
        outcome=outcome,
    )
    code = first_bundle_problem(bundle)
    if code is not None:
        return BundleInterpretation("corruption", code=code)
    order = [call, dispatch, bundle.reconcile, *([outcome] if outcome else []), bundle.decision]
    positions = [position(event.id) for event in order]
    if any(later <= earlier for earlier, later in itertools.pairwise(positions)):
        return BundleInterpretation("corruption", code="event_order_conflict")
    decision = bundle.decision_payload
    assert decision is not None  # check 6 passed
    return BundleInterpretation(
        "valid", disposition=decision.disposition, reason_code=decision.reason_code
    )
