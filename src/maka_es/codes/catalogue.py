"""Every code maka_es emits, with what it means and what a host should do, by family.

Each entry is written once, here; :mod:`maka_es.codes` orders them into the registry and
:mod:`maka_es.codes.places` adds where each one fires. The families, in the order below:

* **refusals** (``MakaError.code``), grouped by the class that raises them. Every refusal is
  raised before anything is written, so "what a host should do" never includes cleaning up a
  half-written command (docs/reference/codes.md#errors, docs/reference/ledger.md#write-rules);
* **the tool journal's refusals**: RecoveryResolver issues and bundle checks. A store refuses a
  tool-bearing write that would introduce a resolver issue (``ToolLedgerRejectionError``) and a
  recovery bundle that fails validation (``RecoveryBundleRejectedError``); the same strings
  name corruption already committed (``Resolution.issues[].code``;
  docs/reference/tool-journal.md#scanner, docs/reference/tool-journal.md#bundle-codes);
* **refusals at the edges**: JSONL ledgers, the workspace, providers, the read model
  (docs/reference/ledger.md#jsonl, docs/reference/continuation.md#workspace-identity,
  docs/reference/tool-journal.md#write-tool, docs/reference/continuation.md#provider-history,
  docs/reference/continuation.md#recovery-status);
* **plans and revalidation**: park reasons are a plan's ``rejectionReasons`` (Phase 0 only emits
  the first two), diagnostics are ``diagnostics[].code`` values that are never a reason
  themselves, and revalidation codes are ``ContinuationRevalidationError.code``, raised by
  ``execute_continuation`` before anything is written (docs/reference/codes.md#park-reasons,
  docs/reference/codes.md#diagnostic-codes).
"""

from __future__ import annotations

from maka_es import errors as e
from maka_es.codes.model import error, group

FIX_CALLER = (
    "Fix the caller: the input is malformed, nothing was written, and it fails again as is."
)
SWITCH = "Never raised with this code; catch the class and switch on the specific code."

WIRE = (
    error(
        "invalid_runtime_event",
        "An event (or a part of it), or an id or open_session argument, is not the exact wire "
        "shape (an id that is no UTF-8 text, or no str); .field names where.",
        FIX_CALLER,
        e.InvalidRuntimeEventError,
    ),
    error(
        "invalid_run_header",
        "A run header is not the exact wire shape, or a run would be created terminal or "
        "without invocationId.",
        FIX_CALLER,
        e.InvalidRunHeaderError,
    ),
    error(
        "invalid_host_config",
        "A HostConfig was built with a missing, unknown or ill-typed field; detail.errors "
        "names each field and pydantic's error type (never the value).",
        FIX_CALLER,
        e.InvalidHostConfigError,
    ),
    error(
        "non_strict_json",
        "A value is not strict JSON (NaN, Infinity, a non-string key, ...); detail.path.",
        FIX_CALLER,
        e.NonStrictJsonError,
    ),
    *group(
        "error",
        FIX_CALLER,
        {
            "codec_input_invalid": (
                "Default of CodecInputError; a specific code replaces it.",
                SWITCH,
            ),
            "prefix_invalid": "A committed prefix cannot be digested (empty, a gap, a partial).",
            "boundary_invalid": "No boundary can be built (no segment, two sessions, bad digest).",
            "tool_identity_invalid": "An operation id or args hash lacks a tool name or call id.",
            "provider_replay_invalid": "An event cannot become a provider replay item.",
        },
        e.CodecInputError,
    ),
    error(
        "invalid_plan_request",
        "A planning request is malformed (e.g. a negative expected high-water); nothing was read.",
        FIX_CALLER,
        e.InvalidPlanRequestError,
    ),
)

BASES = (
    error(
        "maka_error",
        "Default of MakaError, the base of every refusal; raised bare only by the test kit.",
        "Catch MakaError and switch on .code; nothing of the refused command was written.",
        e.MakaError,
    ),
    error(
        "store_refusal",
        "Default of StoreRefusal, the base of every refused store command.",
        SWITCH,
        e.StoreRefusal,
    ),
)


