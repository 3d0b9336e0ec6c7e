"""Registered codes of raised refusals (``MakaError.code``), grouped by the class that raises them.

Every refusal is raised before anything is written, so "what a host should do" never includes
cleaning up a half-written command. Behaviour behind each family: docs/reference/codes.md#errors,
docs/reference/ledger.md#write-rules, docs/reference/tool-journal.md#bundle-codes.
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
        "openai_agents_unsupported",
        "The OpenAI Agents integration (ADR 0042) was given what it cannot journal; "
        "detail.reason: handoffs, mcp_servers or hosted_tools on the agent, tool_unknown (a "
        "recovery mode for no tool of the agent), tool_not_in_catalogue, call_unrecorded, "
        "turn_stopped (an earlier tool step of the turn raised) or outside_durable_run. "
        "Nothing was written and no tool ran.",
        "Give the agent function tools only, open the application with "
        "tools=journaled_tools(agent), and run it through DurableRunner.",
        e.OpenAIAgentsUnsupportedError,
    ),
    error(
        "tool_already_dispatched",
        "ToolRuntime found T1 already committed: another dispatcher owns it; the tool did not run.",
        "Do not run the tool yourself: wait for the owner's T2, or recover after a crash.",
        e.ToolAlreadyDispatchedError,
    ),
)
