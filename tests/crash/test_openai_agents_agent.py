"""examples/openai_agents_agent.py, SIGKILLed inside and around its tools and restarted.

Why: the example is what an OpenAI Agents SDK host copies (ADR 0042); it must keep its promise
under a real ``kill -9``. Each seed runs the unchanged example's ``main`` in a forked child
(the SDK is imported once by the parent: a fork starts in milliseconds where a new
interpreter spends seconds importing ``agents``), with its tools probed (each side effect
appends a line to ``effects.log`` before the tool returns) and its model logging every
request it is sent. The child blocks at one armed point, chosen by the seed: after T1, before
T2 (the effect landed) or after T2 of the read, the write or the email, inside a store save
before its commit, or right after the turn's prompt was saved; the parent SIGKILLs it there.
Then restarts, until the answer: a park (the email's outcome unknown) is settled by one
attestation of the truth (its outbox line landed, or not), and the next restart finishes.
Every side effect happens once, and no request the model received holds a call without its
result, a result twice, or the prompt twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import os
import random
import select
import signal
import traceback
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agents import Agent, FunctionTool
from agents.testing import ModelCall, ModelStep, ScriptedModel

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.continuation.turns import AFTER_TURN_STARTED
from maka_es.tooljournal.runtime import AFTER_T1, AFTER_T2, BEFORE_T2

EXAMPLE_PATH = Path(__file__).resolve().parents[2] / "examples" / "openai_agents_agent.py"
CHILD_TIMEOUT = 60.0
EFFECTS = "effects.log"
REQUESTS = "requests.jsonl"
#: (failpoint, which hit): the first run hits each tool point once per tool, in the order
#: read, write, email; a store save is hit by every command.
POINTS = [
    *[(point, nth) for point in (AFTER_T1, BEFORE_T2, AFTER_T2) for nth in (1, 2, 3)],
    *[(failpoints.INSIDE_SAVE_BEFORE_COMMIT, nth) for nth in range(1, 11)],
    (AFTER_TURN_STARTED, 1),
]


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openai_agents_agent", EXAMPLE_PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE = load_example()


def probed_agent(root: Path) -> Any:
    """``build_agent`` whose tools log each side effect they completed."""
    original = EXAMPLE.build_agent

    def build(workspace: Path, model: Any) -> Agent[Any]:
        agent: Agent[Any] = original(workspace, model)

        def probe(tool: FunctionTool) -> FunctionTool:
            async def invoke(ctx: Any, arguments: str) -> Any:
                output = await tool.on_invoke_tool(ctx, arguments)
                with (root / EFFECTS).open("a") as log:
                    log.write(f"{tool.name}\n")
                return output

            return dataclasses.replace(tool, on_invoke_tool=invoke)

        tools = [probe(t) for t in agent.tools if isinstance(t, FunctionTool)]
        return agent.clone(tools=tools)

    return build


def logging_model(root: Path) -> ScriptedModel:
    """The example's scripted model, each request appended to ``requests.jsonl`` first."""

    def respond(call: ModelCall) -> Any:
        with (root / REQUESTS).open("a") as log:
            log.write(json.dumps(list(call.input)) + "\n")
        return EXAMPLE.next_step(call)

    return ScriptedModel([ModelStep.respond(respond) for _ in range(12)])


def _child(root: Path, kill: tuple[str, int] | None, pipe: int) -> None:
    """The forked child: the example's start, blocking at the armed point (never returns)."""
    code = 0
    try:
        # Runner.run_sync reuses the thread's default loop: one the parent made before the
        # fork has a default executor whose worker threads the child does not have
        asyncio.set_event_loop(asyncio.new_event_loop())
        setattr(EXAMPLE, "build_agent", probed_agent(root))  # noqa: B010 (a loaded module)
        if kill is not None:
            hits = Counter[str]()

            def block(name: str) -> None:
                hits[name] += 1
                if hits[name] == kill[1]:
                    os.write(pipe, b"INSIDE\n")
                    select.select([], [], [])  # until SIGKILL

            failpoints.arm(kill[0], block)
        answer = EXAMPLE.main(root, logging_model(root))
        (root / "answer.txt").write_text(answer)
    except BaseException:
        (root / "child-error.txt").write_text(traceback.format_exc())
        code = 1
    finally:
        os._exit(code)