STORE = (
    error(
        "session_not_found",
        "No session has this id.",
        "Open the session first (open_session), or fix the id.",
        e.SessionNotFoundError,
    ),
    error(
        "session_already_exists",
        "A session with this id already exists with another cwd or workspace identity "
        "(detail.fields); reopening with the same ones returns it.",
        "Open it with its own cwd and identity (get_session), or choose another id.",
        e.SessionAlreadyExistsError,
    ),
    error(
        "run_not_found",
        "No run has this id.",
        "Create the run first (create_run), or fix the id.",
        e.RunNotFoundError,
    ),
    error(
        "run_already_exists",
        "A run with this id already exists, created with another header (an exact retry of "
        "its creation answers the run instead).",
        "Read the existing run; a new run needs fresh run, turn and invocation ids.",
        e.RunAlreadyExistsError,
    ),
    error(
        "invocation_spine_conflict",
        "The invocation id already belongs to another (session, run, turn).",
        "Mint a fresh invocation id: one invocation maps to exactly one run and turn.",
        e.InvocationSpineConflictError,
    ),
    error(
        "event_id_conflict",
        "An event id already committed (or seen earlier in the batch) came with other content.",
        "Mint a new id for new content; a retry must resend the same bytes (exact retries pass).",
        e.EventIdConflictError,
        e.JsonlLedgerError,
    ),
    error(
        "event_identity_mismatch",
        "The event's session, run, turn or invocation is not the run's.",
        "Fix the caller: build events from the run's header (maka_es.testing.builders).",
        e.EventIdentityMismatchError,
        e.JsonlLedgerError,
    ),
    error(
        "partial_event_refused",
        "A partial (streaming) event was sent to the immutable ledger.",
        "Keep partials in memory and append only the completed event.",
        e.PartialEventRefusedError,
        e.JsonlLedgerError,
    ),
    error(
        "run_sealed",
        "The run takes no new event: it has its terminal event, or a continuation claimed it.",
        "Do not write to it: write to the run that continues it, or start a new run.",
        e.RunSealedError,
    ),
    error(
        "run_owner_fenced",
        "This host does not own the run: another host took it over after this host's lease "
        "expired (detail.ownerHostId, detail.ownerEpoch), or it is live under another host.",
        "Stop writing to it: its new owner ended or continues it. Heartbeat more often than "
        "the lease duration so a live run is never taken over.",
        e.RunOwnerFencedError,
    ),
    error(
        "terminal_conflict",
        "A second terminal event, a terminal header without its terminal event, or end_run "
        "with a non-terminal event.",
        "End a run only through end_run with one terminal event; read how it already ended.",
        e.TerminalConflictError,
    ),
    error(
        "runtime_offset_mismatch",
        "An append's expected_high_water is not the run's committed event count.",
        "Your view is stale: re-read the run, decide again from its committed prefix, then append.",
        e.RuntimeOffsetMismatchError,
    ),
    error(
        "reserved_fact",
        "A reserved fact (dispatch, recovery fact, continuation start, workspace fact, bound "
        "response) came through the generic append; detail.fact names it.",
        "Use its own command: ToolRuntime (T1, T2), commit_tool_recovery_bundle, or "
        "execute_continuation.",
        e.ReservedFactError,
    ),
    error(
        "write_path_refused",
        "An eventsourcing Application entry point that bypasses the write rules was called "
        "(save, take_snapshot, repository, notify; detail.name).",
        "Use the application's commands (append_events, ToolRuntime, end_run, ...); "
        "nothing was written.",
        e.WritePathRefusedError,
    ),
    error(
        "header_update_refused",
        "A header patch touched an immutable field or made an illegal status change.",
        "Patch mutable fields only; end a run with end_run, which derives the header.",
        e.HeaderUpdateRefusedError,
    ),
    error(
        "concurrent_write",
        "Another writer committed to the same stream first (optimistic concurrency).",
        "Re-read and retry the command; what the other writer committed stands.",
        e.ConcurrentWriteError,
    ),
    error(
        "continuation_start_conflict",
        "A claim's start is already recorded, or the offered start is not this claim's.",
        "Do not write a second start: read the claim; recover() repairs a claim without one.",
        e.ContinuationStartConflictError,
    ),
)

