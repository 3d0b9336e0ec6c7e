"""maka_es.integrations.openai_agents: an ``agents.Agent`` through ``Runner``, durable (ADR 0042).

Offline, with the SDK's own ``agents.testing.ScriptedModel`` whose every step is derived from
the input it is sent (so a restarted process picks up where the conversation is), on the real
SQLite file and PostgreSQL. A crash is played in-process: a failpoint raises a
``BaseException`` no code catches, the application is dropped, not closed, and the next
incarnation opens the same store (the child-process SIGKILL version is
tests/crash/test_openai_agents_agent.py).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from maka_es import HostConfig, failpoints
from maka_es.app import RuntimeApplication
from maka_es.errors import (
    MissingExtraError,
    OpenAIAgentsUnsupportedError,
    OperationInterrupted,
    TurnRefusedError,
)
from maka_es.integrations.openai_agents import DurableRunner, journaled_tools
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.runtime import AFTER_T1, BEFORE_T2
from maka_es.wire.events import FunctionCallContent, FunctionResponseContent, RuntimeEvent

ANSWER = "Sent the greeting."
PROMPT = "read greeting.txt and mail it to ops"


class Killed(BaseException):
    """Stands for SIGKILL: nothing after this point runs."""


@dataclass
class World:
    """The tools' side effects, observable from outside the ledger."""

    root: Path
    reads: list[str] = field(default_factory=list)
    outbox: list[str] = field(default_factory=list)
    journal_at_run: list[str] = field(default_factory=list)


