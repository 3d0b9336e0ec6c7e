"""The asyncio facade runs conversations side by side (issue 21, part 5): a model call or a tool
of one conversation never holds up another conversation's continuation or its store commands;
only the store commands themselves are serialised. On a real store (a SQLite file and a
PostgreSQL schema); each conversation was parked by a crash (its run left ``running`` by a
process that died), ended by startup recovery after the restart and resumed through the
facade. Timings are ratios against a single conversation measured in the same test.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ConfigDict

from maka_es import AsyncOpenAIChatProvider, HostConfig
from maka_es.aio import AsyncRuntimeApplication, async_tool
from maka_es.app import RuntimeApplication
from maka_es.continuation.executor import ContinuationRevalidationError
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.errors import RunForkRefusedError
from maka_es.providers.protocol import ProviderRequest, ProviderTurn
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
#: One model call's latency: long against a store command, so a serialised pair shows.
CALL_S = 1.0


class WaitArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str


def spine(session: str) -> Spine:
    return Spine(session_id=session, run_id=f"{session}-r", invocation_id=f"{session}-i")


def crashed(store: str, sessions: list[str]) -> None:
    """Each session's run takes its user message, then the process dies (no terminal)."""
    app = RuntimeApplication.open(store)
    for session in sessions:
        app.open_session(session, "/workspace", WORKSPACE)
        app.ledger.create_run(run_header(spine(session), workspaceIdentity=WORKSPACE))
        app.ledger.append_events(spine(session).run_id, [LedgerBuilder(spine(session)).user("go")])
    app.close()


def restarted(store: str, tools: list[Tool[Any]]) -> RuntimeApplication:
    counter = itertools.count(1)
    observation = HostObservation(
        workspace_identity=WORKSPACE,
        workspace_path="/workspace",
        background_operations_settled=True,
        available_tool_names=tuple(tool.name for tool in tools),
    )
    return RuntimeApplication.open(
        store,
        safe_boundary_resume=True,
        id_factory=lambda: f"new-{next(counter)}",
        host_inspector=StaticHostInspector(observation),
        tools=tools,
    )


class SlowProvider:
    """An async provider whose every call awaits ``CALL_S`` (like an HTTP round trip); the
    turns are given per session, and ``calling`` is set while a call of ``watch`` sleeps."""

    def __init__(self, turns: Callable[[str, int], ProviderTurn], watch: str = "") -> None:
        self.turns = turns
        self.watch = watch
        self.calls: dict[str, int] = {}
        self.calling = asyncio.Event()
        self.returned = asyncio.Event()

    async def complete(self, request: ProviderRequest) -> ProviderTurn:
        step = self.calls.get(request.session_id, 0)
        self.calls[request.session_id] = step + 1
        if request.session_id == self.watch and step == 0:
            self.calling.set()
        await asyncio.sleep(CALL_S)
        if request.session_id == self.watch:
            self.returned.set()
        return self.turns(request.session_id, step)


def text_only(session: str, step: int) -> ProviderTurn:
    return ProviderTurn(outputs=({"kind": "text", "text": f"done {session}"},))


async def resume(aio: AsyncRuntimeApplication, session: str, provider: SlowProvider) -> str:
    plan = await aio.plan_continuation(session)
    assert plan.disposition == "continue", plan.rejection_reasons
    outcome = await aio.execute_continuation(plan, provider)
    assert outcome.status == "completed", outcome
    return outcome.target_run_id


async def recovered(store: str, tools: list[Tool[Any]]) -> AsyncRuntimeApplication:
    aio = AsyncRuntimeApplication(restarted(store, tools))
    report = await aio.recover()
    assert report.changed_anything, report
    return aio