STORE_FAULTS = (
    error(
        "store_unavailable",
        "The store could not serve the command (locked, read-only, full, its file or -wal "
        "deleted or replaced; detail.reason). Not a verdict about the facts.",
        "Fix the environment (space, permissions, the file) or retry the same command later.",
        e.StoreUnavailableError,
    ),
    error(
        "store_schema_missing",
        "The database has no maka_es tables: a wrong path, a foreign file, or read-only too early.",
        "Check the path; open the store writable once so that it creates its tables.",
        e.StoreSchemaMissingError,
    ),
    error(
        "store_path_unusable",
        "No store can be opened or created at the path (detail.path).",
        "Fix the path: an existing directory must hold the file, and the path is not a directory.",
        e.StorePathError,
    ),
    error(
        "store_auth_failed",
        "The PostgreSQL server refused the configured user (wrong password, unknown role, "
        "pg_hba.conf, no CONNECT privilege); the message has the server's reason.",
        "Fix the credentials or the server's access rules; retrying unchanged fails again.",
        e.StoreAuthFailedError,
    ),
    error(
        "store_database_missing",
        "The PostgreSQL server has no database of the configured name.",
        "Fix the database name in the store URL, or create the database; then open it again.",
        e.StoreDatabaseMissingError,
    ),
    error(
        "store_outcome_unknown",
        "The connection dropped during COMMIT (PostgreSQL): the command may or may not be durable.",
        "Re-read the run (or the claim) before retrying; never assume it failed or succeeded.",
        e.StoreOutcomeUnknownError,
    ),
    error(
        "store_corruption",
        "Stored facts cannot be folded (a version gap, an unexpected fact), or the store file is "
        "damaged or no database (StoreFileCorruptionError, detail.reason): it fails closed.",
        "Stop writing to it; keep the file for inspection and restore from a backup.",
        e.StoreCorruptionError,
        e.StoreFileCorruptionError,
    ),
)

TOOLS = (
    error(
        "tool_ledger_rejection",
        "Default of ToolLedgerRejectionError; the resolver issue code replaces it.",
        SWITCH,
        e.ToolLedgerRejectionError,
    ),
    error(
        "recovery_bundle_rejected",
        "Default of RecoveryBundleRejectedError; a bundle validation code replaces it.",
        SWITCH,
        e.RecoveryBundleRejectedError,
    ),
    error(
        "tool_ledger_corruption",
        "The run's ledger already holds a tool-ledger issue, so tool writes fail-stop.",
        "Stop tool work on this run (its plan is blocked); an operator inspects detail.issueCode.",
        e.ToolLedgerCorruptionError,
    ),
    error(
        "tool_operation_not_found",
        "T2 or a recovery bundle names an operation that never crossed T1 in this run.",
        "Fix the caller: only an operation with a durable dispatch gets an outcome or a bundle.",
        e.ToolOperationNotFoundError,
    ),
    error(
        "tool_operation_conflict",
        "T1 for an operation that was already prepared with different facts.",
        "Never reuse an operation id for another call; an exact T1 retry is accepted.",
        e.ToolOperationConflictError,
    ),
    error(
        "outcome_conflict",
        "A second, different outcome (T2) for an operation that already has one.",
        "Keep the committed outcome: an exact retry is accepted, another result is not.",
        e.ToolOutcomeConflictError,
    ),
    error(
        "tool_operation_settled",
        "The operation is settled; only an exact retry of what settled it is accepted.",
        "Read the settlement (tool_operations) instead of writing again.",
        e.ToolOperationSettledError,
    ),
    error(
        "operator_action_invalid",
        "An operator action is malformed: no actor, a result for 'not applied' or none for "
        "'applied', a result that is not strict JSON (ADR 0022).",
        FIX_CALLER,
        e.CodecInputError,
    ),
    error(
        "operation_not_attestable",
        "The attested operation is not indeterminate (it has an outcome or a recovery decision), "
        "or it belongs to an operation this run never prepared.",
        "Read the operation (tool_operations); a settled or parked one is left for a fork.",
        e.ToolOperationSettledError,
    ),
    error(
        "operator_attestation_conflict",
        "Another operator already attested this operation with another decision.",
        "Read the committed attestation (plan_resume diagnostics); the first one stands.",
        e.ToolOutcomeConflictError,
    ),
    error(
        "fork_point_invalid",
        "The fork point names no operation of the run, or nothing of the run comes before it.",
        "Name the uncertain operation's id (tool_operations) of a run with a prefix before it.",
        e.RunForkRefusedError,
    ),
    error(
        "fork_replay_blocked",
        "The prefix before the fork point cannot be replayed (its lineage parks, or it holds "
        "corrupt or unsettled tool facts); detail.reason names why.",
        "Fork before an earlier operation, or settle the earlier one first.",
        e.RunForkRefusedError,
    ),
    error(
        "fork_conflict",
        "The source is already continued or forked (another boundary claimed it), or another "
        "operator forked this boundary with another actor or note (ADR 0022).",
        "Read the claim (detail.claimId) and work on the run that won.",
        e.RunForkRefusedError,
    ),
    error(
        "fork_not_pending",
        "execute_fork names a run that is no operator fork, or a fork that already ran or that "
        "another process is executing (detail.reason: execution_started).",
        "Read the run (get_run_header, read_run_events); continue an ended fork instead, or "
        "end an abandoned execution with `maka-es end-run`.",
        e.RunForkRefusedError,
    ),
    error(
        "run_not_start_only",
        "end_start_only_run names a run that is no continuation or fork holding only its "
        "start (it committed more, or is sealed); nothing was written.",
        "Use `maka-es recover` for an ordinary interrupted run; read the run (`maka-es show`).",
        e.RunEndRefusedError,
    ),
    error(
        "run_already_ended",
        "end_start_only_run names a run that already has a terminal fact, or that another "
        "process is ending right now (it took the run first); nothing was written.",
        "Nothing to do: continue the session (`maka-es resume SESSION`).",
        e.RunEndRefusedError,
    ),
    error(
        "run_owner_live",
        "end_start_only_run names a run whose owner's lease is live (detail.ownerHostId, "
        "detail.leaseExpiresAt): its process may still be running; nothing was written.",
        "Stop the owning process, or wait until its lease expires, then run it again.",
        e.RunEndRefusedError,
    ),
    error(
        "run_owner_unknown",
        "end_start_only_run names a run that records no owner (written before run ownership): "
        "nothing proves its process is gone (ADR 0035); nothing was written.",
        "Make sure no process still runs it, then end it from the host (Ledger.end_run).",
        e.RunEndRefusedError,
    ),
    error(
        "turn_session_unfinished",
        "run_turn found the session's newest run not completed: live (its owner may still "
        "write), interrupted, failed, cancelled or parked; detail.runId and detail.status.",
        "Call resume(session, provider) first: it continues the run, or names the operator "
        "command that gets it out of its park; then run the new prompt.",
        e.TurnRefusedError,
    ),
    error(
        "session_history_unreplayable",
        "A turn's session history (ADR 0038) could not be built: an earlier completed turn's "
        "lineage no longer replays as its continuation recorded, or the run named is not a "
        "run of the session; detail.runId and detail.reason. Nothing was written and the "
        "model was not called.",
        "Inspect the named run (maka-es report); to go on without the earlier turns, pass "
        "history_turns=0 to run_turn or resume.",
        e.SessionHistoryError,
    ),
    error(
        "tool_already_dispatched",
        "ToolRuntime found T1 already committed: another dispatcher owns it; the tool did not run.",
        "Do not run the tool yourself: wait for the owner's T2, or recover after a crash.",
        e.ToolAlreadyDispatchedError,
    ),
)


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


