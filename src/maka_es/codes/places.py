"""Where each registered code fires: the modules that raise, park or diagnose it, and the place
in the behaviour reference that says when.

Why a table of its own: a code's meaning lives in the registry entry, but a reader also needs
to know where to look in the source and in the contract. ``FIRES_IN`` is checked against the
source by ``tests/unit/test_error_registry.py`` both ways (every listed module really uses the
code, and every module that raises it with a literal code or constructs its class without one
is listed), so it cannot rot silently; ``SEE`` holds the reference's words (gate, planner step,
lineage check) with links the strict docs build resolves. Paths are relative to
``src/maka_es/``. Both are merged into the entries by :func:`place`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Final

from maka_es.codes.model import CodeEntry, CodeKind

#: The library modules that fire each code; ``()`` only for a base class's default code that
#: is never raised on its own, or a code declared and never raised.
FIRES_IN: Final[Mapping[tuple[CodeKind, str], tuple[str, ...]]] = {
    ("error", "maka_error"): (),
    ("error", "store_refusal"): (),
    ("error", "invalid_runtime_event"): (
        "ledger/model/facts.py",
        "ledger/service.py",
        "tooljournal/runtime.py",
        "wire/facts.py",
    ),
    ("error", "invalid_run_header"): (
        "ledger/model/facts.py",
        "ledger/model/run.py",
        "ledger/service.py",
        "wire/run_header.py",
    ),
    ("error", "invalid_host_config"): ("ledger/model/host_config.py",),
    ("error", "non_strict_json"): ("adapters/fact_rows.py", "wire/codec.py"),
    ("error", "codec_input_invalid"): (),
    ("error", "prefix_invalid"): ("continuation/model/boundary.py", "continuation/model/replay.py"),
    ("error", "boundary_invalid"): (
        "continuation/model/boundary.py",
        "continuation/model/replay.py",
    ),
    ("error", "tool_identity_invalid"): ("wire/codec.py",),
    ("error", "provider_replay_invalid"): ("providers/replay_items.py",),
    ("error", "invalid_plan_request"): (
        "continuation/lineage.py",
        "continuation/service.py",
        "continuation/turns.py",
    ),
    ("error", "session_not_found"): ("adapters/event_store.py",),
    ("error", "session_already_exists"): ("ledger/service.py",),
    ("error", "run_not_found"): ("adapters/event_store.py", "continuation/lineage.py"),
    ("error", "run_already_exists"): ("ledger/service.py",),
    ("error", "invocation_spine_conflict"): ("ledger/service.py",),
    ("error", "event_id_conflict"): ("adapters/jsonl.py", "ledger/model/run.py"),
    ("error", "event_identity_mismatch"): ("adapters/jsonl.py", "ledger/model/run.py"),
    ("error", "partial_event_refused"): ("adapters/jsonl.py", "ledger/model/run.py"),
    ("error", "run_sealed"): ("ledger/model/run.py",),
    ("error", "run_owner_fenced"): ("ledger/model/ownership.py",),
    ("error", "terminal_conflict"): ("ledger/model/run.py", "ledger/service.py"),
    ("error", "runtime_offset_mismatch"): (
        "continuation/model/gates.py",
        "ledger/model/run.py",
        "resume/plan.py",
    ),
    ("error", "reserved_fact"): ("continuation/claims.py", "ledger/model/run.py"),
    ("error", "write_path_refused"): ("adapters/event_store.py",),
    ("error", "header_update_refused"): ("ledger/model/run.py",),
    ("error", "concurrent_write"): ("ledger/host_leases.py", "ledger/service.py"),
    ("error", "continuation_start_conflict"): ("continuation/claims.py",),
    ("error", "store_unavailable"): (
        "adapters/event_store.py",
        "adapters/postgres.py",
        "adapters/sqlite.py",
    ),
    ("error", "store_schema_missing"): ("adapters/postgres.py", "adapters/sqlite.py"),
    ("error", "store_path_unusable"): ("adapters/event_store.py", "adapters/sqlite.py", "app.py"),
    ("error", "store_auth_failed"): ("adapters/postgres.py",),
    ("error", "store_database_missing"): ("adapters/postgres.py",),
    ("error", "store_outcome_unknown"): ("adapters/postgres.py",),
    ("error", "store_corruption"): (
        "adapters/fact_rows.py",
        "adapters/run_snapshots.py",
        "adapters/sqlite.py",
        "continuation/claims.py",
        "ledger/model/ownership.py",
        "ledger/model/run.py",
        "ledger/model/session.py",
        "recovery/status.py",
        "tooljournal/model/scanner.py",
    ),
    ("error", "tool_ledger_rejection"): (),
    ("error", "recovery_bundle_rejected"): (),
    ("error", "tool_ledger_corruption"): ("ledger/model/run.py", "resume/plan.py"),
    ("error", "tool_operation_not_found"): ("ledger/model/run.py",),
    ("error", "tool_operation_conflict"): ("ledger/model/run.py",),
    ("error", "outcome_conflict"): ("ledger/model/run.py",),
    ("error", "tool_operation_settled"): ("ledger/model/run.py",),
    ("error", "operator_action_invalid"): (
        "recovery/operator_actions.py",
        "tooljournal/model/attestation.py",
    ),
    ("error", "operation_not_attestable"): ("ledger/model/run.py",),
    ("error", "operator_attestation_conflict"): ("ledger/model/run.py",),
    ("error", "fork_point_invalid"): ("recovery/operator_actions.py",),
    ("error", "fork_replay_blocked"): ("recovery/operator_actions.py",),
    ("error", "fork_conflict"): ("recovery/operator_actions.py",),
    ("error", "fork_not_pending"): ("recovery/operator_actions.py",),
    ("error", "run_not_start_only"): ("recovery/operator_actions.py",),
    ("error", "run_already_ended"): ("recovery/operator_actions.py",),
    ("error", "run_owner_live"): ("recovery/operator_actions.py",),
    ("error", "run_owner_unknown"): ("recovery/operator_actions.py",),
    ("error", "turn_session_unfinished"): ("continuation/turns.py",),
    ("error", "session_history_unreplayable"): ("continuation/lineage.py",),
    ("error", "openai_agents_unsupported"): ("integrations/openai_agents.py",),
    ("error", "tool_already_dispatched"): ("tooljournal/runtime.py",),
    ("error", "protocol_marker_invalid"): ("tooljournal/model/scanner.py",),
    ("error", "duplicate_event_id"): ("resume/plan.py", "tooljournal/model/scanner.py"),
    ("error", "invocation_identity_conflict"): ("tooljournal/model/scanner.py",),
    ("error", "semantic_lane_conflict"): ("ledger/model/run.py",),
    ("error", "duplicate_call"): ("tooljournal/model/resolver.py", "tooljournal/model/scanner.py"),
    ("error", "duplicate_dispatch"): (
        "tooljournal/model/resolver.py",
        "tooljournal/model/scanner.py",
    ),
    ("error", "duplicate_operation"): (
        "tooljournal/model/resolver.py",
        "tooljournal/model/scanner.py",
    ),
    ("error", "identity_conflict"): ("ledger/model/run.py",),
    ("error", "orphan_response"): (
        "resume/plan.py",
        "tooljournal/model/resolver.py",
        "tooljournal/model/scanner.py",
    ),
    ("error", "duplicate_response"): (
        "tooljournal/model/resolver.py",
        "tooljournal/model/scanner.py",
    ),
    ("error", "canonical_args_hash_conflict"): (
        "tooljournal/model/bundle.py",
        "tooljournal/model/resolver.py",
        "tooljournal/model/scanner.py",
    ),
    ("error", "event_order_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "recovery_fact_shape_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "call_identity_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "dispatch_identity_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "recovery_mode_unsupported"): ("tooljournal/model/bundle.py",),
    ("error", "reconcile_fact_invalid"): ("tooljournal/model/bundle.py",),
    ("error", "decision_fact_invalid"): ("tooljournal/model/bundle.py",),
    ("error", "recovery_fact_identity_conflict"): (
        "ledger/model/run.py",
        "tooljournal/model/bundle.py",
    ),
    ("error", "operation_identity_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "outcome_required"): ("tooljournal/model/bundle.py",),
    ("error", "outcome_identity_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "outcome_not_successful"): ("tooljournal/model/bundle.py",),
    ("error", "outcome_reference_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "reconcile_decision_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "outcome_for_parked"): ("tooljournal/model/bundle.py",),
    ("error", "evidence_order_conflict"): ("tooljournal/model/bundle.py",),
    ("error", "invalid_jsonl_line"): ("adapters/jsonl.py",),
    ("error", "unsafe_id"): ("adapters/jsonl.py",),
    ("error", "run_header_missing"): ("adapters/jsonl.py",),
    ("error", "run_header_invalid"): ("adapters/jsonl.py",),
    ("error", "run_header_mismatch"): ("adapters/jsonl.py",),
    ("error", "torn_tail_invalid"): ("adapters/jsonl.py",),
    ("error", "ledger_symlink_refused"): ("adapters/jsonl.py",),
    ("error", "ledger_path_invalid"): ("adapters/jsonl.py",),
    ("error", "workspace_identity_error"): (),
    ("error", "workspace_not_found"): ("adapters/workspace.py",),
    ("error", "invalid_workspace"): ("adapters/workspace.py",),
    ("error", "invalid_workspace_marker"): ("adapters/workspace.py",),
    ("error", "workspace_identity_changed"): ("adapters/workspace.py", "continuation/executor.py"),
    ("error", "workspace_io_failed"): ("adapters/workspace.py",),
    ("error", "workspace_path_refused"): (),
    ("error", "workspace_path_escape"): ("adapters/file_write.py",),
    ("error", "workspace_symlink_refused"): ("adapters/file_write.py",),
    ("error", "workspace_path_invalid"): ("adapters/file_write.py",),
    ("error", "usage"): ("cli/data.py", "cli/demo.py", "cli/operator.py", "cli/store.py"),
    ("error", "extra_missing"): ("extras.py",),
    ("error", "continuation_revalidation_failed"): (),
    ("error", "provider_output_invalid"): (
        "continuation/agent_loop.py",
        "providers/formats.py",
        "providers/protocol.py",
    ),
    ("error", "step_limit_exceeded"): ("continuation/agent_loop.py",),
    ("error", "agent_run_left_open"): ("integrations/pydantic_ai.py",),
    ("error", "provider_script_exhausted"): ("providers/protocol.py",),
    ("error", "provider_export_invalid"): ("providers/export.py",),
    ("error", "recovery_status_conflict"): ("recovery/model/status_store.py",),
    ("error", "recovery_status_unsupported"): ("adapters/recovery_status.py",),
    ("error", "report_output_invalid"): (
        "adapters/confined_fs.py",
        "cli/data.py",
        "report/render.py",
    ),
    ("revalidation", "continuation_not_approved"): (
        "continuation/executor.py",
        "continuation/service.py",
    ),
    ("revalidation", "continuation_run_active"): ("continuation/executor.py",),
    ("revalidation", "source_identity_changed"): ("continuation/executor.py",),
    ("revalidation", "source_terminal_changed"): ("continuation/executor.py",),
    ("revalidation", "source_cwd_changed"): ("continuation/executor.py",),
    ("revalidation", "source_high_water_changed"): ("continuation/executor.py",),
    ("revalidation", "source_ledger_identity_changed"): ("continuation/executor.py",),
    ("revalidation", "source_replay_changed"): ("continuation/executor.py",),
    ("revalidation", "safety_observation_unavailable"): (
        "continuation/executor.py",
        "continuation/service.py",
    ),
    ("revalidation", "workspace_identity_changed"): ("continuation/executor.py",),
    ("revalidation", "background_operation_started"): ("continuation/executor.py",),
    ("revalidation", "tool_catalog_changed"): ("continuation/executor.py",),
    ("revalidation", "workspace_checkpoint_changed"): ("continuation/executor.py",),
    ("revalidation", "continuation_claim_conflict"): ("continuation/executor.py",),
    ("revalidation", "target_run_conflict"): ("continuation/executor.py",),
    ("park_reason", "runtime_offset_mismatch"): ("continuation/model/gates.py", "resume/plan.py"),
    ("park_reason", "dangling_tool_state"): ("continuation/model/gates.py", "resume/plan.py"),
    ("park_reason", "pending_permission"): ("continuation/model/gates.py",),
    ("park_reason", "workspace_identity_mismatch"): ("continuation/model/gates.py",),
    ("park_reason", "background_operation_pending"): ("continuation/model/gates.py",),
    ("park_reason", "tool_catalog_mismatch"): ("continuation/model/gates.py",),
    ("park_reason", "runtime_ledger_unreadable"): (
        "continuation/model/gates.py",
        "continuation/model/plan.py",
        "continuation/service.py",
    ),
    ("park_reason", "terminal_repair_failed"): ("continuation/model/gates.py",),
    ("park_reason", "workspace_cwd_mismatch"): ("continuation/model/gates.py",),
    ("park_reason", "runtime_ledger_empty"): ("continuation/model/gates.py",),
    ("park_reason", "runtime_identity_mismatch"): (
        "continuation/lineage.py",
        "continuation/model/gates.py",
        "continuation/service.py",
    ),
    ("park_reason", "continuation_identity_reused"): ("continuation/model/gates.py",),
    ("park_reason", "provider_resume_head_unsupported"): ("continuation/model/gates.py",),
    ("park_reason", "provider_resume_boundary_unsupported"): ("continuation/model/gates.py",),
    ("park_reason", "provider_replay_non_suffix_gap"): (
        "continuation/model/plan.py",
        "continuation/model/replay.py",
    ),
    ("park_reason", "provider_replay_unsupported"): (
        "continuation/model/plan.py",
        "continuation/model/replay.py",
    ),
    ("park_reason", "runtime_lineage_cycle"): ("continuation/lineage.py",),
    ("park_reason", "runtime_lineage_depth_exceeded"): ("continuation/lineage.py",),
    ("park_reason", "runtime_lineage_missing"): ("continuation/lineage.py",),
    ("park_reason", "runtime_lineage_start_mismatch"): ("continuation/lineage.py",),
    ("park_reason", "runtime_lineage_replay_mismatch"): (
        "continuation/lineage.py",
        "recovery/operator_actions.py",
    ),
    ("park_reason", "runtime_lineage_claim_mismatch"): (),
    ("park_reason", "source_prefix_digest_mismatch"): ("continuation/lineage.py",),
    ("park_reason", "workspace_ref_missing"): ("continuation/model/gates.py",),
    ("park_reason", "checkpoint_restore_failed"): ("continuation/model/gates.py",),
    ("park_reason", "source_run_unreadable"): ("continuation/service.py",),
    ("park_reason", "continuation_already_exists"): ("continuation/claims.py",),
    ("park_reason", "continuation_authority_unavailable"): (
        "continuation/claims.py",
        "continuation/service.py",
    ),
    ("park_reason", "continuation_claim_repair_required"): ("continuation/claims.py",),
    ("park_reason", "continuation_started_indeterminate"): (
        "continuation/claims.py",
        "report/view.py",
    ),
    ("park_reason", "continuation_end_in_progress"): ("continuation/claims.py",),
    ("park_reason", "workspace_identity_missing"): (
        "continuation/model/gates.py",
        "continuation/service.py",
    ),
    ("park_reason", "safety_observation_unavailable"): (
        "continuation/executor.py",
        "continuation/service.py",
    ),
    ("park_reason", "resume_feature_disabled"): ("continuation/service.py",),
    ("park_reason", "resume_candidate_missing"): ("continuation/service.py",),
    ("diagnostic", "pending_tool_result"): ("cli/operator.py", "resume/plan.py"),
    ("diagnostic", "tool_not_dispatched"): ("resume/plan.py",),
    ("diagnostic", "tool_recovery_parked"): ("cli/operator.py", "resume/plan.py"),
    ("diagnostic", "tool_recovery_corruption"): (
        "continuation/model/plan.py",
        "continuation/model/replay.py",
        "resume/plan.py",
    ),
    ("diagnostic", "tool_ledger_corruption"): ("resume/plan.py",),
    ("diagnostic", "duplicate_event_id"): ("resume/plan.py", "tooljournal/model/scanner.py"),
    ("diagnostic", "semantic_lane_conflict"): (
        "ledger/model/run.py",
        "resume/plan.py",
        "tooljournal/model/scanner.py",
    ),
    ("diagnostic", "protocol_marker_invalid"): ("resume/plan.py", "tooljournal/model/scanner.py"),
    ("diagnostic", "unmatched_tool_result"): (
        "continuation/model/replay.py",
        "providers/export.py",
        "resume/plan.py",
    ),
    ("diagnostic", "tool_name_mismatch"): ("resume/plan.py",),
    ("diagnostic", "workspace_location_changed"): ("continuation/model/gates.py", "resume/plan.py"),
    ("diagnostic", "operator_attested"): ("resume/plan.py", "telemetry.py"),
    ("diagnostic", "tool_recovery_unsettled"): (
        "continuation/model/plan.py",
        "continuation/model/replay.py",
        "report/view.py",
    ),
    ("diagnostic", "partial_skipped"): ("continuation/model/replay.py",),
    ("diagnostic", "unsupported_role"): ("continuation/model/replay.py",),
    ("diagnostic", "unsupported_content"): ("continuation/model/replay.py",),
    ("diagnostic", "tool_id_mismatch"): ("continuation/model/replay.py", "providers/export.py"),
    ("diagnostic", "unmatched_tool_call"): ("continuation/model/replay.py", "providers/export.py"),
}

#: When each code fires, in the behaviour reference's words (links relative to docs/).
SEE: Final[Mapping[tuple[CodeKind, str], str]] = {
    ("error", "invalid_runtime_event"): (
        "an event (or part) does not have the exact wire shape; `field` names it. Also a "
        "session, run, claim or host id that is not UTF-8 text (a lone surrogate, what a "
        "non-UTF-8 command-line byte becomes: `detail.reason` `lone_surrogate`) or not a `str` "
        "(`not_a_string`), at every entry that names a stream by id, and an `open_session` `cwd` "
        "or workspace identity of the same kind; nothing is read or written"
    ),
    ("error", "invalid_host_config"): (
        "a `HostConfig` built (or `model_validate`d) with a missing, unknown or ill-typed field; "
        "`detail.errors` lists `{field, type}`, never the value"
    ),
    ("error", "non_strict_json"): (
        "a value is not strict JSON "
        "([wire.md#canonical-json](reference/wire.md#canonical-json)); `detail.path`"
    ),
    ("error", "prefix_invalid"): (
        "invalid input to an identity or digest function "
        "([wire.md#boundary-digests](reference/wire.md#boundary-digests))"
    ),
    ("error", "boundary_invalid"): (
        "invalid input to an identity or digest function "
        "([wire.md#boundary-digests](reference/wire.md#boundary-digests))"
    ),
    ("error", "tool_identity_invalid"): (
        "invalid input to an identity or digest function "
        "([wire.md#boundary-digests](reference/wire.md#boundary-digests))"
    ),
    ("error", "provider_replay_invalid"): (
        "invalid input to an identity or digest function "
        "([wire.md#boundary-digests](reference/wire.md#boundary-digests))"
    ),
    ("error", "invalid_plan_request"): (
        "`plan_continuation` with a malformed request (e.g. a negative `expected_high_water`), "
        "or a `step_limit` or `history_turns` that is not valid "
        "([continuation.md#session-history](reference/continuation.md#session-history)); "
        "nothing was read"
    ),
    ("error", "session_history_unreplayable"): (
        "`run_turn`, a continuation or a fork could not build its session history: an earlier "
        "completed turn's lineage no longer replays as its continuation recorded "
        "([continuation.md#session-history](reference/continuation.md#session-history)); "
        "nothing was written"
    ),
    ("error", "run_already_exists"): (
        "creating an existing run with another header than it was created with (an exact retry "
        "answers the run, [ledger.md#streams](reference/ledger.md#streams))"
    ),
    ("error", "event_id_conflict"): (
        "the ledger's write rules ([ledger.md#write-rules](reference/ledger.md#write-rules)) and "
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "event_identity_mismatch"): (
        "the ledger's write rules ([ledger.md#write-rules](reference/ledger.md#write-rules)) and "
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "partial_event_refused"): (
        "the ledger's write rules ([ledger.md#write-rules](reference/ledger.md#write-rules)) and "
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "terminal_conflict"): (
        "a second terminal event; a terminal header without (or not matching) its terminal "
        "event; `end_run` with a non-terminal event"
    ),
    ("error", "reserved_fact"): (
        "a reserved fact on the generic append path "
        "([ledger.md#write-rules](reference/ledger.md#write-rules))"
    ),
    ("error", "write_path_refused"): (
        "an `eventsourcing.Application` entry point that bypasses the write rules was called on "
        "the application: `save`, `take_snapshot`, `repository`, `notify` (`detail.name`); "
        "nothing was written ([ADR 0017](adr/0017-packages-by-capability-and-ports.md))"
    ),
    ("error", "continuation_start_conflict"): (
        "a claim already recorded a start, or the offered start is not this claim's "
        "([continuation.md#claim-repair](reference/continuation.md#claim-repair))"
    ),
    ("error", "store_unavailable"): (
        "the store could not take the write (read-only, locked, full, its file or its `-wal` "
        "deleted or replaced); nothing written"
    ),
    ("error", "store_path_unusable"): (
        "no store can be opened or created at the path (`detail.path`; `detail.reason` e.g. "
        "`is_a_directory`, `directory_missing`, `file_missing`), or a store setting with another "
        "URL scheme than `postgresql`, `postgres`, `sqlite` (`unsupported_scheme`) or a "
        "malformed `sqlite://` URL (`bad_sqlite_url`)"
    ),
    ("error", "store_auth_failed"): (
        "PostgreSQL refused the configured user (wrong password, unknown role, `pg_hba.conf`, no "
        "`CONNECT` privilege); raised at once at open, with the server's reason and never the "
        "password; retrying unchanged fails again"
    ),
    ("error", "store_corruption"): (
        "stored facts cannot be folded (version gap, unexpected fact); or, as "
        "`StoreFileCorruptionError` (also a `StoreUnavailableError`, so the planner parks on "
        "it), the SQLite file is no database or damaged (`detail.reason` `not_a_database`, "
        "`corrupt`)"
    ),
    ("error", "tool_ledger_corruption"): (
        "a tool-bearing write on a run whose ledger already holds an issue "
        "([tool-journal.md#fail-stop](reference/tool-journal.md#fail-stop))"
    ),
    ("error", "invalid_jsonl_line"): (
        "an unreadable JSONL row (not a torn tail) "
        "([ledger.md#torn-rows](reference/ledger.md#torn-rows))"
    ),
    ("error", "unsafe_id"): "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))",
    ("error", "run_header_missing"): (
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "run_header_invalid"): (
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "run_header_mismatch"): (
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "torn_tail_invalid"): (
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "ledger_symlink_refused"): (
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "ledger_path_invalid"): (
        "JSONL ledger refusals ([ledger.md#jsonl](reference/ledger.md#jsonl))"
    ),
    ("error", "workspace_not_found"): (
        "workspace marker resolution "
        "([continuation.md#workspace-identity](reference/continuation.md#workspace-identity))"
    ),
    ("error", "invalid_workspace"): (
        "workspace marker resolution "
        "([continuation.md#workspace-identity](reference/continuation.md#workspace-identity))"
    ),
    ("error", "invalid_workspace_marker"): (
        "workspace marker resolution "
        "([continuation.md#workspace-identity](reference/continuation.md#workspace-identity))"
    ),
    ("error", "workspace_identity_changed"): (
        "workspace marker resolution "
        "([continuation.md#workspace-identity](reference/continuation.md#workspace-identity))"
    ),
    ("error", "workspace_io_failed"): (
        "workspace marker resolution "
        "([continuation.md#workspace-identity](reference/continuation.md#workspace-identity))"
    ),
    ("error", "workspace_path_escape"): (
        "a `Write` tool path, refused before T1 "
        "([tool-journal.md#write-tool](reference/tool-journal.md#write-tool))"
    ),
    ("error", "workspace_symlink_refused"): (
        "a `Write` tool path, refused before T1 "
        "([tool-journal.md#write-tool](reference/tool-journal.md#write-tool))"
    ),
    ("error", "workspace_path_invalid"): (
        "a `Write` tool path, refused before T1 "
        "([tool-journal.md#write-tool](reference/tool-journal.md#write-tool))"
    ),
    ("error", "extra_missing"): (
        "on `import maka_es.cli` or `import maka_es.report` without the `cli` extra; the "
        "`maka-es` script prints it as its one error line and exits 1 "
        "([ADR 0040](adr/0040-core-and-extras.md))"
    ),
    ("error", "report_output_invalid"): (
        "`report -o` or `export -o` names a path that cannot take the output: the wrong kind (a "
        "directory for a report, a file for a ledger), a missing parent or one that is a file, a "
        "directory this process may not write, a failed write (`detail.path`, `detail.reason`); "
        "nothing is left behind"
    ),
    ("revalidation", "continuation_not_approved"): "the plan is not `continue` (maka_es)",
    ("revalidation", "continuation_run_active"): (
        "another run of the session is not terminal (maka_es; the reference raises a plain error)"
    ),
    ("revalidation", "source_identity_changed"): (
        "a planned boundary segment changed (the source grew or a prefix was rewritten), the "
        "source run cannot be read, or its ids differ from the plan"
    ),
    ("revalidation", "source_terminal_changed"): (
        "the source no longer has exactly one terminal event matching its header status"
    ),
    ("revalidation", "source_cwd_changed"): "the cwd changed (strict policy)",
    ("revalidation", "source_high_water_changed"): (
        "the source's event count differs from the planned high-water"
    ),
    ("revalidation", "source_ledger_identity_changed"): (
        "a source event has another execution identity"
    ),
    ("revalidation", "source_replay_changed"): (
        "the lineage no longer replays, or its digests or replay context differ from the plan's"
    ),
    ("revalidation", "safety_observation_unavailable"): (
        "no host inspector, or it raised (maka_es; the reference raises a plain error)"
    ),
    ("revalidation", "workspace_identity_changed"): (
        "the workspace identity differs from the plan's snapshot"
    ),
    ("revalidation", "background_operation_started"): "a background operation is running now",
    ("revalidation", "tool_catalog_changed"): "the set of available tools differs from the plan's",
    ("revalidation", "workspace_checkpoint_changed"): (
        "the planned checkpoint is gone, not restored, or has another ref or high-water"
    ),
    ("revalidation", "continuation_claim_conflict"): (
        "the boundary is claimed, already continued, or another claimer won the race"
    ),
    ("revalidation", "target_run_conflict"): "the target run id already exists",
    ("park_reason", "runtime_offset_mismatch"): (
        "Phase 0 only ever emits this and `dangling_tool_state`; Phase 0 diagnostic 1 "
        "([phase0.md#diagnostics](reference/phase0.md#diagnostics)); gates a/c "
        "([continuation.md#gates](reference/continuation.md#gates))"
    ),
    ("park_reason", "dangling_tool_state"): (
        "Phase 0 ([phase0.md#rejection-reasons](reference/phase0.md#rejection-reasons)); gate a "
        "(single-run path)"
    ),
    ("park_reason", "pending_permission"): "gate b",
    ("park_reason", "workspace_identity_mismatch"): "gate j'",
    ("park_reason", "background_operation_pending"): "gate k",
    ("park_reason", "tool_catalog_mismatch"): "gate n",
    ("park_reason", "runtime_ledger_unreadable"): (
        "planner steps 1 and 4 "
        "([continuation.md#planner-steps](reference/continuation.md#planner-steps)); blocked "
        "replay; gate g"
    ),
    ("park_reason", "terminal_repair_failed"): (
        "gate h ([continuation.md#terminal-boundary](reference/continuation.md#terminal-boundary))"
    ),
    ("park_reason", "workspace_cwd_mismatch"): (
        "gate i ([continuation.md#cwd](reference/continuation.md#cwd))"
    ),
    ("park_reason", "runtime_ledger_empty"): "gate d",
    ("park_reason", "runtime_identity_mismatch"): (
        "gate e; planner step 3; lineage check 4 "
        "([continuation.md#lineage](reference/continuation.md#lineage))"
    ),
    ("park_reason", "continuation_identity_reused"): "gate f",
    ("park_reason", "provider_resume_head_unsupported"): "gate o",
    ("park_reason", "provider_resume_boundary_unsupported"): "gate p",
    ("park_reason", "provider_replay_non_suffix_gap"): (
        "blocked composite replay "
        "([continuation.md#composite-replay](reference/continuation.md#composite-replay))"
    ),
    ("park_reason", "provider_replay_unsupported"): "blocked composite replay",
    ("park_reason", "runtime_lineage_cycle"): "lineage check 2",
    ("park_reason", "runtime_lineage_depth_exceeded"): "lineage check 1",
    ("park_reason", "runtime_lineage_missing"): "lineage check 3",
    ("park_reason", "runtime_lineage_start_mismatch"): (
        "against the header's V2 source, or a V1 header over a V2 start; lineage checks 6, 6'"
    ),
    ("park_reason", "runtime_lineage_replay_mismatch"): "lineage, after the walk",
    ("park_reason", "runtime_lineage_claim_mismatch"): (
        "declared for a V2 edge but never raised by maka_es ([open difference "
        "3](reference/index.md#od-3))"
    ),
    ("park_reason", "source_prefix_digest_mismatch"): "lineage check 5",
    ("park_reason", "workspace_ref_missing"): "gate l",
    ("park_reason", "checkpoint_restore_failed"): "gate m",
    ("park_reason", "source_run_unreadable"): (
        "pre-planner 4 ([continuation.md#pre-planner](reference/continuation.md#pre-planner))"
    ),
    ("park_reason", "continuation_already_exists"): (
        "a claimed continuation that ended consistently, or a run no claim describes (in any "
        "state); planner steps 5, 6 "
        "([continuation.md#existing-claims](reference/continuation.md#existing-claims))"
    ),
    ("park_reason", "continuation_authority_unavailable"): (
        "the claim or the existing continuations cannot be read (store fault, undecodable "
        "claim); planner steps 5, 6"
    ),
    ("park_reason", "continuation_claim_repair_required"): (
        "a claim of this boundary disagrees with the plan, or its target is not what the claim "
        "implies or is in an intermediate state, which startup recovery must repair; planner "
        "step 5"
    ),
    ("park_reason", "continuation_started_indeterminate"): (
        "startup recovery ends it once its owner is gone ([ADR "
        "0035](adr/0035-recovery-ends-a-start-only-continuation-whose-owner-is-gone.md)); "
        "planner step 5"
    ),
    ("park_reason", "continuation_end_in_progress"): (
        "its owner is live (this process holds it, or another host's lease is live); plan again, "
        "nothing needs repair; planner step 5 "
        "([continuation.md#existing-claims](reference/continuation.md#existing-claims))"
    ),
    ("park_reason", "workspace_identity_missing"): "pre-planner 5; gate j",
    ("park_reason", "safety_observation_unavailable"): "pre-planner 3 and 6; revalidation 12",
    ("park_reason", "resume_feature_disabled"): (
        "pre-planner 1 ([continuation.md#feature-flag](reference/continuation.md#feature-flag))"
    ),
    ("park_reason", "resume_candidate_missing"): (
        "also when the session's newest run was ended before its first user message (detail "
        "`sourceRunId`); pre-planner 0, 2 and 2'"
    ),
    ("diagnostic", "pending_tool_result"): (
        "outcome unknown; Phase 0 diagnostics 2 and 5 → `dangling_tool_state`"
    ),
    ("diagnostic", "tool_not_dispatched"): "Phase 0 diagnostic 2 → `dangling_tool_state`",
    ("diagnostic", "tool_recovery_parked"): "Phase 0 diagnostic 2 → `dangling_tool_state`",
    ("diagnostic", "tool_recovery_corruption"): (
        "Phase 0 diagnostics 2 and 4 → `dangling_tool_state`"
    ),
    ("diagnostic", "tool_ledger_corruption"): (
        "a resolver issue other than the three self-named ones (`detail.issueCode`); Phase 0 "
        "diagnostic 3 → `dangling_tool_state`"
    ),
    ("diagnostic", "duplicate_event_id"): "Phase 0 diagnostic 3 → `dangling_tool_state`",
    ("diagnostic", "semantic_lane_conflict"): (
        "[wire.md#lanes](reference/wire.md#lanes); Phase 0 diagnostic 3 → `dangling_tool_state`"
    ),
    ("diagnostic", "protocol_marker_invalid"): "Phase 0 diagnostic 3 → `dangling_tool_state`",
    ("diagnostic", "unmatched_tool_result"): "Phase 0 diagnostic 6 → `dangling_tool_state`",
    ("diagnostic", "tool_name_mismatch"): (
        "detail `{callToolName, responseToolName}`; Phase 0 diagnostic 6 → `dangling_tool_state`"
    ),
    ("diagnostic", "workspace_location_changed"): "detail `{sourceCwd, currentCwd}`; gate i",
    ("diagnostic", "operator_attested"): (
        "detail `{operationId, applied, actor, note, attestedAt, responseEventId}`; Phase 0, "
        "after diagnostic 6; never blocks"
    ),
}


def place(*entries: CodeEntry) -> tuple[CodeEntry, ...]:
    """The entries with their ``fires_in`` and ``see`` filled in from the tables above."""
    return tuple(
        dataclasses.replace(
            entry,
            fires_in=FIRES_IN.get((entry.kind, entry.code), entry.fires_in),
            see=SEE.get((entry.kind, entry.code), entry.see),
        )
        for entry in entries
    )