def test_two_resumed_conversations_run_in_the_time_of_one(store_url: str) -> None:
    crashed(store_url, ["s1", "s2", "s3"])

    async def main() -> tuple[float, float, list[str]]:
        aio = await recovered(store_url, [])
        async with aio:
            provider = SlowProvider(text_only)
            began = time.monotonic()
            await resume(aio, "s1", provider)
            single = time.monotonic() - began
            began = time.monotonic()
            targets = await asyncio.gather(resume(aio, "s2", provider), resume(aio, "s3", provider))
            pair = time.monotonic() - began
            return single, pair, list(targets)

    single, pair, targets = asyncio.run(main())

    # serialised, the pair takes two calls (2 s and more); side by side, one call and the
    # commands: generous margin of 0.7 s over the single conversation for a loaded machine
    assert single >= CALL_S
    assert pair < single + 0.7, (single, pair)
    with RuntimeApplication.open(store_url) as app:
        for target in targets:
            assert app.get_run_header(target).status == "completed"
            assert app.read_run_events(target)[-1].id == f"{target}-terminal"


def test_a_command_of_another_conversation_lands_while_a_model_call_sleeps(
    store_url: str,
) -> None:
    crashed(store_url, ["s1", "s2"])

    async def main() -> tuple[float, bool, int]:
        aio = await recovered(store_url, [])
        async with aio:
            await aio.open_session("s9", "/workspace", WORKSPACE)
            await aio.ledger.create_run(run_header(spine("s9"), workspaceIdentity=WORKSPACE))
            provider = SlowProvider(text_only, watch="s1")
            conversation = asyncio.create_task(resume(aio, "s1", provider))
            await asyncio.wait_for(provider.calling.wait(), 10)
            began = time.monotonic()
            user = [LedgerBuilder(spine("s9")).user("meanwhile")]
            result = await aio.ledger.append_events("s9-r", user, expected_high_water=0)
            events = await aio.read_run_events("s9-r")
            took = time.monotonic() - began
            during = not provider.returned.is_set()
            await conversation
            return took, during, result.high_water + len(events)

    took, during, landed = asyncio.run(main())

    assert during, "the command waited for the other conversation's model call"
    assert took < CALL_S / 2
    assert landed == 2


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_sleeping_tool_blocks_no_other_conversation(store_url: str, kind: str) -> None:
    """The tool sleeps between its T1 and T2 (it sees its own operation dispatched and not
    settled); meanwhile a command of another conversation lands, and the tool itself may
    await the facade's commands (it runs outside the writer)."""
    crashed(store_url, ["s1"])
    seen: dict[str, Any] = {}
    facade: list[AsyncRuntimeApplication] = []
    entered, left = threading.Event(), threading.Event()

    async def wait_async(args: WaitArgs, context: ToolContext) -> dict[str, Any]:
        entered.set()
        seen["operations"] = await facade[0].tool_journal.tool_operations(context.run_id)
        # bounded: a tool run inside the writer would wait for itself here
        seen["own_command"] = await asyncio.wait_for(facade[0].heartbeat(), 2 * CALL_S)
        await asyncio.sleep(CALL_S)
        left.set()
        return {"kind": "text", "text": f"waited {args.label}"}

    def wait_sync(args: WaitArgs, context: ToolContext) -> dict[str, Any]:
        entered.set()
        seen["operations"] = facade[0].app.tool_journal.tool_operations(context.run_id)
        time.sleep(CALL_S)
        left.set()
        return {"kind": "text", "text": f"waited {args.label}"}

    tool = (
        async_tool("Wait", WaitArgs, wait_async)
        if kind == "async"
        else Tool("Wait", WaitArgs, wait_sync)
    )
    call = {"kind": "function_call", "id": "w1", "name": "Wait", "args": {"label": "x"}}

    def turns(session: str, step: int) -> ProviderTurn:
        return ProviderTurn(outputs=(call,)) if step == 0 else text_only(session, step)

    async def main() -> tuple[float, bool, str]:
        aio = await recovered(store_url, [tool])
        facade.append(aio)
        async with aio:
            await aio.open_session("s9", "/workspace", WORKSPACE)
            await aio.ledger.create_run(run_header(spine("s9"), workspaceIdentity=WORKSPACE))
            conversation = asyncio.create_task(resume(aio, "s1", SlowProvider(turns)))
            for _ in range(1000):
                if entered.is_set():
                    break
                await asyncio.sleep(0.01)
            began = time.monotonic()
            user = [LedgerBuilder(spine("s9")).user("meanwhile")]
            await aio.ledger.append_events("s9-r", user, expected_high_water=0)
            took = time.monotonic() - began
            during = not left.is_set()
            return took, during, await conversation

    took, during, target = asyncio.run(main())

    assert during, "the command waited for the other conversation's tool"
    assert took < CALL_S / 2
    assert kind == "sync" or seen["own_command"] is not None  # it awaited a command
    (operation,) = seen["operations"]
    assert operation.is_unsettled  # T1 committed before the tool ran, T2 not yet
    with RuntimeApplication.open(store_url) as app:
        (settled,) = app.tool_journal.tool_operations(target)
        assert not settled.is_unsettled  # T2 after it
        assert app.get_run_header(target).status == "completed"


