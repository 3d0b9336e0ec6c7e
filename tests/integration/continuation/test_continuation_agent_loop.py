"""A continuation is a full agent turn (issue 11 §1; docs/reference/continuation.md#agent-loop).

On a real SQLite store, with the application's own tool catalogue (``tools=``): a scripted
provider that calls a tool and then answers with text; parallel calls in one turn; the step
limit; an invalid output whose message reaches the run's header; a provider error after a
tool; a call of an unknown tool. Every tool here records what the journal said *while it
ran*, which is how "between T1 and T2" is observed rather than assumed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from maka_es import failpoints
from maka_es.app import RuntimeApplication
from maka_es.continuation.agent_loop import DEFAULT_STEP_LIMIT
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.errors import InvalidPlanRequestError
from maka_es.providers.protocol import ProviderRequest, ProviderTurn, ScriptedProvider
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.runtime import AFTER_T2, BEFORE_T2, Tool, ToolContext
from maka_es.wire.codec import operation_id_for
from tests.support.restart import Restart

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
TARGET = "new-2"  # ids drawn in planner order: invocation, run, turn, claim
TARGET_INVOCATION = "new-1"


class NoteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str


@dataclass
class Witness:
    """What each tool execution saw of the journal while it ran (the app is set later)."""

    app: RuntimeApplication | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)

    def note(self, args: NoteArgs, context: ToolContext) -> dict[str, Any]:
        assert self.app is not None
        events = self.app.read_run_events(context.run_id)
        states = {
            op.operation_id: op.state
            for op in self.app.tool_journal.tool_operations(context.run_id)
        }
        self.runs.append(
            {
                "operationId": context.operation_id,
                "text": args.text,
                "state": states.get(context.operation_id),
                "operations": dict(states),
                "callIds": [e.function_call.id for e in events if e.function_call is not None],
                "responded": [e.id for e in events if e.function_response is not None],
            }
        )
        return {"kind": "text", "text": f"noted {args.text}"}


class Env:
    def __init__(self, db: str) -> None:
        self.witness = Witness()
        counter = itertools.count(1)
        observation = HostObservation(
            workspace_identity=WORKSPACE,
            workspace_path="/workspace",
            background_operations_settled=True,
            available_tool_names=("Bash", "Note"),
        )
        self.app = RuntimeApplication.open(
            db,
            env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
            id_factory=lambda: f"new-{next(counter)}",
            host_inspector=StaticHostInspector(observation),
            tools=[Tool(name="Note", input_model=NoteArgs, run=self.witness.note)],
        )
        self.witness.app = self.app
        self.app.open_session("s1", "/workspace")
        ledger = LedgerBuilder(Spine(), prefix="r1-")
        self.app.ledger.create_run(run_header(Spine(), workspaceIdentity=WORKSPACE))
        ledger.user("take a note")
        ledger.call("c1", "Bash", {"command": "ls"})
        ledger.response("c1", "Bash")
        ledger.terminal("failed")
        self.app.ledger.append_events("r1", ledger.events)
        self.app.ledger.update_run_header(
            "r1", {"status": "failed", "failureClass": "provider_error"}
        )
        self.source_events = ledger.events

    def run(self, provider: Any, **kw: Any) -> Any:
        plan = self.app.plan_continuation("s1")
        assert plan.disposition == "continue", plan.rejection_reasons
        return self.app.execute_continuation(plan, provider, **kw)


@pytest.fixture
def env(store_url: str) -> Iterator[Env]:
    environment = Env(store_url)
    yield environment
    environment.app.close()


def call(call_id: str, text: str, name: str = "Note") -> dict[str, Any]:
    return {"kind": "function_call", "id": call_id, "name": name, "args": {"text": text}}


def text(words: str) -> dict[str, Any]:
    return {"kind": "text", "text": words}


def op(call_id: str) -> str:
    return operation_id_for(TARGET_INVOCATION, call_id)


def test_a_tool_call_then_text_completes_with_the_tool_run_once_between_t1_and_t2(
    env: Env,
) -> None:
    provider = ScriptedProvider(
        [ProviderTurn(outputs=(call("n1", "port=8080"),)), ProviderTurn(outputs=(text("done"),))]
    )

    outcome = env.run(provider)

    assert (outcome.status, outcome.error_class, outcome.failure_message) == (
        "completed",
        None,
        None,
    )
    assert (outcome.steps, outcome.tool_calls, outcome.outputs) == (2, 1, 2)
    # executed exactly once, after T1 (operation prepared) and before T2 (no response yet)
    [seen] = env.witness.runs
    assert (seen["operationId"], seen["state"], seen["responded"]) == (op("n1"), "prepared", [])
    events = env.app.read_run_events(TARGET)
    assert [e.id for e in events] == [
        f"{TARGET}-start",
        f"{TARGET}-out-1",
        f"{op('n1')}_dispatch",
        f"{op('n1')}_response",
        f"{TARGET}-out-2",
        f"{TARGET}-terminal",
    ]
    [operation] = env.app.tool_journal.tool_operations(TARGET)
    assert (operation.operation_id, operation.state) == (op("n1"), "outcome_committed")
    assert events[1].refs is not None
    assert events[1].refs.operation_id == op("n1")
    # the second request: the plan's replay, then the call and its committed result
    first, second = provider.requests
    assert [e.to_wire() for e in first.replay_context] == env.source_events
    assert [e.to_wire() for e in second.replay_context[: len(env.source_events)]] == (
        env.source_events
    )
    own = [e.id for e in second.replay_context[len(env.source_events) :]]
    assert own == [f"{TARGET}-out-1", f"{op('n1')}_dispatch", f"{op('n1')}_response"]
    messages = second.openai_messages()
    assert messages[-2]["tool_calls"][0]["id"] == "n1"
    assert messages[-1]["role"] == "tool"
    assert messages[-1]["tool_call_id"] == "n1"
    assert "noted port=8080" in messages[-1]["content"]
    header = env.app.get_run_header(TARGET)
    assert header.status == "completed"
    assert env.app.plan_resume(TARGET).disposition == "safe_replay"


def test_parallel_calls_are_all_recorded_then_each_executed(env: Env) -> None:
    provider = ScriptedProvider(
        [
            ProviderTurn(outputs=(text("two notes"), call("a", "first"), call("b", "second"))),
            ProviderTurn(outputs=(text("both noted"),)),
        ]
    )

    outcome = env.run(provider)

    assert (outcome.status, outcome.steps, outcome.tool_calls) == ("completed", 2, 2)
    first, second = env.witness.runs
    # both calls were recorded before the first tool ran; b was not dispatched yet
    assert first["callIds"][-2:] == ["a", "b"]
    assert first["operations"] == {op("a"): "prepared"}
    assert second["operations"] == {op("a"): "outcome_committed", op("b"): "prepared"}
    assert [r["text"] for r in env.witness.runs] == ["first", "second"]
    ids = [e.id for e in env.app.read_run_events(TARGET)]
    assert ids[1:8] == [
        f"{TARGET}-out-1",
        f"{TARGET}-out-2",
        f"{TARGET}-out-3",
        f"{op('a')}_dispatch",
        f"{op('a')}_response",
        f"{op('b')}_dispatch",
        f"{op('b')}_response",
    ]
    # the model sees one assistant step with both calls, then both results
    messages = provider.requests[1].openai_messages()
    assert [c["id"] for c in messages[-3]["tool_calls"]] == ["a", "b"]
    assert [m["tool_call_id"] for m in messages[-2:]] == ["a", "b"]


def test_the_step_limit_ends_the_run_with_its_own_terminal(env: Env) -> None:
    provider = ScriptedProvider([ProviderTurn(outputs=(call(f"n{n}", str(n)),)) for n in range(3)])

    outcome = env.run(provider, step_limit=2)

    assert (outcome.status, outcome.error_class) == ("failed", "step_limit_exceeded")
    assert outcome.failure_message == (
        "the model still asked for tools after 2 provider calls (step limit 2)"
    )
    assert (outcome.steps, outcome.tool_calls, provider.remaining) == (2, 2, 1)
    assert len(env.witness.runs) == 2
    header = env.app.get_run_header(TARGET)
    assert (header.status, header.failure_class) == ("failed", "step_limit_exceeded")
    assert header.failure_message == outcome.failure_message
    terminal = env.app.read_run_events(TARGET)[-1]
    assert terminal.id == f"{TARGET}-terminal"
    # every recorded call was answered: the run is a clean boundary to continue from
    assert {o.state for o in env.app.tool_journal.tool_operations(TARGET)} == {"outcome_committed"}
    assert env.app.plan_resume(TARGET).disposition == "safe_replay"
    assert env.app.plan_continuation("s1").disposition == "continue"
    assert DEFAULT_STEP_LIMIT >= 8


@pytest.mark.parametrize("step_limit", [0, -1, True, 2.0])
def test_a_bad_step_limit_is_refused_before_anything_is_written(env: Env, step_limit: Any) -> None:
    plan = env.app.plan_continuation("s1")
    before = store_snapshot(env.app).rows
    provider = ScriptedProvider([ProviderTurn(outputs=(text("never"),))])
    with pytest.raises(InvalidPlanRequestError):
        env.app.execute_continuation(plan, provider, step_limit=step_limit)
    assert provider.requests == []
    assert store_snapshot(env.app).rows == before


class BadOutputProvider:
    """A provider adapter that builds a turn from what the model sent, unchecked."""

    def __init__(self, outputs: tuple[Any, ...]) -> None:
        self.outputs = outputs
        self.requests: list[ProviderRequest] = []

    def complete(self, request: ProviderRequest) -> ProviderTurn:
        self.requests.append(request)
        return ProviderTurn(outputs=self.outputs)


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (
            ({"kind": "error", "message": "boom"},),
            "provider output 0 has kind 'error'; only 'text', 'thinking' and 'function_call' "
            "are accepted",
        ),
        (
            (text("ok"), {"kind": "function_call", "id": "x", "name": "Note"}),
            "provider output 1 is not valid function_call content",
        ),
        (
            (call("c1", "again"),),  # the source run already has a call c1
            "provider output 0 reuses tool call id 'c1', which an earlier call of this "
            "conversation already has",
        ),
    ],
    ids=["wrong-kind", "call-without-args", "reused-call-id"],
)
def test_an_invalid_output_ends_the_run_with_a_message_naming_it(
    env: Env, outputs: tuple[Any, ...], message: str
) -> None:
    outcome = env.run(BadOutputProvider(outputs))

    assert (outcome.status, outcome.error_class) == ("failed", "provider_output_invalid")
    assert outcome.failure_message is not None
    assert outcome.failure_message.startswith(message)
    header = env.app.get_run_header(TARGET)
    assert (header.status, header.failure_class) == ("failed", "provider_output_invalid")
    assert header.failure_message == outcome.failure_message
    events = env.app.read_run_events(TARGET)
    assert [e.id for e in events] == [f"{TARGET}-start", f"{TARGET}-terminal"]
    terminal = events[-1].to_wire()
    assert terminal["content"]["message"] == outcome.failure_message
    assert env.witness.runs == []


def test_a_provider_error_after_a_tool_ends_failed_with_its_class(env: Env) -> None:
    class QuotaExceededError(Exception):
        code = "provider_quota_exceeded"

    provider = ScriptedProvider(
        [ProviderTurn(outputs=(call("n1", "x"),)), QuotaExceededError("429: secret-ish text")]
    )

    outcome = env.run(provider)

    assert (outcome.status, outcome.error_class, outcome.steps) == (
        "failed",
        "provider_quota_exceeded",
        1,
    )
    assert outcome.failure_message is None  # a foreign error's text is not copied
    header = env.app.get_run_header(TARGET)
    assert (header.status, header.failure_class, header.failure_message) == (
        "failed",
        "provider_quota_exceeded",
        None,
    )
    assert len(env.witness.runs) == 1
    assert env.app.plan_resume(TARGET).disposition == "safe_replay"


def test_a_call_of_an_unknown_tool_is_refused_before_t1_and_the_model_sees_why(
    env: Env,
) -> None:
    provider = ScriptedProvider(
        [
            ProviderTurn(outputs=(call("w1", "x", name="Write"),)),
            ProviderTurn(outputs=(text("no Write here, then"),)),
        ]
    )

    outcome = env.run(provider)

    assert outcome.status == "completed"
    assert env.app.tool_journal.tool_operations(TARGET) == ()  # nothing crossed T1
    messages = provider.requests[1].openai_messages()
    assert messages[-1]["tool_call_id"] == "w1"
    assert "tool_unknown" in messages[-1]["content"]
    assert env.witness.runs == []


class StoreWentAwayError(RuntimeError):
    """Stands in for a store fault raised by a journal command."""


@pytest.fixture
def failing_at() -> Iterator[Any]:
    def arm(name: str) -> None:
        def fail(_: str) -> None:
            raise StoreWentAwayError(name)

        failpoints.arm(name, fail)

    yield arm
    failpoints.disarm()


def test_a_tool_step_error_between_t1_and_t2_leaves_the_run_to_recovery(
    restart: Restart, env: Env, failing_at: Any
) -> None:
    """The tool ran, its T2 never committed: a terminal now would seal an operation recovery
    must settle first (ADR 0019), so the error propagates and the run stays open; startup
    recovery then leaves it awaiting the operator, unsealed (a ``never_auto_retry`` call;
    ADR 0019, amendment of 2026-12-01), and the attestation ends it (ADR 0020)."""
    failing_at(BEFORE_T2)
    provider = ScriptedProvider([ProviderTurn(outputs=(call("n1", "x"),))])
    with pytest.raises(StoreWentAwayError):
        env.run(provider)
    failpoints.disarm()
    assert env.app.get_run_header(TARGET).status == "running"
    assert [e.is_terminal for e in env.app.read_run_events(TARGET)][-1] is False
    assert [o.state for o in env.app.tool_journal.tool_operations(TARGET)] == ["prepared"]
    host = restart(env.app)
    report = host.recover()
    (operation,) = host.tool_journal.tool_operations(TARGET)
    waiting = {"operationId": operation.operation_id, "toolName": "Note"}
    assert [(r.run_id, r.kind, r.detail) for r in report.repairs] == [
        (
            TARGET,
            "left_awaiting_operator",
            {"operations": [{**waiting, "recoveryMode": "never_auto_retry"}]},
        )
    ]
    assert len(env.witness.runs) == 1  # Note is never_auto_retry: recovery did not rerun it
    attested = host.attest_operation(TARGET, operation.operation_id, applied=False, actor="alice")
    assert [(r.kind, r.detail) for r in attested.recovery] == [
        ("terminal_recovered", {"recoveryReason": "run_interrupted"})
    ]
    assert env.app.get_run_header(TARGET).status == "failed"
    assert len(env.witness.runs) == 1


def test_a_tool_step_error_with_every_operation_settled_ends_the_run_failed(
    env: Env, failing_at: Any
) -> None:
    failing_at(AFTER_T2)
    provider = ScriptedProvider([ProviderTurn(outputs=(call("n1", "x"),))])
    outcome = env.run(provider)
    assert (outcome.status, outcome.error_class) == ("failed", "StoreWentAwayError")
    assert [o.state for o in env.app.tool_journal.tool_operations(TARGET)] == ["outcome_committed"]
    assert env.app.get_run_header(TARGET).failure_class == "StoreWentAwayError"
