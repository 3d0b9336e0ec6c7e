"""maka_es's telemetry: lifecycle events and OpenTelemetry spans, identities and codes only.

Why one module for both: they are one concept, what maka_es tells a host about what it does,
and they follow one rule (ADR 0011): identities, codes and error classes only, never prompts,
tool arguments, tool results or secrets. Rather than trusting every call site to pass "the
right string", every value is typed so that free text cannot be represented at all:

* identities (``sessionId``, run ids, operation ids, tool names, claim ids) must match
  :data:`IDENTIFIER_PATTERN` - ASCII letters, digits and ``. _ : -``, at most 200 characters,
  no spaces, newlines, quotes, braces or other JSON / prose punctuation;
* rejection reasons, reason codes, outcomes and ``errorClass`` are :data:`CODE_PATTERN` codes -
  the same alphabet but never empty.

**Lifecycle events** (docs/reference/continuation.md#telemetry) are frozen models: a prompt
passed by mistake fails at model construction; the :class:`Telemetry` helpers drop such an
event and log only *which fields* were refused. The fan-out is the standard library's:
:class:`Telemetry` hands each event to a ``logging`` logger whose handlers are the sinks, and
adds it to the current OpenTelemetry span as a span event.

**Spans** (docs/integrations/opentelemetry.md, ADR 0043) use the OpenTelemetry API only,
imported on first use: without ``opentelemetry`` installed, or with no SDK configured (the
API's proxy provider), :func:`span` returns one shared no-op scope and nothing is recorded.
A span attribute that is not an identity, a code, an int or a bool is dropped, never sent.
Exceptions are recorded by their error class only (:func:`error_class_of`), never their
message or traceback. :func:`current_traceparent` is the W3C ``traceparent`` the ledger stores
with a run, so that recovery and continuation spans after a crash link to the original trace.

Telemetry is best-effort and cannot change behaviour: a sink or exporter failure is swallowed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType, TracebackType
from typing import Annotated, Any, Final, Literal, Protocol, runtime_checkable

from pydantic import AfterValidator, Field, StrictStr, TypeAdapter, ValidationError

from maka_es.wire.events import ValueModel

__all__ = [
    "ATTEST_SPAN",
    "CLAIM_ID",
    "CODE_PATTERN",
    "CONTINUATION_SPAN",
    "DETAIL_REASON",
    "ERROR_CLASS",
    "FORK_SPAN",
    "IDENTIFIER_PATTERN",
    "MAX_IDENTIFIER_LENGTH",
    "MAX_REJECTION_REASONS",
    "MODEL_CALL_SPAN",
    "NOTES_LOGGER_NAME",
    "OPERATION_ID",
    "OUTCOME",
    "REASON",
    "RECOVERY_DECISION_SPAN",
    "RECOVERY_MODE",
    "RECOVERY_SPAN",
    "REPAIRS",
    "RUN_ID",
    "SESSION_ID",
    "SOURCE_RUN_ID",
    "SPAN_NAMES",
    "STEP",
    "TARGET_RUN_ID",
    "TELEMETRY_LOGGER_NAME",
    "TOOL_NAME",
    "TOOL_STEP_SPAN",
    "TRACEPARENT_PATTERN",
    "TRACER_NAME",
    "TURN_SPAN",
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
    "SpanScope",
    "Telemetry",
    "TelemetrySink",
    "current_traceparent",
    "error_class_of",
    "span",
    "tool_step_span",
    "tracing_enabled",
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

#: Logger of the debug notes about telemetry itself (dropped events, failing sinks, spans not
#: started); never payloads. Apart from :data:`TELEMETRY_LOGGER_NAME` so the event stream never
#: holds them; the name these notes have always had, so a host's logging filter stays valid.
NOTES_LOGGER_NAME = "maka_es.telemetry"
_log = logging.getLogger(NOTES_LOGGER_NAME)


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


#: The record attribute carrying the event model to the sinks' handlers.
_EVENT_ATTRIBUTE: Final = "maka_es_lifecycle_event"


class _SinkHandler(logging.Handler):
    """A ``logging`` handler delivering the record's event to one sink; a sink that raises
    an ``Exception`` is noted at debug level (its class, the event type, the error class)."""

    def __init__(self, sink: TelemetrySink) -> None:
        super().__init__(logging.NOTSET)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        event: LifecycleEvent = getattr(record, _EVENT_ATTRIBUTE)
        try:
            self.sink.emit(event)
        except Exception as exc:
            _log.debug(
                "telemetry sink %s failed on %s: %s",
                type(self.sink).__qualname__,
                event.type,
                error_class_of(exc),
            )


class Telemetry:
    """Sends lifecycle events to sinks and to the current span; nothing it does can reach the
    caller's control flow.

    The fan-out is ``logging``'s: each sink is a handler of this instance's own logger (not
    registered with ``logging.getLogger``, so applications never share sinks, and it does not
    propagate). ``Telemetry()`` logs through a :class:`LoggingTelemetrySink` (the
    ``maka_es.telemetry`` logger); pass ``sinks=()`` (or a :class:`NullTelemetrySink`) to
    switch the events off. Every event is also added to the current OpenTelemetry span as a
    span event (its type as name, its fields as attributes) when tracing is on.
    """

    def __init__(self, sinks: Iterable[TelemetrySink] | None = None) -> None:
        self.sinks: tuple[TelemetrySink, ...] = (
            tuple(sinks) if sinks is not None else (LoggingTelemetrySink(),)
        )
        self._fanout = logging.Logger(f"{TELEMETRY_LOGGER_NAME}.fanout", logging.INFO)
        self._fanout.propagate = False
        for sink in self.sinks:
            self._fanout.addHandler(_SinkHandler(sink))

    def emit(self, event: LifecycleEvent) -> None:
        """Send ``event`` to every sink (a sink raising does not stop the others) and to the
        current span.

        Any ``Exception`` from a sink is swallowed and noted at debug level with the sink, the
        event type and the error class only - never the event payload or the error message.
        ``BaseException``s such as ``KeyboardInterrupt`` are not telemetry failures and pass.
        """
        _add_span_event(event)
        self._fanout.info(event.type, extra={_EVENT_ATTRIBUTE: event})

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


# === spans ======================================================================================

#: The instrumentation scope of every maka_es span.
TRACER_NAME: Final = "maka_es"

#: One span per user turn (``run_turn``), from its run's creation to its terminal.
TURN_SPAN: Final = "maka_es.turn"
#: One span per provider call of the agent loop.
MODEL_CALL_SPAN: Final = "maka_es.model_call"
#: One span per tool step, from T1 committed to T2 committed (the window a crash leaves open).
TOOL_STEP_SPAN: Final = "maka_es.tool_step"
#: One span per startup recovery (``recover()``).
RECOVERY_SPAN: Final = "maka_es.recovery"
#: One span per recovery decision (a run or claim repaired, or deliberately left).
RECOVERY_DECISION_SPAN: Final = "maka_es.recovery.decision"
#: One span per continuation execution (``execute_continuation`` / ``resume``).
CONTINUATION_SPAN: Final = "maka_es.continuation"
#: Operator actions (ADR 0022).
ATTEST_SPAN: Final = "maka_es.operator.attest"
FORK_SPAN: Final = "maka_es.operator.fork"
SPAN_NAMES: Final = frozenset(
    {
        TURN_SPAN,
        MODEL_CALL_SPAN,
        TOOL_STEP_SPAN,
        RECOVERY_SPAN,
        RECOVERY_DECISION_SPAN,
        CONTINUATION_SPAN,
        ATTEST_SPAN,
        FORK_SPAN,
    }
)

#: Span attribute keys (docs/integrations/opentelemetry.md#spans): identities and codes.
SESSION_ID: Final = "maka_es.session_id"
RUN_ID: Final = "maka_es.run_id"
SOURCE_RUN_ID: Final = "maka_es.source_run_id"
TARGET_RUN_ID: Final = "maka_es.target_run_id"
OPERATION_ID: Final = "maka_es.operation_id"
TOOL_NAME: Final = "maka_es.tool_name"
RECOVERY_MODE: Final = "maka_es.recovery_mode"
CLAIM_ID: Final = "maka_es.claim_id"
#: A recovery decision's reason code: its repair kind
#: (docs/reference/continuation.md#startup-recovery).
REASON: Final = "maka_es.reason"
#: The ``reason`` of a repair's detail (``left_unreconciled``: why the run is held).
DETAIL_REASON: Final = "maka_es.detail_reason"
OUTCOME: Final = "maka_es.outcome"
ERROR_CLASS: Final = "maka_es.error_class"
STEP: Final = "maka_es.step"
REPAIRS: Final = "maka_es.repairs"

#: A W3C ``traceparent`` (version 00): trace id, parent span id, flags; nothing else fits.
TRACEPARENT_PATTERN: Final = r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}"
_TRACEPARENT_RE = re.compile(TRACEPARENT_PATTERN)

#: A span attribute's value: an identity or code, a count, a flag, or a tuple of codes.
AttributeValue = str | int | bool | tuple[str, ...]


class _Api:
    """The OpenTelemetry API modules, imported once on first use (``None``: not installed)."""

    loaded: bool = False
    trace: ModuleType | None = None
    propagator: Any = None
    tracer: tuple[object, Any] | None = None  # (provider, its maka_es tracer)


def _api() -> ModuleType | None:
    if not _Api.loaded:
        _Api.loaded = True
        try:
            from opentelemetry import trace
            from opentelemetry.trace.propagation.tracecontext import (
                TraceContextTextMapPropagator,
            )
        except ImportError:
            return None
        _Api.trace = trace
        _Api.propagator = TraceContextTextMapPropagator()
    return _Api.trace


def _tracer() -> Any | None:
    """The maka_es tracer of the configured provider; ``None`` when nothing would record:
    OpenTelemetry is not installed, or no SDK provider was set (the API's proxy or no-op)."""
    trace = _api()
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    cached = _Api.tracer
    if cached is None or cached[0] is not provider:
        cached = _Api.tracer = (provider, provider.get_tracer(TRACER_NAME))
    return cached[1]


def tracing_enabled() -> bool:
    """Whether spans are recorded (an SDK provider is configured); callers skip the reads
    that only feed span links (a run's stored traceparent) when it is not."""
    return _tracer() is not None


def _clean(value: object) -> AttributeValue | None:
    """``value`` when it may be a span attribute (module docstring), else ``None``."""
    if isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return value if value and _IDENTIFIER_RE.fullmatch(value) is not None else None
    if isinstance(value, tuple | list) and all(
        isinstance(v, str) and _CODE_RE.fullmatch(v) is not None for v in value
    ):
        return tuple(value)[:MAX_REJECTION_REASONS]
    return None


def _clean_all(attributes: Mapping[str, object]) -> dict[str, AttributeValue]:
    cleaned = {key: _clean(value) for key, value in attributes.items()}
    return {key: value for key, value in cleaned.items() if value is not None}


def _context_of(traceparent: str | None) -> Any | None:
    """The span context a stored ``traceparent`` names (``None``: absent or malformed)."""
    if traceparent is None or _TRACEPARENT_RE.fullmatch(traceparent) is None:
        return None
    trace = _api()
    if trace is None:
        return None
    context = _Api.propagator.extract({"traceparent": traceparent})
    span_context = trace.get_current_span(context).get_span_context()
    return span_context if span_context.is_valid else None


class SpanScope:
    """One span while it is open: attributes go through the same filter as at its start, and
    an exception leaving the scope marks it failed with its error class only."""

    __slots__ = ("_scope", "_span")

    def __init__(self, span_: Any = None, scope: Any = None) -> None:
        self._span = span_
        self._scope = scope

    def set(self, key: str, value: object) -> None:
        """Set ``key`` when ``value`` is an identity, a code, an int, a bool or codes."""
        cleaned = _clean(value)
        if self._span is not None and cleaned is not None:
            self._span.set_attribute(key, cleaned)

    def fail(self, error: BaseException | str) -> None:
        """Mark the span failed: ``maka_es.error_class`` and ERROR status, no description."""
        if self._span is None:
            return
        code = error if isinstance(error, str) else error_class_of(error)
        self.set(ERROR_CLASS, code)
        trace = _api()
        if trace is not None:
            self._span.set_status(trace.StatusCode.ERROR)

    def __enter__(self) -> SpanScope:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._scope is None:
            return
        if exc is not None:
            self.fail(exc)
        try:
            self._scope.__exit__(None, None, None)  # the exception itself is never recorded
        except Exception as failure:  # an exporter failing on end changes nothing
            _log.debug("span end failed: %s", error_class_of(failure))


#: The scope handed out when nothing is recorded: shared, stateless.
_NO_SPAN: Final = SpanScope()


def span(
    name: str,
    attributes: Mapping[str, object] | None = None,
    *,
    links: Callable[[], Iterable[str | None]] | None = None,
    continues: Callable[[], str | None] | None = None,
) -> SpanScope:
    """A span named ``name`` (one of :data:`SPAN_NAMES`) around a ``with`` block.

    ``links`` gives stored traceparents the span links to (read only when tracing is on);
    ``continues`` a traceparent the span continues as its parent when no span is current in
    this thread (a resume after a crash joins the interrupted run's trace; inside a host's own
    span it stays there and only links). Without a configured SDK: one shared no-op scope.
    """
    tracer = _tracer()
    if tracer is None:
        return _NO_SPAN
    return _PendingSpan(tracer, name, attributes or {}, links, continues)


class _PendingSpan(SpanScope):
    """A span started when its ``with`` block is entered (never before, so none leaks)."""

    __slots__ = ("_start",)

    def __init__(
        self,
        tracer: Any,
        name: str,
        attributes: Mapping[str, object],
        links: Callable[[], Iterable[str | None]] | None,
        continues: Callable[[], str | None] | None,
    ) -> None:
        super().__init__()
        self._start = (tracer, name, attributes, links, continues)

    def __enter__(self) -> SpanScope:
        tracer, name, attributes, links, continues = self._start
        try:
            self._scope = _start_as_current(tracer, name, attributes, links, continues)
            self._span = self._scope.__enter__()
        except Exception as failure:  # telemetry never breaks the traced operation
            _log.debug("span %s not started: %s", name, error_class_of(failure))
            self._span = self._scope = None
        return self


def _distinct(contexts: Iterable[Any | None]) -> list[Any]:
    """The span contexts, each once (a span both continuing and linking one names it once)."""
    seen: dict[tuple[int, int], Any] = {}
    for context in contexts:
        if context is not None:
            seen.setdefault((context.trace_id, context.span_id), context)
    return list(seen.values())


def _start_as_current(
    tracer: Any,
    name: str,
    attributes: Mapping[str, object],
    links: Callable[[], Iterable[str | None]] | None,
    continues: Callable[[], str | None] | None,
) -> Any:
    """The API's ``start_as_current_span`` context manager, exceptions never recorded."""
    trace = _api()
    assert trace is not None  # a tracer exists only with the API
    contexts = [_context_of(tp) for tp in (links() if links is not None else ())]
    parent = None
    if continues is not None and not trace.get_current_span().get_span_context().is_valid:
        origin = _context_of(continues())
        if origin is not None:
            parent = trace.set_span_in_context(trace.NonRecordingSpan(origin))
            contexts.append(origin)
    return tracer.start_as_current_span(
        name,
        context=parent,
        attributes=_clean_all(attributes),
        links=[trace.Link(c) for c in _distinct(contexts)],
        record_exception=False,
        set_status_on_exception=False,
    )


def tool_step_span(run_id: str, tool_name: str, recovery_mode: str, operation_id: str) -> SpanScope:
    """The span of one tool step, T1 committed to T2 committed."""
    return span(
        TOOL_STEP_SPAN,
        {
            RUN_ID: run_id,
            TOOL_NAME: tool_name,
            RECOVERY_MODE: recovery_mode,
            OPERATION_ID: operation_id,
        },
    )


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span, when tracing is on and the span is valid
    (what the ledger stores with a run, ADR 0043); ``None`` otherwise."""
    if _tracer() is None:
        return None
    carrier: dict[str, str] = {}
    try:
        _Api.propagator.inject(carrier)
    except Exception as failure:
        _log.debug("traceparent not read: %s", error_class_of(failure))
        return None
    traceparent = carrier.get("traceparent")
    if traceparent is None or _TRACEPARENT_RE.fullmatch(traceparent) is None:
        return None
    return traceparent


def _add_span_event(event: LifecycleEvent) -> None:
    """``event`` as a span event of the current span (its fields are identities and codes)."""
    if _tracer() is None:
        return
    trace = _api()
    assert trace is not None
    current = trace.get_current_span()
    if not current.is_recording():
        return
    wire = event.to_wire()
    wire.pop("type")
    try:
        current.add_event(event.type, attributes=_clean_all(wire))
    except Exception as failure:
        _log.debug("span event %s not added: %s", event.type, error_class_of(failure))
