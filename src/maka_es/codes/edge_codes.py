"""Registered codes of refusals at the edges: JSONL ledgers, the workspace, providers, read model.

Behaviour: docs/reference/ledger.md#jsonl, docs/reference/continuation.md#workspace-identity,
docs/reference/tool-journal.md#write-tool, docs/reference/continuation.md#provider-history and
docs/reference/continuation.md#recovery-status.
"""

from __future__ import annotations

from maka_es import errors as e
from maka_es.codes.model import error, group

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
