"""``maka_es.integrations.pydantic_ai`` with Pydantic AI's own offline models (issue 24,
part 1; ADR 0041): each response recorded in one save, T1 before each tool and T2 after,
parallel calls, ``ModelRetry``, a crash resumed without a duplicated prompt, a parked run
attested, and the sync, async, streamed and node-by-node runs, on the real SQLite file and on
PostgreSQL (``store_url``).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.test import TestModel

from maka_es import RuntimeApplication, failpoints
from maka_es.errors import TurnRefusedError
from maka_es.integrations.pydantic_ai import DurableAgent, ToolPolicy
from maka_es.tooljournal.runtime import AFTER_T2, BEFORE_T2
from maka_es.wire.events import RuntimeEvent
from tests.integrations.pai_support import (
    Killed,
    ScriptedModel,
    assert_clean_requests,
    open_app,
    prompts_of,
)

PROMPT = "copy the port into port.txt, then mail ops"


def call(name: str, args: dict[str, Any], call_id: str) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)


def email_agent(workspace: Path, model: ScriptedModel, seen: list[str]) -> Agent[None, str]:
    """Pydantic AI's own agent: read a file, write a file, send an email (an outbox line)."""
    agent = Agent(model.model, system_prompt="You are a careful ops agent.")

    @agent.tool_plain
    def read_file(path: str) -> str:
        seen.append(f"read {path}")
        return (workspace / path).read_text()

    @agent.tool_plain
    def write_file(path: str, content: str) -> str:
        seen.append(f"write {path}")
        (workspace / path).write_text(content)
        return f"wrote {path}"

    @agent.tool_plain
    def send_email(to: str, body: str) -> str:
        seen.append(f"send {to}")
        with (workspace / "outbox.txt").open("a") as outbox:
            outbox.write(f"{to}: {body}\n")
        return "sent"

    return agent


READ = call("read_file", {"path": "config.txt"}, "c1")
WRITE = call("write_file", {"path": "port.txt", "content": "4000\n"}, "c2")
SEND = call("send_email", {"to": "ops", "body": "port 4000"}, "c3")
ANSWER = ModelResponse(parts=[TextPart(content="done: port 4000")])


def parallel_steps() -> ScriptedModel:
    """read; then write and mail in parallel (one response, two calls); then the answer."""
    return ScriptedModel(
        [
            lambda m: ModelResponse(parts=[ThinkingPart(content="config first"), READ]),
            lambda m: ModelResponse(parts=[TextPart(content="writing and mailing"), WRITE, SEND]),
            lambda m: ANSWER,
            lambda m: ANSWER,
        ]
    )


def sequential_steps() -> ScriptedModel:
    """read; write; mail; the answer: one call per response."""
    return ScriptedModel(
        [
            lambda m: ModelResponse(parts=[READ]),
            lambda m: ModelResponse(parts=[WRITE]),
            lambda m: ModelResponse(parts=[SEND]),
            lambda m: ANSWER,
        ]
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "config.txt").write_text("4000\n")
    return root


def durable_for(workspace: Path, model: ScriptedModel, seen: list[str]) -> DurableAgent[str]:
    agent = email_agent(workspace, model, seen)
    return DurableAgent(
        agent, tools={"read_file": "replay_safe", "write_file": ToolPolicy.file_write(workspace)}
    )


def parts_of(messages: Sequence[ModelMessage]) -> list[Any]:
    return [part for message in messages for part in message.parts]


def model_saves(saves: Sequence[list[str]], events: Sequence[RuntimeEvent]) -> list[list[str]]:
    """The saves that committed model events, as their ids."""
    model_ids = {event.id for event in events if event.role == "model"}
    return [save for save in saves if set(save) & model_ids]


