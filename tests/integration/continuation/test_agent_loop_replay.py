"""The agent loop's replay, kept from step to step, on both real stores (ADR 0046).

Why: each step used to read every event of the run and project the replay again, so a turn
was quadratic in its steps (issue 23, target 4). The loop now keeps the projection and reads
only the events committed since its last step. These tests hold it to the plain answer (every
request equals the plain projection of the run's committed events, refusals and parallel
calls included) and to its cost (over a whole turn the loop reads each event once).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es import HostConfig, RuntimeApplication
from maka_es.ledger.service import Ledger
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.resume.plan import provider_replay_subset
from maka_es.testing.builders import event_ids
from maka_es.tooljournal.runtime import Tool, ToolContext
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent
from tests.conftest import FixedClock
from tests.support.lookup_host import Lookup

STEPS = 12


def lookup(args: Lookup, context: ToolContext) -> dict[str, Any]:
    return {"kind": "text", "text": f"value of {args.key}"}


def call(call_id: str, name: str = "Lookup") -> dict[str, Any]:
    return {"kind": "function_call", "id": call_id, "name": name, "args": {"key": call_id}}


def script(step: int) -> ProviderTurn:
    """Steps of one call, of two parallel calls, of an unknown tool (refused before T1) and
    of text with a call, then the answer."""
    if step >= STEPS:
        return ProviderTurn(({"kind": "text", "text": "done"},))
    shapes = [
        (call(f"c{step}"),),
        (call(f"c{step}a"), call(f"c{step}b")),
        (call(f"c{step}", "Missing"),),
        ({"kind": "text", "text": f"step {step}"}, call(f"c{step}")),
    ]
    return ProviderTurn(shapes[step % len(shapes)])


class CheckingProvider:
    """Compares each request with the plain projection of the run's committed events."""

    def __init__(self, app: RuntimeApplication, reads: list[int]) -> None:
        self.app = app
        self.reads = reads
        self.first: ProviderRequest | None = None
        self.steps = 0

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        if self.first is None:
            self.first = request
        mark = len(self.reads)
        events = self.app.read_run_events(request.run_id)
        del self.reads[mark:]  # the provider's own check is not the loop's cost
        plain = self.first.replay_context + tuple(provider_replay_subset(events[1:]))
        assert event_ids(request.replay_context) == event_ids(plain)
        assert request.replay_context == plain
        self.steps += 1
        return script(self.steps - 1)


def open_app(store: str, cwd: Path, **kwargs: Any) -> RuntimeApplication:
    host = HostConfig(
        backend_kind="ai-sdk",
        llm_connection_slug="main",
        model_id="m",
        permission_mode="ask",
        cwd=str(cwd),
    )
    tool = Tool("Lookup", Lookup, lookup, recovery_mode="replay_safe")
    return RuntimeApplication.open(store, tools=[tool], host_config=host, **kwargs)


@pytest.fixture
def app(store_url: str, tmp_path: Path) -> Any:
    application = open_app(store_url, tmp_path)
    yield application
    application.close()


def counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many events each read of a run's events returned, in order."""
    reads: list[int] = []
    every, after = Ledger.read_run_events, Ledger.read_run_events_after

    def read_every(self: Ledger, run_id: str) -> list[RuntimeEvent]:
        events = every(self, run_id)
        reads.append(len(events))
        return events

    def read_after(self: Ledger, run_id: str, count: int) -> list[RuntimeEvent]:
        events = after(self, run_id, count)
        reads.append(len(events))
        return events

    monkeypatch.setattr(Ledger, "read_run_events", read_every)
    monkeypatch.setattr(Ledger, "read_run_events_after", read_after)
    return reads


def test_every_request_is_the_plain_projection_and_each_event_is_read_once(
    app: RuntimeApplication, monkeypatch: pytest.MonkeyPatch
) -> None:
    app.open_session("s1")
    reads = counting(monkeypatch)
    provider = CheckingProvider(app, reads)
    result = app.run_turn("s1", "go", provider, run_id="r1", step_limit=STEPS + 1)
    assert (result.status, result.steps, result.answer) == ("completed", STEPS + 1, "done")
    during_loop = sum(reads[:STEPS])  # the reads before each provider call after the first
    committed = len(app.read_run_events("r1"))
    assert len(reads) > STEPS
    # every event but the user message and the final answer and terminal is read once
    assert during_loop <= committed


class RecordingProvider:
    """Answers with the script and keeps what each request showed the model."""

    def __init__(self) -> None:
        self.shown: list[list[str]] = []

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        self.shown.append([canonical_json(event) for event in request.conversation])
        return script(len(self.shown) - 1)


def test_the_fast_loop_shows_and_stores_what_the_plain_loop_does(tmp_path: Path) -> None:
    """The same turn with the fast paths on and off (``MAKA_ES_FAST_PATHS=n``, ADR 0037):
    every request, byte for byte, and every stored payload are the same."""
    shown, stored = [], []
    for name, env in (("fast", {}), ("plain", {"MAKA_ES_FAST_PATHS": "n"})):
        app = open_app(str(tmp_path / f"{name}.sqlite"), tmp_path, env=env, clock=FixedClock())
        try:
            assert app.ledger.fast_paths is (name == "fast")
            app.open_session("s1")
            provider = RecordingProvider()
            result = app.run_turn(
                "s1",
                "go",
                provider,
                run_id="r1",
                invocation_id="i1",
                turn_id="t1",
                step_limit=STEPS + 1,
            )
            assert (result.status, result.steps) == ("completed", STEPS + 1)
            shown.append(provider.shown)
            stored.append(app.ledger.read_run_payloads("r1"))
        finally:
            app.close()
    assert shown[0] == shown[1]
    assert stored[0] == stored[1]
