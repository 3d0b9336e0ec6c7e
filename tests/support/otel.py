"""The OpenTelemetry SDK for the trace tests: one in-memory exporter per process.

Why once per process: the API's global tracer provider can be set only once, so the first
trace test of a process sets an SDK provider (or takes the one already set) with a processor
that exports every ended span to :data:`EXPORTER` (the SDK's ``InMemorySpanExporter``), and
each test clears it. A crash test's
child also appends each ended span to a JSON-lines file (``spans_to``), since the parent cannot
read a killed process's memory.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()


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


class _Installed:
    done = False


def install(spans_to: Path | None = None) -> InMemorySpanExporter:
    """The process's SDK provider exporting to :data:`EXPORTER`, cleared. Set on first call;
    when something else of the process (a docs page's example) set an SDK provider first, the
    exporter is added to that one."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    if not _Installed.done:
        _Installed.done = True
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        if spans_to is not None:
            provider.add_span_processor(SimpleSpanProcessor(_JsonLines(spans_to)))
    EXPORTER.clear()
    return EXPORTER


def first_start(root: str, store: str) -> Any:
    """The live agent's first start in a child, its spans also written to ``spans.jsonl``."""
    from tests.support import live_agent

    install(Path(root) / "spans.jsonl")
    return live_agent.main(Path(root), store)
