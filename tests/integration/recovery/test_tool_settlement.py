"""Startup recovery settles tool operations with the application's catalogue before it ends a
run, and never ends a run whose operation only a missing (or changed) tool could settle
(ADR 0019), on a real SQLite file.

The interruption is real as far as the library can see: the tool runs through the application's
``ToolRuntime`` and raises a ``BaseException`` after its side effect, which the runtime lets
through like a kill, so T1 is committed and T2 never is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from maka_es.adapters.file_write import FileWriteArgs, file_write_tool
from maka_es.app import RuntimeApplication
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.errors import StoreUnavailableError
from maka_es.recovery.startup import StartupRecoveryOutcome
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import store_snapshot
from maka_es.tooljournal.runtime import (
    ReconcileObservation,
    Tool,
    ToolContext,
    ToolRuntime,
)
from maka_es.wire.events import ToolRecoveryMode

NOW = 1_700_000_000_000
IDENTITY = "workspace:v1:3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99"


class Killed(BaseException):
    """Stands for the process dying inside the tool: no T2 is written."""


class Bump(BaseModel):
    key: str


def bump_tool(counter: list[str], mode: ToolRecoveryMode = "idempotent") -> Tool[Bump]:
    """An idempotent tool counting its executions (operation ids) in ``counter``."""

    def run(args: Bump, context: ToolContext) -> dict[str, Any]:
        counter.append(context.operation_id)
        return {"kind": "text", "text": f"bumped {args.key}"}

    return Tool("Bump", Bump, run, recovery_mode=mode)


def dying(tool: Tool[Any]) -> Tool[Any]:
    """``tool`` whose process dies right after the side effect (before T2)."""

    def run(args: Any, context: ToolContext) -> Any:
        tool.run(args, context)
        raise Killed

    return dataclasses.replace(tool, run=run)


def _open(db: str, tools: list[Tool[Any]] | None = None) -> RuntimeApplication:
    return RuntimeApplication.open(db, clock=lambda: NOW, tools=tools or [])


def _interrupted_run(db: str, tool: Tool[Any], args: dict[str, Any], run: str = "r1") -> str:
    """A run whose ``tool`` call was interrupted after its side effect; its operation id."""
    spine = Spine(run_id=run, invocation_id=f"i-{run}", turn_id=f"t-{run}")
    with _open(db, [dying(tool)]) as app:
        app.open_session("s1", "/workspace")  # repeated for a second run: returns it
        app.ledger.create_run(run_header(spine, workspaceIdentity=IDENTITY))
        ledger = LedgerBuilder(spine)
        ledger.user(marker=True)
        app.ledger.append_events(run, ledger.events)
        call = ledger.call("c1", tool.name, args)
        with pytest.raises(Killed):
            app.tool_runtime.execute(run, call)
    return spine.operation_id("c1")


def _kinds(outcome: StartupRecoveryOutcome) -> list[tuple[str, str]]:
    return [(r.run_id, r.kind) for r in outcome.repairs]


def test_an_idempotent_operation_is_reexecuted_before_the_run_ends(store_url: str) -> None:
    counter: list[str] = []
    operation = _interrupted_run(store_url, bump_tool(counter), {"key": "a"})
    with _open(store_url, [bump_tool(counter)]) as app:
        outcome = app.recover()
        assert _kinds(outcome) == [("r1", "tools_recovered"), ("r1", "terminal_recovered")]
        assert outcome.repairs[0].detail == {
            "actions": [
                {
                    "operationId": operation,
                    "toolName": "Bump",
                    "action": "reexecuted",
                    "reason": "idempotent",
                }
            ]
        }
        assert [op.state for op in app.tool_journal.tool_operations("r1")] == ["outcome_committed"]
        assert app.get_run_header("r1").status == "failed"
    assert counter == [operation, operation]  # same idempotency key both times


def test_a_missing_idempotent_tool_leaves_the_run_unsealed(store_url: str) -> None:
    operation = _interrupted_run(store_url, bump_tool([]), {"key": "a"})
    with _open(store_url) as app:
        app.recovery_status.catch_up()
        before = store_snapshot(app)
        outcome = app.recover()
        assert [(r.kind, r.detail) for r in outcome.repairs] == [
            (
                "left_unreconciled",
                {
                    "operations": [
                        {
                            "operationId": operation,
                            "toolName": "Bump",
                            "recoveryMode": "idempotent",
                            "reason": "tool_not_in_catalogue",
                        }
                    ]
                },
            )
        ]
        assert store_snapshot(app) == before


def test_never_auto_retry_stays_indeterminate_and_the_run_awaits_the_operator(
    store_url: str,
) -> None:
    """Only an operator can settle a ``never_auto_retry`` call, and a sealed run could no
    longer take the attested outcome: the run is left unsealed, awaiting the operator, at every
    start (ADR 0019, amendment of 2026-12-01), and Phase 0 stays ``blocked``. Continuation
    planning keeps the reference's park code and its diagnostic says plainly that the tool may
    have run, naming the operation and the tool."""
    operation = _interrupted_run(store_url, bump_tool([], "never_auto_retry"), {"key": "a"})
    with _open(store_url) as app:
        outcome = app.recover()
        assert _kinds(outcome) == [("r1", "left_awaiting_operator")]
        assert outcome.repairs[0].detail == {
            "operations": [
                {"operationId": operation, "toolName": "Bump", "recoveryMode": "never_auto_retry"}
            ]
        }
        assert outcome.changed_anything is False
        assert app.get_run_header("r1").status == "running"
        assert [op.state for op in app.tool_journal.tool_operations("r1")] == ["prepared"]
        assert app.plan_resume("r1").disposition == "blocked"
        before = store_snapshot(app)
        assert app.recover().repairs == outcome.repairs  # again at every start, nothing written
        assert store_snapshot(app) == before
    observation = HostObservation(
        workspace_identity=IDENTITY,
        background_operations_settled=True,
        available_tool_names=("Bump",),
    )
    with RuntimeApplication.open(
        store_url,
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1"},
        host_inspector=StaticHostInspector(observation),
    ) as app:
        plan = app.plan_continuation("s1", "r1")  # a running run is no default candidate
    assert plan.rejection_reasons == ("runtime_ledger_unreadable",)
    (diagnostic,) = plan.diagnostics
    assert diagnostic.detail == {
        "segmentIndex": 0,
        "replayReason": "tool_recovery_unsettled",
        "operationId": operation,
        "toolName": "Bump",
    }
    assert (diagnostic.tool_call_id, diagnostic.tool_name) == ("c1", "Bump")
    assert operation in diagnostic.message
    assert f"tool Bump (operation {operation}, call c1) may have run" in diagnostic.message


def test_a_tool_whose_recovery_mode_changed_holds_the_run(store_url: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    operation = _interrupted_run(
        store_url, file_write_tool(root), {"path": "a.txt", "content": "x"}
    )
    changed = Tool("Write", FileWriteArgs, file_write_tool(root).run)  # never_auto_retry now
    with _open(store_url, [changed]) as app:
        outcome = app.recover()
        (repair,) = outcome.repairs
        assert repair.kind == "left_unreconciled"
        assert repair.detail["operations"][0]["operationId"] == operation
        assert repair.detail["operations"][0]["reason"] == "recovery_mode_changed"
        assert app.get_run_header("r1").status == "running"


class BrokenReconciler:
    """A reconciler whose observation fails (its service is down, say)."""

    def prepare(self, args: FileWriteArgs) -> Mapping[str, Any]:
        return {"path": args.path}

    def observe(self, args: FileWriteArgs, metadata: Mapping[str, Any]) -> ReconcileObservation:
        raise RuntimeError("cannot observe right now")


def test_a_failing_reconciler_holds_its_run_and_the_others_still_recover(
    store_url: str, tmp_path: Path
) -> None:
    tool = dataclasses.replace(file_write_tool(tmp_path / "ws"), reconciler=BrokenReconciler())
    operation = _interrupted_run(store_url, tool, {"path": "a.txt", "content": "x"})
    with _open(store_url) as app:
        spine = Spine(run_id="r2", invocation_id="i2", turn_id="t2")
        app.ledger.create_run(run_header(spine))
    with _open(store_url, [tool]) as app:
        outcome = app.recover()
        assert _kinds(outcome) == [("r1", "left_unreconciled"), ("r2", "terminal_recovered")]
        assert outcome.repairs[0].detail == {
            "operations": [
                {
                    "operationId": operation,
                    "toolName": "Write",
                    "recoveryMode": "reconcile",
                    "reason": "tool_recovery_failed",
                }
            ],
            "errorClass": "RuntimeError",
        }
        assert [op.state for op in app.tool_journal.tool_operations("r1")] == ["prepared"]


def test_recover_with_an_explicit_tool_runtime_still_settles_first(
    store_url: str, tmp_path: Path
) -> None:
    """The pre-``tools=`` call keeps working and takes the same safe order."""
    root = tmp_path / "ws"
    _interrupted_run(store_url, file_write_tool(root), {"path": "a.txt", "content": "x"})
    with _open(store_url) as app:
        outcome = app.recover(tool_runtime=ToolRuntime(app.tool_journal, [file_write_tool(root)]))
        assert _kinds(outcome) == [("r1", "tools_recovered"), ("r1", "terminal_recovered")]
        assert [op.state for op in app.tool_journal.tool_operations("r1")] == ["recovery_completed"]
    assert (root / "a.txt").read_text() == "x"


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # SQLite file specifics
def test_a_store_fault_while_settling_is_raised_before_anything_is_sealed(
    store_url: str, tmp_path: Path
) -> None:
    """The bundle cannot be written (the file is opened read-only): recovery raises the typed
    store fault, and since settling comes first, no run was ended meanwhile."""
    root = tmp_path / "ws"
    _interrupted_run(store_url, file_write_tool(root), {"path": "a.txt", "content": "x"})
    with _open(store_url) as app:
        app.ledger.create_run(run_header(Spine(run_id="r2", invocation_id="i2", turn_id="t2")))
        app.recovery_status.catch_up()
        before = store_snapshot(app)
    with (
        RuntimeApplication.open(store_url, read_only=True, tools=[file_write_tool(root)]) as app,
        pytest.raises(StoreUnavailableError) as info,
    ):
        app.recover()
    # raised by the bundle's commit while settling (not earlier, by the read model)
    assert "settle_run_tools" in [entry.name for entry in info.traceback]
    with _open(store_url, [file_write_tool(root)]) as app:
        assert store_snapshot(app).rows == before.rows
        assert [h.status for h in app.ledger.list_all_runs()] == ["running", "running"]
        outcome = app.recover()
        assert _kinds(outcome) == [
            ("r1", "tools_recovered"),
            ("r1", "terminal_recovered"),
            ("r2", "terminal_recovered"),
        ]
