"""The OpenTelemetry SDK for the trace tests: one in-memory exporter per process.

Why a block that unsets the provider again: the API's global tracer provider is set once per
process, and a test run after a traced test would otherwise record spans and trace contexts
(extra saves) that it does not expect; :func:`traced` sets it for one block and resets the
API's globals after it, as OpenTelemetry's own test utilities do. A crash test's
child also appends each ended span to a JSON-lines file (``spans_to``), since the parent cannot
read a killed process's memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import ProxyTracerProvider
from opentelemetry.util._once import Once


class _JsonLines(SpanExporter):
    """Appends each ended span's name, ids and attributes to a file (flushed per span)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self.path.open("a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps(span_record(span)) + "\n")
        return SpanExportResult.SUCCESS


def span_record(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "traceId": f"{context.trace_id:032x}",
        "spanId": f"{context.span_id:016x}",
        "attributes": dict(span.attributes or {}),
    }


@contextmanager
def traced(spans_to: Path | None = None) -> Iterator[InMemorySpanExporter]:
    """An SDK provider as the global one while the block runs, exporting every ended span to
    the SDK's ``InMemorySpanExporter`` (and to ``spans_to``); unset again afterwards, so the
    tests after it run without an SDK, as a host without one does."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if spans_to is not None:
        provider.add_span_processor(SimpleSpanProcessor(_JsonLines(spans_to)))
    reset_trace_globals()
    trace.set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        provider.shutdown()
        reset_trace_globals()


def reset_trace_globals() -> None:
    """No global tracer provider, as at the start of a process: the API's set-once guard
    rearmed, the way OpenTelemetry's own test utilities reset it between tests."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    trace._PROXY_TRACER_PROVIDER = ProxyTracerProvider()


def first_start(root: str, store: str) -> Any:
    """The live agent's first start in a child, its spans also written to ``spans.jsonl``."""
    from tests.support import live_agent

    with traced(Path(root) / "spans.jsonl"):
        return live_agent.main(Path(root), store)
