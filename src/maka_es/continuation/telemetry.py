"""Lifecycle telemetry for safe-boundary continuation (docs/reference/continuation.md#telemetry).

Why a dedicated module with its own, deliberately narrow types: a host wants to see *that* a
continuation was approved, parked, started, completed or failed, and for which session and
runs, but lifecycle events must never carry prompts, tool arguments, tool results or secrets.
Rather than trusting every call site to pass "the right string", every field is typed so that
free text cannot be represented at all:

* identities (``sessionId``, ``sourceRunId``, ``targetRunId``) must match
  :data:`IDENTIFIER_PATTERN` - ASCII letters, digits and ``. _ : -``, at most 200 characters,
  no spaces, newlines, quotes, braces or other JSON / prose punctuation;
* rejection reasons and ``errorClass`` are :data:`CODE_PATTERN` codes - the same alphabet but
  never empty (an empty code carries no information and usually means a bug upstream).

A prompt or tool argument passed by mistake therefore fails loudly at model construction (and
in tests). In production the :class:`Telemetry` helpers drop such an event and log only *which
fields* were refused, never their values.

Telemetry is best-effort and cannot change resume behaviour: :meth:`Telemetry.emit` swallows any
``Exception`` a sink raises, and the convenience builders never raise into the caller.

The event shapes (their union is :data:`LifecycleEvent`), :func:`error_class_of`, the sinks
and :class:`Telemetry` (which isolates the caller from sink failures) are listed in ``__all__``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import AfterValidator, Field, StrictStr, TypeAdapter, ValidationError

from maka_es.wire.values import ValueModel

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

#: Longest identity or code an event may carry. Run and session ids are short tokens (UUIDs,
#: ``run-…`` slugs); anything longer is far more likely to be a payload passed by mistake.
MAX_IDENTIFIER_LENGTH = 200

#: Identity alphabet: ASCII letters, digits and ``. _ : -``; may be empty (``sourceRunId`` is
#: ``''`` when a park found no candidate). No whitespace, quotes, braces, slashes or non-ASCII,
#: so neither prose, JSON, paths nor multi-line text fit. Matched with :func:`re.fullmatch`
#: (so a trailing newline is refused too, unlike ``re.match`` with ``$``).
IDENTIFIER_PATTERN = rf"[A-Za-z0-9._:\-]{{0,{MAX_IDENTIFIER_LENGTH}}}"

#: Code alphabet (rejection reasons, ``errorClass``): :data:`IDENTIFIER_PATTERN`, non-empty.
CODE_PATTERN = rf"[A-Za-z0-9._:\-]{{1,{MAX_IDENTIFIER_LENGTH}}}"

#: Upper bound on ``rejectionReasons``: the park vocabulary (docs/reference/codes.md#park-reasons)
#: has a few dozen codes; a longer list is something else (a tokenised prompt).
MAX_REJECTION_REASONS = 64

#: Logger the default sink writes events to; kept apart from this module's own logger so that
#: the event stream never contains the (debug) notes about dropped events or failing sinks.
TELEMETRY_LOGGER_NAME = "maka_es.telemetry"

_IDENTIFIER_RE = re.compile(IDENTIFIER_PATTERN)
_CODE_RE = re.compile(CODE_PATTERN)

#: Debug notes about telemetry itself (dropped events, failing sinks). Never carries payloads.
_log = logging.getLogger(__name__)


def _matching(regex: re.Pattern[str], kind: str) -> Callable[[str], str]:
    """A validator refusing any string outside ``regex``. The message omits the value:
    pydantic already records the input, and anything formatted here could reach a log line."""

    def check(value: str) -> str:
        if regex.fullmatch(value) is None:
            raise ValueError(f"not a telemetry {kind} (must fully match {regex.pattern})")
        return value

    return check


#: A session or run identity: see :data:`IDENTIFIER_PATTERN`.
Identifier = Annotated[StrictStr, AfterValidator(_matching(_IDENTIFIER_RE, "identifier"))]
#: A rejection reason or error class: see :data:`CODE_PATTERN`.
Code = Annotated[StrictStr, AfterValidator(_matching(_CODE_RE, "code"))]


class _LifecycleEventBase(ValueModel):
    """Shared behaviour. Each event declares its own fields, in the documented order, so that the
    dumped keys read ``type, sessionId, sourceRunId, ...`` exactly as
    docs/reference/continuation.md#telemetry lists them."""

    def to_wire(self) -> dict[str, Any]:
        """The exact JSON-ready dict (camelCase keys, every key present, tuples as lists)."""
        return self.model_dump(mode="json", by_alias=True)


class PlanApprovedEvent(_LifecycleEventBase):
    """The planner approved continuing ``source_run_id`` as the new run ``target_run_id``."""

    type: Literal["plan_approved"] = "plan_approved"
    session_id: Identifier
    source_run_id: Identifier
    target_run_id: Identifier