JSONL = "The JSONL ledger is unusable as is: repair its files by hand, then import again."
WORKSPACE = "Fix the workspace and resolve again; until then a continuation parks."
PATH = "Report it to the model as a failed call: it is refused before T1 and nothing was written."

JSONL_LEDGER = group(
    "error",
    JSONL,
    {
        "invalid_jsonl_line": "A row is not a valid committed RuntimeEvent, nor a torn tail.",
        "unsafe_id": (
            "A session or run id cannot name a ledger directory (empty, a dot name, a slash, a "
            "control character, too long).",
            "Keep such a run in the event store; it cannot be written to a JSONL ledger.",
        ),
        "run_header_missing": "The run directory has no header file.",
        "run_header_invalid": "The run's header file is not a valid run header.",
        "run_header_mismatch": "The header names another session or run than its directory.",
        "torn_tail_invalid": (
            "The unterminated last row is neither complete JSON nor a torn prefix, so nothing "
            "is appended after it."
        ),
        "ledger_symlink_refused": (
            "A symbolic link below the ledger root; it is never followed.",
            "Replace the link with the real directory or file.",
        ),
        "ledger_path_invalid": "A layout entry of the wrong kind (a file for a directory, ...).",
    },
    e.JsonlLedgerError,
)

WORKSPACE_IDENTITY = (
    error(
        "workspace_identity_error",
        "Default of WorkspaceIdentityError, the base of every workspace-identity refusal.",
        "Catch WorkspaceIdentityError to treat them alike; a continuation parks meanwhile.",
        e.WorkspaceIdentityError,
    ),
    error(
        "workspace_not_found",
        "The workspace path does not exist (or a component of it is not a directory).",
        WORKSPACE,
        e.WorkspaceNotFoundError,
    ),
    error(
        "invalid_workspace",
        "The workspace path exists but is not a directory.",
        WORKSPACE,
        e.InvalidWorkspaceError,
    ),
    error(
        "invalid_workspace_marker",
        ".maka-workspace.json is not one bounded regular file with the exact marker shape.",
        "Restore the marker by hand: an existing marker is never repaired or replaced.",
        e.InvalidWorkspaceMarkerError,
    ),
    error(
        "workspace_identity_changed",
        "The workspace directory was replaced while its marker was being published.",
        "Resolve the identity again once the directory stays put.",
        e.WorkspaceIdentityChangedError,
    ),
    error(
        "workspace_io_failed",
        "Another I/O failure (permissions, a malformed enclosing Git repository, no hard links).",
        WORKSPACE,
        e.WorkspaceIoFailedError,
    ),
)

