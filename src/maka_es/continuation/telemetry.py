"""Lifecycle telemetry of safe-boundary continuation (docs/reference/continuation.md#telemetry).

Why this module is only a name now: the typed lifecycle events, their sinks and
:class:`Telemetry` live in :mod:`maka_es.telemetry` with maka_es's spans (one concept, one
privacy rule, ADR 0043), low enough that the tool journal and recovery use it too. Hosts and
tests that import them from here keep working; the objects are the same.
"""

from __future__ import annotations

from maka_es.telemetry import (
    CODE_PATTERN,
    IDENTIFIER_PATTERN,
    MAX_IDENTIFIER_LENGTH,
    MAX_REJECTION_REASONS,
    TELEMETRY_LOGGER_NAME,
    Code,
    ExecutionCompletedEvent,
    ExecutionFailedEvent,
    ExecutionStartedEvent,
    Identifier,
    LifecycleEvent,
    LifecycleEventAdapter,
    LoggingTelemetrySink,
    NullTelemetrySink,
    OperatorAttestedEvent,
    PlanApprovedEvent,
    PlanParkedEvent,
    RecordingTelemetrySink,
    RunForkedEvent,
    Telemetry,
    TelemetrySink,
    error_class_of,
)

__all__ = [
    "CODE_PATTERN",
    "IDENTIFIER_PATTERN",
    "MAX_IDENTIFIER_LENGTH",
    "MAX_REJECTION_REASONS",
    "TELEMETRY_LOGGER_NAME",
    "Code",
    "ExecutionCompletedEvent",
    "ExecutionFailedEvent",
    "ExecutionStartedEvent",
    "Identifier",
    "LifecycleEvent",
    "LifecycleEventAdapter",
    "LoggingTelemetrySink",
    "NullTelemetrySink",
    "OperatorAttestedEvent",
    "PlanApprovedEvent",
    "PlanParkedEvent",
    "RecordingTelemetrySink",
    "RunForkedEvent",
    "Telemetry",
    "TelemetrySink",
    "error_class_of",
]