def outputs_of(items: Sequence[Any]) -> dict[str, str]:
    return {
        str(i["call_id"]): str(i["output"])
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def next_step(call: ModelCall, *, parallel: bool) -> list[Any]:
    """Read, then mail, then the answer; ``parallel``: read and mail in one response."""
    results = outputs_of(call.input)
    read = function_call("read_file", {"path": "greeting.txt"}, call_id="call_read")
    mail = function_call("send_email", {"to": "ops", "body": "hello"}, call_id="call_mail")
    if parallel and "call_mail" not in results:
        return [read, mail]
    if "call_read" not in results:
        return [read]
    if "call_mail" not in results:
        return [mail]
    return [assistant_message(ANSWER)]


def build_agent(
    world: World, app_of: list[RuntimeApplication], *, parallel: bool = False
) -> tuple[Agent[Any], ScriptedModel]:
    @function_tool
    def read_file(path: str) -> str:
        """Read a file of the workspace."""
        world.reads.append(path)
        return (world.root / path).read_text()

    @function_tool
    def send_email(to: str, body: str) -> str:
        """Send an email (appended to the outbox)."""
        if app_of:  # what the journal held when the tool ran: its own T1, not its T2
            states = [(o.tool_name, o.state) for o in app_of[-1].tool_journal.tool_operations("r1")]
            world.journal_at_run.append(repr(states))
        world.outbox.append(f"{to}: {body}")
        return "sent"

    steps = [ModelStep.respond(lambda call: next_step(call, parallel=parallel)) for _ in range(8)]
    model = ScriptedModel(steps)
    agent = Agent(
        name="mailer", instructions="Be brief.", model=model, tools=[read_file, send_email]
    )
    return agent, model


HOST = HostConfig(
    backend_kind="ai-sdk", llm_connection_slug="main", model_id="scripted", permission_mode="ask"
)


class Saves(RuntimeApplication):
    """An application that remembers every committed append (one save each)."""

    saves: list[list[str]]

    def on_events_committed(self, run_id: str, events: Sequence[RuntimeEvent]) -> None:
        self.saves.append([e.id for e in events])


def open_app(store: str, agent: Agent[Any], cwd: Path) -> Saves:
    tools = journaled_tools(agent, {"read_file": "replay_safe"})
    app = Saves.open(
        store,
        tools=tools,
        host_config=HOST.model_copy(update={"cwd": str(cwd)}),
        safe_boundary_resume=True,
    )
    assert isinstance(app, Saves)
    app.saves = []
    return app


@pytest.fixture
def world(tmp_path: Path) -> World:
    (tmp_path / "greeting.txt").write_text("hello")
    return World(tmp_path)


@pytest.fixture
def apps() -> Iterator[list[RuntimeApplication]]:
    opened: list[RuntimeApplication] = []
    yield opened
    for app in opened:
        app.close()


def start(
    store: str, world: World, apps: list[RuntimeApplication], *, parallel: bool = False
) -> tuple[RuntimeApplication, DurableRunner, ScriptedModel]:
    """One incarnation of the host: open, recover, open the session."""
    agent, model = build_agent(world, apps, parallel=parallel)
    app = open_app(store, agent, world.root)
    apps.append(app)
    app.recover()
    app.open_session("s1")
    return app, DurableRunner(app, agent, run_config=RunConfig(tracing_disabled=True)), model


def conversation(app: RuntimeApplication) -> list[RuntimeEvent]:
    return [e for h in app.list_runs("s1") for e in app.read_run_events(h.run_id)]


def assert_clean_requests(model: ScriptedModel) -> None:
    """Every request the model received: the prompt once, every call answered once."""
    for call in model.calls:
        items = [i for i in call.input if isinstance(i, dict)]
        prompts = [i for i in items if i.get("role") == "user" and i.get("content") == PROMPT]
        assert len(prompts) == 1, items
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        assert sorted(calls) == sorted(outputs_of(items)), items
        assert len(set(calls)) == len(calls), items


def test_a_turn_records_each_response_in_one_save_and_journals_each_tool(
    store_url: str, world: World, apps: list[RuntimeApplication]
) -> None:
    app, runner, model = start(store_url, world, apps, parallel=True)
    done = runner.run_sync("s1", PROMPT, run_id="r1")
    assert (done.status, done.final_output) == ("completed", ANSWER)
    assert done.turn is not None
    assert done.turn.answer == ANSWER
    events = app.read_run_events("r1")
    calls = [e.content for e in events if isinstance(e.content, FunctionCallContent)]
    assert [(c.id, c.name) for c in calls] == [
        ("call_read", "read_file"),
        ("call_mail", "send_email"),
    ]
    assert calls[1].args == {"to": "ops", "body": "hello"}
    assert isinstance(app, Saves)
    # the response with both calls is ONE save; each tool is T1 then T2; then the answer
    assert ["r1-out-1", "r1-out-2"] in app.saves
    assert app.saves[-2] == ["r1-out-3"]
    ops = app.tool_journal.tool_operations("r1")
    assert [(o.tool_name, o.recovery_mode, o.state) for o in ops] == [
        ("read_file", "replay_safe", "outcome_committed"),
        ("send_email", "never_auto_retry", "outcome_committed"),
    ]
    # the send ran after its own T1 (prepared) and the read's T2, before its own T2
    assert world.journal_at_run == [
        repr([("read_file", "outcome_committed"), ("send_email", "prepared")])
    ]
    results = [e.content for e in events if isinstance(e.content, FunctionResponseContent)]
    assert [r.id for r in results] == ["call_read", "call_mail"]  # the model's order
    assert world.outbox == ["ops: hello"]
    assert world.reads == ["greeting.txt"]
    assert_clean_requests(model)
    assert outputs_of(model.calls[-1].input) == {"call_read": "hello", "call_mail": "sent"}


def test_a_new_prompt_beside_an_interrupted_turn_is_refused(
    store_url: str, world: World, apps: list[RuntimeApplication]
) -> None:
    _app, runner, _ = start(store_url, world, apps)
    failpoints.arm(AFTER_T1, lambda point: (_ for _ in ()).throw(Killed()))
    try:
        with pytest.raises(Killed):
            runner.run_sync("s1", PROMPT, run_id="r1")
    finally:
        failpoints.disarm(AFTER_T1)
    _, again, _ = start(store_url, world, apps)
    with pytest.raises(TurnRefusedError):
        again.run_sync("s1", "another prompt")


def kill_at(point: str, when: Any) -> None:
    def die(_: str) -> None:
        if when():
            raise Killed()

    failpoints.arm(point, die)


def test_killed_inside_the_replay_safe_read_resumes_without_a_duplicate_prompt(
    store_url: str, world: World, apps: list[RuntimeApplication]
) -> None:
    """Killed after the read ran, before its T2: recovery re-runs the read (replay_safe), the
    Runner continues from the replayed history and mails once."""
    _, runner, _ = start(store_url, world, apps)
    kill_at(BEFORE_T2, lambda: world.reads and not world.outbox)
    try:
        with pytest.raises(Killed):
            runner.run_sync("s1", PROMPT, run_id="r1")
    finally:
        failpoints.disarm(BEFORE_T2)
    assert world.outbox == []
    app, runner, model = start(store_url, world, apps)
    resumed = runner.resume_sync("s1")
    assert resumed.resume is not None
    assert (resumed.status, resumed.final_output) == ("completed", ANSWER), resumed.resume.reasons
    assert world.reads == ["greeting.txt", "greeting.txt"]  # the read only: it is replay_safe
    assert world.outbox == ["ops: hello"]
    assert_clean_requests(model)
    first = [i for i in model.calls[0].input if isinstance(i, dict)]
    assert [i.get("type") for i in first] == ["message", "function_call", "function_call_output"]
    assert outputs_of(first) == {"call_read": "hello"}  # settled by recovery, then replayed
    contents = [e.content for e in conversation(app)]
    calls = [c.id for c in contents if isinstance(c, FunctionCallContent)]
    assert calls == ["call_read", "call_mail"]


def test_killed_inside_the_send_parks_then_finishes_after_one_attestation(
    store_url: str, world: World, apps: list[RuntimeApplication]
) -> None:
    """Two parallel calls, killed inside the second (the never_auto_retry send) after it
    ran: recovery cannot know, the run parks; one attestation and the Runner finishes."""
    _, runner, _ = start(store_url, world, apps, parallel=True)
    kill_at(BEFORE_T2, lambda: bool(world.outbox))
    try:
        with pytest.raises(Killed):
            runner.run_sync("s1", PROMPT, run_id="r1")
    finally:
        failpoints.disarm(BEFORE_T2)
    app, runner, model = start(store_url, world, apps, parallel=True)
    parked = runner.resume_sync("s1")
    assert parked.status == "parked"
    assert parked.result is None
    assert parked.resume is not None
    assert parked.resume.reasons == ("runtime_ledger_unreadable",)  # an unsettled operation
    assert any("maka-es attest r1" in c for c in parked.resume.operator_commands)
    assert list(model.calls) == []  # the model is not asked while the send is undecided
    (op,) = [o for o in app.tool_journal.tool_operations("r1") if o.tool_name == "send_email"]
    app.attest_operation(
        "r1", op.operation_id, applied=True, result={"kind": "text", "text": "sent"}, actor="ops"
    )
    resumed = runner.resume_sync("s1")
    assert (resumed.status, resumed.final_output) == ("completed", ANSWER)
    assert world.outbox == ["ops: hello"]  # once: the attestation, never a re-run
    assert_clean_requests(model)
    assert outputs_of(model.calls[0].input)["call_mail"] == "sent"


def test_async_run_and_resume_on_the_callers_loop(
    store_url: str, world: World, apps: list[RuntimeApplication]
) -> None:
    async def first() -> None:
        _, runner, _ = start(store_url, world, apps)
        kill_at(AFTER_T1, lambda: not world.reads)  # the read's T1 committed, it did not run
        try:
            with pytest.raises(Killed):
                await runner.run("s1", PROMPT, run_id="r1")
        finally:
            failpoints.disarm(AFTER_T1)

    async def second() -> tuple[str, Any, ScriptedModel]:
        _, runner, model = start(store_url, world, apps)
        resumed = await runner.resume("s1")
        return resumed.status, resumed.final_output, model

    asyncio.run(first())
    status, final, model = asyncio.run(second())
    assert (status, final) == ("completed", ANSWER)
    assert world.reads == ["greeting.txt"]  # run once, by recovery (replay_safe)
    assert world.outbox == ["ops: hello"]
    assert_clean_requests(model)
    assert outputs_of(model.calls[0].input) == {"call_read": "hello"}


def test_a_second_turn_is_sent_the_first_from_the_ledger(
    store_url: str, world: World, apps: list[RuntimeApplication]
) -> None:
    _, runner, model = start(store_url, world, apps)
    runner.run_sync("s1", PROMPT, run_id="r1")
    second = runner.run_sync("s1", "thanks", run_id="r2")
    assert second.status == "completed"
    items = [i for i in model.calls[-1].input if isinstance(i, dict)]
    assert [i.get("content") for i in items if i.get("role") == "user"] == [PROMPT, "thanks"]
    assert world.outbox == ["ops: hello"]


def test_what_cannot_be_journaled_is_refused_before_anything_runs(
    sqlite_app: RuntimeApplication, world: World
) -> None:
    agent, _ = build_agent(world, [])
    before = store_snapshot(sqlite_app).rows
    with pytest.raises(OpenAIAgentsUnsupportedError) as missing:
        DurableRunner(sqlite_app, agent)
    assert missing.value.detail["reason"] == "tool_not_in_catalogue"
    with pytest.raises(OpenAIAgentsUnsupportedError) as unknown:
        journaled_tools(agent, {"nope": "replay_safe"})
    assert unknown.value.detail["reason"] == "tool_unknown"
    with_handoff = agent.clone(handoffs=[Agent(name="other")])
    with pytest.raises(OpenAIAgentsUnsupportedError) as handoff:
        journaled_tools(with_handoff)
    assert handoff.value.code == "openai_agents_unsupported"
    assert handoff.value.detail["reason"] == "handoffs"
    with pytest.raises(OpenAIAgentsUnsupportedError) as outside:
        asyncio.run(invoke_outside_a_turn(agent))
    assert outside.value.detail["reason"] == "outside_durable_run"
    assert world.reads == []
    assert world.outbox == []
    assert not list(sqlite_app.ledger.all_run_ids())
    assert store_snapshot(sqlite_app).rows == before  # every refusal wrote nothing


async def invoke_outside_a_turn(agent: Agent[Any]) -> None:
    """A durable tool invoked with no DurableRunner turn around it."""
    app = RuntimeApplication.in_memory(tools=journaled_tools(agent), host_config=HOST)
    try:
        tool = DurableRunner(app, agent).agent.tools[0]
        assert isinstance(tool, FunctionTool)
        ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id="c", tool_arguments="{}")
        await tool.on_invoke_tool(ctx, "{}")
    finally:
        app.close()


