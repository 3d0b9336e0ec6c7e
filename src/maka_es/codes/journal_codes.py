"""Registered codes of the tool journal's refusals: RecoveryResolver issues and bundle checks.

A store refuses a tool-bearing write that would introduce a resolver issue
(``ToolLedgerRejectionError``, ``code`` = the issue) and a recovery bundle that fails validation
(``RecoveryBundleRejectedError``, ``code`` = the check). The same strings name corruption that is
already committed (``Resolution.issues[].code``; a bundle's ``recovery_fact_corruption``
decision). Orders and details: docs/reference/tool-journal.md#scanner and
docs/reference/tool-journal.md#bundle-codes.
"""

from __future__ import annotations

from maka_es import errors as e
from maka_es.codes.model import error, group

ISSUE = (
    "Nothing was written and the run stays writable: fix the caller (usually a reused id or a "
    "fact out of order). In Resolution.issues it marks a committed ledger as corrupt."
)
BUNDLE = (
    "Nothing was written and the operation stays unsettled (plans stay blocked): fix the "
    "reconciler or the code that builds the bundle."
)

RESOLVER_ISSUES = group(
    "error",
    ISSUE,
    {
        "protocol_marker_invalid": (
            "A tool-boundary marker after the first event, or a first-event marker with an "
            "unknown value."
        ),
        "duplicate_event_id": "An event id seen before in the run (the event is skipped).",
        "invocation_identity_conflict": "One invocation with two (session, run, turn).",
        "semantic_lane_conflict": "An event breaks the lane rules (the event is skipped).",
        "duplicate_call": "A second call for one (invocationId, providerToolCallId).",
        "duplicate_dispatch": "A second dispatch for one operation.",
        "duplicate_operation": "One operation id bound to two calls.",
        "identity_conflict": "Name, refs or spine of a dispatch, response or call disagree.",
        "orphan_response": "A response without a call.",
        "duplicate_response": "A second response for one operation.",
    },
    e.ToolLedgerRejectionError,
)

SHARED = (
    error(
        "canonical_args_hash_conflict",
        "The call's args do not hash to the dispatch's canonicalArgsHash (a resolver issue, or "
        "bundle check 2).",
        ISSUE,
        e.ToolLedgerRejectionError,
        e.RecoveryBundleRejectedError,
    ),
    error(
        "event_order_conflict",
        "Facts out of causal order: a dispatch before its call, a response before its dispatch, "
        "a recovery fact for an unknown operation, or a bundle not ordered call < dispatch < "
        "reconcile < outcome < decision.",
        ISSUE,
        e.ToolLedgerRejectionError,
        e.RecoveryBundleRejectedError,
    ),
)

BUNDLE_CODES = group(
    "error",
    BUNDLE,
    {
        "recovery_fact_shape_conflict": (
            "Not exactly one reconcile and one decision, or no call and dispatch to attach to."
        ),
        "call_identity_conflict": "The call is not a valid function_call of this operation.",
        "dispatch_identity_conflict": (
            "The dispatch names another operation, call or tool, or breaks its lane, spine or refs."
        ),
        "recovery_mode_unsupported": (
            "The dispatch's recoveryMode is not reconcile.",
            "Only reconcile tools get bundles: settle other modes with ToolRuntime.recover, or "
            "leave them to an operator.",
        ),
        "reconcile_fact_invalid": "The reconcile event does not carry a reconcile result.",
        "decision_fact_invalid": "The decision event does not carry a decision.",
        "recovery_fact_identity_conflict": (
            "A recovery fact breaks its lane, spine or session, its refs name another "
            "operation or call, or its event id is already committed."
        ),
        "operation_identity_conflict": "A payload names another operationId.",
        "outcome_required": "A completed decision without an outcome.",
        "outcome_identity_conflict": "The outcome is not this operation's response.",
        "outcome_not_successful": "The outcome has isError: true.",
        "outcome_reference_conflict": "outcomeEventId is not the outcome's id.",
        "reconcile_decision_conflict": "The observation and the decision do not match.",
        "outcome_for_parked": "A parked decision with an outcome.",
        "evidence_order_conflict": "evidenceEventIds differ from the required list.",
    },
    e.RecoveryBundleRejectedError,
)
