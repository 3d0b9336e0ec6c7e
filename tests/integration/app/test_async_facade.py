"""The asyncio facade (issue 11 §7): concurrent turns on different runs under asyncio on a
real store (a SQLite file and a PostgreSQL schema), the event loop kept free during store
I/O, an async provider and an async tool driving a continuation end to end. Driven with
``asyncio.run`` in plain tests (no pytest plugin)."""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

from pydantic import BaseModel, ConfigDict

from maka_es.aio import AsyncRuntimeApplication, async_tool
from maka_es.app import RuntimeApplication
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.tooljournal.runtime import ToolContext

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
RUNS = 8
TURNS = 20


def spine(n: int) -> Spine:
    return Spine(run_id=f"r{n}", invocation_id=f"i{n}", turn_id=f"t{n}")


async def one_agent(facade: AsyncRuntimeApplication, n: int) -> list[int]:
    """Create run ``r{n}`` and append its turns one save at a time, yielding between them."""
    await facade.ledger.create_run(run_header(spine(n)))
    ledger = LedgerBuilder(spine(n), prefix=f"r{n}-")
    high_waters = []
    for turn in range(TURNS):
        event = ledger.user(f"turn {turn}") if turn == 0 else ledger.text(f"step {turn}")
        result = await facade.ledger.append_events(f"r{n}", [event], expected_high_water=turn)
        high_waters.append(result.high_water)
        await asyncio.sleep(0)
    return high_waters


def test_concurrent_turns_on_different_runs_all_land(store_url: str) -> None:
    async def main() -> list[list[int]]:
        async with AsyncRuntimeApplication(RuntimeApplication.open(store_url)) as aio:
            await aio.open_session("s1", "/workspace")
            return await asyncio.gather(*(one_agent(aio, n) for n in range(RUNS)))

    results = asyncio.run(main())

    assert results == [list(range(1, TURNS + 1))] * RUNS
    reopened = RuntimeApplication.open(store_url)
    try:
        for n in range(RUNS):
            events = reopened.read_run_events(f"r{n}")
            assert len(events) == TURNS
            assert reopened.ledger.run_high_water(f"r{n}") == TURNS
            assert [e.id for e in events] == [f"r{n}-{k}" for k in range(1, TURNS + 1)]
        assert sorted(reopened.ledger.all_run_ids()) == sorted(f"r{n}" for n in range(RUNS))
    finally:
        reopened.close()


def test_the_event_loop_keeps_ticking_during_a_long_append_batch(store_url: str) -> None:
    loop_thread: list[int] = []
    store_threads: set[int] = set()

    class Observed(RuntimeApplication):
        def on_events_committed(self, run_id: str, events: Any) -> None:
            store_threads.add(threading.get_ident())

    async def main() -> tuple[int, int]:
        loop_thread.append(threading.get_ident())
        ticks = 0
        done = asyncio.Event()

        async def heartbeat() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        async with AsyncRuntimeApplication(Observed.open(store_url)) as aio:
            await aio.open_session("s1", "/workspace")
            await aio.ledger.create_run(run_header(spine(0)))
            ledger = LedgerBuilder(spine(0), prefix="r0-")
            ledger.user("go")
            for k in range(400):
                ledger.text(f"line {k}")
            beat = asyncio.create_task(heartbeat())
            await asyncio.sleep(0)
            before = ticks
            for start in range(0, len(ledger.events), 50):
                await aio.ledger.append_events("r0", ledger.events[start : start + 50])
            done.set()
            await beat
            return ticks - before, await aio.ledger.run_high_water("r0")

    ticked, high_water = asyncio.run(main())

    assert high_water == 401
    assert ticked > 0
    # every save ran off the loop's thread
    assert store_threads
    assert loop_thread[0] not in store_threads


class NoteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str


class AsyncScripted:
    """An async provider: awaits (like an HTTP client) and records the thread it ran on."""

    def __init__(self, turns: list[ProviderTurn]) -> None:
        self.turns = list(turns)
        self.requests: list[ProviderRequest] = []
        self.threads: list[int] = []

    async def complete(self, request: ProviderRequest) -> ProviderTurn:
        await asyncio.sleep(0.001)
        self.threads.append(threading.get_ident())
        self.requests.append(request)
        return self.turns.pop(0)