def test_each_response_is_one_save_and_each_tool_is_bracketed_by_t1_t2(
    store_url: str, workspace: Path
) -> None:
    seen: list[str] = []
    model = parallel_steps()
    durable = durable_for(workspace, model, seen)
    with open_app(store_url, durable, workspace) as app:
        app.recover()
        app.open_session("s1")
        states: list[str] = []
        original = app.tool_runtime.tools["send_email"].run

        def observing(args: Any, context: Any) -> Any:  # the journal's state while the tool runs
            ops = {
                op.operation_id: op.state for op in app.tool_journal.tool_operations(context.run_id)
            }
            states.append(ops[context.operation_id])
            return original(args, context)

        object.__setattr__(app.tool_runtime.tools["send_email"], "run", observing)
        turn = durable.run_sync(app, "s1", PROMPT, run_id="r1")
        assert turn.output == "done: port 4000"
        assert turn.turn.status == "completed"
        events = app.read_run_events("r1")
        kinds = [(e.role, e.content.kind if e.content else e.actions and "fact") for e in events]
        # one save per response: [thinking + call], [text + 2 calls], [answer]
        saves = model_saves(app.saves, events)
        assert [len(save) for save in saves] == [2, 3, 1]
        # both parallel calls are recorded before either one's T1
        second = saves[1]
        first_dispatch = next(
            i for i, e in enumerate(events) if e.id.endswith("_dispatch") and i > 4
        )
        assert all(
            events.index(next(e for e in events if e.id == i)) < first_dispatch for i in second
        )
        ops = app.tool_journal.tool_operations("r1")
        assert [(op.tool_name, op.state) for op in ops] == [
            ("read_file", "outcome_committed"),
            ("write_file", "outcome_committed"),
            ("send_email", "outcome_committed"),
        ]
        assert [op.recovery_mode for op in ops] == ["replay_safe", "reconcile", "never_auto_retry"]
        assert states == ["prepared"]  # T1 committed before the tool ran, T2 after
        assert seen == ["read config.txt", "write port.txt", "send ops"]
        assert kinds[0] == ("user", "text")
    assert_clean_requests(model.requests, [PROMPT])
    assert all(len(r) >= 1 for r in model.requests)


def test_model_retry_is_a_committed_error_then_the_retry_prompt(
    store_url: str, workspace: Path
) -> None:
    attempts: list[str] = []
    model = ScriptedModel(
        [
            lambda m: ModelResponse(parts=[call("lookup", {"key": "bad"}, "k1")]),
            lambda m: ModelResponse(parts=[call("lookup", {"key": "port"}, "k2")]),
            lambda m: ModelResponse(parts=[TextPart(content="port is 4000")]),
        ]
    )
    agent = Agent(model.model)

    @agent.tool_plain(retries=2)
    def lookup(key: str) -> str:
        attempts.append(key)
        if key != "port":
            raise ModelRetry(f"no key {key}; try 'port'")
        return "4000"

    durable = DurableAgent(agent, tools={"lookup": "idempotent"})
    with open_app(store_url, durable, workspace) as app:
        app.recover()
        app.open_session("s1")
        turn = durable.run_sync(app, "s1", "what is the port?", run_id="r1")
        assert turn.output == "port is 4000"
        responses = [e.function_response for e in app.read_run_events("r1") if e.function_response]
        assert [(r.id, r.is_error) for r in responses] == [("k1", True), ("k2", None)]
        # the model got the retry prompt in the run, and gets it again from the ledger next turn
        live = [p for p in model.requests[1][-1].parts if isinstance(p, ToolReturnPart)]
        assert [(p.content, p.outcome) for p in live] == [("no key bad; try 'port'", "retried")]
        model.steps = [lambda m: ModelResponse(parts=[TextPart(content="still 4000")])]
        durable.run_sync(app, "s1", "and again?", run_id="r2")
        replayed = [p for p in parts_of(model.requests[-1]) if isinstance(p, ToolReturnPart)]
        assert [(p.content, p.outcome, p.tool_call_id) for p in replayed] == [
            ("no key bad; try 'port'", "retried", "k1"),
            ("4000", "success", "k2"),
        ]
    assert attempts == ["bad", "port"]
    assert_clean_requests(model.requests, ["what is the port?", "and again?"])


def crash_in(point_tool: str, seen: list[str]) -> Any:
    """A failpoint action: die at BEFORE_T2 of the call whose tool just ran (``seen`` ends
    with it): the side effect happened, its T2 never commits."""

    def die(_: str) -> None:
        if seen and seen[-1].startswith(point_tool):
            raise Killed()

    return die


def crashed_turn(
    store_url: str,
    workspace: Path,
    tool: str,
    model: ScriptedModel | None = None,
    point: str = BEFORE_T2,
) -> tuple[ScriptedModel, list[str]]:
    """Run the turn and kill it after ``tool`` ran, at ``point`` (before its T2)."""
    seen: list[str] = []
    model = model or sequential_steps()
    durable = durable_for(workspace, model, seen)
    app = open_app(store_url, durable, workspace)
    app.recover()
    app.open_session("s1")
    failpoints.arm(point, crash_in(tool, seen))
    try:
        with pytest.raises(Killed):
            durable.run_sync(app, "s1", PROMPT, run_id="r1")
    finally:
        failpoints.disarm(point)
    return model, seen  # the application is dropped, not closed: the process died


