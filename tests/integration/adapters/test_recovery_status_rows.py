"""The SQL read-model stores share one row encoding (``adapters/recovery_status``).

Pinned on a real SQLite file: a row written by the store reads back equal, the stored columns
are exactly :func:`row_values` (booleans as SQLite integers 0/1, reasons as compact JSON, as
before the encoding was shared), and the shared position check refuses a stale commit with the
store unchanged.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from uuid import uuid4

import pytest

from maka_es.adapters.recovery_status import (
    STATUS_COLUMNS,
    SqliteRecoveryStatusBackend,
    row_from_values,
    row_values,
)
from maka_es.recovery.model.status_store import (
    RecoveryStatusConflictError,
    RecoveryStatusStore,
    RunRecoveryStatus,
)

ROW = RunRecoveryStatus(
    run_id="run-1",
    session_id="session-1",
    header_status="completed",
    terminal_event=True,
    header_matches_terminal=False,
    resume_disposition="terminal",
    resume_reasons=("a", "b"),
    unsettled_operations=0,
    claim_state="none",
    claim_id=None,
    sealed_by="claim-9",
    high_water=4,
    needs_attention=True,
)


def test_row_values_round_trip() -> None:
    values = row_values(ROW)
    assert len(values) == len(STATUS_COLUMNS)
    assert values[STATUS_COLUMNS.index("resume_reasons")] == '["a","b"]'
    assert row_from_values(values) == ROW


def test_sqlite_store_persists_the_shared_encoding(tmp_path: Path) -> None:
    db = str(tmp_path / "status.sqlite")
    stream = uuid4()
    store = RecoveryStatusStore(SqliteRecoveryStatusBackend(db))
    try:
        store.commit([ROW], {stream: ROW.run_id}, 3)
        assert store.get(ROW.run_id) == ROW
        assert store.stream_run_ids([stream]) == {stream: ROW.run_id}
        with pytest.raises(RecoveryStatusConflictError):
            store.commit([], {}, 5, expected_position=2)
        assert store.position() == 3
    finally:
        store.close()
    with sqlite3.connect(db) as conn:
        stored = conn.execute(
            f"SELECT {', '.join(STATUS_COLUMNS)} FROM maka_es_recovery_status"
        ).fetchall()
        kinds = conn.execute(
            "SELECT typeof(terminal_event), typeof(header_matches_terminal) "
            "FROM maka_es_recovery_status"
        ).fetchone()
    conn.close()
    assert stored == [tuple(int(v) if isinstance(v, bool) else v for v in row_values(ROW))]
    assert kinds == ("integer", "integer")