def test_a_fault_between_t1_and_t2_is_no_terminal_and_recovery_settles_it(
    store_url: str, world: World, apps: list[RuntimeApplication], monkeypatch: pytest.MonkeyPatch
) -> None:
    """T2 of the read fails (a store fault): the Runner stops, the turn is not ended failed
    with the read unsettled (OperationInterrupted, like a kill), and the next incarnation
    settles the read first, then the Runner finishes from the boundary."""
    app, runner, _ = start(store_url, world, apps)

    def fault(run_id: str, response: Any) -> Any:
        raise OSError("disk went away")

    monkeypatch.setattr(app.tool_journal, "commit_tool_outcome", fault)
    with pytest.raises(OperationInterrupted) as stopped:
        runner.run_sync("s1", PROMPT, run_id="r1")
    chain, cause = [], stopped.value.__cause__
    while cause is not None:  # the SDK wraps a tool's exception in its UserError
        chain.append(cause)
        cause = cause.__cause__
    assert any(isinstance(c, OSError) for c in chain), chain
    assert app.get_run_header("r1").status == "running"
    monkeypatch.undo()
    _, again, _ = start(store_url, world, apps)
    resumed = again.resume_sync("s1")
    assert (resumed.status, resumed.final_output) == ("completed", ANSWER)
    assert world.outbox == ["ops: hello"]


