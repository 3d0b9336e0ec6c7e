"""Startup recovery of a run restored from its snapshot reads no event the snapshot covers
(ADR 0012, ADR 0032; issue 12 target 5).

Why pinned: catching up one long interrupted run used to read and parse its whole history
three times (the status row's verdict, the tool settlement's call lookup, the repair's
terminal and last-event rules), though the Run already tracks what decides them. A probe
counts the ledger reads of a snapshot-restored run's older events; every answer (the report,
the status rows, the ledger afterwards) must equal a recovery of the same file with no
snapshot at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from maka_es.adapters.run_loader import FAST_PATHS_ENV
from maka_es.adapters.run_snapshots import RunSnapshots
from maka_es.app import RuntimeApplication
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext
from maka_es.wire.events import ToolRecoveryMode
from tests.conftest import FixedClock

EVERY = 20  # facts between snapshots here (the library's default is larger)


class EchoArgs(BaseModel):
    n: int


def echo(mode: ToolRecoveryMode, runs: list[str]) -> Tool[EchoArgs]:
    def run(args: EchoArgs, context: ToolContext) -> dict[str, Any]:
        runs.append(context.operation_id)
        return {"kind": "text", "text": f"echo {args.n}"}

    return Tool("Echo", EchoArgs, run, recovery_mode=mode)


@pytest.fixture(autouse=True)
def _small_snapshot_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("maka_es.adapters.run_snapshots.SNAPSHOT_EVERY", EVERY)


@pytest.fixture
def history_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The event counts of every read of a snapshot-restored run's older events."""
    reads: list[int] = []
    original = RunSnapshots._history

    def counting(self: RunSnapshots, stream_id: Any, covered: int, count: int) -> Any:
        reads.append(count)
        return original(self, stream_id, covered, count)

    monkeypatch.setattr(RunSnapshots, "_history", counting)
    return reads


def _write_interrupted_run(store: str, mode: ToolRecoveryMode, steps: int = 30) -> None:
    """``steps`` finished tool steps (call, dispatch, response), each followed by a model
    text, then a T1 without its T2; a first recovery brings the status table current before
    the run is written."""
    app = RuntimeApplication.open(store, clock=FixedClock())
    app.open_session("s1", "/workspace")
    app.recover()
    app.ledger.create_run(run_header(Spine()))
    kit = Events.wire()
    app.ledger.append_events("r1", [kit.user("count", event_id="u1", marker=True)])
    for i in range(steps):
        app.tool_journal.commit_tool_prepared(
            "r1", kit.call(f"c{i}", "Echo", {"n": i}), recovery_mode=mode
        )
        app.tool_journal.commit_tool_outcome("r1", kit.bound_response(f"c{i}", "Echo", {"n": i}))
        app.ledger.append_events("r1", [kit.text(f"done c{i}", event_id=f"m{i}")])
    app.tool_journal.commit_tool_prepared(
        "r1", kit.call("cz", "Echo", {"n": -1}), recovery_mode=mode
    )
    app.close()
    # a reader of the run leaves a snapshot covering all but its last facts (ADR 0032)
    app = RuntimeApplication.open(store, clock=FixedClock())
    run = app.ledger.load_run("r1")
    assert (run.high_water, run.events_in_memory) == (1 + steps * 4 + 2, False)
    app.close()


def _recover(
    store: str, mode: ToolRecoveryMode, *, snapshots: bool, reads: list[int] | None = None
) -> tuple[Any, ...]:
    """The report, the status rows, the tool's executions, the ledger and header after a
    recovery by a fresh application (``reads``: emptied, then holds the history reads of the
    recovery itself, not of the checks after it)."""
    runs: list[str] = []
    # the reference: the plain loader, every fact folded, nothing restored
    plain = None if snapshots else {FAST_PATHS_ENV: "n"}
    app = RuntimeApplication.open(store, clock=FixedClock(), tools=[echo(mode, runs)], env=plain)
    try:
        if reads is not None:
            reads.clear()
        report = app.recover()
        rows = app.recovery_status.all()
        during = len(reads) if reads is not None else 0
        checked = (app.ledger.read_run_payloads("r1"), app.get_run_header("r1"))
        if reads is not None:
            reads[:] = [during]
        return report, rows, runs, *checked
    finally:
        app.close()


def test_recovering_an_interrupted_run_reads_none_of_its_snapshot_history(
    tmp_path: Path, history_reads: list[int]
) -> None:
    store = str(tmp_path / "maka.sqlite")
    _write_interrupted_run(store, "never_auto_retry")
    reference = str(tmp_path / "reference.sqlite")
    shutil.copy(store, reference)
    recovered = _recover(store, "never_auto_retry", snapshots=True, reads=history_reads)
    assert history_reads == [0]  # no event the snapshot covers was read
    report, rows, _, _, header = recovered
    # only an operator can settle a never_auto_retry call: the run is left for the attestation
    # unsealed (ADR 0019, amendment of 2026-12-01), and deciding so read no history either
    operation = {
        "operationId": Spine().operation_id("cz"),
        "toolName": "Echo",
        "recoveryMode": "never_auto_retry",
    }
    assert [(r.run_id, r.kind, r.detail) for r in report.repairs] == [
        ("r1", "left_awaiting_operator", {"operations": [operation]})
    ]
    assert header.status == "running"
    assert [(r.resume_disposition, r.resume_reasons) for r in rows] == [
        ("blocked", ("dangling_tool_state",))
    ]
    assert recovered == _recover(reference, "never_auto_retry", snapshots=False)


def test_a_settled_call_is_found_from_the_run_end_as_in_a_full_read(
    tmp_path: Path, history_reads: list[int]
) -> None:
    """An idempotent tool re-executes its interrupted call: the call event is read from the
    run's end, not from its history, and the recovery is the one a full replay makes (its
    now settled run is judged over its events: that read is the status row's, after it)."""
    store = str(tmp_path / "maka.sqlite")
    _write_interrupted_run(store, "idempotent")
    reference = str(tmp_path / "reference.sqlite")
    shutil.copy(store, reference)
    recovered = _recover(store, "idempotent", snapshots=True)
    report, rows, runs, _, _ = recovered
    assert [r.kind for r in report.repairs] == ["tools_recovered", "terminal_recovered"]
    assert len(runs) == 1
    assert [(r.resume_disposition, r.resume_reasons) for r in rows] == [("safe_replay", ())]
    assert recovered == _recover(reference, "idempotent", snapshots=False)