class PlanParkedEvent(_LifecycleEventBase):
    """The planner parked; ``source_run_id`` is ``''`` when no candidate run was found.

    Only the stable rejection codes are reported, never the diagnostics' messages or details:
    those may quote ledger content.
    """

    type: Literal["plan_parked"] = "plan_parked"
    session_id: Identifier
    source_run_id: Identifier
    rejection_reasons: tuple[Code, ...] = Field(max_length=MAX_REJECTION_REASONS)


class ExecutionStartedEvent(_LifecycleEventBase):
    """Execution of an approved plan started (the continuation run is about to be written)."""

    type: Literal["execution_started"] = "execution_started"
    session_id: Identifier
    source_run_id: Identifier
    target_run_id: Identifier


class ExecutionCompletedEvent(_LifecycleEventBase):
    """Execution of an approved plan completed."""

    type: Literal["execution_completed"] = "execution_completed"
    session_id: Identifier
    source_run_id: Identifier
    target_run_id: Identifier


class ExecutionFailedEvent(_LifecycleEventBase):
    """Execution failed; only the error's class (see :func:`error_class_of`) is reported.

    Never the message: exception text routinely quotes arguments, paths or provider output.
    """

    type: Literal["execution_failed"] = "execution_failed"
    session_id: Identifier
    source_run_id: Identifier
    target_run_id: Identifier
    error_class: Code


class OperatorAttestedEvent(_LifecycleEventBase):
    """An operator attested an operation's outcome (ADR 0022): identities and a code only."""

    type: Literal["operator_attested"] = "operator_attested"
    session_id: Identifier
    run_id: Identifier
    operation_id: Identifier
    actor: Identifier
    outcome: Literal["applied", "not_applied"]


class RunForkedEvent(_LifecycleEventBase):
    """An operator forked a run before an operation (ADR 0022): identities only."""

    type: Literal["run_forked"] = "run_forked"
    session_id: Identifier
    source_run_id: Identifier
    fork_run_id: Identifier
    operation_id: Identifier
    actor: Identifier


#: Any lifecycle event, discriminated by ``type``.
LifecycleEvent = Annotated[
    PlanApprovedEvent
    | PlanParkedEvent
    | ExecutionStartedEvent
    | ExecutionCompletedEvent
    | ExecutionFailedEvent
    | OperatorAttestedEvent
    | RunForkedEvent,
    Field(discriminator="type"),
]

#: Validates a dumped event (for example one read back from a log sink) into its model.
LifecycleEventAdapter: TypeAdapter[LifecycleEvent] = TypeAdapter(LifecycleEvent)


def error_class_of(exc: BaseException) -> str:
    """The ``errorClass`` of ``exc`` (docs/reference/continuation.md#telemetry): its ``code``,
    else its class name.

    ``code`` counts only when it is a string that is a valid :data:`CODE_PATTERN` code, so an
    error whose ``code`` is an int (``SystemExit``, HTTP errors) or free text falls back to the
    class name; a class name outside the pattern (non-ASCII, absurdly long) gives ``"unknown"``.
    Never raises: reading ``code`` may run arbitrary property code, and telemetry must not turn
    one failure into another.
    """
    try:
        code = getattr(exc, "code", None)
    except Exception:  # a raising ``code`` property is just "no usable code"
        code = None
    if isinstance(code, str) and _CODE_RE.fullmatch(code) is not None:
        return code
    name = type(exc).__name__
    if _CODE_RE.fullmatch(name) is not None:
        return name
    return "unknown"


def _reason_tuple(reasons: Iterable[str]) -> tuple[str, ...]:
    """``reasons`` as a tuple, refusing a bare string (which would split into characters)."""
    if isinstance(reasons, str):
        raise TypeError("rejection_reasons must be an iterable of codes, not a string")
    return tuple(reasons)


@runtime_checkable
class TelemetrySink(Protocol):
    """Where lifecycle events go. A sink may raise; :class:`Telemetry` isolates the caller."""

    def emit(self, event: LifecycleEvent) -> None:
        """Deliver one event."""


class LoggingTelemetrySink:
    """Writes each event as one INFO record: message = the event type, payload in ``extra``.

    The dumped dict goes under ``extra={"maka_es_event": ...}`` so a structured log handler can
    ship it as fields, while a plain text handler prints only the type.
    """

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger: logging.Logger = (
            logger if logger is not None else logging.getLogger(TELEMETRY_LOGGER_NAME)
        )

    def emit(self, event: LifecycleEvent) -> None:
        """Log ``event`` at INFO."""
        self.logger.info(event.type, extra={"maka_es_event": event.to_wire()})


