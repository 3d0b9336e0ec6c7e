"""Registered codes of plans and of execution revalidation.

Park reasons are a plan's ``rejectionReasons`` (a Phase 0 ``ResumePlan`` or a
``ContinuationPlan``; Phase 0 only emits the first two); diagnostics are ``diagnostics[].code``
values that are never a reason themselves (plans, and ``CompositeReplay.diagnostics``);
revalidation codes are ``ContinuationRevalidationError.code``, raised by
``execute_continuation`` before anything is written. Where each fires:
docs/reference/codes.md#park-reasons, docs/reference/codes.md#diagnostic-codes,
docs/reference/codes.md#revalidation-codes.
"""

from __future__ import annotations

from maka_es import errors as e
from maka_es.codes.model import group

OPERATOR = "Do not continue this lineage: an operator inspects the ledger; start a fresh session."
REPLAN = "Fix the named fact, then plan again; nothing was written."
UNREPLAYABLE = "This history cannot be replayed to a provider: start a new turn instead."
LINEAGE = "The lineage is not one trustworthy chain: do not continue it; an operator inspects it."
REPLAN_NOW = "Nothing was written: plan again now (plan_continuation) and act on the new plan."

PARK_REASONS = group(
    "park_reason",
    REPLAN,
    {
        "runtime_offset_mismatch": (
            "The committed high-water is not the expected one.",
            "Your view is stale: re-read the run and plan again with the current high-water.",
        ),
        "dangling_tool_state": (
            "A tool fact is unsettled, unproven or contradictory (see the tool diagnostics).",
            "Settle what can be (ToolRuntime.recover); corrupt or parked operations need an "
            "operator's decision. Then plan again.",
        ),
        "pending_permission": (
            "A permission request has no later decision, accepted answer or closure.",
            "Answer or close the permission request, then plan again.",
        ),
        "workspace_identity_mismatch": (
            "The source's and the current workspace identities differ.",
            "Run the host in the source's workspace, or start a fresh session here.",
        ),
        "background_operation_pending": (
            "A shell, child run or background capability is still running.",
            "Wait for or stop the background work, then plan again.",
        ),
        "tool_catalog_mismatch": (
            "A tool used in the replayed history is no longer available (detail).",
            "Make the tools available again, or start a fresh session.",
        ),
        "runtime_ledger_unreadable": (
            "The source ledger cannot be read or trusted as a boundary (read error, empty, not "
            "one immutable chain, or a replay blocked by corrupt or unsettled tool facts).",
            "Read the diagnostics: settle unsettled operations and plan again; anything else "
            "needs an operator (start a fresh session meanwhile).",
        ),
        "terminal_repair_failed": (
            "Header and ledger do not form one consistent terminal boundary.",
            "Run startup recovery (recover()) and plan again; if it persists, an operator.",
        ),
        "workspace_cwd_mismatch": (
            "The normalised cwd changed (cwd_policy strict, the default).",
            "Run from the source's cwd, or opt into cwd_policy relocatable.",
        ),
        "runtime_ledger_empty": (
            "The source has no events.",
            "Nothing to continue: start a new turn.",
        ),
        "runtime_identity_mismatch": (
            "Events of two execution identities, another session's or run's ledger, or an "
            "ancestor that no longer holds its recorded boundary.",
            OPERATOR,
        ),
        "continuation_identity_reused": (
            "The continuation would reuse the source's invocation, run or turn id.",
            "Mint fresh invocation, run and turn ids and plan again.",
        ),
        "provider_resume_head_unsupported": (
            "The replayed history does not start with user input.",
            UNREPLAYABLE,
        ),
        "provider_resume_boundary_unsupported": (
            "The replayed history does not end with user input or a tool result.",
            UNREPLAYABLE,
        ),
        "provider_replay_non_suffix_gap": (
            "A call without a result is followed by more history: not an interrupted suffix.",
            OPERATOR,
        ),
        "provider_replay_unsupported": (
            "The history cannot be projected for the provider (a partial row, a wrong role, "
            "unsupported content, an unmatched or misnamed result).",
            UNREPLAYABLE,
        ),
        "runtime_lineage_cycle": ("A run appears twice in the lineage.", LINEAGE),
        "runtime_lineage_depth_exceeded": (
            "The lineage would exceed 64 segments.",
            "Do not continue this lineage further: start a fresh session.",
        ),
        "runtime_lineage_missing": ("An ancestor run cannot be read.", LINEAGE),
        "runtime_lineage_start_mismatch": (
            "A continuation's start fact does not match its header's source.",
            LINEAGE,
        ),
        "runtime_lineage_replay_mismatch": (
            "An ancestor no longer replays to the digests its child's start recorded.",
            LINEAGE,
        ),
        "runtime_lineage_claim_mismatch": (
            "A lineage edge has no matching durable claim. Declared, never raised by maka_es.",
            LINEAGE,
        ),
        "source_prefix_digest_mismatch": (
            "An ancestor's prefix digest differs from the one its child recorded.",
            LINEAGE,
        ),
        "workspace_ref_missing": ("A workspace checkpoint has no ref.", REPLAN),
        "checkpoint_restore_failed": (
            "A workspace checkpoint was not restored.",
            "Restore the checkpoint (detail.workspaceRef), then plan again.",
        ),
        "source_run_unreadable": (
            "The source run's header cannot be read.",
            "Retry when the store is readable; if it persists, inspect the store.",
        ),
        "continuation_already_exists": (
            "This boundary was already continued and that continuation ended consistently.",
            "Do not continue it again: continue from the continuation's run, if anything.",
        ),
        "continuation_authority_unavailable": (
            "The claim store cannot be read.",
            "Retry when the store is readable.",
        ),
        "continuation_claim_repair_required": (
            "A claim or continuation of this boundary is in an intermediate state.",
            "Run startup recovery (recover()), then plan again.",
        ),
        "continuation_started_indeterminate": (
            "A continuation of this boundary started and has no terminal: its provider may run.",
            "Run startup recovery (recover()) and plan again: it ends the start once its owner "
            "is gone (this host restarted, or its lease expired); a live owner's is left alone.",
        ),
        "continuation_end_in_progress": (
            "maka_es only, transient: a claimed continuation's live owner is between end_run's "
            "two saves (terminal event durable, header not yet).",
            "Plan again shortly: nothing needs repair; the answer becomes "
            "continuation_already_exists once the header is saved.",
        ),
        "workspace_identity_missing": (
            "A workspace identity is unknown (the source header's, or either side of gate j).",
            "Configure a HostInspector that resolves the workspace marker, then plan again.",
        ),
        "safety_observation_unavailable": (
            "No host inspector is configured, or it raised.",
            "Configure a working HostInspector (LocalHostInspector), then plan again.",
        ),
        "resume_feature_disabled": (
            "MAKA_RUNTIME_SAFE_BOUNDARY_RESUME is not exactly 1.",
            "Set it to 1 if this host means to continue runs; otherwise this is the answer.",
        ),
        "resume_candidate_missing": (
            "The session does not exist or has no failed or cancelled session-inline run.",
            "Nothing to continue: start a new turn.",
        ),
    },
)

