"""Every timestamp the library writes itself is integer milliseconds since the epoch, as the
reference writes ``Date.now()``, even when the injected clock returns fractions: continuation
start / outputs / terminal, claims, recovered terminals, tool facts, headers and stored facts."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import BaseModel

from maka_es.adapters.event_store import epoch_ms
from maka_es.app import RuntimeApplication, wall_clock_ms
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.providers.protocol import ProviderTurn, ScriptedProvider
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext, ToolRuntime
from tests.support.restart import Restart

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
START = 1_700_000_000_000.25
TIME_KEYS = ("ts", "createdAt", "updatedAt", "completedAt")
FACT_TIME_KEYS = (
    "opened_at",
    "created_at",
    "committed_at",
    "updated_at",
    "sealed_at",
    "claimed_at",
)


class FractionalClock:
    """Advances 0.5 ms per reading: half of the readings are fractional."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


class Echo(BaseModel):
    text: str


def _echo(args: Echo, context: ToolContext) -> Any:
    return {"kind": "text", "text": args.text}


def _times(value: Any, keys: tuple[str, ...]) -> list[Any]:
    """Every value under one of ``keys``, anywhere in a JSON value."""
    found: list[Any] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys:
                found.append(item)
            found.extend(_times(item, keys))
    elif isinstance(value, list):
        for item in value:
            found.extend(_times(item, keys))
    return found


@pytest.fixture
def app(store_url: str) -> Any:
    observation = HostObservation(
        workspace_identity=WORKSPACE,
        workspace_path="/workspace",
        background_operations_settled=True,
        available_tool_names=("Echo",),
    )
    application = RuntimeApplication.open(
        store_url,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        clock=FractionalClock(),
        host_inspector=StaticHostInspector(observation),
    )
    yield application
    application.close()


def test_library_written_timestamps_are_integer_milliseconds(
    restart: Restart, app: RuntimeApplication
) -> None:
    app.open_session("s1", "/workspace")
    app.ledger.create_run(run_header(Spine(), workspaceIdentity=WORKSPACE))
    ledger = LedgerBuilder(Spine(), prefix="r1-")
    ledger.user(marker=True)
    app.ledger.append_events("r1", ledger.events)
    ToolRuntime(app.tool_journal, [Tool("Echo", Echo, _echo)]).execute(
        "r1", ledger.call("c1", "Echo", {"text": "hi"})
    )
    app.ledger.append_events("r1", [ledger.terminal("failed", event_id="r1-end")])
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
    plan = app.plan_continuation("s1")
    assert plan.continuation is not None, plan.rejection_reasons
    turn = ProviderTurn(outputs=({"kind": "text", "text": "resumed"},))
    target = app.execute_continuation(plan, ScriptedProvider([turn])).target_run_id
    interrupted = Spine("s1", "i9", "r9", "t9")
    app.ledger.create_run(run_header(interrupted))
    app.ledger.append_events("r9", [LedgerBuilder(interrupted, prefix="r9-").user()])
    restart(app).recover()

    [claim] = app.claims.all_claims()
    assert type(claim.claimed_at) is int
    for run_id in ("r1", target, "r9"):
        payloads = [json.loads(p) for p in app.ledger.read_run_payloads(run_id)]
        wires = [app.get_run_header(run_id).to_wire(), *payloads]
        for stamp in _times(wires, TIME_KEYS):
            assert type(stamp) is int, (run_id, stamp)
    for notification in app._es.recorder.select_notifications(start=1, limit=1000):
        state = json.loads(bytes(notification.state))
        for stamp in _times(state, FACT_TIME_KEYS) + _times(state, TIME_KEYS):
            assert type(stamp) is int, (notification.topic, stamp)
    terminal = app.read_run_events("r9")[-1]
    assert terminal.ts == math.floor(terminal.ts) > START


def test_clock_readings_are_floored_and_must_be_finite() -> None:
    assert epoch_ms(1_700_000_000_000.999) == 1_700_000_000_000
    assert epoch_ms(1_700_000_000_000) == 1_700_000_000_000
    assert type(wall_clock_ms()) is int
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="finite milliseconds"):
            epoch_ms(bad)