class RecordingTelemetrySink:
    """Keeps every event in :attr:`events`, in emission order (for tests and diagnostics)."""

    def __init__(self) -> None:
        self.events: list[LifecycleEvent] = []

    def emit(self, event: LifecycleEvent) -> None:
        """Record ``event``."""
        self.events.append(event)


class NullTelemetrySink:
    """Discards every event (telemetry explicitly switched off)."""

    def emit(self, event: LifecycleEvent) -> None:
        """Do nothing."""


class Telemetry:
    """Fans lifecycle events out to sinks; nothing it does can reach the caller's control flow.

    ``Telemetry()`` logs through a :class:`LoggingTelemetrySink`; pass ``sinks=()`` (or a
    :class:`NullTelemetrySink`) to switch telemetry off.
    """

    def __init__(self, sinks: Iterable[TelemetrySink] | None = None) -> None:
        self.sinks: tuple[TelemetrySink, ...] = (
            tuple(sinks) if sinks is not None else (LoggingTelemetrySink(),)
        )

    def emit(self, event: LifecycleEvent) -> None:
        """Send ``event`` to every sink; a sink raising does not stop the others.

        Any ``Exception`` from a sink is swallowed and noted at debug level with the sink, the
        event type and the error class only - never the event payload or the error message.
        ``BaseException``s such as ``KeyboardInterrupt`` are not telemetry failures and pass.
        """
        for sink in self.sinks:
            try:
                sink.emit(event)
            except Exception as exc:
                _log.debug(
                    "telemetry sink %s failed on %s: %s",
                    type(sink).__qualname__,
                    event.type,
                    error_class_of(exc),
                )

    def plan_approved(self, *, session_id: str, source_run_id: str, target_run_id: str) -> None:
        """Emit ``plan_approved`` (dropped, never raised, if an identity is malformed)."""
        self._build_and_emit(
            "plan_approved",
            lambda: PlanApprovedEvent(
                session_id=session_id, source_run_id=source_run_id, target_run_id=target_run_id
            ),
        )

    def plan_parked(
        self,
        *,
        session_id: str,
        source_run_id: str | None,
        rejection_reasons: Iterable[str],
    ) -> None:
        """Emit ``plan_parked``; ``source_run_id=None`` (no candidate) is reported as ``''``."""
        self._build_and_emit(
            "plan_parked",
            lambda: PlanParkedEvent(
                session_id=session_id,
                source_run_id=source_run_id if source_run_id is not None else "",
                rejection_reasons=_reason_tuple(rejection_reasons),
            ),
        )

    def execution_started(self, *, session_id: str, source_run_id: str, target_run_id: str) -> None:
        """Emit ``execution_started`` (dropped, never raised, if an identity is malformed)."""
        self._build_and_emit(
            "execution_started",
            lambda: ExecutionStartedEvent(
                session_id=session_id, source_run_id=source_run_id, target_run_id=target_run_id
            ),
        )

    def execution_completed(
        self, *, session_id: str, source_run_id: str, target_run_id: str
    ) -> None:
        """Emit ``execution_completed`` (dropped, never raised, if an identity is malformed)."""
        self._build_and_emit(
            "execution_completed",
            lambda: ExecutionCompletedEvent(
                session_id=session_id, source_run_id=source_run_id, target_run_id=target_run_id
            ),
        )

    def execution_failed(
        self,
        *,
        session_id: str,
        source_run_id: str,
        target_run_id: str,
        error: BaseException,
    ) -> None:
        """Emit ``execution_failed`` with ``errorClass = error_class_of(error)``.

        Takes the exception itself rather than a string so the call site cannot hand over a
        message by mistake; only its class leaves this process.
        """
        self._build_and_emit(
            "execution_failed",
            lambda: ExecutionFailedEvent(
                session_id=session_id,
                source_run_id=source_run_id,
                target_run_id=target_run_id,
                error_class=error_class_of(error),
            ),
        )

    def _build_and_emit(self, event_type: str, build: Callable[[], LifecycleEvent]) -> None:
        """Build an event and emit it; a build failure drops the event instead of raising.

        The debug note names the refused fields only: a ``ValidationError``'s text quotes the
        input values, which are exactly what must not be logged if they are a prompt.
        """
        try:
            event = build()
        except ValidationError as exc:
            fields = sorted(
                {
                    ".".join(str(part) for part in error["loc"])
                    for error in exc.errors(include_url=False, include_input=False)
                }
            )
            _log.debug("telemetry event %s dropped: invalid %s", event_type, ", ".join(fields))
            return
        except Exception as exc:  # e.g. a rejection_reasons iterable that raises
            _log.debug("telemetry event %s dropped: %s", event_type, error_class_of(exc))
            return
        self.emit(event)
