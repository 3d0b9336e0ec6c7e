"""One trace across a SIGKILL: a turn killed inside its tool and resumed in a new process.

Why a real child and a real kill: the trace context must survive in the ledger, since the
killed process's spans (its turn, its tool step) never end and nothing of it is in memory
after the restart. The child is the live agent of tests/support/live_agent.py with the SDK's
exporter; it is SIGKILLed after T1 of its ``Write`` (the tool step is open). This process then
starts as the host would (``recover()``, ``resume``, the next turn) with the SDK's
``InMemorySpanExporter``: the recovery decision for the run links to the interrupted trace, and
the continuation (and its model calls and tool steps) continues it (ADR 0043).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from maka_es import OpenAIChatProvider
from maka_es.app import RuntimeApplication
from maka_es.telemetry import (
    ATTEST_SPAN,
    CONTINUATION_SPAN,
    MODEL_CALL_SPAN,
    OPERATION_ID,
    OUTCOME,
    REASON,
    RECOVERY_DECISION_SPAN,
    RECOVERY_SPAN,
    RUN_ID,
    TOOL_STEP_SPAN,
)
from maka_es.testing.crash import AgentCrashHarness
from maka_es.tooljournal.runtime import AFTER_T1
from tests.support import live_agent, otel

pytestmark = pytest.mark.crash


def _trace_id(span: ReadableSpan) -> str:
    context = span.get_span_context()
    assert context is not None
    return f"{context.trace_id:032x}"


def _one(spans: list[ReadableSpan], name: str, **attributes: object) -> ReadableSpan:
    found = [
        s
        for s in spans
        if s.name == name and all((s.attributes or {}).get(k) == v for k, v in attributes.items())
    ]
    assert len(found) == 1, [(s.name, dict(s.attributes or {})) for s in spans]
    return found[0]


def test_a_turn_killed_in_its_tool_and_resumed_is_one_connected_trace(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "config.json").write_text(json.dumps({"port": 8080}))
    store = str(root / "runtime.sqlite")
    # hit 1 of AFTER_T1 is ReadConfig's, hit 2 the Write's: killed with its tool step open
    killed = AgentCrashHarness().kill_at(
        "tests.support.otel:first_start", AFTER_T1, str(root), store, nth=2
    )
    assert killed.killed
    lines = (root / "spans.jsonl").read_text().splitlines()
    child = [s for s in map(json.loads, lines) if s["name"] != RECOVERY_SPAN]  # its empty start
    # the turn's ended spans: two model calls, the read's step; the turn and the Write's never
    assert [s["name"] for s in child] == [MODEL_CALL_SPAN, TOOL_STEP_SPAN, MODEL_CALL_SPAN]
    original = {s["traceId"] for s in child}
    assert len(original) == 1
    (trace_id,) = original

    with RuntimeApplication.open(store) as app:
        recorded = app.ledger.trace_context("r1")
    assert recorded is not None
    assert recorded.split("-")[1] == trace_id

    with otel.traced() as exporter:
        outcome = live_agent.main(root, store)
    assert outcome["resume"] == "continued", outcome
    spans = list(exporter.get_finished_spans())

    recovery = _one(spans, RECOVERY_SPAN)
    decisions = [
        s
        for s in spans
        if s.name == RECOVERY_DECISION_SPAN and (s.attributes or {})[RUN_ID] == "r1"
    ]
    # the Write settled from the file first (ADR 0019), then the run ended
    assert [(s.attributes or {})[REASON] for s in decisions] == [
        "tools_recovered",
        "terminal_recovered",
    ]
    for decision in decisions:
        assert decision.parent is not None
        assert decision.parent.span_id == recovery.context.span_id
        links = [
            (f"{k.context.trace_id:032x}", f"{k.context.span_id:016x}") for k in decision.links
        ]
        assert links == [(trace_id, recorded.split("-")[2])]  # the interrupted turn's span

    continuation = _one(spans, CONTINUATION_SPAN)
    assert _trace_id(continuation) == trace_id  # it continues the interrupted trace
    assert continuation.parent is not None
    assert f"{continuation.parent.span_id:016x}" == recorded.split("-")[2]
    assert [f"{link.context.trace_id:032x}" for link in continuation.links] == [trace_id]
    inside = [
        s
        for s in spans
        if s.parent is not None and s.parent.span_id == continuation.context.span_id
    ]
    assert {s.name for s in inside} >= {MODEL_CALL_SPAN}
    assert all(_trace_id(s) == trace_id for s in inside)
    # the write landed once: recovery settled it from the file, nothing ran it again
    assert (root / "workspace" / "port.txt").read_text() == "8080\n"


def _links(span: ReadableSpan) -> list[str]:
    return [f"{link.context.trace_id:032x}" for link in span.links]


def test_an_attestation_after_a_kill_in_a_never_auto_retry_tool_joins_the_trace(
    tmp_path: Path,
) -> None:
    """Killed after the email left (``never_auto_retry``): recovery leaves the run to the
    operator, the attestation links to the interrupted turn's trace and finishes its recovery
    inside its own span, and the resume then continues that trace."""
    root = tmp_path / "agent"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "config.json").write_text(json.dumps({"port": 8080}))
    store = str(root / "runtime.sqlite")
    harness = AgentCrashHarness()
    assert harness.kill_at(
        "tests.support.otel:first_start", live_agent.AFTER_EMAIL, str(root), store
    ).killed
    with RuntimeApplication.open(store) as app:
        recorded = app.ledger.trace_context("r2")
    assert recorded is not None
    trace_id = recorded.split("-")[1]

    model = OpenAIChatProvider(live_agent.ScriptedClient(root), model="scripted")
    with otel.traced() as exporter, live_agent.open_app(root, store) as app:
        app.recover()
        assert app.resume(live_agent.SESSION, model).status == "parked"
        (operation,) = [op for op in app.ledger.load_run("r2").tool_operations if op.is_unsettled]
        app.attest_operation(
            "r2",
            operation.operation_id,
            applied=True,
            result={"kind": "text", "text": "sent"},
            actor="ops",
        )
        outcome = live_agent.finish_session(app, model)
    assert outcome["resume"] == "continued", outcome
    spans = list(exporter.get_finished_spans())

    decision = _one(
        spans, RECOVERY_DECISION_SPAN, **{RUN_ID: "r2", REASON: "left_awaiting_operator"}
    )
    assert _links(decision) == [trace_id]
    attest = _one(spans, ATTEST_SPAN)
    assert dict(attest.attributes or {}) == {
        RUN_ID: "r2",
        OPERATION_ID: operation.operation_id,
        OUTCOME: "applied",
    }
    assert _links(attest) == [trace_id]
    inside = [
        s for s in spans if s.parent is not None and s.parent.span_id == attest.context.span_id
    ]
    assert [s.name for s in inside] == [RECOVERY_SPAN]  # the run's recovery, finished by it
    assert [e.name for e in attest.events] == ["operator_attested"]
    continuation = _one(spans, CONTINUATION_SPAN)
    assert _trace_id(continuation) == trace_id
    assert (root / live_agent.OUTBOX).read_text().count("ops: port.txt written") == 1
