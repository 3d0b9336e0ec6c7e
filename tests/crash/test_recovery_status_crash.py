"""SIGKILL in the middle of a recovery-status catch-up (ADR 0012: rows and position commit
together).

The parent brings the read model up to date, then writes more than one page of new facts (a
long run, a finished run, a new run). A real child runs startup recovery and is SIGKILLed
inside the catch-up's read-model transaction, after its rows, links and position were written
and before COMMIT. Afterwards the table and the position must be exactly those of the last
committed catch-up (nothing half-written, nothing skipped), and the next startup recovery must
finish the catch-up: its rows equal a from-scratch build in another file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_es.adapters.recovery_status import SqliteRecoveryStatusBackend
from maka_es.app import RuntimeApplication
from maka_es.recovery.model.status_store import INSIDE_COMMIT_FAILPOINT, RecoveryStatusStore
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.crash import crash_child
from maka_es.testing.crash_child import open_app

pytestmark = pytest.mark.crash


def spine(run_id: str) -> Spine:
    return Spine(session_id="s1", invocation_id=f"i-{run_id}", run_id=run_id, turn_id=f"t-{run_id}")


def start_run(app: RuntimeApplication, run_id: str) -> LedgerBuilder:
    app.ledger.create_run(run_header(spine(run_id)))
    ledger = LedgerBuilder(spine(run_id), prefix=f"{run_id}-e")
    app.ledger.append_events(run_id, [ledger.user(marker=True)])
    return ledger


def test_kill_inside_a_catch_up_leaves_table_and_position_consistent(tmp_path: Path) -> None:
    db = tmp_path / "runtime.sqlite"
    with open_app(str(db)) as app:
        app.open_session("s1", "/workspace")
        ledgers = {run_id: start_run(app, run_id) for run_id in ("r0", "r1", "long")}
        app.recovery_status.catch_up()
        # new facts since the last catch-up: a long run, a finished run, a new run
        for n in range(25):
            app.ledger.append_events("long", [ledgers["long"].text(f"step {n}")])
        app.ledger.append_events("r1", [ledgers["r1"].terminal("completed")])
        app.ledger.update_run_header("r1", {"status": "completed"})
        start_run(app, "r2")
        written = app._store.max_notification_id()
    before = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(db)))
    committed = (before.position(), before.all())
    before.close()
    assert committed[0] < written

    outcome = crash_child(
        db, [{"op": "startup_recover"}], failpoint=(INSIDE_COMMIT_FAILPOINT, 1, 0)
    )
    assert outcome.said == "INSIDE", outcome.stderr
    assert outcome.returncode == -9
    assert not outcome.finally_marker_written

    after_kill = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(db)))
    assert (after_kill.position(), after_kill.all()) == committed
    after_kill.close()

    with open_app(str(db)) as app:
        report = app.recover()
        assert {repair.run_id for repair in report.repairs} == {"r0", "long", "r2"}
        store = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(db)))
        other = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(tmp_path / "other.sqlite")))
        app.recovery_status_projector(other).rebuild()
        assert store.position() == other.position() == app._es.recorder.max_notification_id()
        assert store.all() == other.all()
        assert store.needing_attention() == []
        long_row = store.get("long")
        assert long_row is not None
        assert long_row.high_water == 27  # 1 + 25 + the recovered terminal
        store.close()
        other.close()
