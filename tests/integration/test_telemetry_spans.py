"""maka_es's spans on each real store, exported to the SDK's ``InMemorySpanExporter`` (ADR 0043).

Why on the stores: a run's trace context is a stored fact (its own stream), read back by the
recovery and the continuation that follow a crash (the crash itself:
tests/crash/test_trace_across_crash.py). The canary test puts a secret into every prompt,
argument, result and error message and reads every exported span name, attribute, event, link
and status: the telemetry rule (ADR 0011) holds for spans too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from maka_es import HostConfig, RuntimeApplication
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.telemetry import (
    CONTINUATION_SPAN,
    MODEL_CALL_SPAN,
    OPERATION_ID,
    OUTCOME,
    RECOVERY_MODE,
    RECOVERY_SPAN,
    RUN_ID,
    SESSION_ID,
    STEP,
    TOOL_NAME,
    TOOL_STEP_SPAN,
    TURN_SPAN,
    span,
)
from maka_es.tooljournal.runtime import Tool, ToolContext
from maka_es.wire.codec import operation_id_for
from tests.support import otel

CANARY = "sk-CANARY-7f3a9c"
HOST: dict[str, Any] = {
    "backend_kind": "ai-sdk",
    "llm_connection_slug": "main",
    "model_id": "m",
    "permission_mode": "ask",
}


class EchoArgs(BaseModel):
    text: str


def _echo(args: EchoArgs, context: ToolContext) -> dict[str, Any]:
    if "fail" in args.text:
        raise RuntimeError(f"tool failed on {args.text}")
    return {"kind": "text", "text": f"echo {args.text} {CANARY}"}


TOOLS = [Tool("Echo", EchoArgs, _echo, recovery_mode="replay_safe")]


def _call(call_id: str, text: str) -> ProviderTurn:
    args = {"text": text}
    return ProviderTurn(
        outputs=({"kind": "function_call", "id": call_id, "name": "Echo", "args": args},)
    )


def _text(text: str) -> ProviderTurn:
    return ProviderTurn(outputs=({"kind": "text", "text": text},))


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """The SDK's in-memory exporter behind a global SDK provider, for this test only."""
    with otel.traced() as spans:
        yield spans


def _open(store_url: str, workspace: Path) -> RuntimeApplication:
    config = HostConfig(**HOST, cwd=str(workspace))
    return RuntimeApplication.open(
        store_url, tools=TOOLS, host_config=config, safe_boundary_resume=True
    )


def _context(s: ReadableSpan) -> tuple[str, str]:
    assert s.context is not None
    return f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}"


