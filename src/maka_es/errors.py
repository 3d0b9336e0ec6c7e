"""Every exception maka_es defines, in one module; the raising modules re-export theirs.

Why: a host decides what to do after a crash from *stable codes*, not from message text. Every
error carries a public ``code`` (its meaning and the host's action are registered in
:mod:`maka_es.codes`, published as ``docs/exceptions.md``) and a machine-readable ``detail``.
Refusals are raised *before* anything is written: catching one never means "maybe half landed".

The tree (children in definition order; ``also``: the other bases; a test keeps it true). Catch
``StoreRefusal`` for any refused store command, ``StoreUnavailableError`` for any store fault
(nothing written), ``WorkspaceIdentityError`` for any workspace refusal. ``StrictJsonError``,
``OutcomeUnknownError`` and ``LineagePark`` carry no code: they never reach a host as such;
``OperationInterrupted`` stops a framework's run like a kill (ADR 0042).

```text
- MakaError
  - CommandLineUsageError
  - MissingExtraError
  - InvalidRuntimeEventError (also ValueError)
  - InvalidRunHeaderError (also ValueError)
  - InvalidHostConfigError (also ValueError)
  - NonStrictJsonError (also ValueError)
  - CodecInputError (also ValueError)
  - StoreRefusal
    - SessionNotFoundError (also LookupError)
    - SessionAlreadyExistsError
    - RunNotFoundError (also LookupError)
    - RunAlreadyExistsError
    - EventIdConflictError
    - EventIdentityMismatchError
    - InvocationSpineConflictError
    - RunSealedError
    - RunOwnerFencedError
    - TerminalConflictError
    - RuntimeOffsetMismatchError
    - PartialEventRefusedError
    - ReservedFactError
    - WritePathRefusedError
    - HeaderUpdateRefusedError
    - ConcurrentWriteError
    - ToolLedgerRejectionError
    - ToolLedgerCorruptionError
    - ToolOperationNotFoundError (also LookupError)
    - ToolOperationConflictError
    - ToolOutcomeConflictError
    - ToolOperationSettledError
    - RecoveryBundleRejectedError
    - ContinuationStartConflictError
    - StoreUnavailableError
      - StoreSchemaMissingError
      - StorePathError
      - StoreAuthFailedError
      - StoreDatabaseMissingError
  - ToolAlreadyDispatchedError
  - StoreOutcomeUnknownError
  - InvalidPlanRequestError (also ValueError)
  - StoreCorruptionError
    - StoreFileCorruptionError (also StoreUnavailableError)
  - JsonlLedgerError
  - WorkspaceIdentityError
    - WorkspaceNotFoundError (also LookupError)
    - InvalidWorkspaceError (also ValueError)
    - InvalidWorkspaceMarkerError (also ValueError)
    - WorkspaceIdentityChangedError
    - WorkspaceIoFailedError
  - WorkspacePathRefusedError (also ValueError)
  - ReportOutputError (also OSError)
  - ContinuationRevalidationError
  - RunForkRefusedError
  - RunEndRefusedError
  - TurnRefusedError
  - SessionHistoryError
  - InvalidProviderOutputError (also ValueError)
  - ProviderScriptExhaustedError (also RuntimeError)
  - ProviderExportError (also ValueError)
  - RecoveryStatusConflictError
  - RecoveryStatusUnsupportedError
  - OpenAIAgentsUnsupportedError
- StrictJsonError
- OutcomeUnknownError
- LineagePark
- OperationInterrupted (a BaseException)
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

# --- the base -------------------------------------------------------------------------------


class MakaError(Exception):
    """Base class: a refusal with a stable ``code``."""

    default_code: ClassVar[str] = "maka_error"

    def __init__(
        self, message: str, *, code: str | None = None, detail: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code: str = code or self.default_code
        self.detail: dict[str, Any] = dict(detail or {})

    def __str__(self) -> str:
        return f"[{self.code}] {self.args[0]}"


class CommandLineUsageError(MakaError):
    """The ``maka-es`` command line asks for something that cannot be done as asked: an
    unsupported store URL, a provider that cannot be loaded, an unknown suite (exit 2, ADR 0029).
    ``detail["action"]`` says what to do instead. Nothing was opened or written."""

    default_code = "usage"

    def __init__(self, message: str, action: str = "see maka-es --help") -> None:
        super().__init__(message, detail={"action": action})


class MissingExtraError(MakaError):
    """A part of maka_es that lives in an extra was imported without it: ``maka_es.cli`` and
    ``maka_es.report`` need ``maka_es[cli]`` (typer, rich, jinja2; ADR 0040). The message names
    the ``pip install`` line; ``detail`` holds ``extra`` and the missing ``module``. Nothing was
    opened or written: the core (``maka_es``, ``RuntimeApplication``) works without it."""

    default_code = "extra_missing"

    def __init__(self, extra: str, module: str, part: str) -> None:
        super().__init__(
            f"{part} needs the {extra} extra ({module} is not installed): "
            f"pip install 'maka_es[{extra}]'",
            detail={"extra": extra, "module": module, "part": part},
        )


# --- wire / codec -------------------------------------------------------------------------


class InvalidRuntimeEventError(MakaError, ValueError):
    """A RuntimeEvent (or one of its parts) does not have the exact wire shape.

    ``field`` names the offending location as a dotted camelCase path (``content.args``).
    """

    default_code = "invalid_runtime_event"

    def __init__(self, message: str, *, field: str, detail: Mapping[str, Any] | None = None):
        super().__init__(message, detail={"field": field, **(detail or {})})
        self.field = field


class InvalidRunHeaderError(MakaError, ValueError):
    """An AgentRun header does not have the exact wire shape."""

    default_code = "invalid_run_header"

    def __init__(self, message: str, *, field: str, detail: Mapping[str, Any] | None = None):
        super().__init__(message, detail={"field": field, **(detail or {})})
        self.field = field


class InvalidHostConfigError(MakaError, ValueError):
    """A :class:`~maka_es.HostConfig` cannot be built from the values given.

    ``detail["errors"]`` lists ``{"field", "type"}`` per bad field (pydantic's error type, e.g.
    ``literal_error``, ``string_type``, ``missing``, ``extra_forbidden``); the values are never
    echoed, since a host config may be built from secrets in its environment. A ``ValueError``,
    as pydantic's ``ValidationError`` it replaces, so ``except ValueError`` still catches it.
    """

    default_code = "invalid_host_config"


class NonStrictJsonError(MakaError, ValueError):
    """A value is not strict JSON (NaN, Infinity, non-string key, unsupported type, ...)."""

    default_code = "non_strict_json"


class StrictJsonError(Exception):
    """Internal to the codec: becomes :class:`NonStrictJsonError` once the path is known."""

    def __init__(self, reason: str, segments: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.reason, self.segments = reason, list(segments)


class CodecInputError(MakaError, ValueError):
    """Input to a digest or identity function is structurally invalid (not a JSON problem); the
    ``code`` says which (``prefix_invalid``, ``boundary_invalid``, ... in ``maka_es.codes``)."""

    default_code = "codec_input_invalid"


# --- store refusals ------------------------------------------------------------------------


class StoreRefusal(MakaError):  # noqa: N818 - a refusal, not an error condition
    """A command against the event store was refused; the store is unchanged."""

    default_code = "store_refusal"


class SessionNotFoundError(StoreRefusal, LookupError):
    default_code = "session_not_found"


class SessionAlreadyExistsError(StoreRefusal):
    default_code = "session_already_exists"


class RunNotFoundError(StoreRefusal, LookupError):
    default_code = "run_not_found"


class RunAlreadyExistsError(StoreRefusal):
    default_code = "run_already_exists"


class EventIdConflictError(StoreRefusal):
    """The same event id was appended again with different content."""

    default_code = "event_id_conflict"


class EventIdentityMismatchError(StoreRefusal):
    """The event's session/run/turn/invocation does not belong to the run it was appended to."""

    default_code = "event_identity_mismatch"