TOOL_DIAGNOSTIC = (
    "Explains dangling_tool_state: settle the operation it names (ToolRuntime.recover, or an "
    "operator), then plan again."
)
REPLAY_DIAGNOSTIC = "Explains provider_replay_unsupported: this history cannot be replayed."

DIAGNOSTICS = (
    *group(
        "diagnostic",
        TOOL_DIAGNOSTIC,
        {
            "pending_tool_result": "A tool call (visible, or hidden nested) has no result.",
            "tool_not_dispatched": "A call under the declared protocol never crossed T1.",
            "tool_recovery_parked": "The operation was settled by a parked recovery decision.",
            "tool_recovery_corruption": (
                "The operation's facts contradict each other, or a dispatch has no call.",
                "Explains dangling_tool_state (a plan) or runtime_ledger_unreadable (a replay): "
                "an operator must decide.",
            ),
            "tool_ledger_corruption": "A resolver issue not named by its own code (issueCode).",
            "duplicate_event_id": "An event id occurs twice in the ledger.",
            "semantic_lane_conflict": "An event fits no tool lane cleanly.",
            "protocol_marker_invalid": "A tool-boundary marker is misplaced or unknown.",
            "unmatched_tool_result": (
                "A result without a call (Phase 0, or a segment's replay projection).",
                "Explains dangling_tool_state (a plan) or provider_replay_unsupported (a replay).",
            ),
            "tool_name_mismatch": "A result names another tool than its call.",
            "workspace_location_changed": (
                "The cwd changed under cwd_policy relocatable (sourceCwd, currentCwd).",
                "Informational: the plan continues in the new location; rebuild cwd-bound paths.",
            ),
            "operator_attested": (
                "An operator attested this operation's outcome (detail: actor, note, time; "
                "ADR 0022).",
                "Informational: the outcome is the operator's word, not an observation.",
            ),
        },
    ),
    *group(
        "diagnostic",
        REPLAY_DIAGNOSTIC,
        {
            "tool_recovery_unsettled": (
                "Composite replay: an indeterminate or parked operation blocks a segment.",
                "Explains runtime_ledger_unreadable: settle the operation, then plan again.",
            ),
            "partial_skipped": "Composite replay: a partial row in a segment's history.",
            "unsupported_role": "Composite replay: content in a role that cannot carry it.",
            "unsupported_content": "Composite replay: content that cannot be replayed.",
            "tool_id_mismatch": "Composite replay: a result names another tool than its call.",
            "unmatched_tool_call": (
                "Composite replay: a call without a result is followed by more history.",
                "Explains provider_replay_non_suffix_gap: an operator inspects the ledger.",
            ),
        },
    ),
)

REVALIDATION = group(
    "revalidation",
    REPLAN_NOW,
    {
        "continuation_not_approved": (
            "The plan is not continue.",
            "Only a continue plan can be executed; act on the plan's reasons instead.",
        ),
        "continuation_run_active": (
            "Another run of the session is not terminal.",
            "Wait for the live run to end (or recover() after a crash), then plan again.",
        ),
        "source_identity_changed": "The source cannot be read, or its ids or segments changed.",
        "source_terminal_changed": "The source no longer has one terminal matching its header.",
        "source_cwd_changed": "The cwd changed (cwd_policy strict).",
        "source_high_water_changed": "The source's event count differs from the plan's.",
        "source_ledger_identity_changed": "A source event has another execution identity.",
        "source_replay_changed": "The lineage no longer replays to the plan's context.",
        "safety_observation_unavailable": (
            "No host inspector is configured, or it raised.",
            "Fix the HostInspector, then plan again.",
        ),
        "workspace_identity_changed": "The workspace identity differs from the plan's snapshot.",
        "background_operation_started": "A background operation is running now.",
        "tool_catalog_changed": "The set of available tools differs from the plan's.",
        "workspace_checkpoint_changed": "The planned checkpoint is gone or changed.",
        "continuation_claim_conflict": (
            "The boundary is claimed or continued, or another claimer won the race.",
            "Another resumer owns it: do not retry; plan again to see its continuation.",
        ),
        "target_run_conflict": (
            "The target run id already exists.",
            "Mint fresh target ids and plan again.",
        ),
    },
    e.ContinuationRevalidationError,
)
