"""The side-effect probe: a real child runs a tool through ToolRuntime and is SIGKILLed at every
point of the T1 / implementation / T2 sequence. After restart and recovery, the external log of
executions shows the side effect ran at most once (never re-run blindly), and the plan says
exactly what is known: blocked while a never-auto-retry tool may have run, settled without a
second write when the Write tool's reconciler can prove the outcome (written, or provably not
written: then "not applied", for the model to decide again)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maka_es.app import RuntimeApplication
from maka_es.failpoints import INSIDE_SAVE_BEFORE_COMMIT
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.probes import AFTER_SIDE_EFFECT, executions, probe_tools, store_snapshot
from maka_es.tooljournal.runtime import AFTER_T1, AFTER_T2, BEFORE_T2, ToolRuntime
from maka_es.wire.codec import operation_id_for

pytestmark = pytest.mark.crash

#: kill point -> (failpoint name, nth hit during the tool step); did the side effect happen?
KILL_POINTS: dict[str, tuple[str, int, bool]] = {
    "inside_t1": (INSIDE_SAVE_BEFORE_COMMIT, 1, False),
    "after_t1": (AFTER_T1, 1, False),
    "after_side_effect": (AFTER_SIDE_EFFECT, 1, True),
    "before_t2": (BEFORE_T2, 1, True),
    "inside_t2": (INSIDE_SAVE_BEFORE_COMMIT, 2, True),
    "after_t2": (AFTER_T2, 1, True),
}
SEEDS = (0, 1, 2)


def _scenario(root: Path, tool: str, seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    ledger = LedgerBuilder()
    ledger.user(f"seed {seed}", marker=True)
    if tool == "AppendLine":
        call = ledger.call(f"call-{seed}", "AppendLine", {"line": f"line {seed}"})
    else:
        call = ledger.call(
            f"call-{seed}", "Write", {"path": f"notes-{seed}.txt", "content": f"v{seed}\n"}
        )
    steps: list[dict[str, Any]] = [
        {"op": "open_session", "session_id": "s1", "cwd": str(root)},
        {"op": "create_run", "header": run_header()},
        {"op": "append", "run_id": "r1", "events": ledger.events[:1]},
        {"op": "run_tool", "run_id": "r1", "call": call, "root": str(root)},
    ]
    return steps, call


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kill_point", list(KILL_POINTS))
@pytest.mark.parametrize("tool", ["AppendLine", "Write"])
def test_no_side_effect_runs_twice(tmp_path: Path, tool: str, kill_point: str, seed: int) -> None:
    root = tmp_path / "tools"
    root.mkdir()
    db = tmp_path / "runtime.sqlite"
    steps, call = _scenario(root, tool, seed)
    name, nth, effect_happened = KILL_POINTS[kill_point]

    outcome = crash_child(db, steps, failpoint=(name, nth, 3))

    assert outcome.said == "INSIDE", outcome.stderr
    assert outcome.returncode == -9
    assert not outcome.finally_marker_written
    operation = operation_id_for("i1", call["content"]["id"])
    assert executions(root) == ([operation] if effect_happened else [])

    with RuntimeApplication.open_sqlite(str(db)) as app:
        runtime = ToolRuntime(app.tool_journal, probe_tools(root))
        report = runtime.recover("r1")
        settled = store_snapshot(app)
        again = runtime.recover("r1")
        # recovery converges: a second pass writes nothing and settles nothing new
        assert store_snapshot(app) == settled
        assert {a.action for a in again.actions} <= {"left_indeterminate"}
        plan = app.plan_resume("r1")
        states = {op.operation_id: op.state for op in app.tool_journal.tool_operations("r1")}

    # the decisive property: recovery never re-ran the side effect
    assert executions(root) == ([operation] if effect_happened else [])
    if tool == "AppendLine":
        lines = (root / "side-effect.txt").read_text().splitlines() if effect_happened else []
        assert lines == ([f"line {seed}"] if effect_happened else [])

    if kill_point == "inside_t1":
        assert states == {}
        assert plan.disposition == "safe_replay"  # the call never committed: nothing ran
        return
    if kill_point == "after_t2":
        assert states == {operation: "outcome_committed"}
        assert plan.disposition == "safe_replay"
        assert report.actions == ()
        return
    if tool == "AppendLine":
        # never_auto_retry: may have run; stays unsettled and blocks with a stable reason
        assert states == {operation: "prepared"}
        assert [a.action for a in report.actions] == ["left_indeterminate"]
        assert plan.disposition == "blocked"
        assert "pending_tool_result" in [d.code for d in plan.diagnostics]
        assert list(plan.rejection_reasons) == ["dangling_tool_state"]
        return
    if effect_happened:
        # the Write reconciler proves the write landed: completed, no second write
        assert states == {operation: "recovery_completed"}
        assert [a.action for a in report.actions] == ["completed"]
        assert plan.disposition == "safe_replay"
        assert [op.status for op in plan.operations] == ["succeeded"]
        assert (root / "workspace" / f"notes-{seed}.txt").read_text() == f"v{seed}\n"
    else:
        # file provably in its prior state: settled as not applied (the model decides again),
        # never redone automatically (ADR 0019, amendment of 2026-12-01)
        assert states == {operation: "outcome_committed"}
        assert [(a.action, a.reason) for a in report.actions] == [
            ("not_applied", "reconcile_matches_prior_state")
        ]
        assert plan.disposition == "safe_replay"
        assert [op.status for op in plan.operations] == ["failed"]
        assert not (root / "workspace" / f"notes-{seed}.txt").exists()
