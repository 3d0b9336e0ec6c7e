"""Errors of continuation, providers and the recovery-status read model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from maka_es.errors.base import MakaError

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
