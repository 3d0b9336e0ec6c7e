"""Planning never writes: proved on a real SQLite file opened read-only (any write fails inside
SQLite) and by comparing rows, max notification id and file bytes before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

from maka_es.app import RuntimeApplication
from maka_es.builders import LedgerBuilder, run_header
from maka_es.errors import StoreUnavailableError
from maka_es.testing.store_probe import store_snapshot


def _seed(db: Path) -> LedgerBuilder:
    ledger = LedgerBuilder()
    ledger.user()
    ledger.call()
    with RuntimeApplication.open_sqlite(str(db)) as app:
        app.open_session("s1", "/workspace")
        app.create_run(run_header())
        app.append_events("r1", ledger.events)
    return ledger


def test_read_only_application_plans_and_cannot_write(db_path: Path) -> None:
    ledger = _seed(db_path)
    with RuntimeApplication.open_sqlite(str(db_path), read_only=True) as reader:
        before = store_snapshot(reader)
        plan = reader.plan_resume("r1")
        assert plan.disposition == "blocked"
        assert list(plan.rejection_reasons) == ["dangling_tool_state"]
        assert reader.plan_resume("r1", expected_high_water=2) == plan
        with pytest.raises(StoreUnavailableError, match="readonly") as info:
            reader.append_event("r1", ledger.model_text())
        assert info.value.code == "store_unavailable"
        assert store_snapshot(reader) == before


def test_planning_leaves_rows_and_file_bytes_unchanged(db_path: Path) -> None:
    _seed(db_path)
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        before = store_snapshot(app)
        assert before.file_digests  # the SQLite file (and WAL) are part of the evidence
        for expected in (None, 2, 3):
            app.plan_resume("r1", expected_high_water=expected)
        assert store_snapshot(app) == before
        mismatch = app.plan_resume("r1", expected_high_water=3)
        assert list(mismatch.rejection_reasons) == [
            "runtime_offset_mismatch",
            "dangling_tool_state",
        ]