def test_a_streamed_turn_records_each_response_before_its_tools_and_resumes_streamed(
    store_url: str, world: World, apps: list[RuntimeApplication]
) -> None:
    """run_streamed: the SDK's events reach the host as they come; each response is one save
    when it completes (before its tools run); killed inside the send, one attestation and
    resume_streamed finishes."""

    async def first(runner: DurableRunner) -> list[str]:
        return [event.type async for event in runner.run_streamed("s1", PROMPT, run_id="r1")]

    app, runner, model = start(store_url, world, apps, parallel=True)
    kill_at(BEFORE_T2, lambda: bool(world.outbox))
    try:
        with pytest.raises(Killed):
            asyncio.run(first(runner))
    finally:
        failpoints.disarm(BEFORE_T2)
    assert model.calls[0].streamed
    assert isinstance(app, Saves)
    assert ["r1-out-1", "r1-out-2"] in app.saves  # the streamed response, one save
    app, runner, model = start(store_url, world, apps, parallel=True)
    (op,) = [o for o in app.tool_journal.tool_operations("r1") if o.tool_name == "send_email"]
    app.attest_operation(
        "r1", op.operation_id, applied=True, result={"kind": "text", "text": "sent"}, actor="ops"
    )

    async def second() -> list[str]:
        return [event.type async for event in runner.resume_streamed("s1")]

    kinds = asyncio.run(second())
    assert "raw_response_event" in kinds
    assert runner.last is not None
    assert (runner.last.status, runner.last.final_output) == ("completed", ANSWER)
    assert world.outbox == ["ops: hello"]
    assert_clean_requests(model)


