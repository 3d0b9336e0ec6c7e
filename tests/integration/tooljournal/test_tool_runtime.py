"""ToolRuntime on a real SQLite file: T1 before the implementation, T2 before the result,
pre-T1 refusals on the generic lane, zero executions when T1 fails or already exists, error
and outcome-unknown outcomes, recovery by mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from maka_es.adapters.file_write import FileWriteArgs, file_write_tool
from maka_es.app import RuntimeApplication
from maka_es.errors import InvalidRuntimeEventError, MakaError, RunSealedError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.runtime import (
    OutcomeUnknownError,
    Tool,
    ToolAlreadyDispatchedError,
    ToolContext,
    ToolRuntime,
)
from maka_es.wire.codec import operation_id_for


class Echo(BaseModel):
    text: str


class Recorder:
    """A tool implementation that records what the ledger held while it ran."""

    def __init__(self, app: RuntimeApplication, result: Any = None, error: Exception | None = None):
        self.app = app
        self.calls: list[ToolContext] = []
        self.seen_states: list[list[str]] = []
        self.result = result
        self.error = error

    def __call__(self, args: Echo, context: ToolContext) -> Any:
        self.calls.append(context)
        self.seen_states.append(
            [op.state for op in self.app.tool_journal.tool_operations(context.run_id)]
        )
        if self.error is not None:
            raise self.error
        return self.result if self.result is not None else {"kind": "text", "text": args.text}


@pytest.fixture
def ledger(store_app: RuntimeApplication) -> LedgerBuilder:
    store_app.open_session("s1", "/workspace")
    store_app.ledger.create_run(run_header())
    builder = LedgerBuilder()
    builder.user(marker=True)
    store_app.ledger.append_events("r1", builder.events)
    return builder


def _runtime(app: RuntimeApplication, impl: Recorder, **kw: Any) -> ToolRuntime:
    return ToolRuntime(app.tool_journal, [Tool("Echo", Echo, impl)], **kw)


def test_t1_before_implementation_and_t2_before_result(
    store_app: RuntimeApplication, ledger: LedgerBuilder
) -> None:
    impl = Recorder(store_app)
    call = ledger.call("c1", "Echo", {"text": "hi"})
    result = _runtime(store_app, impl).execute("r1", call)
    assert impl.seen_states == [["prepared"]]  # T1 durable while the implementation ran
    assert impl.calls[0].operation_id == operation_id_for("i1", "c1")  # idempotency key
    assert result.result == {"kind": "text", "text": "hi"}
    assert not result.is_error
    events = store_app.read_run_events("r1")
    assert [e.id for e in events][-2:] == [
        f"{result.operation_id}_dispatch",
        result.response_event_id,
    ]
    assert [op.state for op in store_app.tool_journal.tool_operations("r1")] == [
        "outcome_committed"
    ]
    decision = store_app.tool_journal.resolve_run("r1").decisions[0]
    assert (decision.status, decision.settlement_origin) == ("completed", "normal_t2")


@pytest.mark.parametrize(
    ("tool_name", "args", "permission", "code"),
    [
        ("Nope", {"text": "x"}, None, "tool_unknown"),
        ("Echo", {"txt": "x"}, None, "invalid_arguments"),
        ("Echo", {"text": "x"}, lambda name, args: False, "permission_denied"),
    ],
)
def test_pre_t1_refusals_never_touch_the_implementation(
    store_app: RuntimeApplication,
    ledger: LedgerBuilder,
    tool_name: str,
    args: dict[str, Any],
    permission: Any,
    code: str,
) -> None:
    impl = Recorder(store_app)
    call = ledger.call("c1", tool_name, args)
    result = _runtime(store_app, impl, permission=permission).execute("r1", call)
    assert impl.calls == []
    assert result.is_error
    assert not result.dispatched
    assert result.result["text"].startswith(code)
    assert store_app.tool_journal.tool_operations("r1") == ()  # no dispatch fact
    decision = store_app.tool_journal.resolve_run("r1").decisions[0]
    assert (decision.status, decision.settlement_origin) == ("completed", "pre_t1_synthetic")
    assert store_app.plan_resume("r1").disposition == "safe_replay"


def test_failed_t1_runs_the_implementation_zero_times(
    store_app: RuntimeApplication, ledger: LedgerBuilder
) -> None:
    impl = Recorder(store_app)
    call = ledger.call("c1", "Echo", {"text": "hi"})
    store_app.ledger.append_event("r1", ledger.terminal())  # sealed: T1 must fail
    before = store_snapshot(store_app)
    with pytest.raises(RunSealedError):
        _runtime(store_app, impl).execute("r1", call)
    assert impl.calls == []
    assert store_snapshot(store_app) == before


def test_existing_t1_means_someone_else_owns_it(
    store_app: RuntimeApplication, ledger: LedgerBuilder
) -> None:
    call = ledger.call("c1", "Echo", {"text": "hi"})
    store_app.tool_journal.commit_tool_prepared("r1", call)  # another dispatcher got there first
    impl = Recorder(store_app)
    with pytest.raises(ToolAlreadyDispatchedError) as info:
        _runtime(store_app, impl).execute("r1", call)
    assert info.value.code == "tool_already_dispatched"
    assert impl.calls == []


def test_exceptions_are_committed_as_error_outcomes(
    store_app: RuntimeApplication, ledger: LedgerBuilder
) -> None:
    impl = Recorder(store_app, error=RuntimeError("disk full"))
    result = _runtime(store_app, impl).execute("r1", ledger.call("c1", "Echo", {"text": "x"}))
    assert result.is_error
    assert result.result == {"kind": "text", "text": "tool_error: RuntimeError: disk full"}
    plan = store_app.plan_resume("r1")
    assert [op.status for op in plan.operations] == ["failed"]


def test_outcome_unknown_is_a_structured_non_retryable_failure(
    store_app: RuntimeApplication, ledger: LedgerBuilder
) -> None:
    impl = Recorder(store_app, error=OutcomeUnknownError("request timed out after send"))
    result = _runtime(store_app, impl).execute("r1", ledger.call("c1", "Echo", {"text": "x"}))
    assert result.is_error
    assert result.result == {
        "kind": "text",
        "text": "outcome_unknown: request timed out after send",
        "uncertainOutcome": {"code": "outcome_unknown", "retrySafe": False},
    }
    response = store_app.read_run_events("r1")[-1].function_response
    assert response is not None
    assert response.is_error is True


def test_failed_t2_never_publishes_the_result(
    store_app: RuntimeApplication, ledger: LedgerBuilder
) -> None:
    terminal = ledger.terminal()

    def seal_then_return(args: Echo, context: ToolContext) -> Any:
        store_app.ledger.append_event("r1", terminal)  # the run ends while the tool runs
        return {"kind": "text", "text": "secret result"}

    runtime = ToolRuntime(store_app.tool_journal, [Tool("Echo", Echo, seal_then_return)])
    with pytest.raises(MakaError):
        runtime.execute("r1", ledger.call("c1", "Echo", {"text": "x"}))
    assert all("secret result" not in p for p in store_app.ledger.read_run_payloads("r1"))


class Crash(BaseException):
    """Simulates the process dying inside the implementation (not an Exception: no T2)."""


def test_recovery_by_mode(
    store_app: RuntimeApplication, ledger: LedgerBuilder, tmp_path: Path
) -> None:
    runs: dict[str, int] = {}

    def crashing(name: str) -> Any:
        def run(args: Echo, context: ToolContext) -> Any:
            runs[name] = runs.get(name, 0) + 1
            if runs[name] == 1:
                raise Crash()
            return {"kind": "text", "text": f"{name} again"}

        return run

    tools = [
        Tool("Never", Echo, crashing("Never")),
        Tool("Idem", Echo, crashing("Idem"), recovery_mode="idempotent"),
        Tool("Reader", Echo, crashing("Reader"), recovery_mode="replay_safe"),
    ]
    runtime = ToolRuntime(store_app.tool_journal, tools)
    for name in ("Never", "Idem", "Reader"):
        with pytest.raises(Crash):
            runtime.execute("r1", ledger.call(f"c-{name}", name, {"text": name}))
    report = runtime.recover("r1")
    assert [(a.tool_name, a.action) for a in report.actions] == [
        ("Never", "left_indeterminate"),
        ("Idem", "reexecuted"),
        ("Reader", "reexecuted"),
    ]
    assert runs == {"Never": 1, "Idem": 2, "Reader": 2}
    states = [op.state for op in store_app.tool_journal.tool_operations("r1")]
    assert states == ["prepared", "outcome_committed", "outcome_committed"]
    plan = store_app.plan_resume("r1")
    assert plan.disposition == "blocked"
    assert [op.status for op in plan.operations] == ["indeterminate", "succeeded", "succeeded"]


def test_write_tool_reconciles_a_crash_after_the_write(
    store_app: RuntimeApplication, ledger: LedgerBuilder, tmp_path: Path
) -> None:
    inner = file_write_tool(tmp_path)
    writes: list[str] = []

    def write_then_die(args: FileWriteArgs, context: ToolContext) -> Any:
        writes.append(context.operation_id)
        inner.run(args, context)
        raise Crash()

    crashing = Tool("Write", FileWriteArgs, write_then_die, "reconcile", inner.reconciler)
    call = ledger.call("w1", "Write", {"path": "config.json", "content": '{"port":4000}'})
    with pytest.raises(Crash):
        ToolRuntime(store_app.tool_journal, [crashing]).execute("r1", call)
    operation = store_app.tool_journal.tool_operations("r1")[0]
    assert operation.metadata["expectedDigest"] != operation.metadata["priorDigest"]
    report = ToolRuntime(store_app.tool_journal, [inner]).recover("r1")
    assert [a.action for a in report.actions] == ["completed"]
    assert writes == [operation.operation_id]  # settled without a second write
    assert store_app.plan_resume("r1").disposition == "safe_replay"
    decision = store_app.tool_journal.resolve_run("r1").decisions[0]
    assert (decision.status, decision.reason) == ("completed", "recovery_bundle_completed")


def test_write_tool_parks_when_someone_else_changed_the_file(
    store_app: RuntimeApplication, ledger: LedgerBuilder, tmp_path: Path
) -> None:
    inner = file_write_tool(tmp_path)

    def die_before_write(args: FileWriteArgs, context: ToolContext) -> Any:
        raise Crash()

    crashing = Tool("Write", FileWriteArgs, die_before_write, "reconcile", inner.reconciler)
    with pytest.raises(Crash):
        ToolRuntime(store_app.tool_journal, [crashing]).execute(
            "r1", ledger.call("w1", "Write", {"path": "a.txt", "content": "mine"})
        )
    (tmp_path / "a.txt").write_text("theirs")
    report = ToolRuntime(store_app.tool_journal, [inner]).recover("r1")
    assert [(a.action, a.reason) for a in report.actions] == [("parked", "reconcile_diverged")]
    assert (tmp_path / "a.txt").read_text() == "theirs"  # never overwritten
    plan = store_app.plan_resume("r1")
    assert plan.disposition == "blocked"
    assert [op.status for op in plan.operations] == ["parked"]


def test_reconcile_tools_need_a_reconciler() -> None:
    with pytest.raises(ValueError, match="reconciler"):
        Tool("X", Echo, lambda a, c: None, recovery_mode="reconcile")


def test_write_tool_refuses_paths_outside_the_workspace(
    store_app: RuntimeApplication, ledger: LedgerBuilder, tmp_path: Path
) -> None:
    runtime = ToolRuntime(store_app.tool_journal, [file_write_tool(tmp_path / "ws")])
    call = ledger.call("w1", "Write", {"path": "../escape.txt", "content": "x"})
    result = runtime.execute("r1", call)  # the reconciler's preflight refuses before T1
    assert result.is_error
    assert not result.dispatched
    assert result.result["text"].startswith(
        "preflight_failed: WorkspacePathRefusedError: [workspace_path_escape]"
    )
    assert not (tmp_path / "escape.txt").exists()
    assert store_app.tool_journal.tool_operations("r1") == ()


def test_a_non_call_event_is_a_typed_refusal(
    store_app: RuntimeApplication, ledger: LedgerBuilder
) -> None:
    before = store_snapshot(store_app)
    with pytest.raises(InvalidRuntimeEventError) as info:
        _runtime(store_app, Recorder(store_app)).execute("r1", ledger.text())
    assert info.value.field == "content.kind"
    assert store_snapshot(store_app) == before
