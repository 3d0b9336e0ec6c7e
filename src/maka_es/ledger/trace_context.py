"""A run's trace context in the ledger: recorded once when the run starts, read after a crash.

Why in the ledger: a process killed inside a tool takes its spans with it, and the process
that recovers and resumes the run has nothing in memory that names the interrupted trace. The
run's ``traceparent`` (W3C, ids and flags only) is saved as version 1 of the run's own trace
stream (:class:`~maka_es.ledger.model.facts.TraceContextRecorded`), outside the RuntimeEvent wire
vocabulary and the run header, so no spec shape or digest changes (ADR 0043). It is written
only when tracing is on: a host without an OpenTelemetry SDK writes nothing.

Best effort, like all telemetry: a second record (a retry, a racing writer) loses on the
stream's version and is ignored, and a store fault while recording is noted, never raised.
"""

from __future__ import annotations

import logging
import re

from maka_es.ledger.model.facts import TraceContextRecorded, trace_stream_id
from maka_es.ledger.ports import RunStore, is_store_fault
from maka_es.telemetry import TRACEPARENT_PATTERN

_log = logging.getLogger(__name__)
_TRACEPARENT_RE = re.compile(TRACEPARENT_PATTERN)


class _AlreadyRecordedError(Exception):
    """The run's trace stream already has its version 1 (never leaves this module)."""


def record_trace_context(store: RunStore, run_id: str, traceparent: str | None) -> bool:
    """Save ``traceparent`` as ``run_id``'s trace context; ``False`` when there is none to
    save (or it is not a W3C ``traceparent``), one is already recorded, or the store failed
    (noted at debug level)."""
    if traceparent is None or _TRACEPARENT_RE.fullmatch(traceparent) is None:
        return False
    stream = trace_stream_id(run_id)
    fact = TraceContextRecorded(
        originator_id=stream,
        originator_version=1,
        run_id=run_id,
        traceparent=traceparent,
        recorded_at=store.now_ms(),
    )
    try:
        with store.command():
            store.commit([fact], conflict=_AlreadyRecordedError)
    except _AlreadyRecordedError:
        return False
    except Exception as exc:
        if not is_store_fault(exc):
            raise
        _log.debug("trace context of %s not recorded: %s", run_id, type(exc).__name__)
        return False
    return True


def recorded_trace_context(store: RunStore, run_id: str) -> str | None:
    """The ``traceparent`` recorded for ``run_id`` (``None``: none recorded, or unreadable)."""
    try:
        fact = store.first_fact(trace_stream_id(run_id))
    except Exception as exc:
        if not is_store_fault(exc):
            raise
        _log.debug("trace context of %s not read: %s", run_id, type(exc).__name__)
        return None
    return fact.traceparent if isinstance(fact, TraceContextRecorded) else None