def test_without_the_extra_the_import_names_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)  # as if openai-agents were not installed
    monkeypatch.delitem(sys.modules, "maka_es.integrations.openai_agents")
    with pytest.raises(MissingExtraError) as missing:
        importlib.import_module("maka_es.integrations.openai_agents")
    assert missing.value.code == "extra_missing"
    assert "pip install 'maka_es[openai-agents]'" in str(missing.value)


def test_a_parked_run_forked_before_the_send_finishes_with_one_email(
    store_url: str, world: World, apps: list[RuntimeApplication]
) -> None:
    """Killed after the send's T1, before it ran: the run parks; the operator forks before
    the call (maka-es fork) and resume runs the fork with the Runner: the model, shown the
    prefix before the call, sends once."""
    _, runner, _ = start(store_url, world, apps)
    kill_at(AFTER_T1, lambda: bool(world.reads))  # the send's T1: the read already ran
    try:
        with pytest.raises(Killed):
            runner.run_sync("s1", PROMPT, run_id="r1")
    finally:
        failpoints.disarm(AFTER_T1)
    app, runner, model = start(store_url, world, apps)
    parked = runner.resume_sync("s1")
    assert parked.status == "parked"
    assert any(c.startswith("maka-es fork r1 --before ") for c in parked.operator_commands)
    (op,) = [o for o in app.tool_journal.tool_operations("r1") if o.tool_name == "send_email"]
    app.fork_run("r1", before_operation=op.operation_id, actor="ops")
    resumed = runner.resume_sync("s1")
    assert (resumed.status, resumed.final_output) == ("completed", ANSWER)
    assert world.outbox == ["ops: hello"]
    assert_clean_requests(model)
    assert outputs_of(model.calls[0].input) == {"call_read": "hello"}  # the call is not shown


def test_a_reused_call_id_fails_the_turn_before_its_tool_runs(world: World, tmp_path: Path) -> None:
    """A model that answers a second time with the first call's id: the response is refused
    before it is recorded (it would pair with the first call's result), the turn fails."""
    agent, _ = build_agent(world, [])
    again = [function_call("read_file", {"path": "greeting.txt"}, call_id="call_read")]
    model = ScriptedModel([again, again])
    agent = agent.clone(model=model)
    with RuntimeApplication.open_sqlite(
        str(tmp_path / "reuse.sqlite"),
        tools=journaled_tools(agent),
        host_config=HOST.model_copy(update={"cwd": str(tmp_path)}),
    ) as app:
        app.open_session("s1")
        runner = DurableRunner(app, agent, run_config=RunConfig(tracing_disabled=True))
        done = runner.run_sync("s1", PROMPT, run_id="r1")
        assert done.status == "failed"
        assert done.turn is not None
        assert done.turn.error_class == "provider_output_invalid"
        assert "reuses tool call id" in (done.turn.failure_message or "")
        assert world.reads == ["greeting.txt"]  # the first call only
        calls = [e for e in app.read_run_events("r1") if e.function_call is not None]
        assert len(calls) == 1
