"""Refusals of the event store: the store is unchanged after each."""

from __future__ import annotations

from maka_es.errors.base import MakaError

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