def test_a_crash_inside_the_write_resumes_without_rerunning_it_or_the_prompt(
    store_url: str, workspace: Path
) -> None:
    model, seen = crashed_turn(store_url, workspace, "write")
    assert seen == ["read config.txt", "write port.txt"]
    durable = durable_for(workspace, model, seen)
    with open_app(store_url, durable, workspace) as app:
        report = app.recover()
        assert report is not None
        resumed = durable.resume_sync(app, "s1")
        assert resumed.status == "continued"
        assert resumed.output == "done: port 4000"
        target = resumed.resume.outcome
        assert target is not None
        assert target.status == "completed"
        writes = [
            op for op in app.tool_journal.tool_operations("r1") if op.tool_name == "write_file"
        ]
        assert [op.state for op in writes] == ["recovery_completed"]
    # the write ran once (the reconciler settled it from the file); the mail once, after
    assert seen == ["read config.txt", "write port.txt", "send ops"]
    assert (workspace / "outbox.txt").read_text() == "ops: port 4000\n"
    assert_clean_requests(model.requests, [PROMPT])
    resumed_request = model.requests[2]
    assert prompts_of(resumed_request) == [PROMPT]
    returns = [p for p in parts_of(resumed_request) if isinstance(p, ToolReturnPart)]
    assert [p.tool_call_id for p in returns] == ["c1", "c2"]


def test_a_crash_inside_a_replay_safe_read_reruns_it_in_recovery(
    store_url: str, workspace: Path
) -> None:
    model, seen = crashed_turn(store_url, workspace, "read")
    durable = durable_for(workspace, model, seen)
    with open_app(store_url, durable, workspace) as app:
        report = app.recover()
        actions = [a for r in report.repairs for a in r.detail.get("actions", [])]
        assert [(a["toolName"], a["action"]) for a in actions] == [("read_file", "reexecuted")]
        resumed = durable.resume_sync(app, "s1")
        assert resumed.output == "done: port 4000"
    assert seen == ["read config.txt", "read config.txt", "write port.txt", "send ops"]
    assert_clean_requests(model.requests, [PROMPT])


def test_a_crash_between_two_parallel_calls_parks_then_a_fork_finishes(
    store_url: str, workspace: Path
) -> None:
    """The write's T2 landed, the mail's call has no T1: the replay has a hole in the middle
    (``provider_replay_non_suffix_gap``, maka_es's own loop parks the same way); a fork before
    the write lets the model decide again from the read's result."""
    model, seen = crashed_turn(store_url, workspace, "write", parallel_steps(), AFTER_T2)
    durable = durable_for(workspace, model, seen)
    with open_app(store_url, durable, workspace) as app:
        app.recover()
        parked = durable.resume_sync(app, "s1")
        assert parked.status == "parked"
        assert parked.resume.reasons == ("provider_replay_non_suffix_gap",)
        assert parked.resume.operator_commands == ()  # the library names no way out here
        write = next(
            op for op in app.tool_journal.tool_operations("r1") if op.tool_name == "write_file"
        )
        assert parked.operator_commands == (
            f"maka-es fork r1 --before {write.operation_id} --actor WHO",
        )
        app.fork_run(
            "r1", before_operation=write.operation_id, actor="ops-7", note="mail never sent"
        )
        resumed = durable.resume_sync(app, "s1")
        assert resumed.status == "continued"
        assert resumed.output == "done: port 4000"
    assert seen == ["read config.txt", "write port.txt", "write port.txt", "send ops"]
    assert (workspace / "outbox.txt").read_text() == "ops: port 4000\n"
    assert_clean_requests(model.requests, [PROMPT])


def test_a_crash_inside_the_mail_parks_until_one_attestation(
    store_url: str, workspace: Path
) -> None:
    model, seen = crashed_turn(store_url, workspace, "send")
    durable = durable_for(workspace, model, seen)
    with open_app(store_url, durable, workspace) as app:
        app.recover()
        parked = durable.resume_sync(app, "s1")
        assert parked.status == "parked"
        assert any(cmd.startswith("maka-es attest r1 ") for cmd in parked.resume.operator_commands)
        send = next(
            op for op in app.tool_journal.tool_operations("r1") if op.tool_name == "send_email"
        )
        again = durable.resume_sync(app, "s1")  # parks again: nothing guessed
        assert again.status == "parked"
        app.attest_operation(
            "r1",
            send.operation_id,
            applied=True,
            result={"kind": "text", "text": "sent"},
            actor="ops-7",
            note="found it in the outbox",
        )
        resumed = durable.resume_sync(app, "s1")
        assert resumed.status == "continued"
        assert resumed.output == "done: port 4000"
    assert seen == ["read config.txt", "write port.txt", "send ops"]
    assert (workspace / "outbox.txt").read_text() == "ops: port 4000\n"
    assert_clean_requests(model.requests, [PROMPT])
    last = model.requests[-1]
    returns = {p.tool_call_id: p.content for p in parts_of(last) if isinstance(p, ToolReturnPart)}
    assert returns["c3"] == "sent"