def test_a_turn_traces_its_model_calls_and_tool_steps(
    store_url: str, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    provider = ScriptedProvider([_call("call_1", "hello"), _text("done")])
    with _open(store_url, tmp_path) as app:
        app.open_session("s1")
        result = app.run_turn("s1", "say hello", provider, run_id="r1")
        recorded = app.ledger.trace_context("r1")
    assert result.status == "completed"
    spans = list(exporter.get_finished_spans())
    assert [s.name for s in spans] == [MODEL_CALL_SPAN, TOOL_STEP_SPAN, MODEL_CALL_SPAN, TURN_SPAN]
    turn = spans[-1]
    assert dict(turn.attributes or {}) == {SESSION_ID: "s1", RUN_ID: "r1", OUTCOME: "completed"}
    assert all(s.parent is not None and s.parent.span_id == turn.context.span_id for s in spans[:3])
    assert [(s.attributes or {})[STEP] for s in spans if s.name == MODEL_CALL_SPAN] == [1, 2]
    invocation = provider.requests[0].invocation_id
    assert dict(spans[1].attributes or {}) == {
        RUN_ID: "r1",
        TOOL_NAME: "Echo",
        RECOVERY_MODE: "replay_safe",
        OPERATION_ID: operation_id_for(invocation, "call_1"),
    }
    # the ledger holds the turn span's context: what a recovery after a crash links to
    assert recorded is not None
    assert recorded.startswith("00-{}-{}-".format(*_context(turn)))  # then the trace flags


def test_no_span_carries_a_prompt_argument_result_or_secret(
    store_url: str, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    turns: list[ProviderTurn | Exception] = [
        _call("call_1", f"arg {CANARY}"),
        _call("call_2", f"fail {CANARY}"),
        RuntimeError(f"provider down {CANARY}"),
    ]
    with _open(store_url, tmp_path) as app:
        app.open_session("s1")
        first = app.run_turn(
            "s1", f"prompt {CANARY}", ScriptedProvider(turns), system_prompt=CANARY, run_id="r1"
        )
        assert first.status == "failed"
        app.recover()
        resumed = app.resume("s1", ScriptedProvider([_text(f"answer {CANARY}")]))
        assert resumed.status == "continued", resumed
    spans = list(exporter.get_finished_spans())
    names = {s.name for s in spans}
    assert {TURN_SPAN, MODEL_CALL_SPAN, TOOL_STEP_SPAN, RECOVERY_SPAN, CONTINUATION_SPAN} <= names
    continuation = next(s for s in spans if s.name == CONTINUATION_SPAN)
    assert [e.name for e in continuation.events] == ["execution_started", "execution_completed"]
    failed = next(s for s in spans if s.name == TURN_SPAN)
    assert failed.status.status_code.name == "ERROR"
    assert failed.status.description is None
    exported = json.dumps([_everything(s) for s in spans], default=str)
    assert "provider_error" in exported or "RuntimeError" in exported  # the error class is there
    assert CANARY not in exported
    assert "prompt" not in exported
    assert "provider down" not in exported


def _everything(s: ReadableSpan) -> dict[str, Any]:
    """Every part of an exported span a backend would receive."""
    return {
        "name": s.name,
        "attributes": dict(s.attributes or {}),
        "events": [(e.name, dict(e.attributes or {})) for e in s.events],
        "links": [dict(link.attributes or {}) for link in s.links],
        "status": (s.status.status_code.name, s.status.description),
        "json": s.to_json(),
    }


@pytest.mark.parametrize("block", [True, False], ids=["no-opentelemetry", "api-without-sdk"])
def test_without_an_sdk_nothing_is_recorded(tmp_path: Path, block: bool) -> None:
    """Without opentelemetry installed, or with the API but no SDK provider, a turn records no
    span and writes no trace context: the spans are the shared no-op scope."""
    body = f"""
import importlib.abc, sys
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if {block!r} and name.split(".")[0] == "opentelemetry":
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
from maka_es import HostConfig, RuntimeApplication, telemetry
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
host = HostConfig(backend_kind="ai-sdk", llm_connection_slug="m", model_id="x",
                  permission_mode="ask", cwd={str(tmp_path)!r})
with RuntimeApplication.open({str(tmp_path / "db.sqlite")!r}, host_config=host) as app:
    app.open_session("s1")
    turn = ProviderTurn(outputs=({{"kind": "text", "text": "hi"}},))
    result = app.run_turn("s1", "hello", ScriptedProvider([turn]), run_id="r1")
    print(result.status, app.ledger.trace_context("r1"), telemetry.tracing_enabled(),
          telemetry.span(telemetry.TURN_SPAN) is telemetry.span(telemetry.TOOL_STEP_SPAN),
          "opentelemetry" in sys.modules)
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("OTEL_PYTHON_TRACER_PROVIDER", None)
    done = subprocess.run(
        [sys.executable, "-c", body], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["completed", "None", "False", "True", str(not block)]


def test_a_span_outside_any_with_block_records_nothing(exporter: InMemorySpanExporter) -> None:
    span(TURN_SPAN, {RUN_ID: "r1"})  # never entered: never started
    assert exporter.get_finished_spans() == ()


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_runs_trace_context_is_recorded_once_on_its_own_stream(
    store_url: str, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """The first record wins, a repeat or a malformed value writes nothing, and the run's own
    stream, events and header hold no trace context (their wire shapes are the spec's)."""
    with _open(store_url, tmp_path) as app:
        app.open_session("s1")
        app.run_turn("s1", "say hello", ScriptedProvider([_text("hi")]), run_id="r1")
        first = app.ledger.trace_context("r1")
        assert first is not None
        assert app.ledger.record_trace_context("r1", TRACEPARENT) is False
        assert app.ledger.record_trace_context("r2", "00-not-a-traceparent") is False
        assert app.ledger.record_trace_context("r2", None) is False
        assert app.ledger.trace_context("r2") is None
        assert app.ledger.trace_context("r1") == first
        assert app.ledger.record_trace_context("r3", TRACEPARENT) is True
        assert app.ledger.trace_context("r3") == TRACEPARENT
        payloads = app.ledger.read_run_payloads("r1")
        header = app.ledger.get_run_header("r1").to_wire()
        high_water = app.ledger.run_high_water("r1")
    assert high_water == len(payloads) == 3  # the user message, the answer, the terminal
    assert not any("traceparent" in p or first.split("-")[1] in p for p in payloads)
    assert first.split("-")[1] not in json.dumps(header)


def test_inside_a_host_span_a_resume_stays_in_the_host_trace_and_links(
    store_url: str, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """A resume called inside the host's own span (a request) is a child of it, and links to
    the interrupted turn's trace instead of continuing it."""
    with _open(store_url, tmp_path) as app:
        app.open_session("s1")
        failed = app.run_turn("s1", "hi", ScriptedProvider([RuntimeError("down")]), run_id="r1")
        assert failed.status == "failed"
        recorded = app.ledger.trace_context("r1")
        assert recorded is not None
        tracer = trace.get_tracer("host")
        with tracer.start_as_current_span("host.request") as request:
            resumed = app.resume("s1", ScriptedProvider([_text("back")]))
        assert resumed.status == "continued"
    continuation = next(s for s in exporter.get_finished_spans() if s.name == CONTINUATION_SPAN)
    host = request.get_span_context()
    assert continuation.parent is not None
    assert continuation.parent.span_id == host.span_id
    assert continuation.context is not None
    assert continuation.context.trace_id == host.trace_id
    links = [
        (f"{k.context.trace_id:032x}", f"{k.context.span_id:016x}") for k in continuation.links
    ]
    assert links == [tuple(recorded.split("-")[1:3])]