class InvocationSpineConflictError(StoreRefusal):
    """One invocation must map to exactly one (session, run, turn)."""

    default_code = "invocation_spine_conflict"


class RunSealedError(StoreRefusal):
    """The run already has its terminal event (or was sealed by a continuation claim)."""

    default_code = "run_sealed"


class RunOwnerFencedError(StoreRefusal):
    """Another host owns the run, or took it over from this one (a higher epoch): a fenced
    former owner never writes into it again (ADR 0021). Nothing was written."""

    default_code = "run_owner_fenced"


class TerminalConflictError(StoreRefusal):
    """A second, different terminal event, or a terminal header without a durable terminal."""

    default_code = "terminal_conflict"


class RuntimeOffsetMismatchError(StoreRefusal):
    """An append expected a different committed high-water than the store has."""

    default_code = "runtime_offset_mismatch"


class PartialEventRefusedError(StoreRefusal):
    """Partial (streaming) events are never part of the immutable ledger."""

    default_code = "partial_event_refused"


class ReservedFactError(StoreRefusal):
    """A reserved fact (dispatch, bound response, recovery fact, continuation start, protocol
    marker) was sent through the generic append path."""

    default_code = "reserved_fact"


class WritePathRefusedError(StoreRefusal):
    """An eventsourcing ``Application`` entry point that would write (or hand out the cached
    aggregates) without maka_es's write rules: ``save``, ``take_snapshot``, ``repository``,
    ``notify``. ``detail["name"]`` names it. Nothing was written."""

    default_code = "write_path_refused"