def test_a_new_prompt_beside_an_interrupted_turn_is_refused(
    store_url: str, workspace: Path
) -> None:
    model, seen = crashed_turn(store_url, workspace, "write")
    durable = durable_for(workspace, model, seen)
    with open_app(store_url, durable, workspace) as app:
        app.recover()
        with pytest.raises(TurnRefusedError):
            durable.run_sync(app, "s1", "something else")
    assert all("something else" not in prompts_of(r) for r in model.requests)


def test_async_stream_and_iter_turns_are_recorded_like_sync(db_path: Path, workspace: Path) -> None:
    agent = Agent(TestModel(), system_prompt="be brief")
    ran: list[int] = []

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        ran.append(a + b)
        return a + b

    durable = DurableAgent(agent, tools={"add": "idempotent"})

    async def host(app: RuntimeApplication) -> list[Any]:
        first = await durable.run(app, "s1", "add", run_id="a1")
        async with durable.run_stream(app, "s1", "stream it", run_id="a2") as streamed:
            chunks = [text async for text in streamed.run.stream_text()]
        async with durable.iter(app, "s1", "node by node", run_id="a3") as iterated:
            nodes = [type(node).__name__ async for node in iterated.run]
        return [first, chunks, streamed.turn, nodes, iterated.turn]

    with open_app(str(db_path), durable, workspace) as app:
        app.recover()
        app.open_session("s1")
        first, chunks, streamed, nodes, iterated = asyncio.run(host(app))
        assert first.output == '{"add":0}'
        assert chunks[-1] == first.output
        assert streamed.status == iterated.status == "completed"
        assert "CallToolsNode" in nodes
        assert nodes[-1] == "End"
        for run_id in ("a1", "a2", "a3"):
            events = app.read_run_events(run_id)
            assert events[0].role == "user"
            assert any(e.role == "model" and e.content and e.content.kind == "text" for e in events)
        a1 = [op.state for op in app.tool_journal.tool_operations("a1")]
        assert a1 == ["outcome_committed"]
    assert ran == [0]  # TestModel calls the tool on a first turn only (later turns hold results)


def test_without_the_extra_the_module_names_it(tmp_path: Path) -> None:
    """Imported without pydantic-ai installed: ``extra_missing`` naming the extra, not a bare
    ModuleNotFoundError from deep inside (ADR 0040)."""
    blocker = (
        "import importlib.abc, sys\n"
        "class Blocker(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pydantic_ai':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Blocker())\n"
        "from maka_es.errors import MissingExtraError\n"
        "try:\n"
        "    import maka_es.integrations.pydantic_ai\n"
        "except MissingExtraError as exc:\n"
        "    print(exc.code, exc.detail['extra'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", blocker], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["extra_missing", "pydantic-ai"]


def test_an_iter_block_left_early_is_an_interrupted_turn_that_resume_finishes(
    db_path: Path, workspace: Path
) -> None:
    seen: list[str] = []
    model = sequential_steps()
    durable = durable_for(workspace, model, seen)

    async def host(app: RuntimeApplication) -> Any:
        async with durable.iter(app, "s1", PROMPT, run_id="r1") as iterated:
            async for _node in iterated.run:
                if seen:  # stop once the first tool ran
                    break
        return iterated.turn

    with open_app(str(db_path), durable, workspace) as app:
        app.recover()
        app.open_session("s1")
        turn = asyncio.run(host(app))
        assert turn is not None
        assert (turn.status, turn.error_class) == ("failed", "agent_run_left_open")
        with pytest.raises(TurnRefusedError):
            durable.run_sync(app, "s1", "something else")
        resumed = durable.resume_sync(app, "s1")
        assert resumed.output == "done: port 4000"
    assert seen == ["read config.txt", "write port.txt", "send ops"]
    assert_clean_requests(model.requests, [PROMPT])


def test_a_stream_left_before_its_end_is_resumed_and_finished(
    db_path: Path, workspace: Path
) -> None:
    agent = Agent(TestModel(custom_output_text="one two three four five six"))
    durable = DurableAgent(agent)

    async def host(app: RuntimeApplication) -> tuple[Any, Any]:
        async with durable.run_stream(app, "s1", "count", run_id="r1") as streamed:
            async for _chunk in streamed.run.stream_text(delta=True):
                break  # the host stops reading
        return streamed.turn, await durable.resume(app, "s1")

    with open_app(str(db_path), durable, workspace) as app:
        app.recover()
        app.open_session("s1")
        left, resumed = asyncio.run(host(app))
        assert (left.status, left.error_class) == ("failed", "agent_run_left_open")
        assert resumed.status == "continued"
        assert resumed.output == "one two three four five six"