def test_a_tool_call_through_the_facade_holds_no_lock(store_url: str) -> None:
    """``execute_tool``: T1 and T2 are commands, the sleeping tool between them is not."""
    entered = asyncio.Event()

    async def wait(args: WaitArgs, context: ToolContext) -> dict[str, Any]:
        entered.set()
        await asyncio.sleep(CALL_S)
        return {"kind": "text", "text": "waited"}

    async def main() -> tuple[float, bool]:
        app = restarted(store_url, [async_tool("Wait", WaitArgs, wait)])
        async with AsyncRuntimeApplication(app) as aio:
            for session in ("s1", "s2"):
                await aio.open_session(session, "/workspace", WORKSPACE)
                await aio.ledger.create_run(run_header(spine(session), workspaceIdentity=WORKSPACE))
            call = LedgerBuilder(spine("s1")).call("w1", "Wait", {"label": "x"})
            running = asyncio.create_task(aio.execute_tool("s1-r", call))
            await asyncio.wait_for(entered.wait(), 10)
            began = time.monotonic()
            await aio.ledger.append_events("s2-r", [LedgerBuilder(spine("s2")).user("hi")])
            took = time.monotonic() - began
            during = not running.done()
            result = await running
            assert result.is_error is False
            return took, during

    took, during = asyncio.run(main())

    assert during
    assert took < CALL_S / 2


def test_one_plan_executed_twice_at_once_has_one_winner(store_url: str) -> None:
    """Claim uniqueness holds without the whole-loop lock: the second execution of the same
    plan is refused before it writes, while the first is in its model call."""
    crashed(store_url, ["s1"])

    async def main() -> tuple[Any, ...]:
        aio = await recovered(store_url, [])
        async with aio:
            plan = await aio.plan_continuation("s1")
            provider = SlowProvider(text_only)
            return await asyncio.gather(
                aio.execute_continuation(plan, provider),
                aio.execute_continuation(plan, provider),
                return_exceptions=True,
            )

    outcomes = asyncio.run(main())

    refused = [o for o in outcomes if isinstance(o, ContinuationRevalidationError)]
    done = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(done) == 1, outcomes
    assert done[0].status == "completed"
    assert len(refused) == 1
    with RuntimeApplication.open(store_url) as app:
        assert len(app.claims.all_claims()) == 1