def run_child(root: Path, kill: tuple[str, int] | None) -> str:
    """``killed`` at its point, else what the example returned (``parked: ...`` or its
    answer); a child that never reaches its point finishes and says so."""
    (root / "answer.txt").unlink(missing_ok=True)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(root, kill, write)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], CHILD_TIMEOUT)
        said = os.read(read, 64) if ready else b""
        if said.startswith(b"INSIDE") or not ready:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(read)
    _, status = os.waitpid(pid, 0)
    assert ready, f"the child hung at {kill}"
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return "killed"
    error = root / "child-error.txt"
    assert os.WEXITSTATUS(status) == 0, error.read_text() if error.exists() else status
    return (root / "answer.txt").read_text()


def attest_the_truth(root: Path, parked: str) -> str:
    """The operator: the email operation the park names is attested as what happened."""
    attest = next(c for c in parked.removeprefix("parked: ").split(" | ") if " attest " in c)
    run_id, operation_id = attest.split()[2:4]
    sent = (root / "outbox.txt").exists()
    with RuntimeApplication.open_sqlite(str(root / "agent.sqlite")) as app:
        result = {"kind": "text", "text": "sent"} if sent else None
        app.attest_operation(run_id, operation_id, applied=sent, result=result, actor="test")
    return "applied" if sent else "not_applied"


def assert_requests_clean(root: Path) -> None:
    """No request holds a dangling call, a result twice, or the prompt twice."""
    for line in (root / REQUESTS).read_text().splitlines():
        items = [i for i in json.loads(line) if isinstance(i, dict)]
        prompts = [i for i in items if i.get("role") == "user"]
        assert [p["content"] for p in prompts] == [EXAMPLE.PROMPT], items
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        results = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
        assert len(set(calls)) == len(calls), items
        assert sorted(calls) == sorted(results), items


def crash_and_restart(tmp: Path, seed: int, point: tuple[str, int] | None = None) -> str:
    rng = random.Random(seed)
    kill = point or rng.choice(POINTS)
    port = rng.randrange(1024, 65536)
    root = tmp / f"seed-{seed}"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "config.json").write_text(json.dumps({"port": port}))

    outcome = run_child(root, kill)
    attested = []
    for _ in range(4):
        outcome = run_child(root, None)
        if not outcome.startswith("parked: "):
            break
        attested.append(attest_the_truth(root, outcome))
    assert outcome == EXAMPLE.ANSWER, (seed, kill, outcome)
    assert len(attested) <= 1, (seed, kill, attested)
    assert (root / "workspace" / "port.txt").read_text() == f"{port}\n", (seed, kill)
    effects = Counter((root / EFFECTS).read_text().splitlines())
    assert effects["write_file"] == 1, (seed, kill, effects)
    assert effects["send_email"] == 1, (seed, kill, effects)
    assert len((root / "outbox.txt").read_text().splitlines()) == 1, (seed, kill)
    assert_requests_clean(root)
    return attested[0] if attested else ""


def test_the_example_finishes_with_each_effect_once_over_twenty_seeds(tmp_path: Path) -> None:
    outcomes = [crash_and_restart(tmp_path, seed) for seed in range(20)]
    assert all(o in ("", "applied", "not_applied") for o in outcomes)


@pytest.mark.parametrize(
    ("point", "attested"),
    [((AFTER_T1, 3), "not_applied"), ((BEFORE_T2, 3), "applied"), ((AFTER_T2, 3), "")],
)
def test_killed_around_the_email_parks_only_inside_its_window(
    tmp_path: Path, point: tuple[str, int], attested: str
) -> None:
    """After the email's T1 the outcome is unknown: one attestation of the truth (sent or
    not) and the turn finishes, the email sent once; after its T2 nothing parks."""
    assert crash_and_restart(tmp_path, 1000, point) == attested


def test_killed_before_the_write_landed_writes_once(tmp_path: Path) -> None:
    """After the write's T1, before it ran: the reconciler proves the prior state, recovery
    settles it "not applied", and the model writes again: one write, no operator."""
    assert crash_and_restart(tmp_path, 1001, (AFTER_T1, 2)) == ""
    calls = [
        item["call_id"]
        for line in (tmp_path / "seed-1001" / REQUESTS).read_text().splitlines()[-1:]
        for item in json.loads(line)
        if item.get("type") == "function_call"
    ]
    assert calls == ["call_read", "call_write_1", "call_write_2", "call_send_1"]


@pytest.mark.slow
def test_the_example_over_many_seeds(tmp_path: Path) -> None:
    for seed in range(20, 120):
        crash_and_restart(tmp_path, seed)