WORKSPACE_PATHS = group(
    "error",
    PATH,
    {
        "workspace_path_refused": (
            "Default of WorkspacePathRefusedError; a specific code replaces it.",
            "Catch the class; the specific code says why the path was refused.",
        ),
        "workspace_path_escape": "A tool path is absolute or has a .. component.",
        "workspace_symlink_refused": "A symbolic link at the target or on the way to it.",
        "workspace_path_invalid": (
            "The path names a directory, or crosses or names something that is neither a "
            "directory nor a regular file."
        ),
    },
    e.WorkspacePathRefusedError,
)

REPORT = (
    error(
        "report_output_invalid",
        "A run report (or an export -o ledger) cannot be written where asked: a directory for "
        "a file or a file for a directory, a missing or unwritable parent, a failed write "
        "(detail.reason; ADR 0030).",
        "Choose a path in an existing, writable directory (a file for a report, a directory "
        "for export -o); nothing was left behind.",
        e.ReportOutputError,
    ),
)

CONTINUATION = (
    error(
        "usage",
        "The maka-es command line asks for something that cannot be done as asked (exit 2).",
        "Fix the command line as the error line says; see maka-es COMMAND --help.",
        e.CommandLineUsageError,
    ),
    error(
        "extra_missing",
        "maka_es.cli (the maka-es command) or maka_es.report was imported without the cli "
        "extra: typer, rich or jinja2 is not installed (detail.extra, detail.module; ADR 0040).",
        "Install the extra the message names: pip install 'maka_es[cli]'; the core needs none.",
        e.MissingExtraError,
    ),
    error(
        "continuation_revalidation_failed",
        "Default of ContinuationRevalidationError; a revalidation code replaces it.",
        "Catch the class and switch on its revalidation code.",
        e.ContinuationRevalidationError,
    ),
    error(
        "provider_output_invalid",
        "A provider output is not model text, thinking or tool-call content, or repeats a "
        "tool call id (detail.index, detail.field).",
        "Fix the provider adapter; in execute_continuation the target run ends failed, its "
        "failureMessage naming what was wrong.",
        e.InvalidProviderOutputError,
    ),
    error(
        "step_limit_exceeded",
        "A continuation's agent loop called the provider step_limit times and the model still "
        "asked for tools; the target run ended failed with this failure class.",
        "Raise step_limit if the task needs more tool rounds, or continue the session again.",
        e.MakaError,
    ),
    error(
        "agent_run_left_open",
        "A Pydantic AI run_stream or iter block exited before the agent's run ended (a break, "
        "a stream not read to its end); the turn's run ended failed with this failure class.",
        "Nothing to fix: resume the session (durable.resume) to continue the turn from its "
        "committed boundary.",
        e.MakaError,
    ),
    error(
        "provider_script_exhausted",
        "A ScriptedProvider (the test provider) was called more often than scripted.",
        "Script one more turn in the test, or find the unexpected extra call.",
        e.ProviderScriptExhaustedError,
    ),
    error(
        "provider_export_invalid",
        "A replay context cannot be exported without an unpaired or interleaved tool exchange "
        "(detail.reason, detail.toolCallId).",
        "Do not send it; a validated continuation context never yields this: report a bug.",
        e.ProviderExportError,
    ),
    error(
        "recovery_status_conflict",
        "A read-model catch-up lost its compare-and-set on the tracking position.",
        "Harmless: catch up again from the winner's position.",
        e.RecoveryStatusConflictError,
    ),
    error(
        "recovery_status_unsupported",
        "The event store's recorder has no recovery-status backend (detail.recorder).",
        "Use maka_es.adapters.sqlite (the default), maka_es.adapters.postgres or "
        "eventsourcing.popo, or pass the projector a RecoveryStatusStore of your own.",
        e.RecoveryStatusUnsupportedError,
    ),
)


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