def source_app(store: str, tool_threads: list[int]) -> RuntimeApplication:
    async def note(args: NoteArgs, context: ToolContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        tool_threads.append(threading.get_ident())
        return {"kind": "text", "text": f"noted {args.text} as {context.operation_id}"}

    counter = itertools.count(1)
    observation = HostObservation(
        workspace_identity=WORKSPACE,
        workspace_path="/workspace",
        background_operations_settled=True,
        available_tool_names=("Bash", "Note"),
    )
    app = RuntimeApplication.open(
        store,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        id_factory=lambda: f"new-{next(counter)}",
        host_inspector=StaticHostInspector(observation),
        tools=[async_tool("Note", NoteArgs, note)],
    )
    app.open_session("s1", "/workspace")
    ledger = LedgerBuilder(Spine(), prefix="r1-")
    app.ledger.create_run(run_header(Spine(), workspaceIdentity=WORKSPACE))
    ledger.user("take a note")
    ledger.terminal("failed")
    app.ledger.append_events("r1", ledger.events)
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
    return app


def test_an_async_provider_and_tool_drive_a_continuation_end_to_end(store_url: str) -> None:
    tool_threads: list[int] = []
    provider = AsyncScripted(
        [
            ProviderTurn(
                outputs=(
                    {"kind": "function_call", "id": "n1", "name": "Note", "args": {"text": "x"}},
                )
            ),
            ProviderTurn(outputs=({"kind": "text", "text": "done"},)),
        ]
    )

    async def main() -> tuple[Any, int, list[str]]:
        async with AsyncRuntimeApplication(source_app(store_url, tool_threads)) as aio:
            plan = await aio.plan_continuation("s1")
            assert plan.disposition == "continue", plan.rejection_reasons
            outcome = await aio.execute_continuation(plan, provider)
            events = await aio.read_run_events(outcome.target_run_id)
            header = await aio.get_run_header(outcome.target_run_id)
            assert header.status == "completed"
            return outcome, threading.get_ident(), [e.id for e in events]

    outcome, loop_thread, ids = asyncio.run(main())

    assert (outcome.status, outcome.steps, outcome.tool_calls) == ("completed", 2, 1)
    # the provider and the tool ran on the loop, the executor in the writer thread
    assert provider.threads == [loop_thread, loop_thread]
    assert tool_threads == [loop_thread]
    assert len(provider.requests) == 2
    assert provider.requests[1].replay_context[-1].function_response is not None
    target = outcome.target_run_id
    assert ids[0] == f"{target}-start"
    assert ids[-1] == f"{target}-terminal"
    assert sum(1 for i in ids if i.endswith("_dispatch")) == 1
    assert sum(1 for i in ids if i.endswith("_response")) == 1


def test_an_async_provider_error_is_committed_as_the_runs_failure(store_url: str) -> None:
    class Failing:
        async def complete(self, request: ProviderRequest) -> ProviderTurn:
            await asyncio.sleep(0)
            raise ConnectionError("upstream went away")

    async def main() -> Any:
        async with AsyncRuntimeApplication(source_app(store_url, [])) as aio:
            plan = await aio.plan_continuation("s1")
            outcome = await aio.execute_continuation(plan, Failing())
            header = await aio.get_run_header(outcome.target_run_id)
            return outcome, header

    outcome, header = asyncio.run(main())

    assert outcome.status == "failed"
    assert header.status == "failed"
    assert outcome.error_class == "ConnectionError"


def test_an_async_tool_outside_the_facade_runs_in_a_private_loop(store_url: str) -> None:
    threads: list[int] = []
    app = source_app(store_url, threads)
    try:
        app.ledger.create_run(run_header(spine(2)))
        call = LedgerBuilder(spine(2), prefix="r2-").call("c1", "Note", {"text": "sync"})
        result = app.tool_runtime.execute("r2", call)
    finally:
        app.close()

    assert threads == [threading.get_ident()]
    assert result.is_error is False
    assert "noted sync" in result.result["text"]