class HeaderUpdateRefusedError(StoreRefusal):
    """A run-header patch touched an immutable field or made an illegal status change."""

    default_code = "header_update_refused"


class ConcurrentWriteError(StoreRefusal):
    """Another writer committed to the same stream first (optimistic concurrency)."""

    default_code = "concurrent_write"


class ToolLedgerRejectionError(StoreRefusal):
    """A tool-bearing write would introduce a RecoveryResolver issue; ``code`` is the issue."""

    default_code = "tool_ledger_rejection"


class ToolLedgerCorruptionError(StoreRefusal):
    """The run's ledger already holds a tool-ledger issue: tool-bearing writes fail-stop."""

    default_code = "tool_ledger_corruption"


class ToolOperationNotFoundError(StoreRefusal, LookupError):
    """No operation with a durable dispatch (T1) has this id in the run."""

    default_code = "tool_operation_not_found"


class ToolOperationConflictError(StoreRefusal):
    """T1 for an operation that was already prepared with different facts."""

    default_code = "tool_operation_conflict"


class ToolOutcomeConflictError(StoreRefusal):
    """A second, different outcome (T2) for an operation that already has one (also
    ``operator_attestation_conflict``: another operator's attestation stands, ADR 0022)."""

    default_code = "outcome_conflict"


class ToolOperationSettledError(StoreRefusal):
    """The operation is settled (outcome, completed or parked recovery); only an exact retry of
    what settled it is accepted (``operation_not_attestable``: not indeterminate, ADR 0022)."""

    default_code = "tool_operation_settled"


class ToolAlreadyDispatchedError(MakaError):
    """T1 for this operation had already committed elsewhere, so the tool was not run again."""

    default_code = "tool_already_dispatched"


class OutcomeUnknownError(Exception):
    """Raised by a tool that cannot know whether its side effect happened (a request timed out
    after being sent); committed as a structured, non-retryable failure. Carries no code."""


class RecoveryBundleRejectedError(StoreRefusal):
    """A recovery bundle fails validation; ``code`` is the bundle validation code."""

    default_code = "recovery_bundle_rejected"


class ContinuationStartConflictError(StoreRefusal):
    """A claim's start was already recorded, or the start offered for it does not belong to
    the claim (another claim id or target, or a ``provenance`` that is not the recorded kind)."""

    default_code = "continuation_start_conflict"


class StoreUnavailableError(StoreRefusal):
    """The store could not serve the command, so nothing of it was written; not a verdict about
    the facts (the same command may succeed later). ``detail["reason"]``: ``locked``, ``full``,
    ``read_only``, ``store_file_deleted``, ``store_file_replaced``, ``store_wal_deleted``,
    ``store_wal_replaced``, ... Catch this class to treat every store fault alike; the
    subclasses below only refine the code."""

    default_code = "store_unavailable"


class StoreSchemaMissingError(StoreUnavailableError):
    """The database has no maka_es tables: not a maka_es store (a wrong path, a foreign file),
    or one opened read-only before anything created them. Nothing was read or written."""

    default_code = "store_schema_missing"