def test_one_fork_executed_twice_at_once_runs_once(store_url: str) -> None:
    """One writer per fork without the whole-loop lock: the second execution refuses
    ``fork_not_pending`` while the first is in its model call; the fork holds one loop."""
    note = Tool("Note", WaitArgs, lambda args, context: {"kind": "text", "text": "noted"})
    app = restarted(store_url, [note])
    app.open_session("s1", "/workspace", WORKSPACE)
    app.ledger.create_run(run_header(spine("s1"), workspaceIdentity=WORKSPACE))
    ledger = LedgerBuilder(spine("s1"))
    app.ledger.append_events("s1-r", [ledger.user("go")])
    app.tool_runtime.execute("s1-r", ledger.call("n1", "Note", {"label": "x"}))
    app.end_run("s1-r", ledger.terminal("failed"))
    fork = app.fork_run("s1-r", before_operation=spine("s1").operation_id("n1"), actor="ops")

    async def main() -> tuple[Any, ...]:
        async with AsyncRuntimeApplication(app) as aio:
            provider = SlowProvider(text_only)
            return await asyncio.gather(
                aio.execute_fork(fork.fork_run_id, provider),
                aio.execute_fork(fork.fork_run_id, provider),
                return_exceptions=True,
            )

    outcomes = asyncio.run(main())

    refused = [o for o in outcomes if isinstance(o, RunForkRefusedError)]
    done = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(done) == 1, outcomes
    assert done[0].status == "completed"
    assert [r.code for r in refused] == ["fork_not_pending"]
    with RuntimeApplication.open(store_url) as reopened:
        ids = [e.id for e in reopened.read_run_events(fork.fork_run_id)]
        assert sum(1 for i in ids if i.endswith("-out-1")) == 1
        assert ids[-1] == f"{fork.fork_run_id}-terminal"


class AsyncChatClient:
    """Answers like ``openai.AsyncOpenAI().chat.completions.create``: awaits ``CALL_S`` (an
    HTTP round trip), then a text answer naming the session's prompt count."""

    def __init__(self) -> None:
        self.chat = SimpleNamespace(completions=self)
        self.requests: list[list[dict[str, Any]]] = []

    async def create(self, *, messages: list[dict[str, Any]], **_: Any) -> ChatCompletion:
        self.requests.append(messages)
        await asyncio.sleep(CALL_S)
        users = [m["content"] for m in messages if m["role"] == "user"]
        message = {"role": "assistant", "content": f"answered {users[-1]}"}
        return ChatCompletion.model_validate(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            }
        )


def test_turns_of_two_sessions_run_side_by_side_through_the_facade(
    store_url: str, tmp_path: Path
) -> None:
    """``run_turn`` and ``resume`` are conversations: an async SDK provider is awaited on the
    loop, and two sessions' turns with one-second model calls finish in about one second."""
    host = HostConfig(
        backend_kind="ai-sdk",
        llm_connection_slug="main",
        model_id="m",
        permission_mode="ask",
        cwd=str(tmp_path),
    )
    app = RuntimeApplication.open(store_url, host_config=host, safe_boundary_resume=True)

    async def main() -> tuple[float, float, list[Any]]:
        async with AsyncRuntimeApplication(app) as aio:
            provider = AsyncOpenAIChatProvider(AsyncChatClient(), model="m")
            for session in ("s1", "s2", "s3"):
                await aio.open_session(session)
            began = time.monotonic()
            single = await aio.run_turn("s1", "one", provider)
            one = time.monotonic() - began
            assert (single.status, single.answer) == ("completed", "answered one")
            began = time.monotonic()
            pair = await asyncio.gather(
                aio.run_turn("s2", "two", provider), aio.run_turn("s3", "three", provider)
            )
            both = time.monotonic() - began
            resumed = [await aio.resume(s, provider) for s in ("s1", "s2", "s3")]
            return one, both, [*pair, *resumed]

    one, both, (second, third, *resumed) = asyncio.run(main())
    assert (second.status, second.answer) == ("completed", "answered two")
    assert (third.status, third.answer) == ("completed", "answered three")
    assert [r.status for r in resumed] == ["nothing_to_resume"] * 3
    assert both < one * 1.6, (one, both)
    with RuntimeApplication.open(store_url) as reopened:
        assert [h.status for s in ("s1", "s2", "s3") for h in reopened.list_runs(s)] == [
            "completed"
        ] * 3