class StorePathError(StoreUnavailableError):
    """No store can be opened or created at the path (its directory does not exist, the path
    is a directory, a read-only open of a missing file, ...). ``detail["path"]`` names it."""

    default_code = "store_path_unusable"


class StoreAuthFailedError(StoreUnavailableError):
    """The PostgreSQL server refused to let the configured user in (a wrong password, an unknown
    role, no ``pg_hba.conf`` entry, no ``CONNECT`` privilege): a configuration error, so the same
    command fails again until the settings change. Raised at once, with the server's reason
    (never the password); nothing was read or written."""

    default_code = "store_auth_failed"


class StoreDatabaseMissingError(StoreUnavailableError):
    """The PostgreSQL server has no database of the configured name: a wrong URL or a database
    not created yet. Raised at once, with the server's reason; nothing was read or written."""

    default_code = "store_database_missing"


class StoreOutcomeUnknownError(MakaError):
    """The connection to the store dropped while it was committing: the command may or may
    not be durable. Not a ``StoreUnavailableError`` on purpose (that one means "nothing was
    written"): re-read the stream before deciding to retry (ADR 0028)."""

    default_code = "store_outcome_unknown"


class InvalidPlanRequestError(MakaError, ValueError):
    """A planning request is malformed (e.g. a negative expected high-water); nothing read."""

    default_code = "invalid_plan_request"


class StoreCorruptionError(MakaError):
    """Stored data cannot be decoded: fail closed, never guess."""

    default_code = "store_corruption"


class StoreFileCorruptionError(StoreCorruptionError, StoreUnavailableError):
    """The store file itself is damaged or no database at all (SQLite's ``SQLITE_CORRUPT``,
    ``SQLITE_NOTADB``; ``detail.reason`` ``corrupt`` or ``not_a_database``): a verdict about
    the file, so its code is ``store_corruption`` (the CLI exits 4), not "retry later".
    Also a ``StoreUnavailableError``, so every reader that treats a store it cannot read as a
    fault still does (the planner parks, a failed command forgets its cached streams)."""


# --- JSONL ledger, workspace identity and workspace paths ----------------------------------


class JsonlLedgerError(MakaError):
    """A JSONL ledger line is not a valid committed RuntimeEvent (nor a torn tail), or another
    refusal of the JSONL ledger named by ``code`` (``ledger_symlink_refused``, ...)."""

    default_code = "invalid_jsonl_line"

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        code: str | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        at_line = {} if line is None else {"line": line}
        super().__init__(message, code=code, detail={**(detail or {}), **at_line})
        self.line = line


class WorkspaceIdentityError(MakaError):
    """The workspace identity could not be resolved; nothing else about the workspace is
    trusted. Catch this base to treat every workspace refusal alike (a resume parks)."""

    default_code = "workspace_identity_error"


class WorkspaceNotFoundError(WorkspaceIdentityError, LookupError):
    """The workspace path does not exist (or a component of it is not a directory)."""

    default_code = "workspace_not_found"


class InvalidWorkspaceError(WorkspaceIdentityError, ValueError):
    """The workspace path exists but is not a directory."""

    default_code = "invalid_workspace"


class InvalidWorkspaceMarkerError(WorkspaceIdentityError, ValueError):
    """``.maka-workspace.json`` exists but is not one bounded regular file with the exact
    marker shape. Never repaired or replaced: an existing marker is authoritative."""

    default_code = "invalid_workspace_marker"


class WorkspaceIdentityChangedError(WorkspaceIdentityError):
    """The workspace directory was replaced (device/inode changed) while its marker was being
    published: the marker cannot be attributed to the resolved directory."""

    default_code = "workspace_identity_changed"


class WorkspaceIoFailedError(WorkspaceIdentityError):
    """Any other I/O failure (permissions, a malformed enclosing Git repository, a full Git
    exclude file, a filesystem without hard links ...). No marker was published by us."""

    default_code = "workspace_io_failed"


class WorkspacePathRefusedError(MakaError, ValueError):
    """A path a tool (``Write``) was given could reach outside its workspace, so nothing was
    read or written there. ``code``: ``workspace_path_escape``, ``workspace_symlink_refused``
    or ``workspace_path_invalid`` (see :mod:`maka_es.codes`)."""

    default_code = "workspace_path_refused"


class ReportOutputError(MakaError, OSError):
    """A run report cannot be written where asked (a directory, a missing parent, an I/O
    failure); no file is left behind (ADR 0030)."""

    default_code = "report_output_invalid"


# --- continuation, provider, recovery-status read model --------------------------------------


class LineagePark(Exception):  # noqa: N818 - control flow, never escapes the planner
    """Internal: a single-reason park found while reading the lineage (``code``: the reason)."""

    def __init__(self, code: str, message: str, detail: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.detail = dict(detail or {})


class ContinuationRevalidationError(MakaError):
    """Execution refused just before it would start; ``code`` names the check that failed."""

    default_code = "continuation_revalidation_failed"


class RunForkRefusedError(MakaError):
    """``fork_run`` refused before writing anything (ADR 0022); ``code`` says why."""

    default_code = "fork_conflict"


class RunEndRefusedError(MakaError):
    """``end_start_only_run`` refused before writing anything (ADR 0035); ``code`` says why."""

    default_code = "run_not_start_only"


class TurnRefusedError(MakaError):
    """``run_turn`` refused before writing anything (ADR 0036): the session's newest run did
    not complete, so a new prompt would start beside an unfinished turn."""

    default_code = "turn_session_unfinished"


class SessionHistoryError(MakaError):
    """A turn's session history cannot be built (ADR 0038): an earlier turn's lineage no
    longer replays as its continuation recorded, or the turn is not a run of the session;
    ``detail.runId`` and ``detail.reason`` say which and why. Nothing was written."""

    default_code = "session_history_unreplayable"


class InvalidProviderOutputError(MakaError, ValueError):
    """A provider output is not a model ``text`` / ``thinking`` content (``detail.index``)."""

    default_code = "provider_output_invalid"


class ProviderScriptExhaustedError(MakaError, RuntimeError):
    """A ``ScriptedProvider`` was called more often than it was scripted."""

    default_code = "provider_script_exhausted"


ExportReason = Literal[
    "unmatched_tool_call",
    "unmatched_tool_result",
    "tool_id_mismatch",
    "duplicate_tool_call",
    "tool_exchange_interleaved",
    "tool_input_not_object",
]


class ProviderExportError(MakaError, ValueError):
    """The replay context cannot be exported without sending an unpaired tool exchange.
    ``detail``: ``reason`` (an :data:`ExportReason`), where known ``toolCallId``, ``eventId``."""

    default_code = "provider_export_invalid"

    def __init__(
        self,
        message: str,
        *,
        reason: ExportReason,
        tool_call_id: str | None = None,
        event_id: str | None = None,
    ) -> None:
        known = {"toolCallId": tool_call_id, "eventId": event_id}
        detail = {"reason": reason, **{k: v for k, v in known.items() if v is not None}}
        super().__init__(message, detail=detail)
        self.reason: ExportReason = reason


class RecoveryStatusConflictError(MakaError):
    """Another projector advanced the tracking position first; this batch was not written
    (merging could write rows older than the position the other batch recorded)."""

    default_code = "recovery_status_conflict"


class RecoveryStatusUnsupportedError(MakaError):
    """The event store's recorder is of no kind the recovery-status read model has a backend
    for (eventsourcing's SQLite, PostgreSQL or in-memory recorders; ``detail.recorder``)."""

    default_code = "recovery_status_unsupported"


class OpenAIAgentsUnsupportedError(MakaError):
    """The OpenAI Agents integration (``maka_es.integrations.openai_agents``, ADR 0042) was
    given what it cannot journal: a handoff, a hosted tool or an MCP server on the agent, a
    tool missing from the application's catalogue, a tool call its durable model did not
    record, or a model or tool call outside a ``DurableRunner`` turn; ``detail.reason`` says
    which. Nothing was written and no tool ran."""

    default_code = "openai_agents_unsupported"


class OperationInterrupted(BaseException):
    """A framework's loop stopped while an operation of the run has T1 and no T2 (a store
    fault in T2, ``maka_es.integrations.openai_agents``): like a kill, it is not turned into
    the run's terminal, and startup recovery settles the operation first (ADR 0019). A
    ``BaseException``, so the agent loop does not commit it as the run's failure; the
    original exception is its ``__cause__``."""
